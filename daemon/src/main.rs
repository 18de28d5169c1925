//! `wirestamp`: the command-line entry point. Parses arguments, sets up logging, runs one command and
//! turns its outcome into an exit code; everything else lives in the modules below.

use clap::Parser;
use std::process::ExitCode;
use wirestamp::{cli, telemetry};

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    telemetry::init(cli.log.as_deref());
    match cli::run(cli) {
        Ok(code) => code,
        // A closed pipe (`wirestamp frames f | head`) ends the output quietly, as it does for other tools.
        Err(err) if err.chain().any(is_broken_pipe) => ExitCode::SUCCESS,
        Err(err) => {
            wirestamp::note!("wirestamp: error: {}", wirestamp::cli::describe(&err));
            // As clap's own errors: the command line (or its config file) is wrong.
            if err.downcast_ref::<cli::UsageError>().is_some() { ExitCode::from(2) } else { ExitCode::FAILURE }
        }
    }
}

fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}
