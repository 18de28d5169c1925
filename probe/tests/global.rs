//! The process-wide API (`attach`, `begin`/`step`/`end`, ...) with real threads: spans that start on one
//! thread and end on another, runtime disable, slot exhaustion counted, slots released at thread exit.
//! One test per binary: the session is process-wide.

mod common;

use std::sync::{Arc, Barrier, mpsc};

use common::Session;
use wirestamp_probe::reader::{Event, Reader, ReaderConfig};
use wirestamp_probe::{AttachOptions, CreateOptions, Geometry, Producer};

#[test]
fn global_api_across_threads() {
    let s = Session::new("global");
    let create = CreateOptions { geometry: Geometry { max_threads: 2, ring_capacity: 1 << 12 }, ..Default::default() };
    wirestamp_probe::attach(&s.0, &AttachOptions { create: Some(create) }).unwrap();
    assert!(wirestamp_probe::enabled());
    let mut r = Reader::open(&s.0, ReaderConfig::default()).unwrap();

    // Thread A begins 1000 spans and hands the keys to thread B, which steps and ends them.
    let (tx, rx) = mpsc::channel::<u64>();
    let a = std::thread::spawn(move || {
        for k in 0..1000u64 {
            wirestamp_probe::begin(7, k << 8);
            tx.send(k << 8).unwrap();
        }
    });
    let b = std::thread::spawn(move || {
        for k in rx {
            wirestamp_probe::step(7, 1, k);
            wirestamp_probe::end(7, k);
        }
    });
    a.join().unwrap();
    b.join().unwrap();
    let (mut totals, mut intervals) = (0, 0);
    r.poll_all(&mut |e| match e {
        Event::Total { point: 7, .. } => totals += 1,
        Event::Interval { point: 7, .. } => intervals += 1,
        other => panic!("unexpected {other:?}"),
    });
    assert_eq!((totals, intervals), (1000, 2000));
    assert_eq!(r.spans().counters(7), Default::default());

    // Both threads exited: both rings are free again (two explicit producers can claim them).
    let m = wirestamp_probe::writer::session().unwrap();
    let (p1, p2) = (Producer::new(m).unwrap(), Producer::new(m).unwrap());
    drop((p1, p2));

    // Disabled at run time: nothing recorded.
    wirestamp_probe::set_enabled(false);
    std::thread::spawn(|| wirestamp_probe::value(3, 1)).join().unwrap();
    wirestamp_probe::set_enabled(true);
    assert_eq!(r.poll_all(&mut |_| {}), 0);

    // Three threads stamp at once with two rings: the third thread's stamps are dropped and counted.
    let barrier = Arc::new(Barrier::new(3));
    let hs: Vec<_> = (0..3u64)
        .map(|t| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let got = wirestamp_probe::register_thread().is_ok();
                barrier.wait(); // everyone has tried to claim a ring before anyone exits
                for i in 0..10 {
                    wirestamp_probe::value(10 + t as u16, i);
                }
                barrier.wait(); // and nobody exits (freeing its ring) before everyone has stamped
                got
            })
        })
        .collect();
    let claimed = hs.into_iter().map(|h| h.join().unwrap()).filter(|&g| g).count();
    assert_eq!(claimed, 2);
    let mut values = 0;
    r.poll_all(&mut |e| {
        if let Event::Value { .. } = e {
            values += 1
        }
    });
    assert_eq!(values, 20);
    assert_eq!(r.drain_counters().no_slot_drops, 10);
    wirestamp_probe::detach();
    assert!(!wirestamp_probe::enabled());
}
