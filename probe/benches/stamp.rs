//! Stamp cost in TSC ticks per operation, and reader throughput; every ratio from this one run.
//!
//! Method (as slick-perfmon's bench and perf.md §3-4): warm 2000 ops, then REPS reps of OPS ops timed with
//! a fenced TSC read around the loop; per case the minimum and the median of the reps (the ratio column
//! divides medians). Single-producer cases: the producer pinned to CPU 0, a collector (when there is one)
//! to CPU 1, spinning or polling every 1 ms. Two-producer cases: two threads pinned to CPU 0 and 1 stamp at
//! once, every rep started together by a spinning barrier; figures pool the reps of both threads, and
//! each thread's own median is shown; a collector there is left to the scheduler, so with 2 CPUs it shares
//! a core with a producer. Ours writes one SPSC ring per thread; the slick model one shared ring.
//!
//! The slick-perfmon design is modelled in-bench (module `slick`, each step of perf.md §3, checked
//! against slick-perfmon f485fd33 and slick-queue's `reserve`/`publish`/`read`): not the library, but
//! the same instruction sequence. Its "begin" stamps read the TSC as ours do (rdtsc, or
//! lfence;rdtsc;lfence), which is the like-for-like comparison; the span rows add what slick does on
//! step/end stamps (rdtscp even when unserialized).
//!
//! Figures, the run-to-run spread and what they mean: `probe/README.md`. This machine is a 2-vCPU VM:
//! one vCPU has been seen to run at 1.8x the other's cost per rdtsc whenever both are busy (the host's
//! doing), which the "2 producers, bare rdtsc" row shows; read the two-producer rows against it.
//!
//! Run: `cargo bench -p wirestamp-probe --bench stamp` (on a quiet machine: other builds move every row).

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

/// Ticks per op of `op` for each of REPS reps (after WARM ops), `sync` called before the warm-up and
/// before each rep (the two-producer cases start every rep together through it).
#[inline(never)]
fn reps(mut op: impl FnMut(u64), mut sync: impl FnMut()) -> Vec<f64> {
    sync();
    for i in 0..WARM {
        op(i);
    }
    (0..REPS)
        .map(|r| {
            sync();
            let base = r as u64 * OPS;
            let t0 = rdtsc_fenced();
            for i in base..base + OPS {
                op(i);
            }
            (rdtsc_fenced() - t0) as f64 / OPS as f64
        })
        .collect()
}

/// (min, median) of per-rep figures.
fn summary(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

/// (min, median) ticks per op of `op` over REPS reps.
fn measure(op: impl FnMut(u64)) -> (f64, f64) {
    summary(reps(op, || {}))
}

/// Pins the calling thread to `cpu`, or to every CPU with `None`; false if the kernel refused.
fn pin(cpu: Option<usize>) -> bool {
    // SAFETY: cpu_set_t is plain data (all-zero is the empty set); pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        match cpu {
            Some(c) => libc::CPU_SET(c, &mut set),
            None => (0..libc::CPU_SETSIZE as usize).for_each(|c| libc::CPU_SET(c, &mut set)),
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Two producer threads, pinned to CPU 0 and CPU 1, run `op` at the same time; a spinning barrier starts
/// the warm-up and every rep of both together (untimed). Returns (min, median) ticks per op over the
/// 2 x REPS reps of both threads pooled, and each thread's own median. Each thread has its own wirestamp
/// ring (registered before the warm-up).
fn two_producers(op: impl Fn(u64) + Sync) -> ((f64, f64), [f64; 2]) {
    let arrived = AtomicU64::new(0);
    let per: Vec<Vec<f64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2u64)
            .map(|t| {
                let (op, arrived) = (&op, &arrived);
                s.spawn(move || {
                    pin(Some(t as usize));
                    wirestamp_probe::register_thread().unwrap();
                    let mut round = 0;
                    let sync = || {
                        round += 1;
                        arrived.fetch_add(1, Relaxed);
                        while arrived.load(Acquire) < 2 * round {
                            std::hint::spin_loop();
                        }
                    };
                    reps(|i| op(t << 40 | i), sync)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let each = [summary(per[0].clone()).1, summary(per[1].clone()).1];
    (summary(per.concat()), each)
}

mod slick {
    //! The slick-perfmon stamp path as perf.md §3 describes it (a model, not the library), step by step:
    //! slick-perfmon f485fd33 `stamp()` / `stamp_into()` over slick-queue 2.1 `reserve()` / `publish()`,
    //! traits `enable_read_last = false` (no CAS in publish), local (in-process) ring.
    //!
    //! ```text
    //! stamp:   q = g_hot.ring.load(acquire); if q == null return       (g_hot: its own cache line)
    //!          t = rdtsc                                               (unfenced; fenced: lfence;rdtsc;lfence)
    //! reserve: if n > q.size_ throw                                    (n == 0 folds away: n is the constant 1)
    //!          prev = q.reserved_->fetch_add(1 << 16, release)         (48-bit index | 16-bit size, own line)
    //!          if size(prev) != n: CAS the size field to n             (only the very first reserve)
    //! store:   data_[i & mask_] = {ts u64, point u32, event u32}       (3 relaxed stores, 16-byte sample)
    //! publish: control_[i & mask_].size = n (relaxed); .data_index = i (release)   (16-byte control slot)
    //! ```
    use super::*;

    /// The reservation counter: `alignas(cacheline_size) std::atomic<reserved_info> reserved_local_`.
    #[repr(C, align(64))]
    pub struct Reserve(pub AtomicU64);
    /// slick-queue's `slot` (16 bytes): the control word a reader acquires.
    #[repr(C, align(16))]
    pub struct Control {
        pub data_index: AtomicU64,
        pub size: AtomicU32,
    }
    /// slick-perfmon's `sample` (`alignas(16)`, 16 bytes).
    #[repr(C, align(16))]
    pub struct Sample {
        pub ts: AtomicU64,
        pub point: AtomicU32,
        pub evt: AtomicU32,
    }
    /// `SlickQueue<sample>`: the read-only members share the first line, the counter sits alone in the next,
    /// and the hot path reaches it, the data and the control array through pointers, as the C++ does.
    #[repr(C)]
    pub struct Queue {
        size: u32,
        mask: u32,
        data: *const Sample,
        control: *const Control,
        reserved: *const AtomicU64,
        reserved_local: Reserve,
    }
    // SAFETY: the pointers are set once before the queue is published and point to leaked, never-freed
    // arrays of atomics; every shared access goes through those atomics.
    unsafe impl Sync for Queue {}

    /// `g_hot`: one cache-aligned atomic pointer that is both the ring and the on/off switch.
    #[repr(C, align(64))]
    pub struct Hot(AtomicPtr<Queue>);
    pub static RING: Hot = Hot(AtomicPtr::new(std::ptr::null_mut()));

    pub const INVALID: u64 = u64::MAX;

    pub fn install(cap: u32) -> &'static Queue {
        let control: &'static [Control] = Box::leak(
            (0..cap).map(|_| Control { data_index: AtomicU64::new(INVALID), size: AtomicU32::new(1) }).collect(),
        );
        let data: &'static [Sample] = Box::leak(
            (0..cap)
                .map(|_| Sample { ts: AtomicU64::new(0), point: AtomicU32::new(0), evt: AtomicU32::new(0) })
                .collect(),
        );
        let q = Box::leak(Box::new(Queue {
            size: cap,
            mask: cap - 1,
            data: data.as_ptr(),
            control: control.as_ptr(),
            reserved: std::ptr::null(),
            reserved_local: Reserve(AtomicU64::new(0)),
        }));
        q.reserved = &q.reserved_local.0;
        RING.0.store(q, Release);
        q
    }

    impl Queue {
        fn reserved(&self) -> &AtomicU64 {
            // SAFETY: points to self.reserved_local (the queue is leaked, so it never moves or dies).
            unsafe { &*self.reserved }
        }
        pub fn control(&self, i: u64) -> &Control {
            // SAFETY: masked index into the leaked control array of mask+1 slots.
            unsafe { &*self.control.add((i & self.mask as u64) as usize) }
        }
        pub fn data(&self, i: u64) -> &Sample {
            // SAFETY: masked index into the leaked data array of mask+1 samples.
            unsafe { &*self.data.add((i & self.mask as u64) as usize) }
        }
    }

    #[cold]
    #[inline(never)]
    fn too_big() {
        panic!("reserve: n > size");
    }

    /// `reserve(n)` with n = 1 (the stamp's call): the single-slot fast path.
    #[inline(always)]
    fn reserve(q: &Queue) -> u64 {
        const N: u64 = 1;
        if N > q.size as u64 {
            too_big();
        }
        let prev = q.reserved().fetch_add(N << 16, Release);
        let (index, prev_size) = (prev >> 16, prev & 0xffff);
        if prev_size != N {
            fix_size(q, index, prev_size);
        }
        index
    }

    /// slick's `prev_size != n` branch: a CAS writing the size field (taken once, by the first reserve).
    #[cold]
    #[inline(never)]
    fn fix_size(q: &Queue, index: u64, prev_size: u64) {
        let expected = ((index + 1) & 0xffff_ffff_ffff) << 16 | prev_size;
        let _ = q.reserved().compare_exchange(expected, ((index + 1) & 0xffff_ffff_ffff) << 16 | 1, Release, Relaxed);
    }

    /// One stamp. `STEP`: a step/end stamp, whose TSC read slick makes `rdtscp` (unfenced) or
    /// `rdtscp; lfence` (fenced); otherwise a begin stamp, `rdtsc` or `lfence; rdtsc; lfence`.
    #[inline(always)]
    pub fn stamp_as<const FENCED: bool, const STEP: bool>(point: u32, evt: u32) {
        let q = RING.0.load(Acquire);
        if q.is_null() {
            return;
        }
        // SAFETY: installed once, leaked, never freed.
        let q = unsafe { &*q };
        let ts = match (STEP, FENCED) {
            (false, false) => rdtsc(),
            (false, true) => rdtsc_fenced(),
            (true, false) => rdtscp(),
            (true, true) => wirestamp_probe::tsc::rdtscp_lfence(),
        };
        let i = reserve(q);
        let s = q.data(i);
        s.ts.store(ts, Relaxed);
        s.point.store(point, Relaxed);
        s.evt.store(evt, Relaxed);
        let c = q.control(i);
        c.size.store(1, Relaxed);
        c.data_index.store(i, Release);
    }

    /// Stamp `i` of back-to-back spans of N stamps: a begin (`rdtsc`) then N - 1 steps/end (`rdtscp`).
    #[inline(always)]
    pub fn span<const N: u64>(i: u64) {
        if i.is_multiple_of(N) {
            stamp_as::<false, false>(1, black_box(i) as u32)
        } else {
            stamp_as::<false, true>(1, black_box(i) as u32)
        }
    }

    /// A begin stamp (the cheapest slick stamp: `rdtsc`, or `lfence; rdtsc; lfence`).
    #[inline(always)]
    pub fn stamp<const FENCED: bool>(point: u32, evt: u32) {
        stamp_as::<FENCED, false>(point, evt)
    }

    #[inline(always)]
    fn rdtscp() -> u64 {
        let mut aux = 0u32;
        // SAFETY: rdtscp has no memory effects beyond writing `aux`.
        unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
    }

    /// The collector: slick-queue `read(read_index)` in a loop (acquire the slot's index, skip a lap,
    /// seqlock re-check of the index around the size load, snapshot the 16-byte sample), then sleep 1 ms
    /// when the ring is empty (`poll_1ms`, slick's default poll interval) or spin (poll interval 0).
    pub fn collect(q: &Queue, stop: &AtomicBool, poll_1ms: bool) -> u64 {
        let (mut next, mut sum, mut lost) = (0u64, 0u64, 0u64);
        while !stop.load(Relaxed) {
            let c = q.control(next);
            let idx = c.data_index.load(Acquire);
            if idx == INVALID || idx < next {
                if poll_1ms {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
            if idx > next {
                lost += idx - next; // lapped (loss detection): skip ahead
                next = idx;
                continue;
            }
            let sz = c.size.load(Relaxed);
            std::sync::atomic::fence(Acquire);
            if c.data_index.load(Relaxed) != idx {
                continue;
            }
            let s = q.data(idx);
            let (ts, p, e) = (s.ts.load(Relaxed), s.point.load(Relaxed), s.evt.load(Relaxed));
            sum = sum.wrapping_add(ts ^ (p as u64) ^ (e as u64));
            next = idx + sz as u64;
        }
        sum.wrapping_add(lost)
    }
}

/// Which collector runs while `f` is measured.
#[derive(Clone, Copy, PartialEq)]
enum Collector {
    None,
    /// Spinning (poll interval 0).
    Spin,
    /// Drain what is there, then sleep 1 ms (slick-perfmon's default poll interval).
    Poll1ms,
}

/// Whose ring a collector drains.
#[derive(Clone, Copy)]
enum Target<'a> {
    /// Every ring of our session.
    Ours(&'a str),
    /// The slick model's shared ring.
    Slick(&'static slick::Queue),
}

/// Runs `f` with collector `c` draining `t` concurrently, pinned to `cpu` (`None`: left to the scheduler).
fn with_collector<R>(c: Collector, t: Target, cpu: Option<usize>, f: impl FnOnce() -> R) -> R {
    if c == Collector::None {
        return f();
    }
    let poll_1ms = c == Collector::Poll1ms;
    let stop = Arc::new(AtomicBool::new(false));
    let h = match t {
        Target::Ours(session) => {
            let mut d = Drainer::open(session).unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin(cpu);
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
            })
        }
        Target::Slick(q) => {
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin(cpu);
                slick::collect(q, &stop, poll_1ms)
            })
        }
    };
    // Let the collector start.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let out = f();
    stop.store(true, Relaxed);
    black_box(h.join().unwrap());
    out
}

/// One producer (the calling thread) with collector `c` on `cpu`.
fn one(c: Collector, t: Target, cpu: Option<usize>, op: impl Fn(u64)) -> (f64, f64) {
    with_collector(c, t, cpu, || measure(op))
}

/// Two producers (CPU 0 and 1) with collector `c` left to the scheduler.
fn two(c: Collector, t: Target, op: impl Fn(u64) + Sync) -> ((f64, f64), [f64; 2]) {
    with_collector(c, t, None, || two_producers(op))
}

fn row(name: &str, (min, med): (f64, f64), floor: Option<(f64, &str)>) {
    let ratio = floor.map_or(String::new(), |(f, what)| format!("{:>6.2}x {what}", med / f));
    println!("{name:<56} {min:>8.1} {med:>8.1}   {ratio}");
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
    let slick_ring = slick::install(1 << 20);
    let invariant = wirestamp_probe::tsc::invariant_tsc();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Single-producer cases: the producer on CPU 0, a collector on CPU 1 (when there is one).
    let pinned = pin(Some(0));
    let ccpu = (cpus > 1).then_some(1);
    wirestamp_probe::register_thread().unwrap();

    println!(
        "wirestamp-probe stamp cost, TSC ticks per op ({REPS} reps x {OPS} ops; invariant TSC: {invariant}; \
         {cpus} CPUs; producer pinned to CPU 0: {pinned})"
    );
    println!("{:<56} {:>8} {:>8}   median ratio", "case", "min", "median");
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
    let (ot, st) = (Target::Ours(&session), Target::Slick(slick_ring));
    let ours_u = one(Collector::None, ot, ccpu, unf);
    let ours_f = one(Collector::None, ot, ccpu, fen);
    let ours_u_c = one(Collector::Spin, ot, ccpu, unf);
    let ours_f_c = one(Collector::Spin, ot, ccpu, fen);
    let ours_u_p = one(Collector::Poll1ms, ot, ccpu, unf);
    let value = measure(|i| wirestamp_probe::value(2, black_box(i)));
    wirestamp_probe::set_enabled(false);
    let disabled = measure(|i| wirestamp_probe::begin(1, black_box(i)));
    wirestamp_probe::set_enabled(true);

    let sl_unf = |i: u64| slick::stamp::<false>(1, black_box(i) as u32);
    let sl_fen = |i: u64| slick::stamp::<true>(1, black_box(i) as u32);
    // slick's spans of n stamps (begin, steps, end): step and end stamps read the TSC with rdtscp even
    // unfenced (SLICK_PERFMON_SERIALIZE=0); begin stamps with rdtsc.
    let sl_u = one(Collector::None, st, ccpu, sl_unf);
    let sl_f = one(Collector::None, st, ccpu, sl_fen);
    let sl_pair_u = one(Collector::None, st, ccpu, slick::span::<2>);
    let sl_span6_u = one(Collector::None, st, ccpu, slick::span::<6>);
    let sl_u_c = one(Collector::Spin, st, ccpu, sl_unf);
    let sl_f_c = one(Collector::Spin, st, ccpu, sl_fen);
    let sl_u_p = one(Collector::Poll1ms, st, ccpu, sl_unf);

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
    row("slick model, unfenced / bare rdtsc", sl_u, Some((bare.1, "bare rdtsc (2x cheaper needs >= 2)")));
    row("slick model, fenced", sl_f, Some((ours_f.1, "ours fenced")));
    row("slick model, unfenced begin/end (rdtsc, rdtscp)", sl_pair_u, Some((ours_u.1, "ours unfenced")));
    row("slick model, unfenced 6-stamp span (rdtsc, 5 rdtscp)", sl_span6_u, Some((ours_u.1, "ours unfenced")));
    row("slick model, unfenced, collector draining", sl_u_c, Some((ours_u_c.1, "ours, collector draining")));
    row("slick model, fenced, collector draining", sl_f_c, Some((ours_f_c.1, "ours, collector draining")));
    row("slick model, unfenced, collector polling 1 ms", sl_u_p, Some((ours_u_p.1, "ours, collector polling 1 ms")));
    row("app work alone (8 stores)", work_only, None);
    row("stamp, unfenced, amid app work (net of work)", net(ours_w), None);
    row("slick model, unfenced, amid app work (net)", net(sl_w), Some((net(ours_w).1, "ours amid app work")));

    // Two producers at once (CPU 0 and 1): ours writes one ring per thread, slick's shares one ring and
    // its fetch_add counter. A collector, when there is one, is left to the scheduler: with 2 CPUs it
    // shares a core with a producer.
    if cpus >= 2 {
        let each = |e: [f64; 2]| format!("(per thread {:.1} / {:.1})", e[0], e[1]);
        let cases = [
            (Collector::None, "no collector"),
            (Collector::Poll1ms, "collector 1 ms"),
            (Collector::Spin, "collector spinning"),
        ];
        // The floor for these rows, measured the same way: both CPUs reading the TSC at once. It also
        // shows when one CPU runs slower than the other (the host's doing: this is a VM).
        let (b, be) = two(Collector::None, ot, |_| {
            black_box(rdtsc());
        });
        row("2 producers, bare rdtsc", b, Some((bare.1, &format!("bare rdtsc, 1 thread {}", each(be)))));
        for (c, what) in cases {
            let (o, oe) = two(c, ot, unf);
            let (s, se) = two(c, st, sl_unf);
            row(
                &format!("2 producers, stamp, unfenced, {what}"),
                o,
                Some((b.1, &format!("2 producers, bare rdtsc {}", each(oe)))),
            );
            row(
                &format!("2 producers, slick model, unfenced, {what}"),
                s,
                Some((o.1, &format!("ours, same case {}", each(se)))),
            );
        }
        let (o, oe) = two(Collector::None, ot, fen);
        let (s, se) = two(Collector::None, st, sl_fen);
        row("2 producers, stamp, fenced, no collector", o, Some((bare_f.1, &format!("bare fenced {}", each(oe)))));
        row("2 producers, slick model, fenced, no collector", s, Some((o.1, &format!("ours, same case {}", each(se)))));
    }
    pin(None);
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
