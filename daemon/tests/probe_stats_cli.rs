//! `wirestamp probe-stats`: the CLI around wirestamp-probe's reader (the reader itself is tested with
//! real producer processes in probe/tests).

use std::process::Command;

#[test]
fn missing_session_and_bad_interval_are_clear_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["probe-stats", "wirestamp-no-such-session", "--once"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/shm/wirestamp-no-such-session does not exist"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["probe-stats", "x", "--interval", "soon"])
        .output()
        .unwrap();
    // The command line's fault, as for clap's own errors.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--interval soon: not a duration"));
}
