//! The commands behind the `wirestamp` binary, as a library so that benchmarks (`benches/analyze.rs`)
//! run exactly the code the command runs, in-process. `main.rs` only parses arguments and maps errors.

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
