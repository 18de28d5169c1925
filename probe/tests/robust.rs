//! Robustness with real producer processes (the `probe-producer` binary), not threads pretending.

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Session;
use wirestamp_probe::reader::{Event, Reader, ReaderConfig};
use wirestamp_probe::{CreateOptions, Geometry, ProbeError, shm};

const PRODUCER: &str = env!("CARGO_BIN_EXE_probe-producer");

/// Kills (if still running) and reaps a producer on drop, so a failing test leaves no process behind.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(session: &str, args: &[&str]) -> Proc {
    let mut c = Command::new(PRODUCER)
        .arg(session)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn probe-producer");
    // Byte by byte: a buffered reader could swallow the "done" line that may follow immediately.
    let (mut line, mut byte) = (Vec::new(), [0u8]);
    let out = c.stdout.as_mut().unwrap();
    while out.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    assert_eq!(line, b"ready", "producer did not attach");
    Proc(c)
}

/// Waits for a producer to finish and returns the stamps it says it issued.
fn finish(mut p: Proc) -> u64 {
    let st = p.0.wait().unwrap();
    let mut out = String::new();
    p.0.stdout.as_mut().unwrap().read_to_string(&mut out).unwrap();
    assert!(st.success(), "producer failed: {out}");
    out.trim().strip_prefix("done ").expect("done line").parse().unwrap()
}

#[derive(Default)]
struct Seen {
    values: BTreeMap<u16, Vec<u64>>,
    totals: BTreeMap<u64, u64>, // producer id -> completed spans
}

impl Seen {
    fn add(&mut self, e: Event) {
        match e {
            Event::Value { point, value } => self.values.entry(point).or_default().push(value),
            Event::Total { key, .. } => *self.totals.entry(key >> 32).or_default() += 1,
            _ => {}
        }
    }
    fn values(&self, point: u16) -> &[u64] {
        self.values.get(&point).map_or(&[], Vec::as_slice)
    }
}

fn create(s: &Session, max_threads: u32, ring_capacity: u32) {
    let opts = CreateOptions { geometry: Geometry { max_threads, ring_capacity }, ..Default::default() };
    shm::create(&s.0, &opts).unwrap();
}

#[test]
fn sigkill_mid_stamp_is_counted_and_loses_nothing_else() {
    let s = Session::new("kill");
    create(&s, 8, 1 << 18);
    let mut r = Reader::open(&s.0, ReaderConfig::default()).unwrap();
    let mut seen = Seen::default();
    // A stamps until killed; B stamps 10000 iterations (40000 stamps) and exits cleanly. Both pace
    // themselves (20 us per iteration: the 2^18-record rings then hold over a second of stamps) so that a
    // debug-build reader on a loaded 2-core machine keeps up. A is killed once the reader has seen 1000
    // of its values (a condition, not a time, so a slow machine does not fail the test).
    let a = spawn(&s.0, &["--id", "0", "--forever", "--gap-ns", "20000"]);
    let mut b = spawn(&s.0, &["--id", "1", "--count", "10000", "--gap-ns", "20000"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut a = Some(a);
    while a.is_some() || b.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "producers did not finish within 60 s");
        r.poll(&mut |e| seen.add(e));
        if a.is_some() && seen.values(100).len() >= 1000 {
            let mut p = a.take().unwrap();
            // SAFETY: kill(2) on our own child's pid.
            assert_eq!(unsafe { libc::kill(p.0.id() as i32, libc::SIGKILL) }, 0);
            p.0.wait().unwrap();
        }
    }
    assert_eq!(finish(b), 40_000);
    r.poll_all(&mut |e| seen.add(e));
    let c = r.drain_counters();
    assert_eq!(c.producers_gone, 1, "{c:?}");
    assert_eq!((c.lost, c.corrupt_records, c.ring_resyncs), (0, 0, 0), "{c:?}");
    // B: every value and every span.
    assert_eq!(seen.values(101), (0..10_000).collect::<Vec<u64>>());
    assert_eq!(seen.totals.get(&1), Some(&10_000));
    // A: a gapless prefix of its values, and every span it finished (at most one left open by the kill).
    let av = seen.values(100);
    assert!(av.len() >= 1000, "A stamped only {} values", av.len());
    assert_eq!(av, (0..av.len() as u64).collect::<Vec<u64>>());
    let a_spans = *seen.totals.get(&0).unwrap();
    assert!(a_spans + 1 >= av.len() as u64 && a_spans <= av.len() as u64, "{a_spans} spans, {} values", av.len());
    assert!(r.spans().open_spans() <= 1);
    let pc = r.spans().counters(1);
    assert_eq!((pc.orphan_steps, pc.orphan_ends, pc.backwards), (0, 0, 0));
    // The dead thread's ring was freed: a new producer can have all 8 rings... at least one more than before.
    let c2 = spawn(&s.0, &["--id", "2", "--threads", "8", "--count", "10"]);
    assert_eq!(finish(c2), 8 * 40);
}

/// An app SIGKILLed holding every ring slot, restarted before any reader ran (nothing freed its
/// slots): the new one takes over a slot of the dead process and loses nothing (all its stamps were
/// dropped, "no free slot", until a reader freed them).
#[test]
fn a_restarted_app_takes_over_its_dead_predecessors_slots() {
    let s = Session::new("restart");
    let g = Geometry { max_threads: 2, ring_capacity: 1 << 12 };
    create(&s, g.max_threads, g.ring_capacity);
    // A: two threads, one value a millisecond each (a kill rarely lands inside a stamp, which would
    // leave that ring to the reader's recovery), holding both slots.
    let mut a = spawn(&s.0, &["--id", "0", "--threads", "2", "--forever", "--values-only", "--gap-ns", "1000000"]);
    let state = |ring: u32| {
        let mut w = [0u8; 8];
        let f = std::fs::File::open(s.path()).unwrap();
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut w, common::ring_offset(g, ring) + 64).unwrap();
        u64::from_le_bytes(w) as u32
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while (0..2).any(|ring| state(ring) != wirestamp_probe::layout::slot::ACTIVE) {
        assert!(Instant::now() < deadline, "A never claimed both slots");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(a.0.id() as i32, libc::SIGKILL) }, 0);
    a.0.wait().unwrap();
    // B, with no reader yet: 1,000 values.
    let b = spawn(&s.0, &["--id", "5", "--count", "1000", "--values-only"]);
    assert_eq!(finish(b), 1_000);
    let mut r = Reader::open(&s.0, ReaderConfig::default()).unwrap();
    let mut seen = Seen::default();
    r.poll_all(&mut |e| seen.add(e));
    assert_eq!(seen.values(105), (0..1_000).collect::<Vec<u64>>());
    assert_eq!(r.drain_counters().no_slot_drops, 0);
}

#[test]
fn a_restarted_reader_picks_up_where_the_records_are() {
    let s = Session::new("restart");
    create(&s, 4, 1 << 18);
    // 20000 iterations at 20 us: at least 0.4 s of stamping. The first reader stops once it has seen
    // 1000 values, the producer keeps stamping for 30 ms with no reader, then a second reader takes over.
    let p = spawn(&s.0, &["--count", "20000", "--gap-ns", "20000"]);
    let mut seen = Seen::default();
    let open_at_restart;
    {
        let mut r1 = Reader::open(&s.0, ReaderConfig::default()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while seen.values(100).len() < 1000 {
            assert!(Instant::now() < deadline, "first reader saw {} values in 60 s", seen.values(100).len());
            r1.poll(&mut |e| seen.add(e));
        }
        assert_eq!(r1.drain_counters().lost, 0);
        open_at_restart = r1.spans().open_spans() as u64;
    }
    let first = seen.values(100).len();
    assert!(first > 0, "first reader saw nothing");
    std::thread::sleep(Duration::from_millis(30)); // the producer keeps stamping with no reader
    let mut r2 = Reader::open(&s.0, ReaderConfig::default()).unwrap();
    let mut pid_running = true;
    let mut p = Some(p);
    while pid_running {
        r2.poll(&mut |e| seen.add(e));
        pid_running = p.as_mut().unwrap().0.try_wait().unwrap().is_none();
    }
    assert_eq!(finish(p.take().unwrap()), 80_000);
    r2.poll_all(&mut |e| seen.add(e));
    assert_eq!(r2.drain_counters().lost, 0);
    // Every value exactly once across the two readers.
    assert_eq!(seen.values(100), (0..20_000).collect::<Vec<u64>>());
    assert!(first < 20_000, "first reader already had everything");
    // Spans open in the first reader when it stopped end as orphans in the second; nothing else is lost.
    let orphans = r2.spans().counters(1).orphan_ends;
    assert!(orphans <= open_at_restart, "{orphans} orphans, {open_at_restart} open at restart");
    assert_eq!(seen.totals.get(&0).copied().unwrap_or(0) + orphans, 20_000);
}

#[test]
fn a_reader_that_falls_behind_counts_overwrites_exactly() {
    // No reader while the producer writes 100000 stamps into a ring of 4096.
    let s = Session::new("behind");
    create(&s, 2, 4096);
    let issued = finish(spawn(&s.0, &["--count", "100000", "--values-only"]));
    assert_eq!(issued, 100_000);
    let mut r = Reader::open(&s.0, ReaderConfig::default()).unwrap();
    let mut seen = Seen::default();
    r.poll_all(&mut |e| seen.add(e));
    let c = r.drain_counters();
    // The newest 4095 survive (record 100000 - 4096 may have been being rewritten, so it is given up).
    assert_eq!(seen.values(100), (100_000 - 4095..100_000).collect::<Vec<u64>>());
    assert_eq!((c.delivered, c.lost), (4095, 100_000 - 4095));

    // A reader that polls slowly while the producer runs flat out: every stamp delivered or counted.
    let s = Session::new("behind2");
    create(&s, 2, 4096);
    let mut r = Reader::open(&s.0, ReaderConfig::default()).unwrap();
    let mut p = Some(spawn(&s.0, &["--count", "2000000", "--values-only"]));
    let mut seen = Seen::default();
    while p.as_mut().unwrap().0.try_wait().unwrap().is_none() {
        r.poll(&mut |e| seen.add(e));
        std::thread::sleep(Duration::from_millis(2));
    }
    let issued = finish(p.take().unwrap());
    r.poll_all(&mut |e| seen.add(e));
    let c = r.drain_counters();
    let v = seen.values(100);
    assert!(v.windows(2).all(|w| w[0] < w[1]), "values out of order or duplicated");
    assert_eq!(c.delivered, v.len() as u64);
    assert_eq!(c.delivered + c.lost, issued, "{c:?}");
    assert!(c.lost > 0, "the reader never fell behind; the test proves nothing");
    assert_eq!(c.corrupt_records, 0);
}

#[test]
fn segment_permissions_are_enforced_with_a_clear_error() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let s = Session::new("perm");
    create(&s, 2, 64);
    let md = std::fs::metadata(s.path()).unwrap();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&md.permissions()) & 0o777, 0o600);
    if root {
        // Another user (nobody) may not attach to a 0600 segment...
        use std::os::unix::process::CommandExt;
        let out = Command::new(PRODUCER).arg(&s.0).uid(65534).gid(65534).output().unwrap();
        assert_eq!(out.status.code(), Some(3));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("permission denied opening /dev/shm/")
                && err.contains("mode 600")
                && err.contains("uid 65534"),
            "{err}"
        );
        // ...but may when the segment is created for its group, 0660.
        let g = Session::new("permgrp");
        let opts =
            CreateOptions { geometry: Geometry { max_threads: 2, ring_capacity: 64 }, mode: 0o660, group: Some(65534) };
        shm::create(&g.0, &opts).unwrap();
        let out = Command::new(PRODUCER).arg(&g.0).args(["--count", "5"]).uid(65534).gid(65534).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut r = Reader::open(&g.0, ReaderConfig::default()).unwrap();
        assert_eq!(r.poll_all(&mut |_| {}), 20);
    } else {
        // Not root: take our own access away; the owner then gets the same clear error.
        std::fs::set_permissions(s.path(), std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        match shm::open(&s.0) {
            Err(e @ ProbeError::PermissionDenied { mode: 0, .. }) => {
                assert!(e.to_string().contains("permission denied"))
            }
            other => panic!("expected permission denied, got {other:?}"),
        }
    }
}

#[test]
fn the_app_creates_the_session_when_asked() {
    let s = Session::new("appcreate");
    assert!(matches!(shm::open(&s.0), Err(ProbeError::NotFound { .. })));
    let out = Command::new(PRODUCER).arg(&s.0).args(["--count", "3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "attach without --create must fail");
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert_eq!(finish(spawn(&s.0, &["--create", "--count", "3"])), 12);
    let mut r = Reader::open(&s.0, ReaderConfig::default()).unwrap();
    assert_eq!(r.poll_all(&mut |_| {}), 12);
    // The header names the app.
    assert!(r.drainer().mapping().header().app_pid.load(std::sync::atomic::Ordering::Relaxed) > 0);
}
