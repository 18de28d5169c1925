//! The commands behind the `wirestamp` binary, as a library so that benchmarks (`benches/analyze.rs`)
//! run exactly the code the command runs, in-process. `main.rs` only parses arguments and maps errors.

/// `eprintln!` that never panics: a closed standard error (`wirestamp capture ... 2>&1 | head`) loses
/// the message, not the run (`eprintln!` panicked: exit status 101).
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod analyze;
pub mod capture;
pub mod cli;
pub mod demo;
pub mod doctor;
pub mod frames;
pub mod output;
pub mod pipeline;
pub mod progress;
pub mod synth;
pub mod telemetry;
