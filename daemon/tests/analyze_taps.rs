//! `wirestamp analyze` over several files whose frames carry a tap's timestamp (Arista 7130 /
//! Metamako trailers): the analysis times frames by the tap, so the merge must order them by it too.
//! Capture hosts' clocks may differ while the taps' agree.

mod support;

use std::path::Path;
use std::process::Command;
use support::{analyze_text, synth_pcap, tmpdir, with_trailer, write_pcap};
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

/// Where an untagged or 802.1Q-tagged frame's IPv4 header starts.
fn ip_start(f: &[u8]) -> usize {
    if f[12..14] == [0x81, 0x00] { 18 } else { 14 }
}

/// Whether an untagged or 802.1Q-tagged IPv4 frame carries TCP.
fn is_tcp(f: &[u8]) -> bool {
    f.get(ip_start(f) + 9) == Some(&6)
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
    let cap = synth_pcap(&dir, "s.pcap", 3000);
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

/// The report says, per input, what the tap-trailer check found: in the JSON always, on the terminal
/// when there is something to say. Ten frames stamped by the tap, three captured shorter than on the
/// wire (a trailer at their end could not be read; they count as frames without one too), the rest
/// plain; with `--trailer none`, nothing is looked for and the terminal says nothing.
#[test]
fn the_report_says_what_each_taps_trailers_gave() {
    let dir = tmpdir("trailer-stats");
    let clean = synth_pcap(&dir, "clean.pcap", 300);
    let frames = frames(&clean);
    let n = frames.len();
    let cap = dir.join("tap.pcap");
    {
        use wirestamp_capture::write::PcapWriter;
        let mut w =
            PcapWriter::new(std::fs::File::create(&cap).unwrap(), wirestamp_core::LinkType::Ethernet, 65535).unwrap();
        for (i, (t, f)) in frames.iter().enumerate() {
            match i {
                0..10 => {
                    let f = with_trailer(f, t + 2_000);
                    w.write(*t, &f, f.len() as u32).unwrap();
                }
                // Captured short: 100 bytes more on the wire than recorded.
                10..13 => w.write(*t, f, f.len() as u32 + 100).unwrap(),
                _ => w.write(*t, f, f.len() as u32).unwrap(),
            }
        }
        w.finish().unwrap();
    }
    let run = |extra: &[&str]| (analyze(&[extra, &[cap.to_str().unwrap()]].concat()), analyze_text(extra, &cap));

    let (json, text) = run(&[]);
    let t = &json["input"]["trailers"];
    assert_eq!(t.as_array().unwrap().len(), 1);
    let t = &t[0];
    assert_eq!((&t["file"], &t["mode"]), (&serde_json::json!(cap.display().to_string()), &serde_json::json!("auto")));
    let got = [&t["frames"], &t["stamped"]["metamako"], &t["no_trailer"], &t["truncated"], &t["rejected"]];
    let n = n as u64;
    assert_eq!(got, [n, 10, n - 10, 3, 0]);
    assert_eq!(t["stamped"].as_object().unwrap().values().filter_map(|v| v.as_u64()).sum::<u64>(), 10);
    let line = format!(
        "tap trailers in {} (--trailer auto): 10 of {n} frames stamped (metamako 10), 3 frames captured short (a \
         trailer at their end, if any, unreadable)",
        cap.display()
    );
    assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");

    let (json, text) = run(&["--trailer", "none"]);
    let t = &json["input"]["trailers"][0];
    assert_eq!(t["mode"], "none");
    assert_eq!([&t["frames"], &t["stamped"]["metamako"], &t["no_trailer"]], [n, 0, n]);
    assert!(!text.contains("tap trailers"), "{text}");
    // A capture without trailers: the terminal says nothing of them either.
    assert_eq!(analyze(&[clean.to_str().unwrap()])["input"]["trailers"][0]["stamped"]["metamako"], 0);
    let text = analyze_text(&[], &clean);
    assert!(!text.contains("tap trailers"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A repeat of what a feed brought already is that feed's duplicate, not another A/B copy: feed B's
/// frames recorded twice (a second copy of its file, as two capture points on one line would give)
/// change nothing but feed B's duplicate count, which becomes its packet count (heartbeats aside). Before, each repeat
/// was counted a second time as an A/B copy, with a second `feed_ab_delay` sample.
#[test]
fn a_feeds_repeats_are_its_duplicates_not_ab_copies() {
    let dir = tmpdir("repeats");
    let cap = synth_pcap(&dir, "s.pcap", 3000);
    let ip = ip_start;
    let dport = |f: &[u8]| (f.get(ip(f) + 9) == Some(&17)).then(|| u16::from_be_bytes([f[ip(f) + 22], f[ip(f) + 23]]));
    let all = frames(&cap);
    // Feed B's heartbeats (a MoldUDP64 message count of 0, 18 bytes into the UDP payload): no
    // message, so no duplicate either.
    let heartbeats =
        all.iter().filter(|(_, f)| dport(f) == Some(26478) && f[ip(f) + 28 + 18..ip(f) + 28 + 20] == [0, 0]).count();
    assert!(heartbeats > 0);
    let part = |name: &str, keep: &dyn Fn(Option<u16>) -> bool| {
        let p = dir.join(name);
        let v: Vec<(i64, Vec<u8>)> = all.iter().filter(|(_, f)| keep(dport(f))).cloned().collect();
        write_pcap(&p, &v);
        (p.to_str().unwrap().to_owned(), v.len())
    };
    let (a, _) = part("a.pcap", &|p| p == Some(26477));
    let (b, b_frames) = part("b.pcap", &|p| p == Some(26478));
    let (b2, _) = part("b2.pcap", &|p| p == Some(26478));
    let (rest, _) = part("rest.pcap", &|p| p != Some(26477) && p != Some(26478));
    let token = ["--match", r"token:T(\d+)"];
    let once = analyze(&[&token[..], &[&a, &b, &rest]].concat());
    let twice = analyze(&[&token[..], &[&a, &b, &b2, &rest]].concat());
    let feed_b = |r: &serde_json::Value| {
        r["feeds"].as_array().unwrap().iter().find(|f| f["feed"] == "udp:233.54.12.112:26478").unwrap().clone()
    };
    assert_eq!(feed_b(&once)["duplicates"], 0);
    assert_eq!(feed_b(&twice)["duplicates"], b_frames - heartbeats);
    assert_eq!(once["metrics"], twice["metrics"], "a repeat changed a metric");
    for c in ["ticks", "tick_copies", "stale_copies", "matched", "unmatched_orders"] {
        assert_eq!(once["counters"][c], twice["counters"][c], "{c}");
    }
    // Every message came on both feeds: one later copy per tick.
    assert_eq!(once["counters"]["tick_copies"], once["counters"]["ticks"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each figure says which clocks timed its two ends (measurement.md): with the market data stamped by
/// the tap and the orders timed by the capture host's records, tick_to_trade subtracts the tap's time
/// from the host's, and the terminal says the two clocks' offset is in it; the other figures have one
/// clock at both ends (or the exchange's, for exchange_to_capture). With every frame stamped, one clock.
#[test]
fn each_figure_says_which_clocks_timed_its_ends() {
    let dir = tmpdir("clocks");
    let cap = synth_pcap(&dir, "s.pcap", 3000);
    for md_only in [true, false] {
        let stamped: Vec<(i64, Vec<u8>)> = frames(&cap)
            .into_iter()
            .map(|(t, f)| if md_only && is_tcp(&f) { (t, f) } else { (t, with_trailer(&f, t)) })
            .collect();
        let file = dir.join("stamped.pcap");
        write_pcap(&file, &stamped);
        let r = analyze(&[file.to_str().unwrap()]);
        let order_clock = if md_only { "pcap" } else { "metamako" };
        let want = [
            ("tick_to_trade", "metamako", order_clock),
            ("order_to_ack", order_clock, order_clock),
            ("feed_ab_delay", "metamako", "metamako"),
            ("exchange_to_capture", "exchange", "metamako"),
        ];
        for (m, (name, from, to)) in r["metrics"].as_array().unwrap().iter().zip(want) {
            assert_eq!(m["name"], name);
            assert_eq!(m["clocks"], serde_json::json!({"from": [from], "to": [to]}), "{name}, md only {md_only}");
        }
        // No samples, no clocks.
        assert_eq!(r["metrics"][4]["name"], "tick_to_snd");
        assert!(r["metrics"][4].get("clocks").is_none());
        let text = analyze_text(&[], &file);
        let line = format!(
            "clocks: tick_to_trade metamako -> {order_clock}, order_to_ack {order_clock} -> {order_clock}, \
             feed_ab_delay metamako -> metamako, exchange_to_capture exchange -> metamako\n"
        );
        assert!(text.contains(&line), "{text}");
        let mixed = "clocks: tick_to_trade subtracts metamako times from pcap times: more than one clock, whose \
                     offsets from one another are in the samples between them (wirestamp does not align them; per \
                     dimension in --json)\n";
        assert_eq!(text.contains(mixed), md_only, "{text}");
        assert_eq!(text.matches("more than one clock").count(), usize::from(md_only), "{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Market data and orders recorded by two hosts, in two files, with no tap: both ends are record
/// times, perhaps of two hosts' clocks, which the terminal says; the same frames in one file do not.
#[test]
fn record_times_of_several_files_are_said_to_be_several_clocks() {
    let dir = tmpdir("clocks-files");
    let cap = synth_pcap(&dir, "s.pcap", 2000);
    let all = frames(&cap);
    let (md, orders) = (dir.join("md.pcap"), dir.join("orders.pcap"));
    write_pcap(&md, &all.iter().filter(|(_, f)| !is_tcp(f)).cloned().collect::<Vec<_>>());
    write_pcap(&orders, &all.iter().filter(|(_, f)| is_tcp(f)).cloned().collect::<Vec<_>>());
    let line = "clocks: record times come from 2 input files: if different hosts recorded them (not one capture \
                rotated), a sample whose two ends are in different files subtracts one host's clock from another's\n";
    let two = analyze_text(&[md.to_str().unwrap()], &orders);
    assert!(two.contains(line), "{two}");
    assert!(two.contains("clocks: tick_to_trade pcap -> pcap,"), "{two}");
    let one = analyze_text(&[], &cap);
    assert!(!one.contains("input files"), "{one}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Feed B alone stamped by the tap: tick_to_trade as a whole subtracts pcap and metamako times from
/// pcap times, and its dimensions say which: feed A's samples one clock, feed B's two, the session's
/// both. exchange_to_capture's capture end mixes them too.
#[test]
fn each_dimension_says_which_clocks_timed_its_ends() {
    let dir = tmpdir("clocks-dims");
    let cap = synth_pcap(&dir, "s.pcap", 3000);
    let feed_b = |f: &[u8]| f.get(ip_start(f) + 16..ip_start(f) + 20) == Some(&[233, 54, 12, 112][..]);
    let stamped: Vec<(i64, Vec<u8>)> =
        frames(&cap).into_iter().map(|(t, f)| if feed_b(&f) { (t, with_trailer(&f, t)) } else { (t, f) }).collect();
    let file = dir.join("b-stamped.pcap");
    write_pcap(&file, &stamped);
    let r = analyze(&[file.to_str().unwrap()]);
    let clocks = |metric: usize, dim: Option<&str>| {
        let m = &r["metrics"][metric];
        let row = match dim {
            None => m,
            Some(d) => m["dims"].as_array().unwrap().iter().find(|x| x["name"] == d).unwrap(),
        };
        row["clocks"].clone()
    };
    let json = |from: &[&str], to: &[&str]| serde_json::json!({"from": from, "to": to});
    let (a, b, s) =
        ("feed:udp:233.54.12.111:26477", "feed:udp:233.54.12.112:26478", "session:tcp:10.1.0.1:8003@ouch50");
    assert_eq!(clocks(0, None), json(&["pcap", "metamako"], &["pcap"]));
    assert_eq!(clocks(0, Some(a)), json(&["pcap"], &["pcap"]));
    assert_eq!(clocks(0, Some(b)), json(&["metamako"], &["pcap"]));
    assert_eq!(clocks(0, Some(s)), json(&["pcap", "metamako"], &["pcap"]));
    assert_eq!(clocks(1, Some(s)), json(&["pcap"], &["pcap"]));
    assert_eq!(clocks(3, None), json(&["exchange"], &["pcap", "metamako"]));
    assert_eq!(clocks(3, Some(b)), json(&["exchange"], &["metamako"]));
    // A/B delays: the first copy on either feed, the later one on the dimension's.
    assert_eq!(clocks(2, Some(a)), json(&["pcap", "metamako"], &["pcap"]));
    let text = analyze_text(&[], &file);
    for m in ["tick_to_trade", "feed_ab_delay", "exchange_to_capture"] {
        assert!(text.contains(&format!("clocks: {m} subtracts ")), "{m}: {text}");
    }
    assert!(!text.contains("clocks: order_to_ack subtracts"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
