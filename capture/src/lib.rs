//! wirestamp-capture: sources of [`wirestamp_core::Frame`]s.
pub mod write;
