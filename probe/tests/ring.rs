//! Writer -> shared memory -> reader, in one process: layout, loss accounting, spans, corruption.

mod common;

use common::{Session, record_offset, ring_offset};
use wirestamp_probe::layout::{END_STAGE, kind, meta, meta_lo};
use wirestamp_probe::reader::{DrainCounters, Drainer, Event, RawRecord, Reader, ReaderConfig};
use wirestamp_probe::{Geometry, ProbeError, Producer, shm};

fn drain_all(d: &mut Drainer) -> Vec<RawRecord> {
    let mut v = Vec::new();
    while d.drain_all(&mut |r| v.push(r)) > 0 {}
    v
}

#[test]
fn records_land_at_the_documented_offsets() {
    let (s, m) = Session::create("layout", 2, 4);
    let g = Geometry { max_threads: 2, ring_capacity: 4 };
    let mut p = Producer::new(&m).unwrap();
    assert_eq!(p.ring_index(), 0);
    p.raw(0x1111, 0x2222, meta_lo(7, 3, kind::STEP));
    p.value(9, 77);
    drop(p);
    let bytes = std::fs::read(s.path()).unwrap();
    let at = |off: u64| u64::from_le_bytes(bytes[off as usize..off as usize + 8].try_into().unwrap());
    // Header: magic "WSPROBE\0", version 1, geometry.
    assert_eq!(&bytes[0..8], b"WSPROBE\0");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 1);
    assert_eq!(at(16), 20480 + 2 * 320);
    // Ring 0 head = 2 (records published), slot 0 = {0x1111, 0x2222, point 7 | stage 3 | kind 2 | index 0}.
    assert_eq!(at(ring_offset(g, 0)), 2);
    let r0 = record_offset(g, 0, 0);
    assert_eq!((at(r0), at(r0 + 8), at(r0 + 16)), (0x1111, 0x2222, 0x0000_0000_0203_0007));
    // Slot 1: value 77 on point 9, kind 4, index 1.
    let r1 = record_offset(g, 0, 1);
    assert_eq!((at(r1), at(r1 + 16)), (77, 0x0000_0001_0400_0009));
    // The slot was released on drop: state word FREE with generation 1.
    assert_eq!(at(ring_offset(g, 0) + 64), 1 << 32);
}

#[test]
fn overwrites_are_counted_exactly() {
    // Ring of 8; the producer writes 20 records before the reader looks. The reader keeps only records
    // it can prove intact: the producer may already be rewriting slot 20 & 7 (record 12), so 13..=19.
    let (_s, m) = Session::create("overwrite", 1, 8);
    let mut p = Producer::new(&m).unwrap();
    for i in 0..20u64 {
        p.raw(1000 + i, i, meta_lo(1, 0, kind::VALUE));
    }
    let mut d = Drainer::open(m.name()).unwrap();
    let got = drain_all(&mut d);
    assert_eq!(got.iter().map(|r| r.index).collect::<Vec<_>>(), (13..20).collect::<Vec<u64>>());
    assert_eq!(got[0].word0, 1013);
    assert_eq!(d.counters.lost, 13);
    assert_eq!(d.counters.delivered + d.counters.lost, 20);
    // Then it keeps up: 5 more, all delivered.
    for i in 20..25u64 {
        p.raw(1000 + i, i, meta_lo(1, 0, kind::VALUE));
    }
    assert_eq!(drain_all(&mut d).len(), 5);
    assert_eq!(d.counters, DrainCounters { delivered: 12, lost: 13, ..Default::default() });
}

#[test]
fn spans_across_rings_pair_in_tsc_order() {
    // Span begun on ring 0 and ended on ring 1 (another thread); the end's ring is drained first by a
    // naive reader, the merge must still see begin (t=100) before step (t=150) before end (t=200).
    let (_s, m) = Session::create("xring", 2, 64);
    let mut a = Producer::new(&m).unwrap();
    let mut b = Producer::new(&m).unwrap();
    a.raw(100, 42, meta_lo(3, 0, kind::BEGIN));
    b.raw(150, 42, meta_lo(3, 1, kind::STEP));
    a.raw(160, 0, meta_lo(5, 0, kind::VALUE)); // value 160 on point 5: no TSC, ordered at ring 0's 100
    b.raw(200, 42, meta_lo(3, END_STAGE, kind::END));
    b.raw(9001, 42, meta_lo(0, 0, kind::LINK));
    let mut r = Reader::open(m.name(), ReaderConfig::default()).unwrap();
    let mut ev = Vec::new();
    assert_eq!(r.poll_all(&mut |e| ev.push(e)), 5);
    assert_eq!(
        ev,
        vec![
            Event::Value { point: 5, value: 160 },
            Event::Interval { point: 3, from_stage: 0, stage: 1, key: 42, start_tsc: 100, end_tsc: 150 },
            Event::Interval { point: 3, from_stage: 1, stage: END_STAGE, key: 42, start_tsc: 150, end_tsc: 200 },
            Event::Total { point: 3, key: 42, begin_tsc: 100, end_tsc: 200 },
            Event::Link { tick_key: 42, order_key: 9001 },
        ]
    );
    assert_eq!(r.spans().counters(3), Default::default());
    // The reader's position is persisted: a second reader has nothing left to read.
    let mut r2 = Reader::open(m.name(), ReaderConfig::default()).unwrap();
    assert_eq!(r2.poll_all(&mut |_| {}), 0);
}

#[test]
fn a_restarted_reader_resumes_where_the_first_stopped() {
    let (_s, m) = Session::create("resume", 1, 64);
    let mut p = Producer::new(&m).unwrap();
    for i in 0..10u64 {
        p.raw(i, i, meta_lo(1, 0, kind::VALUE));
    }
    {
        let mut r = Reader::open(m.name(), ReaderConfig::default()).unwrap();
        assert_eq!(r.poll_all(&mut |_| {}), 10);
    }
    for i in 10..15u64 {
        p.raw(i, i, meta_lo(1, 0, kind::VALUE));
    }
    let mut r = Reader::open(m.name(), ReaderConfig::default()).unwrap();
    let mut vals = Vec::new();
    r.poll_all(&mut |e| {
        if let Event::Value { value, .. } = e {
            vals.push(value)
        }
    });
    assert_eq!(vals, vec![10, 11, 12, 13, 14]);
    assert_eq!(r.drain_counters().lost, 0);
}

#[test]
fn garbage_records_are_counted_and_never_delivered() {
    let (s, m) = Session::create("garbage", 1, 16);
    let g = Geometry { max_threads: 1, ring_capacity: 16 };
    let mut p = Producer::new(&m).unwrap();
    for i in 0..6u64 {
        p.raw(i, i, meta_lo(1, 0, kind::VALUE));
    }
    // Record 2: commit word claims index 7; record 4: unknown kind 0x9 with the right index.
    s.poke(record_offset(g, 0, 2) + 16, &meta(1, 0, kind::VALUE, 7).to_le_bytes());
    s.poke(record_offset(g, 0, 4) + 16, &meta(1, 0, 9, 4).to_le_bytes());
    let mut d = Drainer::open(m.name()).unwrap();
    let got: Vec<u64> = drain_all(&mut d).iter().map(|r| r.index).collect();
    assert_eq!(got, vec![0, 1, 3, 5]);
    assert_eq!(d.counters.corrupt_records, 2);
    // Garbage in the header's geometry after the reader validated it changes nothing (it is not re-read).
    s.poke(24, &u32::MAX.to_le_bytes());
    s.poke(28, &(1u32 << 27).to_le_bytes());
    p.raw(6, 6, meta_lo(1, 0, kind::VALUE));
    assert_eq!(drain_all(&mut d).iter().map(|r| r.index).collect::<Vec<_>>(), vec![6]);
    // A head that went backwards (garbage in the ring header) is a resync, not a crash.
    s.poke(ring_offset(g, 0), &3u64.to_le_bytes());
    assert_eq!(drain_all(&mut d).len(), 0);
    assert_eq!(d.counters.ring_resyncs, 1);
    // And one absurdly far ahead.
    s.poke(ring_offset(g, 0), &u64::MAX.to_le_bytes());
    assert_eq!(drain_all(&mut d).len(), 0);
    assert_eq!((d.counters.ring_resyncs, d.counters.lost), (2, 0));
}

#[test]
fn corrupted_headers_are_refused_with_clear_errors() {
    let (s, m) = Session::create("hdr", 1, 4);
    drop(m);
    s.poke(8, &2u32.to_le_bytes());
    match shm::open(&s.0) {
        Err(e @ ProbeError::VersionMismatch { found: 2, expected: 1, .. }) => {
            assert!(e.to_string().contains("layout version 2, this build reads version 1"), "{e}")
        }
        other => panic!("expected a version mismatch, got {other:?}"),
    }
    s.poke(8, &1u32.to_le_bytes());
    s.poke(28, &6u32.to_le_bytes()); // ring_capacity 6: not a power of two
    match shm::open(&s.0) {
        Err(e @ ProbeError::Corrupt { .. }) => assert!(e.to_string().contains("ring_capacity 6"), "{e}"),
        other => panic!("expected corrupt, got {other:?}"),
    }
    s.poke(28, &4u32.to_le_bytes());
    s.poke(32, &32u32.to_le_bytes()); // record_size
    assert!(matches!(shm::open(&s.0), Err(ProbeError::Corrupt { field: "record_size", offset: 32, found: 32, .. })));
    s.poke(0, b"GARBAGE!");
    assert!(matches!(shm::open(&s.0), Err(ProbeError::BadMagic { .. })));
    // A file too short to hold a header.
    std::fs::OpenOptions::new().write(true).open(s.path()).unwrap().set_len(100).unwrap();
    assert!(matches!(shm::open(&s.0), Err(ProbeError::Corrupt { field: "file size", .. })));
}

#[test]
fn a_dead_producers_unpublished_record_is_recovered_and_counted() {
    let (s, m) = Session::create("dead", 1, 16);
    let g = Geometry { max_threads: 1, ring_capacity: 16 };
    let mut p = Producer::new(&m).unwrap();
    p.raw(10, 1, meta_lo(1, 0, kind::BEGIN));
    p.leak(); // the slot stays ACTIVE, as when a process is killed
    // The producer "died" after writing record 1 completely (commit word last) but before the head store.
    s.poke(record_offset(g, 0, 1), &20u64.to_le_bytes());
    s.poke(record_offset(g, 0, 1) + 8, &1u64.to_le_bytes());
    s.poke(record_offset(g, 0, 1) + 16, &meta(1, END_STAGE, kind::END, 1).to_le_bytes());
    // ... and its pid is one that no longer exists.
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    s.poke(ring_offset(g, 0) + 72, &dead.to_le_bytes());
    s.poke(ring_offset(g, 0) + 76, &dead.to_le_bytes());
    let mut r = Reader::open(m.name(), ReaderConfig::default()).unwrap();
    let mut ev = Vec::new();
    r.poll_all(&mut |e| ev.push(e));
    assert!(ev.contains(&Event::Total { point: 1, key: 1, begin_tsc: 10, end_tsc: 20 }), "{ev:?}");
    let c = r.drain_counters();
    assert_eq!((c.producers_gone, c.died_mid_write, c.delivered, c.lost), (1, 1, 2, 0));
    // The slot is free again and the head continues after the recovered record.
    let mut p2 = Producer::new(&m).unwrap();
    assert_eq!((p2.ring_index(), p2.head()), (0, 2));
    p2.raw(30, 0, meta_lo(2, 0, kind::VALUE));
    assert_eq!(r.poll_all(&mut |_| {}), 1);
}

#[test]
fn thread_exit_frees_the_slot_for_the_next_thread() {
    let (_s, m) = Session::create("reuse", 1, 16);
    std::thread::scope(|sc| {
        sc.spawn(|| Producer::new(&m).unwrap().raw(1, 1, meta_lo(1, 0, kind::VALUE)));
    });
    let p = Producer::new(&m).unwrap();
    assert_eq!(p.head(), 1);
    assert!(matches!(Producer::new(&m), Err(ProbeError::NoFreeSlot { max_threads: 1 })));
}

#[test]
fn random_garbage_over_every_ring_never_crashes_the_reader() {
    // Deterministic xorshift garbage over the whole ring area (ring headers, slot states, pids, records)
    // of a segment with a valid header: the reader must count and skip, never panic or deliver garbage.
    for seed in [1u64, 0x9e37_79b9_7f4a_7c15, 42] {
        let (s, m) = Session::create("fuzz", 4, 64);
        let g = Geometry { max_threads: 4, ring_capacity: 64 };
        let len = (g.segment_size() - ring_offset(g, 0)) as usize;
        let mut x = seed;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        s.poke(ring_offset(g, 0), &bytes);
        let mut r = Reader::open(m.name(), ReaderConfig::default()).unwrap();
        let n = r.poll_all(&mut |_| {});
        let c = r.drain_counters();
        assert_eq!((n, c.delivered), (0, 0), "{c:?}");
        assert!(c.corrupt_records + c.ring_resyncs + c.bad_slot_states > 0, "{c:?}");
    }
}

/// An app restarted on the same segment publishes its names again: the table does not grow (it
/// filled after about a hundred restarts, and every name published after that was refused). A
/// renamed point takes a new entry, which readers take over the older.
#[test]
fn names_published_again_take_no_new_entry() {
    let (_s, m) = Session::create("names", 2, 64);
    for _ in 0..1_000 {
        shm::publish_name(&m, 7, None, "tick_to_trade").unwrap();
        shm::publish_name(&m, 7, Some(1), "decode").unwrap();
    }
    let mut names = shm::read_names(&m);
    names.sort();
    assert_eq!(names, [(7, None, "tick_to_trade".to_owned()), (7, Some(1), "decode".to_owned())]);
    shm::publish_name(&m, 7, None, "t2t").unwrap();
    shm::publish_name(&m, 7, None, "t2t").unwrap();
    let points: Vec<String> = shm::read_names(&m).into_iter().filter(|n| n.1.is_none()).map(|n| n.2).collect();
    assert_eq!(points, ["tick_to_trade", "t2t"]);
    // Distinct names still fill the table, and say so.
    let err = (0..300u16).map(|p| shm::publish_name(&m, 100 + p, None, "x")).find_map(Result::err);
    assert!(matches!(err, Some(ProbeError::NameTableFull)), "{err:?}");
}
