//! synth makes what its configuration says: VLAN tags, noise, messages per packet and bursts as
//! tshark (an independent dissector) reads them from the capture, the latency model in the truth
//! (stalls, median), and byte-identical pcapng for a seed. Seeds are fixed: every figure here is
//! deterministic, and each statistical bound (5 sigma) would fail a correct generator under another
//! seed with a chance of about one in a million.

use std::path::PathBuf;
use wirestamp_lab::synth::{Container, LatencyModel, SynthConfig, SynthSummary, TruthPair, synth};
use wirestamp_testdata::{epoch_to_ns, tshark_fields};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wirestamp-lab-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const FEED_A_PORT: &str = "26477";
const FEED_B_PORT: &str = "26478";
/// The noise: HSRP (UDP 1985), VLAN 3050, on feed A's interface (lab::synth's module documentation).
const NOISE_PORT: &str = "1985";
const NOISE_VLAN: u16 = 3050;

/// One frame as tshark reads it.
#[derive(Debug)]
struct Frame {
    time_ns: i64,
    iface: String,
    vlan: Option<u16>,
    udp_dport: String,
    tcp: bool,
    mold_seq: Option<u64>,
    mold_count: Option<u64>,
    /// The MoldUDP64 message blocks' payloads (ITCH messages).
    msgs: Vec<Vec<u8>>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

/// Writes `cfg`'s capture as `name` and reads it back with tshark.
fn synth_and_read(cfg: &SynthConfig, name: &str) -> (Vec<TruthPair>, SynthSummary, Vec<Frame>) {
    let path = tmp(name);
    let (truth, sum) = synth(cfg, &path).unwrap();
    let rows = tshark_fields(
        &path,
        &["-d", "udp.port==26477,moldudp64", "-d", "udp.port==26478,moldudp64"],
        &[
            "frame.time_epoch",
            "frame.interface_id",
            "vlan.id",
            "udp.dstport",
            "tcp.srcport",
            "moldudp64.sequence",
            "moldudp64.count",
            "moldudp64.msgdata",
        ],
    );
    std::fs::remove_file(&path).unwrap();
    let frames = rows
        .iter()
        .map(|r| Frame {
            time_ns: epoch_to_ns(&r[0]),
            iface: r[1].clone(),
            vlan: (!r[2].is_empty()).then(|| r[2].parse().unwrap()),
            udp_dport: r[3].clone(),
            tcp: !r[4].is_empty(),
            mold_seq: (!r[5].is_empty()).then(|| r[5].parse().unwrap()),
            mold_count: (!r[6].is_empty()).then(|| r[6].parse().unwrap()),
            msgs: r[7].split(',').filter(|m| !m.is_empty()).map(hex).collect(),
        })
        .collect();
    (truth, sum, frames)
}

fn small(seed: u64) -> SynthConfig {
    SynthConfig { seed, packets: 2_000, ..SynthConfig::default() }
}

/// Asserts |observed − n·p| ≤ 5·sqrt(n·p·(1−p)) (a binomial count, 5 standard deviations).
fn within_binomial(what: &str, observed: u64, n: u64, p: f64) {
    let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    assert!((observed as f64 - mean).abs() <= 5.0 * sd, "{what}: {observed} of {n}, expected {mean:.1} ± 5 × {sd:.2}");
}

#[test]
fn vlan_tags_are_the_configured_ones() {
    let cases = [
        SynthConfig { vlan_a: None, vlan_b: Some(3050), packets: 1_000, ..small(11) }, // the default tagging
        SynthConfig { vlan_a: Some(101), vlan_b: Some(202), packets: 1_000, ..small(12) },
        SynthConfig { vlan_a: Some(7), vlan_b: None, packets: 1_000, ..small(13) },
        SynthConfig { vlan_a: None, vlan_b: Some(202), feed_b: false, packets: 1_000, ..small(14) },
    ];
    assert_eq!((SynthConfig::default().vlan_a, SynthConfig::default().vlan_b), (None, Some(3050)));
    for (i, cfg) in cases.iter().enumerate() {
        let (_, sum, frames) = synth_and_read(cfg, &format!("vlan{i}.pcapng"));
        assert_eq!(frames.len() as u64, sum.frames, "case {i}");
        // Each feed carries every market-data packet and every heartbeat (feed B only when enabled).
        let per_feed = sum.md_packets + sum.heartbeats;
        let (mut a, mut b, mut noise, mut tcp) = (0u64, 0u64, 0u64, 0u64);
        for f in &frames {
            let (expect, n) = match f.udp_dport.as_str() {
                FEED_A_PORT => (cfg.vlan_a, &mut a),
                FEED_B_PORT => (cfg.vlan_b, &mut b),
                NOISE_PORT => (Some(NOISE_VLAN), &mut noise),
                _ => {
                    assert!(f.tcp, "case {i}: a frame of neither feed, noise nor the order session: {f:?}");
                    (None, &mut tcp)
                }
            };
            assert_eq!(f.vlan, expect, "case {i}: {f:?}");
            *n += 1;
        }
        assert_eq!((a, b, noise), (per_feed, if cfg.feed_b { per_feed } else { 0 }, sum.noise), "case {i}");
        assert_eq!(a + b + noise + tcp, sum.frames);
        let tagged = frames.iter().filter(|f| f.vlan.is_some()).count() as u64;
        let expect_tagged = u64::from(cfg.vlan_a.is_some()) * per_feed
            + u64::from(cfg.feed_b && cfg.vlan_b.is_some()) * per_feed
            + sum.noise;
        assert_eq!(tagged, expect_tagged, "case {i}");
    }
}

#[test]
fn noise_frames_are_counted_and_drawn_at_the_configured_rate() {
    for (cfg, name) in [(small(21), "noise50.pcapng"), (SynthConfig { noise_every: 7, ..small(22) }, "noise7.pcapng")] {
        let (_, sum, frames) = synth_and_read(&cfg, name);
        let noise: Vec<&Frame> = frames.iter().filter(|f| f.udp_dport == NOISE_PORT).collect();
        assert_eq!(noise.len() as u64, sum.noise, "{name}");
        // On feed A's interface (pcapng interface 0, "tap-md-a").
        assert!(noise.iter().all(|f| f.iface == "0"), "{name}");
        // One chance in `noise_every` per market-data packet after the Stock Directory packet.
        within_binomial(name, sum.noise, cfg.packets - 1, 1.0 / cfg.noise_every as f64);
    }
    let (_, sum, frames) = synth_and_read(&SynthConfig { noise_every: 0, ..small(23) }, "noise0.pcapng");
    assert_eq!(sum.noise, 0);
    assert!(frames.iter().all(|f| f.udp_dport != NOISE_PORT));
}

#[test]
fn messages_per_packet_span_one_to_max_msgs() {
    for (max_msgs, seed) in [(3u64, 31u64), (1, 32), (12, 33)] {
        let cfg = SynthConfig { max_msgs, ..small(seed) };
        let (_, sum, frames) = synth_and_read(&cfg, &format!("msgs{max_msgs}.pcapng"));
        let mut a: Vec<&Frame> =
            frames.iter().filter(|f| f.udp_dport == FEED_A_PORT && f.mold_count.unwrap() > 0).collect();
        a.sort_by_key(|f| f.mold_seq.unwrap());
        for f in &a {
            assert_eq!(f.msgs.len() as u64, f.mold_count.unwrap(), "{f:?}");
        }
        assert_eq!(a.len() as u64, sum.md_packets);
        assert_eq!(a.iter().map(|f| f.mold_count.unwrap()).sum::<u64>(), sum.md_messages);
        // The feed opens with one packet of Stock Directory messages (ITCH type 'R'), one per symbol: it
        // is not drawn from 1..=max_msgs.
        let directory = a.iter().filter(|f| f.msgs.iter().all(|m| m[0] == b'R')).count();
        assert_eq!(directory, 1);
        assert!(a[0].msgs.iter().all(|m| m[0] == b'R') && a[0].mold_seq == Some(1));
        let mut hist = vec![0u64; 31];
        for f in &a[1..] {
            let c = f.mold_count.unwrap();
            assert!((1..=max_msgs).contains(&c), "max_msgs {max_msgs}: a packet of {c} messages");
            hist[c as usize] += 1;
        }
        // Uniform in 1..=max_msgs: each count about 1 / max_msgs of the packets.
        let n = a.len() as u64 - 1;
        for (c, &k) in hist.iter().enumerate().take(max_msgs as usize + 1).skip(1) {
            assert!(k > 0, "max_msgs {max_msgs}: no packet of {c} messages");
            within_binomial(&format!("max_msgs {max_msgs}, packets of {c}"), k, n, 1.0 / max_msgs as f64);
        }
        if max_msgs == 1 {
            assert_eq!(hist[1], n);
        }
    }
}

/// The ITCH 5.0 timestamp of a message: 6 bytes big-endian at offset 5 (after message type, stock
/// locate and tracking number), ns since midnight.
fn itch_timestamp(m: &[u8]) -> i64 {
    m[5..11].iter().fold(0i64, |t, &b| t << 8 | i64::from(b))
}

#[test]
fn bursts_are_runs_of_the_burst_gap() {
    // A burst: `burst_len` packets (uniform in the range), each `burst_gap_ns` after the one before at
    // the source, which stamps its time into the ITCH messages (capture times add each feed's delay).
    // Outside bursts gaps are exponential with mean `mean_gap_ns`, plus 50 ns; a burst gap of 30 ns
    // (under that floor) cannot be mistaken for one of them.
    let cfg = SynthConfig { burst_prob: 0.05, burst_len: (5, 40), burst_gap_ns: 30, ..small(41) };
    assert!(cfg.burst_gap_ns < cfg.mean_gap_ns);
    let (_, _, frames) = synth_and_read(&cfg, "bursts.pcapng");
    let mut a: Vec<&Frame> = frames.iter().filter(|f| f.udp_dport == FEED_A_PORT && !f.msgs.is_empty()).collect();
    a.sort_by_key(|f| f.mold_seq.unwrap());
    // Every message of a packet has the packet's source time.
    for f in &a {
        assert!(f.msgs.iter().all(|m| itch_timestamp(m) == itch_timestamp(&f.msgs[0])), "{f:?}");
    }
    let gaps: Vec<i64> = a.windows(2).map(|w| itch_timestamp(&w[1].msgs[0]) - itch_timestamp(&w[0].msgs[0])).collect();
    let burst_gap = cfg.burst_gap_ns as i64;
    let mut runs = Vec::new();
    let mut run = 0u64;
    for &g in &gaps {
        assert!(g > 0, "source times rise");
        if g == burst_gap {
            run += 1;
        } else {
            if run > 0 {
                runs.push(run);
            }
            run = 0;
        }
    }
    // A burst still running at the end of the capture may be cut short.
    let cut = (run > 0).then_some(run);
    assert!(!runs.is_empty());
    for &r in &runs {
        assert!((cfg.burst_len.0..=cfg.burst_len.1).contains(&r), "a burst of {r} packets");
    }
    if let Some(r) = cut {
        assert!(r <= cfg.burst_len.1);
    }
    // Each packet outside a burst starts one with probability burst_prob.
    let outside = gaps.iter().filter(|&&g| g != burst_gap).count() as u64;
    within_binomial("bursts", runs.len() as u64 + u64::from(cut.is_some()), outside, cfg.burst_prob);
    // The packets' capture times on feed A follow: a burst's packets arrive closer together than the
    // mean gap apart on average.
    let burst_span: i64 =
        a.windows(2).zip(&gaps).filter(|(_, g)| **g == burst_gap).map(|(w, _)| w[1].time_ns - w[0].time_ns).sum();
    let in_bursts = gaps.iter().filter(|&&g| g == burst_gap).count() as i64;
    assert!(burst_span / in_bursts < cfg.mean_gap_ns as i64, "{} ns apart in bursts", burst_span / in_bursts);
}

/// The latency a stalled order has at least: its stall, drawn in [0.5, 1.5] × `stall_ns`.
fn stall_floor(m: &LatencyModel) -> i64 {
    (0.5 * m.stall_ns) as i64
}

#[test]
fn without_stalls_no_latency_reaches_the_stall_range() {
    let cfg = SynthConfig {
        packets: 40_000,
        latency: LatencyModel { stall_prob: 0.0, ..SynthConfig::default().latency },
        container: Container::Pcap,
        ..small(51)
    };
    let (truth, _) = synth(&cfg, &tmp("nostall.pcap")).unwrap();
    std::fs::remove_file(tmp("nostall.pcap")).unwrap();
    assert!(truth.len() > 1_500, "{} orders", truth.len());
    let max = truth.iter().map(|p| p.latency_ns).max().unwrap();
    assert!(max < stall_floor(&cfg.latency), "max {max} ns");
}

#[test]
fn stalls_come_at_the_configured_rate_and_the_body_at_the_configured_median() {
    // Stalls of 200..600 µs on a body of median 6 µs (sigma 0.35: 6 sigma above the median is 49 µs).
    // An order whose tick comes while an earlier order is still unsent queues behind it (synth sends
    // in order), so its latency is not its own draw: only orders whose tick comes after every earlier
    // order went out are counted. Whether an order is counted depends only on what came before its own
    // draw, so the counted ones are an unbiased sample. Coalescing and splitting are off (a held or
    // split order delays the next by up to 20 µs or 500 ns, depending on that next one's draw); ticks
    // are ~400 µs apart on average (a packet every 100 µs, one in four triggering), so a stall costs
    // about one order.
    let model = LatencyModel { median_ns: 6_000.0, sigma: 0.35, stall_prob: 0.05, stall_ns: 400_000.0 };
    let cfg = SynthConfig {
        packets: 30_000,
        mean_gap_ns: 100_000,
        burst_prob: 0.0,
        max_msgs: 1,
        order_prob: 0.25,
        coalesce_prob: 0.0,
        split_prob: 0.0,
        latency: model,
        container: Container::Pcap,
        ..small(61)
    };
    let (mut truth, sum) = synth(&cfg, &tmp("stall.pcap")).unwrap();
    std::fs::remove_file(tmp("stall.pcap")).unwrap();
    assert_eq!(sum.clamped_latencies, 0);
    truth.sort_by_key(|p| p.user_ref_num); // the order the strategy drew them in
    let mut sent_until = i64::MIN;
    let mut own = Vec::new();
    for p in &truth {
        if p.tick_time_ns > sent_until {
            own.push(p.latency_ns);
        }
        sent_until = sent_until.max(p.order_time_ns);
    }
    assert!(own.len() as f64 > 0.9 * truth.len() as f64, "{} of {} orders counted", own.len(), truth.len());
    // Stalled: beyond 100 µs, which no body draw reaches (49 µs at 6 sigma) and no stall falls short of.
    let body_max = (model.median_ns * (6.0 * model.sigma).exp()) as i64;
    let threshold = 100_000;
    assert!(body_max < threshold && threshold < stall_floor(&model));
    let (stalled, body): (Vec<i64>, Vec<i64>) = own.iter().partition(|&&l| l > threshold);
    within_binomial("stalled orders", stalled.len() as u64, own.len() as u64, model.stall_prob);
    for &l in &stalled {
        assert!(l >= stall_floor(&model) && l <= (1.5 * model.stall_ns) as i64 + body_max, "a stalled latency {l}");
    }
    assert!(body.iter().all(|&l| l <= body_max), "a body latency beyond 6 sigma");
    // The sample median of n log-normal draws has a standard error of 1 / (2 f(m) sqrt(n)), f(m) the
    // density at the median m: 1 / (m sigma sqrt(2 pi)), so m sigma sqrt(pi / 2) / sqrt(n) (~28 ns for
    // 9,000 draws); allowed 5 of those, plus 1 ns for the latencies' truncation to whole ns.
    let mut body = body;
    body.sort_unstable();
    let median = body[(body.len() - 1) / 2];
    let se = model.median_ns * model.sigma * (std::f64::consts::PI / 2.0).sqrt() / (body.len() as f64).sqrt();
    let tolerance = 5.0 * se + 1.0;
    assert!(
        (median as f64 - model.median_ns).abs() <= tolerance,
        "median {median} ns of {} body latencies, configured {} ± {tolerance:.0}",
        body.len(),
        model.median_ns
    );
}

#[test]
fn pcapng_is_byte_identical_for_a_seed() {
    let cfg = SynthConfig { container: Container::Pcapng, order_prob: 0.2, ..small(71) };
    let (a, b, c) = (tmp("det-a.pcapng"), tmp("det-b.pcapng"), tmp("det-c.pcapng"));
    synth(&cfg, &a).unwrap();
    synth(&cfg, &b).unwrap();
    synth(&SynthConfig { seed: 72, ..cfg }, &c).unwrap();
    let (ba, bb, bc) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), std::fs::read(&c).unwrap());
    // pcapng: a Section Header Block (0x0A0D0D0A) first.
    assert_eq!(ba[..4], [0x0a, 0x0d, 0x0d, 0x0a]);
    assert!(ba == bb, "same seed, different bytes");
    assert!(ba != bc, "another seed, the same bytes");
    for p in [a, b, c] {
        std::fs::remove_file(p).unwrap();
    }
}
