//! The C header never drifts from the Rust ABI, and a C program built against it and the static library
//! stamps into a session that the Rust reader then reads back.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Session;
use wirestamp_probe::reader::{Event, Reader, ReaderConfig};

fn header_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include/wirestamp_probe.h")
}

#[test]
fn header_matches_the_generated_one() {
    let want = wirestamp_probe::ffi::c_header();
    if std::env::var_os("WIRESTAMP_BLESS").is_some() {
        std::fs::write(header_path(), &want).unwrap();
    }
    let have = std::fs::read_to_string(header_path()).expect("probe/include/wirestamp_probe.h");
    assert!(have == want, "include/wirestamp_probe.h is stale: rerun with WIRESTAMP_BLESS=1 and commit it");
}

/// The static library cargo built next to this test binary: target/<profile>/libwirestamp_probe.a after a
/// `cargo build`, or deps/libwirestamp_probe-<hash>.a when `cargo test` built the library only as a
/// dependency (the newest one: the C ABI is the same in every feature set).
fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let plain = profile_dir.join("libwirestamp_probe.a");
    if plain.exists() {
        return plain;
    }
    let deps = profile_dir.join("deps");
    std::fs::read_dir(&deps)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.starts_with("libwirestamp_probe") && n.ends_with(".a")
        })
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("libwirestamp_probe.a not found under {}", profile_dir.display()))
}

#[test]
fn c_example_compiles_links_and_stamps() {
    let s = Session::new("c");
    let out_dir = std::env::temp_dir().join(format!("wsp-c-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join("c_example");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/c/example.c");
    let cc = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-I"])
        .arg(header_path().parent().unwrap())
        .arg(&src)
        .arg(staticlib())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("run cc");
    assert!(cc.status.success(), "cc failed:\n{}", String::from_utf8_lossy(&cc.stderr));
    // The example creates the session (1000 spans of 3 stamps, 1000 values, 1 link) and exits.
    let run = Command::new(&exe).arg(&s.0).output().unwrap();
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(run.status.success(), "example failed: {}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "attach to a missing session without create: -2");

    let mut r = Reader::open(&s.0, ReaderConfig::default()).unwrap();
    let (mut totals, mut intervals, mut values, mut links) = (0, 0, 0u64, vec![]);
    r.poll_all(&mut |e| match e {
        Event::Total { point: 1, begin_tsc, end_tsc, .. } => {
            assert!(end_tsc > begin_tsc);
            totals += 1
        }
        Event::Interval { point: 1, .. } => intervals += 1,
        Event::Value { point: 2, value } => values += value,
        Event::Link { tick_key, order_key } => links.push((tick_key, order_key)),
        other => panic!("unexpected {other:?}"),
    });
    assert_eq!((totals, intervals, values), (1000, 2000, (0..1000u64).sum()));
    assert_eq!(links, vec![(7, 9001)]);
    let names = wirestamp_probe::shm::read_names(r.drainer().mapping());
    assert!(names.contains(&(1, None, "tick_to_trade".to_string())), "{names:?}");
    assert!(names.contains(&(1, Some(1), "decode".to_string())), "{names:?}");
    // The stamps made while disabled (wsp_set_enabled(0)) are not there: 1000 spans exactly.
    assert_eq!(r.spans().counters(1), Default::default());
    assert_eq!(r.drain_counters().lost, 0);
}
