//! `wirestamp`: the command-line entry point. Parses arguments, sets up logging, runs one command and
//! turns its outcome into an exit code; everything else lives in the modules below.

mod analyze;
mod capture;
mod cli;
mod demo;
mod doctor;
mod frames;
mod pipeline;
mod synth;
mod telemetry;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    telemetry::init(cli.log.as_deref());
    match cli::run(cli) {
        Ok(code) => code,
        // A closed pipe (`wirestamp frames f | head`) ends the output quietly, as it does for other tools.
        Err(err) if err.chain().any(is_broken_pipe) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("wirestamp: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}
