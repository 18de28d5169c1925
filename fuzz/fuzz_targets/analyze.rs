#![no_main]
//! Any sequence of frames through dissection, the trailer check and the analyzer: no panic, every
//! frame counted, the report built, every order a pair or (with unmatched orders kept) an unmatched
//! order (once, the rows of each reason as many as its counter), and the same pairs, unmatched orders,
//! intervals, report and trailer counters whether the fast path takes the frames it can (plain, or
//! followed by a tap trailer) or every frame goes the general way. Input: a selector byte (bit 0 the
//! rule, token or symbol; bit 1 `--by symbol`; bits 2 to 6 the tick retention; bit 7 `--unmatched`,
//! off so that the default setup, which looks no order's symbol up under the token rule, is fuzzed
//! too), then records
//! `| len (2, LE) | dt (1, signed: time may go backwards; -128 and 127 jump to the range's ends) | frame bytes (Ethernet) |`. A seed corpus of real frames in this layout is made by
//! `fuzz/seed_analyze.py` from a `wirestamp synth --pcap` capture.

use libfuzzer_sys::fuzz_target;
use wirestamp_core::analyze::{AnalyzeConfig, Analyzer, MatchRule, UnmatchedReason, udp_shape};
use wirestamp_core::dissect::{Dissection, dissect};
use wirestamp_core::trailer::{Decoded, TrailerDecoder, TrailerMode};
use wirestamp_core::{ClockQuality, Frame, LinkType, TsSource};

fuzz_target!(|input: &[u8]| {
    let Some((&sel, mut rest)) = input.split_first() else { return };
    let matching = if sel & 1 == 0 {
        MatchRule::parse(r"token:T(\d+)").unwrap()
    } else {
        MatchRule::parse("symbol:5us").unwrap()
    };
    // Small windows, so that arbitration's eviction and the ack timeout run on short inputs.
    let cfg = AnalyzeConfig {
        matching,
        by_symbol: sel & 2 != 0,
        tick_retain_ns: 1 + i64::from((sel >> 2) & 0x1f) * 1_000,
        ack_timeout_ns: 50_000,
        interval_ns: 10_000,
        keep_unmatched: sel & 0x80 != 0,
        ..AnalyzeConfig::default()
    };
    let mut fast = Analyzer::new(cfg.clone());
    let mut general = Analyzer::new(AnalyzeConfig { fast_path: false, ..cfg });
    let (mut fast_trailers, mut general_trailers) = (TrailerDecoder::new(TrailerMode::Auto), TrailerDecoder::new(TrailerMode::Auto));
    let (mut t, mut n) = (1_796_049_000_000_000_000i64, 0u64);
    // Pairs, and unmatched orders by reason, drained so far.
    let (mut pairs, mut rows) = (0u64, std::collections::BTreeMap::<&str, u64>::new());
    while let [l0, l1, dt, tail @ ..] = rest {
        let len = usize::from(u16::from_le_bytes([*l0, *l1])).min(tail.len());
        let (data, next) = tail.split_at(len);
        // The extreme steps jump to the ends of the range (saturated stamps).
        t = match *dt as i8 {
            i8::MIN => i64::MIN,
            i8::MAX => i64::MAX,
            d => t.saturating_add(i64::from(d) * 100),
        };
        let f = Frame::record(data, t, LinkType::Ethernet);
        let d = dissect(data, f.link);
        // As the pipeline: the fast path for a plain frame, or for one of that shape a tap trailer
        // follows (timed by its stamp), else the trailer check and the general path.
        let stamp = || udp_shape(data, f.wire_len).and_then(|(u, end)| Some((u, fast_trailers.plain_stamp(&f, end)?)));
        if fast_trailers.takes_plain() && fast.frame_fast(n, &f, |_| {}) {
            fast_trailers.count_plain(&f);
        } else if let Some((u, s)) = fast_trailers.takes_plain().then(stamp).flatten()
            && fast.frame_stamped(n, &f, u, &s, |_| {})
        {
            fast_trailers.count_plain_stamp(&f, &s);
        } else {
            general_path(&mut fast, &mut fast_trailers, n, &f, &d);
        }
        general_path(&mut general, &mut general_trailers, n, &f, &d);
        n += 1;
        rest = next;
        drain(&mut fast, &mut general, &mut pairs, &mut rows, n);
        let intervals = |a: &mut Analyzer| a.drain_intervals().map(|i| format!("{i:?}")).collect::<Vec<_>>();
        assert_eq!(intervals(&mut fast), intervals(&mut general), "frame {n}");
    }
    fast.finish();
    general.finish();
    drain(&mut fast, &mut general, &mut pairs, &mut rows, n);
    let r = fast.report();
    assert_eq!(r.counters.frames, n);
    // Every order is accounted for once (an ambiguous one is also matched under the symbol rule).
    let c = &r.counters;
    let ambiguous = if sel & 1 == 0 { c.ambiguous } else { 0 };
    assert_eq!(c.orders, c.matched + c.unmatched_orders + c.not_correlated + ambiguous);
    assert_eq!(pairs, c.matched);
    // Each reason's counter, by the name the library gives it (`counted_in`), in the report's
    // counters as serialised (a counter at zero is left out); `trigger_not_seen` is the rest of
    // `unmatched_orders`, the reasons but `not_correlated` and `ambiguous` being among it.
    let counters = serde_json::to_value(c).unwrap();
    let counter = |k: &str| counters.get(k).map_or(0, |v| v.as_u64().unwrap());
    let among: u64 = UnmatchedReason::ALL
        .into_iter()
        .filter(|r| !matches!(r, UnmatchedReason::NotCorrelated | UnmatchedReason::Ambiguous))
        .filter_map(|r| r.counted_in())
        .map(counter)
        .sum();
    let row = |k: &str| rows.get(k).copied().unwrap_or(0);
    let want = UnmatchedReason::ALL.map(|r| {
        let n = match r.counted_in() {
            // Under the symbol rule an ambiguous order is matched: no row.
            Some(_) if r == UnmatchedReason::Ambiguous => ambiguous,
            Some(k) => counter(k),
            None => c.unmatched_orders - among,
        };
        (r.as_str(), n)
    });
    if sel & 0x80 != 0 {
        assert_eq!(want.map(|(k, _)| (k, row(k))), want);
        assert_eq!(rows.values().sum::<u64>(), c.orders - c.matched);
    } else {
        // Not kept: none queued, whatever the counters say.
        assert!(rows.is_empty(), "{rows:?}");
    }
    assert_eq!(format!("{r:?}"), format!("{:?}", general.report()));
    assert_eq!(fast_trailers.stats(), general_trailers.stats());
});

/// The pairs and unmatched orders queued since the last call, the same on both paths: counted, the
/// unmatched by reason.
fn drain(
    fast: &mut Analyzer,
    general: &mut Analyzer,
    pairs: &mut u64,
    rows: &mut std::collections::BTreeMap<&str, u64>,
    n: u64,
) {
    let p = fast.drain_pairs().collect::<Vec<_>>();
    assert_eq!(p, general.drain_pairs().collect::<Vec<_>>(), "frame {n}");
    *pairs += p.len() as u64;
    let u = fast.drain_unmatched().collect::<Vec<_>>();
    assert_eq!(u, general.drain_unmatched().collect::<Vec<_>>(), "frame {n}");
    for r in &u {
        *rows.entry(r.reason.as_str()).or_default() += 1;
    }
}

/// The trailer check, then the general path, timed by the frame's best time (the tap's stamp when it
/// has one).
fn general_path(a: &mut Analyzer, trailers: &mut TrailerDecoder, n: u64, f: &Frame<'_>, d: &Dissection) {
    match trailers.decode(f, d) {
        Ok(Decoded::Stamp(s)) => a.frame(n, s.time_ns, f, d, TsSource::Trailer(s.kind), f.quality | s.quality),
        _ => a.frame(n, f.ts_ns, f, d, TsSource::PcapRecord, ClockQuality::default()),
    }
}
