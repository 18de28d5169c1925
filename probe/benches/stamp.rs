//! Stamp cost in TSC ticks per operation, and reader throughput; every ratio from this one run.
//!
//! Method (as slick-perfmon's bench and perf.md §3-4): warm 2000 ops, then REPS reps of OPS ops timed with
//! a fenced TSC read around the loop; per case the minimum and the median of the reps. Cases run without
//! and with a collector thread draining concurrently (spinning). The slick-perfmon design is modelled
//! in-bench (perf.md §3: acquire-load of the ring pointer, `fetch_add` reservation on a packed 48/16-bit
//! counter, three field stores, relaxed size + release index publish into a 16-byte control slot).
//!
//! Run: `cargo bench -p wirestamp-probe --bench stamp`.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64};
use std::time::Instant;

use wirestamp_probe::layout::{kind, meta_lo};
use wirestamp_probe::reader::{Drainer, Reader, ReaderConfig};
use wirestamp_probe::tsc::{rdtsc, rdtsc_fenced};
use wirestamp_probe::writer::__stamp;
use wirestamp_probe::{AttachOptions, CreateOptions, Geometry, Producer, shm};

const WARM: u64 = 2000;
const OPS: u64 = 20_000;
const REPS: usize = 15;

/// (min, median) ticks per op of `op` over REPS reps.
fn measure(mut op: impl FnMut(u64)) -> (f64, f64) {
    for i in 0..WARM {
        op(i);
    }
    let mut v: Vec<f64> = (0..REPS)
        .map(|r| {
            let base = r as u64 * OPS;
            let t0 = rdtsc_fenced();
            for i in base..base + OPS {
                op(i);
            }
            (rdtsc_fenced() - t0) as f64 / OPS as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    (v[0], v[REPS / 2])
}

mod slick {
    //! The slick-perfmon stamp path as perf.md §3 describes it (a model, not the library).
    use super::*;

    #[repr(C, align(64))]
    pub struct Reserve(pub AtomicU64);
    #[repr(C, align(16))]
    pub struct Control {
        pub data_index: AtomicU64,
        pub size: AtomicU32,
    }
    #[repr(C, align(16))]
    pub struct Sample {
        pub ts: AtomicU64,
        pub point: AtomicU32,
        pub evt: AtomicU32,
    }
    pub struct Ring {
        pub reserved: Reserve,
        pub control: Box<[Control]>,
        pub data: Box<[Sample]>,
        pub mask: u64,
    }

    pub static RING: AtomicPtr<Ring> = AtomicPtr::new(std::ptr::null_mut());

    pub fn install(cap: usize) -> &'static Ring {
        let r = Box::leak(Box::new(Ring {
            reserved: Reserve(AtomicU64::new(0)),
            control: (0..cap)
                .map(|_| Control { data_index: AtomicU64::new(u64::MAX), size: AtomicU32::new(0) })
                .collect(),
            data: (0..cap)
                .map(|_| Sample { ts: AtomicU64::new(0), point: AtomicU32::new(0), evt: AtomicU32::new(0) })
                .collect(),
            mask: cap as u64 - 1,
        }));
        RING.store(r, Release);
        r
    }

    #[cold]
    fn wrapped() {
        black_box(0);
    }

    #[inline(always)]
    pub fn stamp<const FENCED: bool>(point: u32, evt: u32) {
        let r = RING.load(Acquire);
        if r.is_null() {
            return;
        }
        let ts = if FENCED { rdtsc_fenced() } else { rdtsc() };
        // SAFETY: installed once, leaked, never freed.
        let r = unsafe { &*r };
        let prev = r.reserved.0.fetch_add(1 << 16, Release);
        let (idx, prev_size) = (prev >> 16, prev & 0xffff);
        if prev_size > 1 || idx > (1 << 47) {
            wrapped();
        }
        let slot = (idx & r.mask) as usize;
        let s = &r.data[slot];
        s.ts.store(ts, Relaxed);
        s.point.store(point, Relaxed);
        s.evt.store(evt, Relaxed);
        r.control[slot].size.store(1, Relaxed);
        r.control[slot].data_index.store(idx, Release);
    }

    /// A collector that reads slots in order as they are published (spinning).
    pub fn collect(r: &Ring, stop: &AtomicBool, poll_1ms: bool) -> u64 {
        let (mut next, mut sum) = (0u64, 0u64);
        while !stop.load(Relaxed) {
            let c = &r.control[(next & r.mask) as usize];
            let idx = c.data_index.load(Acquire);
            if idx == u64::MAX || idx < next {
                if poll_1ms {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
            if idx > next {
                next = idx; // lapped: skip ahead
            }
            sum = sum.wrapping_add(r.data[(next & r.mask) as usize].ts.load(Relaxed));
            next += 1;
        }
        sum
    }
}

/// Runs `f` with a collector thread draining `session` concurrently (spinning), or without.
fn with_collector<R>(
    session: Option<&str>,
    slick_ring: Option<&'static slick::Ring>,
    poll_1ms: bool,
    f: impl FnOnce() -> R,
) -> R {
    let stop = Arc::new(AtomicBool::new(false));
    let h = if let Some(s) = session {
        let mut d = Drainer::open(s).unwrap();
        let stop = stop.clone();
        Some(std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Relaxed) {
                if poll_1ms {
                    while d.drain_all(&mut |r| n = n.wrapping_add(r.word0)) > 0 {}
                    std::thread::sleep(std::time::Duration::from_millis(1));
                } else if d.drain_all(&mut |r| n = n.wrapping_add(r.word0)) == 0 {
                    std::hint::spin_loop();
                }
            }
            n
        }))
    } else if let Some(r) = slick_ring {
        let stop = stop.clone();
        Some(std::thread::spawn(move || slick::collect(r, &stop, poll_1ms)))
    } else {
        None
    };
    // Let the collector start spinning.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let out = f();
    stop.store(true, Relaxed);
    if let Some(h) = h {
        black_box(h.join().unwrap());
    }
    out
}

fn row(name: &str, (min, med): (f64, f64), floor: Option<(f64, &str)>) {
    let ratio = floor.map_or(String::new(), |(f, what)| format!("{:>6.2}x {what}", med / f));
    println!("{name:<46} {min:>8.1} {med:>8.1}   {ratio}");
}

fn main() {
    let session = format!("wsp-bench-{}", std::process::id());
    struct Unlink(String);
    impl Drop for Unlink {
        fn drop(&mut self) {
            let _ = shm::unlink(&self.0);
        }
    }
    let _guard = Unlink(session.clone());
    let create = CreateOptions { geometry: Geometry { max_threads: 4, ring_capacity: 1 << 20 }, ..Default::default() };
    wirestamp_probe::attach(&session, &AttachOptions { create: Some(create) }).unwrap();
    wirestamp_probe::register_thread().unwrap();
    let slick_ring = slick::install(1 << 20);
    let invariant = wirestamp_probe::tsc::invariant_tsc();

    println!("wirestamp-probe stamp cost, TSC ticks per op ({REPS} reps x {OPS} ops; invariant TSC: {invariant})");
    println!("{:<46} {:>8} {:>8}   median ratio", "case", "min", "median");
    let bare = measure(|_| {
        black_box(rdtsc());
    });
    let bare_f = measure(|_| {
        black_box(rdtsc_fenced());
    });
    let empty = measure(|i| {
        black_box(i);
    });
    row("empty loop (harness floor, in every figure)", empty, None);
    row("bare rdtsc", bare, None);
    row("bare lfence;rdtsc;lfence", bare_f, None);
    let bare_p = measure(|_| {
        black_box(wirestamp_probe::tsc::rdtscp_lfence());
    });
    row("bare rdtscp;lfence", bare_p, None);

    let lo = meta_lo(1, 0, kind::BEGIN);
    let unf = |i: u64| __stamp::<true, false>(0, black_box(i), lo);
    let fen = |i: u64| __stamp::<true, true>(0, black_box(i), lo);
    let ours_u = measure(unf);
    let ours_f = measure(fen);
    let ours_u_c = with_collector(Some(&session), None, false, || measure(unf));
    let ours_f_c = with_collector(Some(&session), None, false, || measure(fen));
    let ours_u_p = with_collector(Some(&session), None, true, || measure(unf));
    let value = measure(|i| wirestamp_probe::value(2, black_box(i)));
    wirestamp_probe::set_enabled(false);
    let disabled = measure(|i| wirestamp_probe::begin(1, black_box(i)));
    wirestamp_probe::set_enabled(true);

    let sl_u = measure(|i| slick::stamp::<false>(1, black_box(i) as u32));
    let sl_f = measure(|i| slick::stamp::<true>(1, black_box(i) as u32));
    let sl_unf = |i: u64| slick::stamp::<false>(1, black_box(i) as u32);
    let sl_u_c = with_collector(None, Some(slick_ring), false, || measure(sl_unf));
    let sl_f_c =
        with_collector(None, Some(slick_ring), false, || measure(|i| slick::stamp::<true>(1, black_box(i) as u32)));
    let sl_u_p = with_collector(None, Some(slick_ring), true, || measure(sl_unf));

    // Amid app work: 8 stores (a 64-byte message written) before each stamp. A locked RMW must wait for
    // them to drain from the store buffer; plain stores do not.
    let mut buf = vec![0u64; 4096];
    let mut work = |i: u64| {
        let base = (i as usize * 8) & 4095;
        for (k, w) in buf[base..base + 8].iter_mut().enumerate() {
            *w = i + k as u64;
        }
        black_box(&buf[base]);
    };
    let work_only = measure(&mut work);
    let ours_w = measure(|i| {
        work(i);
        __stamp::<true, false>(0, black_box(i), lo)
    });
    let sl_w = measure(|i| {
        work(i);
        slick::stamp::<false>(1, black_box(i) as u32)
    });
    let net = |(a, b): (f64, f64)| (a - work_only.0, b - work_only.1);

    row("stamp, unfenced", ours_u, Some((bare.1, "bare rdtsc (goal <= 1.30)")));
    row("stamp, fenced", ours_f, Some((bare_f.1, "bare fenced (goal <= 1.15)")));
    row("stamp, unfenced, collector draining", ours_u_c, Some((ours_u.1, "no collector (goal <= 1.15)")));
    row("stamp, fenced, collector draining", ours_f_c, Some((ours_f.1, "no collector (goal <= 1.15)")));
    row("stamp, unfenced, collector polling every 1 ms", ours_u_p, Some((ours_u.1, "no collector")));
    row("value sample (goal <= 10 ticks)", value, None);
    row("runtime-disabled stamp (goal <= 1 tick)", disabled, None);
    row("slick model, unfenced", sl_u, Some((ours_u.1, "ours unfenced (goal >= 2)")));
    row("slick model, fenced", sl_f, Some((ours_f.1, "ours fenced")));
    row("slick model, unfenced, collector draining", sl_u_c, Some((ours_u_c.1, "ours, collector draining")));
    row("slick model, fenced, collector draining", sl_f_c, Some((ours_f_c.1, "ours, collector draining")));
    row("slick model, unfenced, collector polling 1 ms", sl_u_p, Some((ours_u_p.1, "ours, collector polling 1 ms")));
    row("app work alone (8 stores)", work_only, None);
    row("stamp, unfenced, amid app work (net of work)", net(ours_w), None);
    row("slick model, unfenced, amid app work (net)", net(sl_w), Some((net(ours_w).1, "ours amid app work")));
    wirestamp_probe::detach();

    // Reader throughput: 2 rings each filled with 3-stamp spans (begin, step, end) by Producer handles,
    // then drained, merged across rings, paired; records per second over 5 rounds.
    let rs = format!("wsp-bench-rd-{}", std::process::id());
    let _g2 = Unlink(rs.clone());
    let cap = 1u32 << 20;
    let map = shm::create(
        &rs,
        &CreateOptions { geometry: Geometry { max_threads: 2, ring_capacity: cap }, ..Default::default() },
    )
    .unwrap();
    let mut reader = Reader::open(&rs, ReaderConfig::default()).unwrap();
    let (mut a, mut b) = (Producer::new(&map).unwrap(), Producer::new(&map).unwrap());
    let per_ring = (cap as u64 - 2) / 3 * 3;
    let mut rates = Vec::new();
    let mut t = 1000u64;
    for round in 0..5u64 {
        for (k, p) in [&mut a, &mut b].into_iter().enumerate() {
            for i in 0..per_ring / 3 {
                let key = round << 40 | (k as u64) << 32 | i;
                p.raw(t, key, meta_lo(1, 0, kind::BEGIN));
                p.raw(t + 10, key, meta_lo(1, 1, kind::STEP));
                p.raw(t + 25, key, meta_lo(1, 255, kind::END));
                t += 30;
            }
        }
        let (mut spans, t0) = (0u64, Instant::now());
        let n = reader.poll_all(&mut |e| {
            if let wirestamp_probe::reader::Event::Total { .. } = e {
                spans += 1
            }
        });
        let dt = t0.elapsed().as_secs_f64();
        assert_eq!((n as u64, spans), (2 * per_ring, 2 * per_ring / 3));
        rates.push(n as f64 / dt / 1e6);
    }
    assert_eq!(reader.drain_counters().lost, 0);
    rates.sort_by(f64::total_cmp);
    println!(
        "reader: drained + merged + paired {} records/round over 2 rings: median {:.1} M records/s (min {:.1}, max {:.1}), lost 0 (goal >= 20)",
        2 * per_ring,
        rates[2],
        rates[0],
        rates[4]
    );
}
