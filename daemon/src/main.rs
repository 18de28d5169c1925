//! `wirestamp`: the command-line entry point. Parses arguments, sets up logging, runs one command and
//! turns its outcome into an exit code; everything else lives in the modules below.

mod cli;
mod demo;
mod frames;
mod synth;
mod telemetry;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    telemetry::init(cli.log.as_deref());
    match cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("wirestamp: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
