//! `wirestamp analyze`'s command line and outputs: what it refuses, and how it ends when its output
//! goes away. Each runs the binary.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use support::tmpdir;

fn wirestamp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(args).output().unwrap()
}

/// A small synthetic capture (1,000 market-data packets, 42 orders) in `dir`.
fn small_capture(dir: &Path) -> String {
    let cap = dir.join("small.pcapng").display().to_string();
    let out = wirestamp(&["synth", "-n", "1000", &cap]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    cap
}

#[test]
fn an_output_file_never_replaces_a_capture() {
    // `--pairs tapA.pcapng tapB.pcapng`: the pairs file's name forgotten, the first capture takes its
    // place. It must be refused, the capture left as it was, and the run must fail.
    let dir = tmpdir("overwrite");
    let cap = small_capture(&dir);
    let tap_a = dir.join("tapA.pcapng");
    std::fs::copy(&cap, &tap_a).unwrap();
    let before = std::fs::read(&tap_a).unwrap();
    for flag in ["--pairs", "--hlog"] {
        let out = wirestamp(&["analyze", "-q", flag, tap_a.to_str().unwrap(), &cap]);
        assert_eq!(out.status.code(), Some(1), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("refusing to overwrite"), "{flag}: {err}");
        assert_eq!(std::fs::read(&tap_a).unwrap(), before, "{flag}: the capture is intact");
    }
    // An earlier run's outputs, or empty files, are replaced.
    let (pairs, hlog) = (dir.join("p.csv"), dir.join("r.hlog"));
    for _ in 0..2 {
        let out =
            wirestamp(&["analyze", "-q", "--pairs", pairs.to_str().unwrap(), "--hlog", hlog.to_str().unwrap(), &cap]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // 42 pairs and the header.
    assert_eq!(std::fs::read_to_string(&pairs).unwrap().lines().count(), 43);
    std::fs::write(&pairs, b"").unwrap();
    let out = wirestamp(&["analyze", "-q", "--pairs", pairs.to_str().unwrap(), &cap]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_closed_pipe_ends_the_output_quietly_and_a_full_disk_is_an_error() {
    let dir = tmpdir("pipe");
    let cap = small_capture(&dir);
    for args in [&["analyze", "--json"][..], &["analyze", "-q"][..]] {
        // The reading end is closed before the report is written: EPIPE on the first write.
        let mut child = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
            .args(args)
            .arg(&cap)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        // A full disk is an error, said in one line, not a panic.
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(args).arg(&cap).stdout(full).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "wirestamp: error: No space left on device (os error 28)\n",
            "{args:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_duration_needs_its_unit() {
    // `1` meant as a second and read as 1 ns gives a plausible, wrong report: refused, as is a
    // symbol window of nothing.
    let dir = tmpdir("durations");
    let cap = small_capture(&dir);
    for args in [&["--tick-retention", "1"][..], &["--match", "symbol:1"], &["--match", "symbol:0ns"]] {
        let out = wirestamp(&[&["analyze", "-q"][..], args, &[&cap]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("above 0 with its unit"), "{args:?}: {err}");
    }
    let out = wirestamp(&["analyze", "-q", "--tick-retention", "1s", "--match", "symbol:500ms", &cap]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}
