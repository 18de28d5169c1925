//! The synthetic capture and its truth file, checked by tshark (an independent dissector): checksums,
//! MoldUDP64 framing and sequences on both feeds, tick times, and the frames carrying the orders.

use std::collections::HashMap;
use std::path::PathBuf;
use wirestamp_lab::synth::{Container, SynthConfig, synth, write_truth};
use wirestamp_testdata::{epoch_to_ns, tshark_fields};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wirestamp-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn small() -> SynthConfig {
    SynthConfig { packets: 3_000, order_prob: 0.2, coalesce_prob: 0.1, split_prob: 0.1, ..SynthConfig::default() }
}

#[test]
fn deterministic_for_a_seed() {
    let cfg = SynthConfig { container: Container::Pcap, ..small() };
    let (a_path, b_path, c_path) = (tmp("a.pcap"), tmp("b.pcap"), tmp("c.pcap"));
    let (ta, _) = synth(&cfg, &a_path).unwrap();
    let (tb, _) = synth(&cfg, &b_path).unwrap();
    let (tc, _) = synth(&SynthConfig { seed: 2, ..cfg }, &c_path).unwrap();
    assert_eq!(std::fs::read(&a_path).unwrap(), std::fs::read(&b_path).unwrap());
    assert_eq!(ta, tb);
    assert_ne!(ta, tc);
    let mut csv = Vec::new();
    write_truth(&ta, &mut csv).unwrap();
    let text = String::from_utf8(csv).unwrap();
    assert_eq!(text.lines().count(), ta.len() + 1);
    assert!(text.starts_with("tick_seq,tick_time_ns,first_feed,"));
}

#[test]
fn capture_agrees_with_tshark() {
    let cfg = small();
    let path = tmp("t.pcapng");
    let (truth, sum) = synth(&cfg, &path).unwrap();
    assert!(truth.len() > 300, "{} orders", truth.len());
    assert!(
        truth.iter().any(|p| p.coalesced) && truth.iter().any(|p| p.split) && truth.iter().any(|p| p.first_feed == 'B')
    );

    let rows = tshark_fields(
        &path,
        &[
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "tcp.relative_sequence_numbers:FALSE",
            "-o",
            "tcp.desegment_tcp_streams:FALSE",
            "-d",
            "udp.port==26477,moldudp64",
            "-d",
            "udp.port==26478,moldudp64",
        ],
        &[
            "frame.time_epoch",
            "ip.checksum.status",
            "udp.checksum.status",
            "tcp.checksum.status",
            "udp.dstport",
            "moldudp64.session",
            "moldudp64.sequence",
            "moldudp64.count",
            "tcp.payload",
        ],
    );
    assert_eq!(rows.len() as u64, sum.frames);
    let mut ours = wirestamp_capture::CaptureReader::open(&path).unwrap();
    let mut n = 0u64;
    while let Some(f) = ours.next_frame().unwrap() {
        assert_eq!(f.ts_ns, epoch_to_ns(&rows[n as usize][0]));
        n += 1;
    }
    assert_eq!(n, sum.frames);
    // Earliest capture time of each MoldUDP64 sequence number, per feed.
    let mut first_seen: HashMap<u64, i64> = HashMap::new();
    let mut next_seq: HashMap<String, u64> = HashMap::new();
    let mut md = 0;
    let mut payloads: Vec<(i64, Vec<u8>)> = Vec::new();
    for r in &rows {
        let t = epoch_to_ns(&r[0]);
        assert_eq!(r[1], "1", "IPv4 header checksum");
        if !r[2].is_empty() {
            assert_eq!(r[2], "1", "UDP checksum");
        }
        if !r[3].is_empty() {
            assert_eq!(r[3], "1", "TCP checksum");
        }
        if !r[5].is_empty() {
            assert_eq!(r[5], sum.session);
            let seq: u64 = r[6].parse().unwrap();
            let count: u64 = r[7].parse().unwrap();
            let expect = next_seq.entry(r[4].clone()).or_insert(1);
            assert_eq!(seq, *expect, "feed {} sequence", r[4]);
            *expect += count;
            for s in seq..seq + count {
                let e = first_seen.entry(s).or_insert(t);
                *e = (*e).min(t);
            }
            if count > 0 {
                md += 1;
            }
        }
        if !r[8].is_empty() {
            let bytes: Vec<u8> =
                (0..r[8].len() / 2).map(|i| u8::from_str_radix(&r[8][2 * i..2 * i + 2], 16).unwrap()).collect();
            payloads.push((t, bytes));
        }
    }
    assert_eq!(md, 2 * sum.md_packets, "A and B copies");
    assert_eq!(next_seq["26477"], sum.last_seq + 1);
    assert_eq!(next_seq["26478"], sum.last_seq + 1);
    for p in &truth {
        assert_eq!(p.tick_time_ns, first_seen[&p.tick_seq], "tick time of seq {}", p.tick_seq);
        assert_eq!(p.latency_ns, p.order_time_ns - p.tick_time_ns);
        if !p.split {
            // The first frame (in capture order) whose TCP payload holds the ClOrdID carries the order.
            let t = payloads
                .iter()
                .find(|(_, b)| b.windows(14).any(|w| w == p.cl_ord_id.as_bytes()))
                .map(|(t, _)| *t)
                .expect("order frame");
            assert_eq!(p.order_time_ns, t, "{}", p.cl_ord_id);
        }
    }
}
