//! `wirestamp analyze` over several files whose frames carry a tap's timestamp (Arista 7130 /
//! Metamako trailers): the analysis times frames by the tap, so the merge must order them by it too.
//! Capture hosts' clocks may differ while the taps' agree.

mod support;

use std::path::Path;
use std::process::Command;
use support::{tmpdir, with_trailer, write_pcap};
use wirestamp_capture::CaptureReader;

/// `path`'s frames as `(record time, bytes)`.
fn frames(path: &Path) -> Vec<(i64, Vec<u8>)> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push((f.ts_ns, f.data.to_vec()));
    }
    out
}

/// Whether an untagged or 802.1Q-tagged IPv4 frame carries TCP.
fn is_tcp(f: &[u8]) -> bool {
    let ip = if f[12..14] == [0x81, 0x00] { 18 } else { 14 };
    f.get(ip + 9) == Some(&6)
}

fn analyze(args: &[&str]) -> serde_json::Value {
    let out =
        Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(["analyze", "-q", "--json"]).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every frame stamped by the tap at its true time; the market data and the orders recorded by two
/// hosts, the orders' host clock 1 ms behind (then ahead). The report must be the one-file report:
/// it was 0 of 140 matched under the token rule, and 132 matched to wrong ticks ~1 ms old under the
/// symbol rule, because the orders came out of the merge before their triggers.
#[test]
fn files_from_hosts_whose_clocks_differ_are_merged_by_the_taps_time() {
    let dir = tmpdir("taps");
    let cap = dir.join("s.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["synth", "--pcap", "-n", "3000"])
        .arg(&cap)
        .output()
        .unwrap();
    assert!(out.status.success());
    // synth's truth: one line per order, all matched by either rule in the one-file capture.
    let orders_sent = std::fs::read_to_string(dir.join("s.pcap.truth.csv")).unwrap().lines().count() as u64 - 1;
    let stamped: Vec<(i64, Vec<u8>)> = frames(&cap).into_iter().map(|(t, f)| (t, with_trailer(&f, t))).collect();
    let whole = dir.join("whole.pcap");
    write_pcap(&whole, &stamped);
    let md: Vec<_> = stamped.iter().filter(|(_, f)| !is_tcp(f)).cloned().collect();
    let md_file = dir.join("md.pcap");
    write_pcap(&md_file, &md);
    // The orders' host also records traffic the tap does not stamp: a plain UDP frame before each of
    // its frames but the first. Taken at its record time, such a frame held the order behind it back
    // by the hosts' skew (0 of 140 matched under the symbol rule): it is moved by the host's offset
    // from the tap, as the stamped frame before it showed.
    let noise = support::udp([10, 9, 9, 10], 9_999, &[0; 40]);
    for (skew, with_noise) in [(-1_000_000, false), (1_000_000, false), (-1_000_000, true), (1_000_000, true)] {
        let mut orders = Vec::new();
        for (k, (t, f)) in stamped.iter().filter(|(_, f)| is_tcp(f)).enumerate() {
            if with_noise && k > 0 {
                orders.push((t + skew - 10, noise.clone()));
            }
            orders.push((t + skew, f.clone()));
        }
        let orders_file = dir.join("orders.pcap");
        write_pcap(&orders_file, &orders);
        for rule in ["symbol", r"token:T(\d+)"] {
            let one = analyze(&["--match", rule, whole.to_str().unwrap()]);
            let two = analyze(&["--match", rule, md_file.to_str().unwrap(), orders_file.to_str().unwrap()]);
            let sources: Vec<&String> = one["counters"]["ts_sources"].as_object().unwrap().keys().collect();
            assert_eq!(sources, ["metamako"], "every frame used timed by the tap");
            assert_eq!(one["counters"]["matched"], orders_sent, "{rule}");
            let case = format!("skew {skew}, noise {with_noise}, {rule}");
            assert_eq!(two["metrics"], one["metrics"], "{case}");
            assert_eq!(two["counters"]["matched"], one["counters"]["matched"], "{case}");
            assert_eq!(two["counters"]["trigger_after_order"], 0, "{case}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
