//! Two clocks in one capture: the tap's, in the stamps it appends, and the capture host's, in the
//! records. Frames the tap does not stamp (its keyframes, host traffic) are put on the tap's clock,
//! so that a capture whose host clock is minutes off its tap's reports no step back and times an
//! unstamped order against a stamped tick by the tap's clock.

mod support;
use serde_json::Value;
use std::process::Command;
use support::{MS, T0, aapl_add, analyze_json, mold_packet, order_for, segment, tmpdir, udp, with_trailer, write_pcap};
use wirestamp_testdata::data_file;

const FEED_A: &str = "udp:233.54.12.111:26477";
const ORDERS: &str = "tcp:10.1.0.1:8003@ouch50";

/// The tap's clock runs this far behind the host's record clock (a host clock 870 s off, as in the
/// Arista 7150 samples of ../shared/data), and the tap stamps a frame this long before the host
/// records it.
const BEHIND: i64 = 870 * 1_000_000_000;
const HOST_DELAY: i64 = 700;

fn wirestamp(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A stamped tick of feed A recorded at `rec` (the tap stamped it `BEHIND + HOST_DELAY` earlier).
fn stamped_tick(seq: u64, rec: i64) -> (i64, Vec<u8>) {
    let p = mold_packet(b"SESSION001", seq, &[aapl_add()]);
    (rec, with_trailer(&udp([233, 54, 12, 111], 26477, &p), rec - BEHIND - HOST_DELAY))
}

/// Ticks (stamped by the tap), an order session's SYN and an order (unstamped host traffic), and noise
/// (unstamped). The host records frames in time order on its clock. The second stamp confirms the
/// offset the first showed: an unstamped frame between them keeps its record time.
fn capture() -> Vec<(i64, Vec<u8>)> {
    let o = order_for(1, 2);
    vec![
        stamped_tick(1, T0),
        (T0 + MS / 2, udp([10, 9, 9, 9], 9999, b"early")),
        stamped_tick(2, T0 + 2 * MS),
        (T0 + 2 * MS + 10_000, segment(true, 0, 0, 0x02, &[])),
        // 20 us after tick 2 on the host's clock: on the tap's too, once moved by the offset tick 2
        // showed (BEHIND + HOST_DELAY).
        (T0 + 2 * MS + 20_000, segment(true, 1, 0, 0x18, &o)),
        (T0 + 3 * MS, udp([10, 9, 9, 9], 9999, b"noise")),
        stamped_tick(3, T0 + 4 * MS),
    ]
}

/// `frames` times each unstamped frame by its record time less the offset the input's last stamped
/// frame showed, flagged `host_offset`, and keeps the record time beside it.
#[test]
fn frames_the_tap_did_not_stamp_are_moved_onto_its_clock() {
    let dir = tmpdir("tap-clock-frames");
    let cap = dir.join("c.pcap");
    let frames = capture();
    write_pcap(&cap, &frames);
    let out = wirestamp(&["frames", "--format", "json", "--trailer", "metamako", cap.to_str().unwrap()]);
    let rows: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let shift = BEHIND + HOST_DELAY;
    let want: Vec<(i64, &str, &str)> = vec![
        (T0 - shift, "metamako", ""),
        (T0 + MS / 2, "pcap", ""),
        (T0 + 2 * MS - shift, "metamako", ""),
        (T0 + 2 * MS + 10_000 - shift, "pcap", "host_offset"),
        (T0 + 2 * MS + 20_000 - shift, "pcap", "host_offset"),
        (T0 + 3 * MS - shift, "pcap", "host_offset"),
        (T0 + 4 * MS - shift, "metamako", ""),
    ];
    let got: Vec<(i64, &str, &str)> = rows
        .iter()
        .map(|r| {
            (r["time_ns"].as_i64().unwrap(), r["ts_source"].as_str().unwrap(), r["quality"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(got, want);
    let records: Vec<i64> = rows.iter().map(|r| r["record_time_ns"].as_i64().unwrap()).collect();
    assert_eq!(records, frames.iter().map(|f| f.0).collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `analyze` on the same capture: one step back, of 870 s less the 1.5 ms between them, from the
/// unstamped frame before the offset's confirmation to the second stamp (timed by the record clock,
/// each stamped frame would step back from the unstamped one before it); the order's tick-to-trade
/// 20 us, as the host saw it; the session's two moved frames (the SYN, the order; the noise is in no
/// flow) counted among those with clock warnings.
#[test]
fn an_unstamped_order_is_timed_on_the_taps_clock() {
    let dir = tmpdir("tap-clock-analyze");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &capture());
    let r =
        analyze_json(&["--md", FEED_A, "--orders", ORDERS, "--match", r"token:T(\d+)", "--trailer", "metamako"], &cap);
    let c = &r["counters"];
    let step = BEHIND + HOST_DELAY - 3 * MS / 2;
    assert_eq!((c["time_steps_back"].as_u64(), c["largest_step_back_ns"].as_i64()), (Some(1), Some(step)), "{c}");
    assert_eq!(c["degraded_clock_frames"], 2, "{c}");
    assert_eq!((&c["ts_sources"]["metamako"], &c["ts_sources"]["pcap"]), (&3.into(), &2.into()), "{c}");
    let t2t = support::metric(&r, "tick_to_trade");
    assert_eq!(support::count_min_max(t2t), (Some(1), Some(20_000), Some(20_000)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two interfaces of one pcapng on different clocks (a file merged from two hosts): interface 0's
/// host records the tap-stamped ticks 37 s ahead of the tap, interface 1's records the orders on the
/// tap's clock. The offset interface 0 shows moves nothing of interface 1: the order, recorded 50 us
/// after the tick's stamp, is 50 us after it.
#[test]
fn an_interfaces_offset_moves_only_its_own_frames() {
    use wirestamp_capture::write::{IfaceSpec, PcapngWriter};
    use wirestamp_core::{Direction, LinkType};
    let dir = tmpdir("tap-clock-interfaces");
    let cap = dir.join("c.pcapng");
    const AHEAD: i64 = 37 * 1_000_000_000;
    let mut w = PcapngWriter::new(std::fs::File::create(&cap).unwrap(), None).unwrap();
    for name in ["md-host", "order-host"] {
        let spec = IfaceSpec { link: LinkType::Ethernet, name: name.into(), description: None, snaplen: 65_535 };
        w.add_interface(&spec).unwrap();
    }
    // (interface, record time, frame): ticks stamped at their tap time `t`, recorded `AHEAD` later.
    let tick = |seq: u64, t: i64| {
        (
            0,
            t + AHEAD,
            with_trailer(&udp([233, 54, 12, 111], 26477, &mold_packet(b"SESSION001", seq, &[aapl_add()])), t),
        )
    };
    let frames = [
        tick(1, T0),
        tick(2, T0 + MS),
        (1, T0 + MS + 10_000, segment(true, 0, 0, 0x02, &[])),
        (1, T0 + MS + 50_000, segment(true, 1, 0, 0x18, &order_for(1, 2))),
        tick(3, T0 + 2 * MS),
    ];
    let mut frames = frames.to_vec();
    // In record order, as a merge would write them: interface 1's frames first.
    frames.sort_by_key(|f| f.1);
    for (iface, t, f) in &frames {
        w.write(*iface, *t, f, f.len() as u32, Direction::Unknown).unwrap();
    }
    drop(w);
    let r = analyze_json(&["--md", FEED_A, "--orders", ORDERS, "--match", r"token:T(\d+)"], &cap);
    let t2t = support::metric(&r, "tick_to_trade");
    assert_eq!(support::count_min_max(t2t), (Some(1), Some(50_000), Some(50_000)), "{r}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A host whose clock agrees with the tap's (within 1 ms: PTP): the offset its stamped frames show is
/// the capture's delay (30 us here), and moves nothing. The order, recorded 20 us after the tick was
/// recorded, is 50 us after the tick's stamp, as the host's clock says.
#[test]
fn a_host_on_the_taps_clock_is_left_on_it() {
    let dir = tmpdir("tap-clock-synced");
    let cap = dir.join("c.pcap");
    const DELAY: i64 = 30_000;
    let tick = |seq: u64, t: i64| {
        (t + DELAY, with_trailer(&udp([233, 54, 12, 111], 26477, &mold_packet(b"SESSION001", seq, &[aapl_add()])), t))
    };
    let frames = vec![
        tick(1, T0),
        tick(2, T0 + MS),
        (T0 + MS + DELAY + 10_000, segment(true, 0, 0, 0x02, &[])),
        (T0 + MS + DELAY + 20_000, segment(true, 1, 0, 0x18, &order_for(1, 2))),
        tick(3, T0 + 2 * MS),
    ];
    write_pcap(&cap, &frames);
    let r = analyze_json(&["--md", FEED_A, "--orders", ORDERS, "--match", r"token:T(\d+)"], &cap);
    let t2t = support::metric(&r, "tick_to_trade");
    assert_eq!(support::count_min_max(t2t), (Some(1), Some(50_000), Some(50_000)), "{r}");
    assert_eq!(r["counters"]["degraded_clock_frames"], 0, "{r}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A capture no tap stamped but for one frame whose last bytes read as a Metamako trailer 10 days
/// off (automatic detection accepts a time within 30 days of the record's): no second stamp confirms
/// the offset, so the frames after it keep their record times.
#[test]
fn a_lone_stamp_moves_nothing() {
    let dir = tmpdir("tap-clock-lone");
    let cap = dir.join("c.pcap");
    const DAYS: i64 = 10 * 86_400 * 1_000_000_000;
    let p = mold_packet(b"SESSION001", 1, &[aapl_add()]);
    let frames = vec![
        (T0, with_trailer(&udp([233, 54, 12, 111], 26477, &p), T0 - DAYS)),
        (T0 + MS, udp([10, 9, 9, 9], 9999, b"one")),
        (T0 + 2 * MS, udp([10, 9, 9, 9], 9999, b"two")),
    ];
    write_pcap(&cap, &frames);
    // Alone, and merged with a second file (whose frame comes last): the merge looks at the stamped
    // frame once, and must not count it twice (it confirmed itself so).
    let other = dir.join("other.pcap");
    write_pcap(&other, &[(T0 + 3 * MS, udp([10, 9, 9, 9], 9999, b"three"))]);
    let want: Vec<(i64, String)> =
        vec![(T0 - DAYS, "metamako".into()), (T0 + MS, "pcap".into()), (T0 + 2 * MS, "pcap".into())];
    for files in [vec![&cap], vec![&cap, &other]] {
        let mut args = vec!["frames", "--format", "json"];
        args.extend(files.iter().map(|f| f.to_str().unwrap()));
        let out = wirestamp(&args);
        let got: Vec<(i64, String)> = out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|r| (r["time_ns"].as_i64().unwrap(), r["ts_source"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(got[..3], want[..], "{} file(s)", files.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The Arista 7150 samples (../shared/data/hwts_arista7150): the host recorded them 870 s off the
/// switch's clock, and the keyframes (once a second) carry no stamp. Each keyframe is timed by the time
/// it left the switch (its UTC sample plus `kf_timestamp - asic_time` ticks), so nothing steps back;
/// the capture spans the switch's time from the first keyframe to the last frame.
#[test]
fn arista7150_keyframes_are_timed_by_the_switch() {
    // test.pcap (two switches' keyframes, 3,608 s off the host) has an unstamped frame right after its
    // first keyframe: a keyframe's offset is taken at once, not after a second stamp confirms it.
    for file in ["test-1.pcap", "test-2.pcap", "test.pcap"] {
        let f = data_file(&format!("hwts_arista7150/{file}"));
        let r: Value = serde_json::from_str(&wirestamp(&["analyze", "-q", "--json", f.to_str().unwrap()])).unwrap();
        let c = &r["counters"];
        assert_eq!(c["time_steps_back"].as_u64(), Some(0), "{file}");
        if file != "test.pcap" {
            assert_eq!(c["reordered_frames"].as_u64(), Some(0), "{file}");
        }
        // The first frame is a keyframe (after the file and record headers, Ethernet and IPv4): asic_time
        // and utc_nanos at bytes 0 and 8 of its payload, kf_timestamp at 24 in v1 (46 bytes), at 40 in
        // v2 (62 bytes, with the skew at 24 and 32), ticks of 20/7 ns (formats.md) times the skew.
        let bytes = std::fs::read(&f).unwrap();
        let frame = &bytes[24 + 16..];
        // An 802.1Q tag (test.pcap's) moves IPv4 on by 4 bytes.
        let ip = if frame[12..14] == [0x81, 0x00] { 18 } else { 14 };
        let ip_len = usize::from(u16::from_be_bytes([frame[ip + 2], frame[ip + 3]]));
        let payload = &frame[ip + 20..ip + ip_len];
        let be = |at: usize| u64::from_be_bytes(payload[at..at + 8].try_into().unwrap()) as i128;
        let (kt, num, den) = match payload.len() {
            46 => (be(24), 20, 7),
            62 => (be(40), 20 * be(24), 7 * be(32)),
            n => panic!("{file}: a keyframe of {n} bytes"),
        };
        let left = be(8) + (kt - be(0)) * num / den;
        assert_eq!(r["first_time_ns"].as_i64().map(i128::from), Some(left), "{file}");
    }
}
