//! `wirestamp analyze`'s command line and outputs: what it refuses, and how it ends when its output
//! goes away. Each runs the binary.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use support::tmpdir;
use wirestamp_capture::RecordedStats;

fn wirestamp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(args).output().unwrap()
}

/// A small synthetic capture (1,000 market-data packets, 42 orders) in `dir`.
fn small_capture(dir: &Path) -> String {
    let cap = dir.join("small.pcapng").display().to_string();
    let out = wirestamp(&["synth", "-n", "1000", &cap]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    cap
}

#[test]
fn an_output_file_never_replaces_a_capture() {
    // `--pairs tapA.pcapng tapB.pcapng`: the pairs file's name forgotten, the first capture takes its
    // place. It must be refused, the capture left as it was, and the run must fail.
    let dir = tmpdir("overwrite");
    let cap = small_capture(&dir);
    let tap_a = dir.join("tapA.pcapng");
    std::fs::copy(&cap, &tap_a).unwrap();
    let before = std::fs::read(&tap_a).unwrap();
    for flag in ["--pairs", "--hlog"] {
        let out = wirestamp(&["analyze", "-q", flag, tap_a.to_str().unwrap(), &cap]);
        assert_eq!(out.status.code(), Some(1), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("refusing to overwrite"), "{flag}: {err}");
        assert_eq!(std::fs::read(&tap_a).unwrap(), before, "{flag}: the capture is intact");
    }
    // An earlier run's outputs, or empty files, are replaced.
    let (pairs, hlog) = (dir.join("p.csv"), dir.join("r.hlog"));
    for _ in 0..2 {
        let out =
            wirestamp(&["analyze", "-q", "--pairs", pairs.to_str().unwrap(), "--hlog", hlog.to_str().unwrap(), &cap]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // 42 pairs and the header.
    assert_eq!(std::fs::read_to_string(&pairs).unwrap().lines().count(), 43);
    std::fs::write(&pairs, b"").unwrap();
    let out = wirestamp(&["analyze", "-q", "--pairs", pairs.to_str().unwrap(), &cap]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `wirestamp ARGS` with its standard output's reading end closed before it writes.
fn closed_pipe(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_pipe_ends_the_output_quietly_and_a_full_disk_is_an_error() {
    let dir = tmpdir("pipe");
    let cap = small_capture(&dir);
    // synth and demo too (they panicked: "failed printing to stdout").
    let again = dir.join("again.pcapng").to_str().unwrap().to_owned();
    for args in [&["synth", "-n", "100", &again][..], &["demo", "-n", "200"]] {
        let out = closed_pipe(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // frames' JSON too (serde_json's error hid the closed pipe: "Broken pipe", exit 1).
    for args in
        [&["analyze", "--json"][..], &["analyze", "-q"], &["frames", "-q"], &["frames", "-q", "--format", "json"]]
    {
        // The reading end is closed before the report is written: EPIPE on the first write.
        let out = closed_pipe(&[args, &[cap.as_str()]].concat());
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        // A full disk is an error, said in one line naming the output, not a panic.
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(args).arg(&cap).stdout(full).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "wirestamp: error: standard output: writing: No space left on device (os error 28)\n",
            "{args:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An output that cannot be written (a full disk: /dev/full) is an error naming it, exit status 1:
/// `--pairs`, `--hlog`, synth's `--truth` and the truth it names itself, and standard output.
#[test]
fn a_full_disk_names_the_output_it_filled() {
    let dir = tmpdir("full-disk");
    let cap = small_capture(&dir);
    let no_space = "No space left on device (os error 28)";
    // Each synth run writes its own capture (one with a truth that is no earlier truth is refused).
    let synth_cap = |n: u8| dir.join(format!("s{n}.pcapng")).display().to_string();
    let (s1, s2, s3) = (synth_cap(1), synth_cap(2), synth_cap(3));
    // The truth synth names after the capture, a link to the full device.
    let beside = format!("{s2}.truth.csv");
    std::os::unix::fs::symlink("/dev/full", &beside).unwrap();
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for (args, stdout_full, want) in [
        (vec!["analyze", "-q", "--pairs", "/dev/full", &cap], false, format!("--pairs /dev/full: writing: {no_space}")),
        (vec!["analyze", "-q", "--hlog", "/dev/full", &cap], false, format!("--hlog /dev/full: writing: {no_space}")),
        (
            vec!["synth", "-n", "100", "--truth", "/dev/full", &s1],
            false,
            format!("--truth /dev/full: writing: {no_space}"),
        ),
        (vec!["synth", "-n", "100", &s2], false, format!("{beside} (the capture's truth): writing: {no_space}")),
        (vec!["analyze", "-q", &cap], true, format!("standard output: writing: {no_space}")),
        (vec!["frames", "-q", "-o", "/dev/full", &cap], false, format!("-o /dev/full: writing: {no_space}")),
        (vec!["frames", "-q", "--format", "json", &cap], true, format!("standard output: writing: {no_space}")),
        (
            vec!["synth", "-n", "100", "--truth", "/dev/null", &s3],
            true,
            format!("standard output: writing: {no_space}"),
        ),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wirestamp"));
        cmd.args(&args);
        if stdout_full {
            cmd.stdout(full());
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), format!("wirestamp: error: {want}\n"), "{args:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_duration_needs_its_unit() {
    // `1` meant as a second and read as 1 ns gives a plausible, wrong report: refused, as is a
    // symbol window of nothing.
    let dir = tmpdir("durations");
    let cap = small_capture(&dir);
    for args in [
        &["--tick-retention", "1"][..],
        &["--ack-timeout", "10"],
        &["--ack-timeout", "0s"],
        &["--match", "symbol:1"],
        &["--match", "symbol:0ns"],
    ] {
        let out = wirestamp(&[&["analyze", "-q"][..], args, &[&cap]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: the command line is wrong");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("above 0 with its unit"), "{args:?}: {err}");
    }
    let out = wirestamp(&["analyze", "-q", "--tick-retention", "1s", "--match", "symbol:500ms", &cap]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The offsets of a classic pcap's records (24-byte file header, 16-byte record headers, little
/// endian as synth writes it).
fn pcap_records(bytes: &[u8]) -> Vec<usize> {
    let (mut at, mut out) = (24, Vec::new());
    while at + 16 <= bytes.len() {
        out.push(at);
        at += 16 + u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    }
    out
}

#[test]
fn the_json_report_says_whether_the_input_was_read_whole() {
    let dir = tmpdir("input-status");
    let cap = dir.join("c.pcap");
    let out = wirestamp(&["synth", "--pcap", "-n", "1000", cap.to_str().unwrap()]);
    assert!(out.status.success());
    let bytes = std::fs::read(&cap).unwrap();
    let records = pcap_records(&bytes);
    let json = |path: &Path| -> (Option<i32>, serde_json::Value) {
        let out = wirestamp(&["analyze", "-q", "--json", path.to_str().unwrap()]);
        (out.status.code(), serde_json::from_slice(&out.stdout).unwrap())
    };
    // Whole.
    let (code, r) = json(&cap);
    assert_eq!(code, Some(0));
    // Every frame looked at by the trailer check, none with a trailer; ns record timestamps.
    let (file, n) = (cap.to_str().unwrap(), records.len());
    let kinds = serde_json::json!({ "metamako": 0, "cpacket": 0, "exablaze_hpt": 0, "exablaze_fusion": 0,
        "arista7150": 0, "arista7280": 0 });
    let whole = serde_json::json!({
        "complete": true, "stopped": null, "warnings": [], "frames_without_time": 0,
        "trailers": [{ "file": file, "mode": "auto", "frames": n, "stamped": kinds, "keyframes": kinds,
            "keyframes_rejected": 0, "freq_rejected": 0, "no_trailer": n, "rejected": 0, "before_keyframe": 0,
            "keyframe_too_old": 0, "truncated": 0, "stale": 0, "unsynced": 0, "degraded": 0, "extended": 0 }],
        "resolutions": [{ "file": file, "record_resolution_ns": 1 }],
    });
    assert_eq!(r["input"], whole);
    // Cut inside record 500: read to its end, with a warning naming the file, and named in
    // `cut_short` where its last whole record ends (a program need not parse the warning to tell it
    // from a whole capture: `complete` stays true, as reading was not stopped).
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..records[500] + 20]).unwrap();
    let (code, r) = json(&cut);
    assert_eq!(code, Some(0));
    assert_eq!(r["input"]["complete"], true);
    assert_eq!(r["counters"]["frames"], 500);
    // Record 500: its 16-byte header and caplen bytes, 20 of them present.
    let needed = records[501] - records[500];
    let w = r["input"]["warnings"][0].as_str().unwrap();
    assert_eq!(
        w,
        format!(
            "{}: at byte {} (record 500, after 500 packets): file cut short inside a record: 20 of {needed} bytes \
             present, {} missing",
            cut.display(),
            records[500],
            needed - 20
        )
    );
    let cut_short = serde_json::json!([{ "file": cut.to_str().unwrap(), "at_byte": records[500], "record": 500,
        "after_packets": 500 }]);
    assert_eq!(r["input"]["cut_short"], cut_short);
    assert_eq!(r["input"].get("losses_unknown"), None);
    // With a whole input beside it: only the cut one is named.
    let out = wirestamp(&["analyze", "-q", "--json", cap.to_str().unwrap(), cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let r2: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r2["input"]["cut_short"], cut_short);
    // The table says so too: a report saved from standard output must not pass for a whole capture's.
    let text = |path: &Path| String::from_utf8(wirestamp(&["analyze", "-q", path.to_str().unwrap()]).stdout).unwrap();
    assert!(text(&cut).lines().any(|l| l == format!("input: {w}")), "{}", text(&cut));
    // Record 100's length field broken: reading stops there, the report covers 100 frames and says so.
    let mut broken = bytes.clone();
    broken[records[100] + 8..records[100] + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad = dir.join("bad.pcap");
    std::fs::write(&bad, &broken).unwrap();
    let (code, r) = json(&bad);
    assert_eq!(code, Some(1));
    assert_eq!(r["input"]["complete"], false);
    // Stopped, not cut: `stopped` says where.
    assert_eq!(r["input"].get("cut_short"), None);
    assert_eq!(r["counters"]["frames"], 100);
    let stopped = r["input"]["stopped"].as_str().unwrap();
    assert!(
        stopped.starts_with(&format!(
            "stopped after 100 frames: {}: at byte {} (record 100, after 100 packets)",
            bad.display(),
            records[100]
        )),
        "{stopped}"
    );
    let want = format!("input: {stopped}: the figures cover only the frames before it");
    assert!(text(&bad).lines().any(|l| l == want), "{}", text(&bad));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A zstd capture cut short (the audit's elk_nasdaq.pcap, 50,086 bytes compressed): cut in its second
/// block, the records of the first are analysed, exit status 0, with a warning saying what was lost
/// (it said nothing of it); cut in its first block, nothing could be decoded: exit status 1 with a
/// message that says so (it was "read failed: incomplete frame").
#[test]
fn a_zstd_capture_cut_short_is_analysed_up_to_its_last_whole_block() {
    let dir = tmpdir("zstd-cut");
    let elk = wirestamp_testdata::data_file("pcap_market/elk_nasdaq.pcap");
    let z = Command::new("zstd").arg("-q").arg("-c").arg(&elk).output().expect("zstd (scripts/setup.sh installs it)");
    assert!(z.status.success());
    let z = z.stdout;
    assert_eq!(z.len(), 50_086);
    let cut = dir.join("cut.pcap.zst");
    std::fs::write(&cut, &z[..50_000]).unwrap();
    // What zstd -d decodes of it: the records wholly inside are the frames to analyse.
    let decoded = Command::new("zstd").arg("-q").arg("-dc").arg(&cut).output().unwrap().stdout;
    assert_eq!(decoded.len(), 131_072);
    let pcap = std::fs::read(&elk).unwrap();
    let records = pcap_records(&pcap);
    // Record i ends where record i + 1 begins.
    let ends = records.iter().skip(1).copied().chain([pcap.len()]);
    let frames = ends.take_while(|&end| end <= decoded.len()).count();
    let at = records[frames];
    assert_eq!((frames, at), (1_181, 131_070));
    let out = wirestamp(&["analyze", "-q", "--json", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["counters"]["frames"], frames);
    assert_eq!(r["input"]["complete"], true);
    // 19,243 compressed bytes after the first block's end (byte 30,757) could not be decoded.
    let warning = format!(
        "{}: at decompressed byte {at} (record {frames}, after {frames} packets): compressed stream ends early (file cut short): \
         the last 19243 compressed bytes, an incomplete zstd block, could not be decoded (a compressed block is decoded only \
         whole); 88938 of the frame's 220010 decoded bytes are missing",
        cut.display()
    );
    assert_eq!(r["input"]["warnings"], serde_json::json!([warning]));
    let cut_short = serde_json::json!([{ "file": cut.to_str().unwrap(), "at_byte": at, "record": frames,
        "after_packets": frames }]);
    assert_eq!(r["input"]["cut_short"], cut_short);
    // Cut in the first block: nothing decoded, the cut said.
    std::fs::write(&cut, &z[..30_000]).unwrap();
    let out = wirestamp(&["analyze", "-q", "--json", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let want = format!(
        "wirestamp: error: {}: at decompressed byte 0 (record 0, after 0 packets): compressed stream ends early (file cut \
         short): the last 29991 compressed bytes, an incomplete zstd block, could not be decoded (a compressed block is \
         decoded only whole); 220010 of the frame's 220010 decoded bytes are missing: nothing of the capture was \
         decoded\n",
        cut.display()
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `cap` (a classic pcap) with every frame stamped `by` ns earlier.
fn shifted(cap: &Path, by: u64, out: &Path) {
    let mut bytes = std::fs::read(cap).unwrap();
    for at in pcap_records(&bytes) {
        let ns = u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())) * 1_000_000_000
            + u64::from(u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()))
            - by;
        bytes[at..at + 4].copy_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        bytes[at + 4..at + 8].copy_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
    }
    std::fs::write(out, &bytes).unwrap();
}

#[test]
fn the_table_says_which_samples_are_negative_or_saturated() {
    // The capture clock 1 ms, then 2 h, behind the exchange's: exchange_to_capture goes negative (the
    // ITCH stamps stay put), and beyond an hour saturates. The table must say how many, per metric
    // and dimension, as the JSON does.
    let dir = tmpdir("negative");
    let cap = dir.join("c.pcap");
    assert!(wirestamp(&["synth", "--pcap", "-n", "1000", cap.to_str().unwrap()]).status.success());
    let moved = dir.join("moved.pcap");
    for (by, saturated) in [(1_000_000, false), (7_200_000_000_000, true)] {
        shifted(&cap, by, &moved);
        let r: serde_json::Value =
            serde_json::from_slice(&wirestamp(&["analyze", "-q", "--json", moved.to_str().unwrap()]).stdout).unwrap();
        let e2c = support::metric(&r, "exchange_to_capture").clone();
        let (n, count) = (e2c["negative"].as_u64().unwrap(), e2c["count"].as_u64().unwrap());
        // synth's exchange stamps trail the capture by well under 1 ms: every sample is negative.
        assert_eq!(n, count, "{by}");
        assert_eq!(e2c["saturated"], if saturated { count } else { 0 }, "{by}");
        let table = String::from_utf8(wirestamp(&["analyze", "-q", moved.to_str().unwrap()]).stdout).unwrap();
        let mut rows = vec![(String::from("exchange_to_capture"), &e2c)];
        rows.extend(
            e2c["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| (format!("exchange_to_capture {}", d["name"].as_str().unwrap()), d)),
        );
        for (name, m) in rows {
            let line = format!(
                "\n{name}: {} of {} samples negative (the clocks of the two ends disagree)\n",
                m["negative"], m["count"]
            );
            assert!(table.contains(&line), "{line} in {table}");
            let line = format!("\n{name}: {} samples beyond an hour either way", m["count"]);
            assert_eq!(table.contains(&line), saturated, "{line} in {table}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The times of a classic ns pcap's records.
fn record_times(bytes: &[u8]) -> Vec<i64> {
    let u = |at: usize| i64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()));
    pcap_records(bytes).into_iter().map(|at| u(at) * 1_000_000_000 + u(at + 4)).collect()
}

#[test]
fn the_interval_log_covers_the_capture_and_no_more() {
    // The capture starts 750.100170 ms into a second (every frame 249.899830 ms earlier than synth's
    // whole-second start): the first interval covers 249.9 ms of it, the last one ends at the last
    // frame, and no line claims a whole second it does not cover. Times are rounded to the nearest ms
    // (as Java's writer prints them), so the intervals after the first start at 0.250, 1.250, ...
    // (truncated, 0.249: a reader put each second's boundary 1 ms early). exchange_to_capture is then
    // all negative: its lines' maxima are 0 (the histogram holds no sample), not a negative value.
    let dir = tmpdir("hlog");
    let cap = dir.join("c.pcap");
    assert!(
        wirestamp(&["synth", "--pcap", "-n", "100000", "--gap-ns", "40000", cap.to_str().unwrap()]).status.success()
    );
    let moved = dir.join("moved.pcap");
    shifted(&cap, 249_899_830, &moved);
    let times = record_times(&std::fs::read(&moved).unwrap());
    let (first, last) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
    assert_eq!(first % 1_000_000_000, 750_100_170);
    let hlog = dir.join("run.hlog");
    let out = wirestamp(&["analyze", "-q", "--hlog", hlog.to_str().unwrap(), moved.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&hlog).unwrap();
    let start_ms = (first + 500_000) / 1_000_000;
    assert!(text.starts_with(&format!(
        "#[Histogram log format version 1.3]\n#[StartTime: {}.{:03} (seconds since epoch)]\n",
        start_ms / 1000,
        start_ms % 1000
    )));
    // Interval starts and lengths in ms, relative to the first frame: 0 for 250 ms, then whole
    // seconds from 250 ms on, the last to the last frame.
    let last_start = last - last.rem_euclid(1_000_000_000);
    let ms = |ns: i64| {
        let ms = (ns + 500_000) / 1_000_000;
        format!("{}.{:03}", ms / 1000, ms % 1000)
    };
    for metric in ["tick_to_trade", "exchange_to_capture"] {
        let lines: Vec<Vec<&str>> =
            text.lines().filter(|l| l.starts_with(&format!("Tag={metric},"))).map(|l| l.split(',').collect()).collect();
        let n = lines.len();
        assert!(n >= 3, "{metric}: {n} intervals");
        assert_eq!((lines[0][1], lines[0][2]), ("0.000", "0.250"), "{metric}");
        for (k, l) in lines.iter().enumerate().take(n - 1).skip(1) {
            assert_eq!((l[1], l[2]), (format!("{}.250", k - 1).as_str(), "1.000"), "{metric}");
        }
        assert_eq!(
            (lines[n - 1][1], lines[n - 1][2]),
            (ms(last_start - first).as_str(), ms(last - last_start).as_str())
        );
        if metric == "exchange_to_capture" {
            assert!(lines.iter().all(|l| l[3] == "0.000"), "{metric}: maxima of empty histograms");
        }
    }
    // No sample at all (feeds and sessions that are not in the capture): the header alone, at the
    // capture's first time.
    let empty = dir.join("empty.hlog");
    let args = ["--md", "udp:239.9.9.9:9", "--orders", "tcp:10.9.9.9:9", "--hlog", empty.to_str().unwrap()];
    let out = wirestamp(&[&["analyze", "-q"][..], &args, &[moved.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&empty).unwrap(),
        format!(
            "#[Histogram log format version 1.3]\n#[StartTime: {}.{:03} (seconds since epoch)]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
            start_ms / 1000,
            start_ms % 1000
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flows_from_the_file_and_the_command_line_are_combined_and_errors_name_their_source() {
    let dir = tmpdir("config");
    let cap = small_capture(&dir);
    let conf = dir.join("flows.toml");
    let run = |args: &[&str]| wirestamp(&[&["analyze", "-q", "--json"][..], args, &[&cap]].concat());
    // The same feed in the file and on the command line is one feed; the file's `match` yields to
    // --match.
    std::fs::write(&conf, "md = [\"udp:233.54.12.111:26477\"]\nmatch = \"symbol\"\n").unwrap();
    let c = conf.to_str().unwrap();
    let out = run(&[
        "--config",
        c,
        "--md",
        "udp:233.54.12.111:26477",
        "--md",
        "udp:233.54.12.112:26478",
        "--match",
        r"token:T(\d+)",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let feeds: Vec<&str> = r["feeds"].as_array().unwrap().iter().map(|f| f["feed"].as_str().unwrap()).collect();
    assert_eq!(feeds, ["udp:233.54.12.111:26477", "udp:233.54.12.112:26478"]);
    assert_eq!(r["match"], r"token:T(\d+)");
    // An error in the file names the file and the entry, not a flag that was never given.
    for (text, want) in [
        ("md = [\"tcp:1.2.3.4:5\"]\n", format!("{c}: md = \"tcp:1.2.3.4:5\": a market-data feed is udp:GROUP:PORT")),
        (
            "md = [\"233.54.12.111:26477\"]\n",
            format!("{c}: md = \"233.54.12.111:26477\": the udp: prefix is missing: a market-data feed is udp:"),
        ),
        ("orders = [\"udp:1.2.3.4\"]\n", format!("{c}: orders = \"udp:1.2.3.4\": flow `udp:1.2.3.4`: missing :PORT")),
        (
            "match = \"token:T\\\\d+\"\n",
            format!("{c}: match = \"token:T\\d+\": the regular expression needs a capture group holding the sequence"),
        ),
        ("by = [\"feed\"]\n", format!("{c}: by = \"feed\": the breakdowns are `symbol`")),
    ] {
        std::fs::write(&conf, text).unwrap();
        let err = String::from_utf8(run(&["--config", c]).stderr).unwrap();
        assert!(err.starts_with(&format!("wirestamp: error: {want}")), "{err}");
    }
    // The command line's errors name its flags.
    let err = String::from_utf8(run(&["--match", r"token:T\d+"]).stderr).unwrap();
    assert!(err.starts_with("wirestamp: error: --match token:T\\d+: the regular expression needs a capture"), "{err}");
    // An address without its transport says which prefix it lacks, and the spec with it (it said
    // "missing :PORT", then "`233.54.12.111:` is not udp: or tcp:").
    for (args, want) in [
        (
            ["--md", "233.54.12.111:26477"],
            "--md 233.54.12.111:26477: the udp: prefix is missing: a market-data feed is \
             udp:GROUP:PORT[@moldudp64], here udp:233.54.12.111:26477",
        ),
        (
            ["--orders", "10.1.0.1:8003@ouch42"],
            "--orders 10.1.0.1:8003@ouch42: the tcp: prefix is missing: an order session is \
             tcp:HOST:PORT[@ouch50|@ouch42], here tcp:10.1.0.1:8003@ouch42",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8(out.stderr).unwrap(), format!("wirestamp: error: {want}\n"));
    }
    // One exchange end with two OUCH versions is refused, naming both places (the first won silently).
    std::fs::write(&conf, "orders = [\"tcp:10.1.0.1:8003@ouch50\"]\n").unwrap();
    let err = String::from_utf8(run(&["--config", c, "--orders", "tcp:10.1.0.1:8003@ouch42"]).stderr).unwrap();
    let want = format!(
        "wirestamp: error: --orders tcp:10.1.0.1:8003@ouch42: this exchange end was already given with another \
         OUCH version ({c}: orders = \"tcp:10.1.0.1:8003@ouch50\"): give it once"
    );
    assert!(err.starts_with(&want), "{err}");
    // A regex in a double-quoted TOML string: its backslash is an invalid escape. The error says where,
    // and how to write it.
    std::fs::write(&conf, "match = \"token:T(\\d+)\"\n").unwrap();
    let err = String::from_utf8(run(&["--config", c]).stderr).unwrap();
    assert!(
        err.starts_with(&format!("wirestamp: error: {c}: not a valid wirestamp config: TOML parse error at line 1")),
        "{err}"
    );
    assert!(err.contains("in single quotes, a TOML literal string: match = 'token:T(\\d+)'"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn one_side_given_alone_says_the_other_is_not_detected() {
    let dir = tmpdir("one-side");
    let cap = small_capture(&dir);
    let table =
        |args: &[&str]| String::from_utf8(wirestamp(&[&["analyze", "-q"][..], args, &[&cap]].concat()).stdout).unwrap();
    let md = table(&["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478"]);
    assert!(
        md.contains("\nnote: order sessions (--orders) were not given, and are only detected when neither"),
        "{md}"
    );
    let orders = table(&["--orders", "tcp:10.1.0.1:8003"]);
    assert!(orders.contains("\nnote: market-data feeds (--md) were not given"), "{orders}");
    // (But the symbol rule's on its lower bounds, there whenever it matched: analyze_bounds.rs.)
    let detected = table(&[]);
    let notes: Vec<&str> = detected.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "detected: no note but the symbol rule's: {detected}");
    assert!(notes[0].starts_with("note: the symbol rule timed each order"), "{detected}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// synth refuses what it cannot produce, naming the parameter (negative values reach the check,
/// not clap's "unexpected argument"), with exit status 2 as for clap's own errors, and says where
/// its output departs from what was asked.
#[test]
fn synth_refuses_what_it_cannot_produce_and_says_what_it_clamped() {
    let dir = tmpdir("synth-args");
    let cap = dir.join("s.pcap");
    let c = cap.to_str().unwrap();
    for (args, want) in [
        (&["--sigma", "-1"][..], "--sigma -1: must lie in 0..5"),
        (&["--order-prob", "-0.1"], "--order-prob -0.1: a probability must lie in 0..1"),
        (&["--stall-prob", "NaN"], "--stall-prob NaN: a probability must lie in 0..1"),
        (&["--median-ns", "inf"], "--median-ns inf: must lie above 0 and at most 12500000 (12.5 ms)"),
        (&["--median-ns", "2e9"], "--median-ns 2000000000: must lie above 0 and at most 12500000 (12.5 ms)"),
        (&["--stall-ns", "1e12"], "--stall-ns 1000000000000: must lie in 0..8333333"),
        (&["--gap-ns", "1000000"], "--gap-ns 1000000: must lie in 1..100000"),
        (&["-n", "0"], "-n 0: at least 1 packet (the Stock Directory packet that opens the feed)"),
        (&["--order-prob", "2"], "--order-prob 2: a probability must lie in 0..1"),
        (&["--max-msgs", "31"], "--max-msgs 31: must lie in 1..30 (messages per packet, drawn uniformly from 1 to it)"),
        (&["--max-msgs", "0"], "--max-msgs 0: must lie in 1..30 (messages per packet, drawn uniformly from 1 to it)"),
    ] {
        let out = wirestamp(&[&["synth", c][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with(&format!("wirestamp: error: {want}")), "{args:?}: {err}");
        assert!(!cap.exists(), "{args:?}: nothing written");
    }
    // A median of 5 ms with a spread of 1: a sixth of the drawn latencies are above 12.5 ms. They are
    // clamped, and the run says how many: the truth's latencies at exactly 12.5 ms.
    let out = wirestamp(&["synth", c, "-n", "20000", "--median-ns", "5e6", "--sigma", "1"]);
    assert!(out.status.success());
    let truth = std::fs::read_to_string(dir.join("s.pcap.truth.csv")).unwrap();
    let at_limit = truth.lines().skip(1).filter(|l| l.split(',').nth(6) == Some("12500000")).count();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(at_limit > 0);
    assert!(
        err.contains(&format!("warning: {at_limit} drawn latencies were above 12.5 ms and clamped to it")),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs the shell command `cmd`, on a terminal when `tty` (`script`, util-linux, gives it one):
/// whether it succeeded, and what it wrote on stderr (through the terminal, which `script` passes on
/// its stdout, when `tty`).
fn stderr_of(cmd: &str, tty: bool) -> (bool, String) {
    let out = if tty {
        Command::new("script").args(["-qec", cmd, "/dev/null"]).output().expect("script (util-linux)")
    } else {
        Command::new("sh").args(["-c", cmd]).output().unwrap()
    };
    (out.status.success(), String::from_utf8_lossy(if tty { &out.stdout } else { &out.stderr }).into_owned())
}

/// Progress on stderr is shown for a run of more than a second, on a terminal only, and not with
/// `-q`. The capture comes through a FIFO that pauses 1.3 s after a third of it, so the run takes
/// more than a second on any machine; `script` (util-linux) gives the command a terminal.
#[test]
fn progress_shows_on_a_terminal_when_a_run_takes_more_than_a_second() {
    let dir = tmpdir("progress");
    let cap = dir.join("s.pcap");
    let out = wirestamp(&["synth", "--pcap", "-n", "70000", cap.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let data = std::fs::read(&cap).unwrap();
    let fifo = dir.join("slow.pcap");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let bin = env!("CARGO_BIN_EXE_wirestamp");
    let report = dir.join("report.txt");
    // Runs `analyze [extra] INPUT`, its stdout to `report`; with the FIFO as input, fed slowly. Returns
    // what reached stderr (through the terminal when `tty`).
    let run = |tty: bool, extra: &str, slow: bool| -> String {
        let input = if slow { &fifo } else { &cap };
        let feeder = slow.then(|| {
            let (fifo, data) = (fifo.clone(), data.clone());
            std::thread::spawn(move || {
                use std::io::Write;
                let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                w.write_all(&data[..data.len() / 3]).unwrap();
                w.flush().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(1_300));
                w.write_all(&data[data.len() / 3..]).unwrap();
            })
        });
        let cmd = format!("{bin} analyze {extra} --match 'token:T(\\d+)' {} > {}", input.display(), report.display());
        let (ok, err) = stderr_of(&cmd, tty);
        if let Some(f) = feeder {
            f.join().unwrap();
        }
        assert!(ok, "{cmd}: {err}");
        let text = std::fs::read_to_string(&report).unwrap();
        assert!(text.contains("tick_to_trade"), "{cmd}: no report: {text}");
        err
    };
    let progress = |s: &str| {
        s.split('\r').any(|l| {
            let mut w = l.split_whitespace();
            matches!(
                (
                    w.next().map(|n| n.parse::<u64>().is_ok()),
                    w.next(),
                    w.next().map(|r| r.parse::<f64>().is_ok()),
                    w.next()
                ),
                (Some(true), Some("frames,"), Some(true), Some("M/s"))
            )
        })
    };
    let shown = run(true, "", true);
    assert!(progress(&shown), "a terminal and a run of more than a second: {shown:?}");
    // The line is wiped at the end, so that the report's first line starts clean.
    assert!(shown.contains(&format!("\r{:60}\r", "")), "{shown:?}");
    for (what, tty, extra, slow) in
        [("not a terminal", false, "", true), ("-q", true, "-q", true), ("a quick run", true, "", false)]
    {
        let s = run(tty, extra, slow);
        assert!(!progress(&s) && !s.contains("frames,"), "{what}: {s:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-` reads the capture from standard input (`tcpdump -w - | wirestamp analyze -`): the report is
/// the file's, gzip-compressed input included, the input named `stdin`; `-` twice is refused.
#[test]
fn a_capture_on_standard_input() {
    let dir = tmpdir("stdin");
    let cap = small_capture(&dir);
    let gz = dir.join("small.pcapng.gz");
    let zipped = Command::new("gzip").args(["-c", &cap]).output().expect("gzip");
    assert!(zipped.status.success());
    std::fs::write(&gz, zipped.stdout).unwrap();
    let from_file: serde_json::Value =
        serde_json::from_slice(&wirestamp(&["analyze", "-q", "--json", &cap]).stdout).unwrap();
    for input in [cap.clone(), gz.display().to_string()] {
        let out = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
            .args(["analyze", "-q", "--json", "-"])
            .stdin(std::fs::File::open(&input).unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["input"]["trailers"][0]["file"], "stdin");
        r["input"]["trailers"][0]["file"] = from_file["input"]["trailers"][0]["file"].clone();
        assert_eq!(r["input"]["resolutions"][0]["file"], "stdin");
        r["input"]["resolutions"][0]["file"] = from_file["input"]["resolutions"][0]["file"].clone();
        assert_eq!(r, from_file, "{input} on standard input");
    }
    let out = wirestamp(&["analyze", "-", "-"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err, "wirestamp: error: standard input (-) is given more than once: it can be read once\n");
    // Standard input a terminal (`script` gives one): an error at once, not a wait for bytes.
    let cmd = format!("{} analyze -; echo exit=$?", env!("CARGO_BIN_EXE_wirestamp"));
    // Without the check the run would wait for the terminal's bytes for ever: 10 s, then it fails.
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script (util-linux)");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let ended = child.try_wait().unwrap().is_some();
    if !ended {
        child.kill().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(ended, "still waiting on a terminal after 10 s: {text}");
    assert!(text.contains("reads a capture from standard input, which is a terminal here"), "{text}");
    assert!(text.contains("exit=1"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `synth` shows its progress on stderr for a run of more than a second, on a terminal only, and
/// wipes the line at the end. The capture goes to a FIFO whose reader pauses 1.3 s, so the run takes
/// more than a second on any machine; `script` (util-linux) gives the command a terminal.
#[test]
fn synth_shows_progress_on_a_terminal_when_a_run_takes_more_than_a_second() {
    let dir = tmpdir("synth-progress");
    let fifo = dir.join("out.pcap");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let truth = dir.join("truth.csv");
    let bin = env!("CARGO_BIN_EXE_wirestamp");
    let run = |tty: bool| -> String {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut r = std::fs::File::open(&fifo).unwrap();
                let mut first = vec![0u8; 1 << 20];
                r.read_exact(&mut first).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(1_300));
                let mut rest = Vec::new();
                r.read_to_end(&mut rest).unwrap();
                first.len() + rest.len()
            })
        };
        let cmd = format!("{bin} synth --pcap -n 200000 {} --truth {}", fifo.display(), truth.display());
        let (ok, err) = stderr_of(&cmd, tty);
        let bytes = reader.join().unwrap();
        assert!(ok, "{cmd}: {err}");
        assert!(bytes > 1 << 20);
        err
    };
    let shown = run(true);
    let progress = |s: &str| s.split('\r').any(|l| l.trim_end().ends_with("of 200000 market-data packets"));
    assert!(progress(&shown), "a terminal and a run of more than a second: {shown:?}");
    assert!(shown.contains(&format!("\r{:60}\r", "")), "the line is wiped: {shown:?}");
    let quiet = run(false);
    assert!(!progress(&quiet) && !quiet.contains("market-data packets   "), "not a terminal: {quiet:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every output the commands write is checked before anything is written: `frames -o` and
/// `synth --truth` never replace a capture (the input itself included), nor `synth` a capture
/// without its truth beside it, `--pairs` and `--hlog` never
/// share a file, and a capture given twice is refused (each frame would be its own duplicate). An
/// earlier output of the same kind may be replaced. Each refusal leaves the files as they were and
/// exits 1 for a file that would be replaced, 2 for a command line that cannot be right (one file
/// given twice, an output named `-`).
#[test]
fn outputs_never_replace_a_capture_or_each_other() {
    let dir = tmpdir("outputs");
    let cap = small_capture(&dir);
    let before = std::fs::read(&cap).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let refused_with = |code: i32, args: &[&str], why: &str| {
        let out = wirestamp(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
        assert_eq!(std::fs::read(&cap).unwrap(), before, "{args:?} changed the capture");
    };
    let refused = |args: &[&str], why: &str| refused_with(1, args, why);
    let wrong = |args: &[&str], why: &str| refused_with(2, args, why);
    refused(&["frames", "-o", &cap, &cap], "is not an earlier -o output: refusing to overwrite it");
    refused(&["frames", "--format", "json", "-o", &cap, &cap], "is not an earlier -o output");
    wrong(&["synth", "-n", "5", "--truth", &cap, &cap], "the capture and --truth name the same file");
    let other = dir.join("other.pcapng");
    refused(&["synth", "-n", "5", "--truth", &cap, &s(&other)], "--truth");
    assert!(!other.exists(), "the capture was written before --truth was refused");
    // synth over a capture that is no earlier synth's (no truth beside it); over its own, it goes.
    let real = dir.join("real.pcapng");
    std::fs::copy(&cap, &real).unwrap();
    let out = wirestamp(&["synth", "-n", "5", &s(&real)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is no earlier synth capture (its truth,"));
    assert_eq!(std::fs::read(&real).unwrap(), before, "synth replaced a capture");
    let x = s(&dir.join("x.out"));
    wrong(&["analyze", "-q", "--pairs", &x, "--hlog", &x, &cap], "--pairs and --hlog name the same file");
    // Two spellings of one file not made yet (each output clobbered the other).
    let in_dir = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_wirestamp")).current_dir(&dir).args(args).output();
    let out = in_dir(&["analyze", "-q", "--pairs", "y.csv", "--hlog", "./y.csv", &cap]).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pairs and --hlog name the same file, ./y.csv"));
    let out = in_dir(&["synth", "-n", "5", "--truth", "./sx.pcapng", "sx.pcapng"]).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the capture and --truth name the same file"));
    assert!(!dir.join("y.csv").exists() && !dir.join("sx.pcapng").exists());
    // A symbolic link to a file not made yet names it.
    std::os::unix::fs::symlink("z.csv", dir.join("z-link.hlog")).unwrap();
    let out = in_dir(&["analyze", "-q", "--pairs", "z.csv", "--hlog", "z-link.hlog", &cap]).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pairs and --hlog name the same file"));
    assert!(!dir.join("z.csv").exists());
    let same = format!("{}/./small.pcapng", dir.display());
    wrong(&["analyze", "-q", &cap, &same], "are the same file: give each capture once");
    let hard = dir.join("hard-link.pcapng");
    std::fs::hard_link(&cap, &hard).unwrap();
    wrong(&["analyze", "-q", &cap, &s(&hard)], "are the same file: give each capture once");
    wrong(&["frames", "-q", &s(&hard), &cap], "are the same file: give each capture once");
    // Standard input redirected from a capture also given by name.
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["analyze", "-q", &cap, "-"])
        .stdin(std::fs::File::open(&cap).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("and - are the same file: give each capture once"));
    // A truth synth names itself is named so, not as a --truth never given.
    let out = wirestamp(&["synth", "-n", "5", "/nonexistent/dir/x.pcapng"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("wirestamp: error: cannot create /nonexistent/dir/x.pcapng.truth.csv (the capture's truth)")
    );
    refused(&["analyze", "-q", "--pairs", &s(&hard), &cap], "--pairs");
    // `-` is standard input for captures; no output makes a file named `-`.
    for args in [
        &["analyze", "-q", "--pairs", "-", &cap][..],
        &["analyze", "-q", "--hlog", "-", &cap],
        &["frames", "-q", "-o", "-", &cap],
        &["synth", "-n", "5", "--truth", "-", &s(&other)],
        &["synth", "-n", "5", "-"],
    ] {
        wrong(args, "-: outputs are written to a named file");
    }
    assert!(!Path::new("-").exists() && !other.exists());
    // Earlier outputs of the same kind are replaced.
    let csv = s(&dir.join("frames.csv"));
    for _ in 0..2 {
        assert!(wirestamp(&["frames", "-q", "-o", &csv, &cap]).status.success());
    }
    let truth = s(&dir.join("t.csv"));
    for _ in 0..2 {
        assert!(wirestamp(&["synth", "-n", "5", "--truth", &truth, &s(&other)]).status.success());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The record timestamps' unit is said beside the figures it limits (measurement.md: the clock's
/// granularity next to any figure close to it): a µs pcap (editcap's conversion of a ns capture)
/// counts in 1 us, in the JSON and under the table; a ns capture says nothing.
#[test]
fn the_record_timestamps_unit_is_said() {
    let dir = tmpdir("resolution");
    let cap = small_capture(&dir);
    let us = dir.join("us.pcap");
    let out = Command::new("editcap").args(["-F", "pcap", &cap, us.to_str().unwrap()]).output().expect("editcap");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (file, unit) in [(us.to_str().unwrap(), 1_000), (cap.as_str(), 1)] {
        let out = wirestamp(&["analyze", "-q", "--json", file]);
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["input"]["resolutions"], serde_json::json!([{ "file": file, "record_resolution_ns": unit }]));
        let text = String::from_utf8(wirestamp(&["analyze", "-q", file]).stdout).unwrap();
        let line = format!("the record timestamps of {file} count in units of 1.00us: a figure within a few units");
        assert_eq!(text.contains(&line), unit > 1, "{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A token regex that fits none of the orders' tokens (the commonest mistake with the token rule)
/// says so under the matching line, with the first order's token to compare with, as the wire holds
/// it (quoted, padded with spaces to the 14 bytes of an OUCH 5.0 ClOrdID); a regex that fits says
/// nothing of it.
#[test]
fn a_regex_that_fits_no_token_shows_one() {
    let dir = tmpdir("regex-hint");
    let cap = small_capture(&dir);
    let truth = std::fs::read_to_string(format!("{cap}.truth.csv")).unwrap();
    // tick_seq,tick_time_ns,first_feed,user_ref_num,cl_ord_id,...: the earliest order's ClOrdID.
    let first = truth.lines().nth(1).unwrap().split(',').nth(4).unwrap().to_owned();
    let text = String::from_utf8(wirestamp(&["analyze", "-q", "--match", r"token:X(\d+)", &cap]).stdout).unwrap();
    let hint = format!(
        r#"  no order's token gave a sequence under token:X(\d+): the first was "{first:<14}"; the regex's first"#
    );
    assert!(text.lines().any(|l| l.starts_with(&hint)), "{hint:?} in {text}");
    let text = String::from_utf8(wirestamp(&["analyze", "-q", "--match", r"token:T(\d+)", &cap]).stdout).unwrap();
    assert!(!text.contains("no order's token gave a sequence"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Feeds and sessions given wrong (the commonest mistakes with `--md` and `--orders`) get a note that
/// says what the traffic shows and what to try, in the JSON (`notes`) and under the table; a run
/// given right has none. On a synth capture: feeds to 233.54.12.111:26477 and .112:26478, orders
/// from 10.1.0.2:40001 to the exchange at 10.1.0.1:8003, OUCH 5.0.
#[test]
fn flows_given_wrong_are_noted_with_what_to_try() {
    let dir = tmpdir("flow-notes");
    let cap = support::synth_pcap(&dir, "s.pcap", 2_000);
    let notes = |args: &[&str]| -> Vec<String> {
        let r = support::analyze_json(args, &cap);
        let all: Vec<String> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_owned()).collect();
        // The symbol rule's note on its lower bounds is there whenever it matched (analyze_bounds.rs):
        // not about the flows.
        let notes: Vec<String> =
            all.iter().filter(|n| !n.starts_with("the symbol rule timed each order")).cloned().collect();
        let text = support::analyze_text(args, &cap);
        for n in &notes {
            assert!(text.lines().any(|l| l == format!("note: {n}")), "{text}");
        }
        notes
    };
    let right = ["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478", "--orders", "tcp:10.1.0.1:8003"];
    assert_eq!(notes(&right), Vec::<String>::new());
    let has = |args: &[&str], parts: &[&str]| {
        let n = notes(args);
        assert!(n.iter().any(|n| parts.iter().all(|p| n.contains(p))), "{args:?}: {n:?}");
    };
    // The wrong group: the groups MoldUDP64 went to.
    has(
        &["--md", "udp:233.54.12.199:26477", "--orders", "tcp:10.1.0.1:8003"],
        &[
            "feed udp:233.54.12.199:26477: no datagram to it; datagrams that look like MoldUDP64 went to ",
            "udp:233.54.12.111:26477 (",
            "udp:233.54.12.112:26478 (",
        ],
    );
    // A feed given on the order port.
    has(
        &["--md", "udp:10.1.0.1:8003"],
        &[
            "feed udp:10.1.0.1:8003: no datagram to it; ",
            " TCP segments went to it (a feed is UDP: an order session is --orders tcp:...)",
        ],
    );
    // The wrong port for the session.
    has(
        &["--orders", "tcp:10.1.0.1:9999"],
        &[
            "orders tcp:10.1.0.1:9999@ouch50: no TCP segment to or from this end; segments that look like SoupBinTCP went to ",
            "tcp:10.1.0.1:8003 (",
        ],
    );
    // The client's end given as the exchange's.
    has(
        &["--orders", "tcp:10.1.0.2:40001"],
        &["connection 10.1.0.1:8003>10.1.0.2:40001: ", "the exchange may be the other end, --orders tcp:10.1.0.1:8003"],
    );
    // The other OUCH version.
    has(
        &["--orders", "tcp:10.1.0.1:8003@ouch42"],
        &["malformed as OUCH 4.2 are well-formed in the other version: is the session @ouch50?"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Exit status: 2 when the command line or the config file is wrong (as for clap's own errors: an
/// unknown flag), 1 when an input cannot be read (or an output would replace a file: see
/// `outputs_never_replace_a_capture_or_each_other`); a script tells a typo from a broken capture.
#[test]
fn a_wrong_command_line_exits_2_and_an_unreadable_input_1() {
    let dir = tmpdir("exit-status");
    let cap = small_capture(&dir);
    let conf = dir.join("bad.toml");
    std::fs::write(&conf, "match = \"token:T(\\d+)\"\n").unwrap();
    let conf = conf.to_str().unwrap();
    let missing = dir.join("missing.pcap");
    for (args, code) in [
        (vec!["--no-such-flag", &cap], 2),
        (vec!["--md", "233.54.12.111:26477", &cap], 2),
        (vec!["--match", r"token:T\d+", &cap], 2),
        (vec!["--config", conf, &cap], 2),
        (vec![missing.to_str().unwrap()], 1),
        (vec![&cap], 0),
    ] {
        let out = wirestamp(&[&["analyze", "-q"][..], &args].concat());
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What no capture could make right is the command line's fault, exit status 2 with nothing read or
/// written: a trailer kind that is none, `FILE=KIND` for a file not among the inputs, an output
/// named `-` or given twice, the same capture twice (the `analyze` checks `frames` shares too), and
/// a bad `probe-stats --interval`. Each says what is wrong, in one line.
#[test]
fn what_no_capture_could_make_right_exits_2() {
    let dir = tmpdir("usage");
    let cap = small_capture(&dir);
    let x = dir.join("x.out").display().to_string();
    let kinds = "expected auto, none, metamako, cpacket, exablaze_hpt, exablaze_fusion, arista7150 or arista7280";
    let same = format!("{cap} and {cap} are the same file: give each capture once");
    let misspelt = format!("{cap}=metamakoo");
    let cases = [
        (
            vec!["analyze", "-q", "--trailer", "foo", &cap],
            format!("--trailer foo: unknown trailer mode \"foo\": {kinds}"),
        ),
        (
            vec!["analyze", "-q", "--trailer", "nonexist.pcap=metamako", &cap],
            "--trailer nonexist.pcap=metamako: nonexist.pcap is not one of the input files".to_owned(),
        ),
        (
            vec!["analyze", "-q", "--trailer", &misspelt, &cap],
            format!("--trailer {cap}=metamakoo: unknown trailer mode \"metamakoo\": {kinds}"),
        ),
        (
            vec!["analyze", "-q", "--pairs", "-", &cap],
            "--pairs -: outputs are written to a named file (standard output has the command's own output); give a file name"
                .to_owned(),
        ),
        (
            vec!["analyze", "-q", "--pairs", &x, "--hlog", &x, &cap],
            format!("--pairs and --hlog name the same file, {x}: each needs its own"),
        ),
        (vec!["analyze", "-q", &cap, &cap], same.clone()),
        (
            vec!["frames", "-q", "--trailer", "foo", &cap],
            format!("--trailer foo: unknown trailer mode \"foo\": {kinds}"),
        ),
        (
            vec!["frames", "-q", "-o", "-", &cap],
            "-o -: outputs are written to a named file (standard output has the command's own output); give a file name"
                .to_owned(),
        ),
        (vec!["frames", "-q", &cap, &cap], same),
        (
            vec!["probe-stats", "x", "--interval", "soon"],
            "--interval soon: not a duration above 0 with its unit (ns, us, ms, s, min, h; e.g. 500ms, 1s)".to_owned(),
        ),
    ];
    for (args, want) in cases {
        let out = wirestamp(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), format!("wirestamp: error: {want}\n"), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing read");
        assert!(!Path::new(&x).exists(), "{args:?}: nothing written");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Standard error closed (`wirestamp capture ... 2>&1 | head -1`): the messages are lost, not the
/// run. `capture` from a stream on stdin writes its whole file and exits 0 (it panicked printing its
/// first message: exit status 101, no file); `frames` writes all its lines.
#[test]
fn a_closed_standard_error_loses_messages_not_the_run() {
    let dir = tmpdir("stderr-closed");
    let cap = small_capture(&dir);
    let out = dir.join("copy.pcapng");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["capture", "--source", "stdin", "-w", out.to_str().unwrap()])
        .stdin(std::fs::File::open(&cap).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let count = |p: &Path| {
        let o = wirestamp(&["frames", "-q", p.to_str().unwrap()]);
        String::from_utf8(o.stdout).unwrap().lines().count()
    };
    assert_eq!(count(&out), count(Path::new(&cap)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// synth writes the format its file's name says: a `.pcap` name classic pcap (nanosecond magic
/// a1b23c4d, written little-endian), `.pcapng` (any case) or any other name pcapng (its Section
/// Header Block type 0a0d0d0a), `--pcap` pcap whatever the name but a `.pcapng` one, which is the
/// command line's fault (exit status 2, nothing written).
#[test]
fn synth_writes_the_format_its_file_name_says() {
    let dir = tmpdir("synth-format");
    const PCAP_NS: [u8; 4] = [0x4d, 0x3c, 0xb2, 0xa1];
    const PCAPNG: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
    for (name, flags, magic) in [
        ("a.pcap", &[][..], PCAP_NS),
        ("b.PCAP", &[], PCAP_NS),
        ("c.pcapng", &[], PCAPNG),
        ("d.cap", &[], PCAPNG),
        ("e", &[], PCAPNG),
        ("f.cap", &["--pcap"], PCAP_NS),
        ("g.pcap", &["--pcap"], PCAP_NS),
    ] {
        let p = dir.join(name);
        let out = wirestamp(&[&["synth", "-n", "10", p.to_str().unwrap()][..], flags].concat());
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read(&p).unwrap()[..4], magic, "{name} {flags:?}");
    }
    let p = dir.join("h.pcapng");
    let out = wirestamp(&["synth", "-n", "10", "--pcap", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "wirestamp: error: --pcap with {}: a .pcapng name for a classic pcap file; name it .pcap, or leave out \
             --pcap\n",
            p.display()
        )
    );
    assert!(!p.exists() && !dir.join("h.pcapng.truth.csv").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// After writing, synth says on stderr the `analyze` command that pairs its orders exactly (the token
/// rule its ClOrdIDs carry: `T` and the trigger's sequence), its file name quoted for a shell when it
/// needs it. Run as said, that command pairs every order of the truth with its trigger and finds
/// none ambiguous.
#[test]
fn synth_says_how_to_analyse_what_it_wrote() {
    let dir = tmpdir("synth-hint");
    let cap = dir.join("it's here.pcapng");
    let out = wirestamp(&["synth", "-n", "1000", cap.to_str().unwrap()]);
    assert!(out.status.success());
    let quoted = format!("'{}'", cap.display().to_string().replace('\'', r"'\''"));
    let command = format!(r"wirestamp analyze --match 'token:T(\d+)' {quoted}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "wirestamp: to analyse it, each order paired with its trigger by its ClOrdID (T and the trigger's \
             sequence):\n  {command}\n"
        )
    );
    let bin = env!("CARGO_BIN_EXE_wirestamp");
    let run = Command::new("sh").arg("-c").arg(format!("{bin}{} -q --json", &command["wirestamp".len()..])).output();
    let run = run.unwrap();
    assert!(run.status.success(), "{command}: {}", String::from_utf8_lossy(&run.stderr));
    let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let truth = std::fs::read_to_string(format!("{}.truth.csv", cap.display())).unwrap();
    let orders = truth.lines().count() - 1;
    assert_eq!(orders, 42);
    assert_eq!(r["counters"]["matched"], orders);
    assert_eq!(r["counters"]["ambiguous"], 0);
    // A name no shell reads specially is given as it is.
    let plain = dir.join("plain.pcap");
    let out = wirestamp(&["synth", "-n", "10", plain.to_str().unwrap()]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.ends_with(&format!("\n  wirestamp analyze --match 'token:T(\\d+)' {}\n", plain.display())), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `wirestamp --help` and each command's `--help` teach it with examples, as the README says; the
/// commands' one-line descriptions end alike (no full stop); `analyze --help` shows the token rule
/// for a synth capture first, names every trailer kind wirestamp decodes, and says `--match`'s default.
#[test]
fn the_help_teaches_with_examples() {
    let help = |args: &[&str]| String::from_utf8(wirestamp(&[args, &["--help"]].concat()).stdout).unwrap();
    let top = help(&[]);
    for cmd in [&[][..], &["frames"], &["analyze"], &["synth"], &["capture"], &["doctor"], &["demo"]] {
        let text = help(cmd);
        assert!(text.lines().any(|l| l.starts_with("Examples")), "{cmd:?}: {text}");
    }
    assert!(help(&["probe-stats"]).contains("\nExample: wirestamp probe-stats "));
    // Each command's line, with the lines its description wraps onto (indented further).
    let mut commands: Vec<String> = Vec::new();
    for l in top.lines().skip_while(|l| *l != "Commands:").skip(1).take_while(|l| !l.is_empty()) {
        match commands.last_mut() {
            Some(last) if l.starts_with("   ") => *last += l,
            _ => commands.push(l.to_owned()),
        }
    }
    assert_eq!(commands.len(), 8, "{top}");
    for line in &commands {
        assert!(!line.ends_with('.'), "{line}");
    }
    let analyze = help(&["analyze"]);
    let first_example = analyze.lines().skip_while(|l| !l.starts_with("Examples")).find(|l| l.starts_with("  "));
    assert_eq!(first_example, Some(r"  wirestamp analyze --match 'token:T(\d+)' market.pcapng"));
    let flat = analyze.split_whitespace().collect::<Vec<_>>().join(" ");
    let kinds: Vec<&str> = wirestamp_core::trailer::TrailerKind::ALL.iter().map(|k| k.name()).collect();
    assert!(flat.contains(&format!("force on every file: {}.", kinds.join(", "))), "{flat}");
    assert!(flat.contains("How orders are matched to ticks (default: `symbol:1s`,"), "{flat}");
}

/// A pcapng as `wirestamp capture` writes it (its section comment), with interfaces `eth0` (described
/// twice: two timestamp sources, the statistics in the first block, as capture writes them) and
/// `eth1`, 3 frames on each block; `stats` says which statistics blocks to write (eth0's, eth1's):
/// capture writes both when it closes a file, none when it is killed first. `comment` stands for the
/// writer's.
fn capture_like(path: &Path, comment: &str, stats: (bool, bool)) {
    // A ring's counters: all accepted, none dropped.
    let counted = |n| RecordedStats { filteraccept: Some(n), osdrop: Some(0), usrdeliv: Some(n), ..Default::default() };
    capture_counting(path, comment, [stats.0.then(|| counted(6)), stats.1.then(|| counted(3))]);
}

/// [`capture_like`] with the counters of eth0's and eth1's statistics blocks (`None`: no block).
fn capture_counting(path: &Path, comment: &str, stats: [Option<RecordedStats>; 2]) {
    use wirestamp_capture::write::{IfaceSpec, IfaceStats, PcapngWriter};
    use wirestamp_core::{Direction, LinkType};
    let mut w = PcapngWriter::new(std::fs::File::create(path).unwrap(), Some(comment)).unwrap();
    let spec = |name: &str| IfaceSpec { link: LinkType::Ethernet, name: name.into(), description: None, snaplen: 0 };
    let ids = [w.add_interface(&spec("eth0")).unwrap(), w.add_interface(&spec("eth0")).unwrap()];
    let eth1 = w.add_interface(&spec("eth1")).unwrap();
    const T: i64 = 1_796_049_000_000_000_000;
    for (k, id) in [ids[0], ids[1], eth1].into_iter().enumerate() {
        for i in 0..3 {
            w.write(id, T + (k * 3 + i) as i64 * 1_000, &[0u8; 60], 60, Direction::Inbound).unwrap();
        }
    }
    for (id, counters) in [(ids[0], stats[0]), (eth1, stats[1])] {
        if let Some(counters) = counters {
            let st = IfaceStats { start_ns: Some(T), end_ns: Some(T + 9_000), counters };
            w.write_stats(id, T + 9_000, &st).unwrap();
        }
    }
    w.finish().unwrap();
}

/// A pcapng written by `wirestamp capture` that it never closed (SIGKILL: its `.part`; or a copy cut
/// short) has no statistics block for its interfaces, so the packets lost while capturing are unknown:
/// analyze warns (in the table, on stderr, and in `input.warnings`) and names the file and interfaces
/// in `input.losses_unknown`; it read the file as loss-free, silently. Not for a file capture closed,
/// nor for one that synth wrote (the same writer, no statistics), nor another tool's without any
/// (tcpdump never writes them: the shared pcapng corpus is checked in capture's pcapng_suite), nor
/// for a file not read to its end (`frames -c`, which would not have reached the blocks).
#[test]
fn a_capture_file_without_its_statistics_blocks_says_its_losses_are_unknown() {
    let dir = tmpdir("losses-unknown");
    let capture = "wirestamp capture --source afpacket -i eth0 -i eth1 on host h; eth0: software timestamps";
    let json = |path: &Path| -> serde_json::Value {
        let out = wirestamp(&["analyze", "-q", "--json", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let warning = |path: &Path, them: &str| {
        format!(
            "{}: written by wirestamp capture, but {them} no statistics block, which capture writes for each \
             interface when it closes a file: the capture did not end cleanly (killed: its .part) or this copy of \
             the file is cut short, so the packets lost while capturing are unknown and figures from this file may \
             miss some; end a capture with SIGINT or SIGTERM (never SIGKILL) and read its files once renamed from \
             .part",
            path.display()
        )
    };
    // Killed before closing: neither interface has a block.
    let killed = dir.join("k.pcapng.part");
    capture_like(&killed, capture, (false, false));
    let r = json(&killed);
    let want = warning(&killed, "interfaces eth0, eth1 have");
    assert_eq!(r["input"]["complete"], true);
    assert_eq!(r["input"]["warnings"], serde_json::json!([want]));
    assert_eq!(
        r["input"]["losses_unknown"],
        serde_json::json!([{ "file": killed.to_str().unwrap(), "interfaces": ["eth0", "eth1"] }])
    );
    assert_eq!(r["input"].get("cut_short"), None);
    let out = wirestamp(&["analyze", "-q", killed.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l == format!("input: {want}")), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).lines().any(|l| l == format!("wirestamp: warning: {want}")));
    // Killed while closing, eth0's block written: eth1 alone (eth0's second block needs none).
    let half = dir.join("h.pcapng.part");
    capture_like(&half, capture, (true, false));
    let r = json(&half);
    assert_eq!(r["input"]["warnings"], serde_json::json!([warning(&half, "interface eth1 has")]));
    assert_eq!(
        r["input"]["losses_unknown"],
        serde_json::json!([{ "file": half.to_str().unwrap(), "interfaces": ["eth1"] }])
    );
    // Closed: nothing said, the keys absent.
    let closed = dir.join("c.pcapng");
    capture_like(&closed, capture, (true, true));
    let r = json(&closed);
    assert_eq!(r["input"]["warnings"], serde_json::json!([]));
    assert_eq!(r["input"].get("losses_unknown"), None);
    // Its copy cut inside the last block, eth1's statistics: cut short there, and eth1's losses unknown.
    // The blocks (type, start), walked from their length fields: SHB, 3 IDBs, 9 EPBs, 2 ISBs.
    let bytes = std::fs::read(&closed).unwrap();
    let mut blocks = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let word = |o: usize| u32::from_le_bytes(bytes[at + o..at + o + 4].try_into().unwrap());
        blocks.push((word(0), at));
        at += word(4) as usize;
    }
    let types: Vec<u32> = blocks.iter().map(|b| b.0).collect();
    assert_eq!(types, [&[0x0a0d_0d0a, 1, 1, 1][..], &[6; 9], &[5, 5]].concat());
    let last = blocks[14].1;
    let cut = dir.join("cut.pcapng");
    std::fs::write(&cut, &bytes[..last + 20]).unwrap();
    let r = json(&cut);
    let name = cut.to_str().unwrap();
    assert_eq!(r["input"]["losses_unknown"], serde_json::json!([{ "file": name, "interfaces": ["eth1"] }]));
    let cut_short = serde_json::json!([{ "file": name, "at_byte": last, "record": 14, "after_packets": 9 }]);
    assert_eq!(r["input"]["cut_short"], cut_short);
    // synth's (the writer's, its own comment) and another tool's: no statistics, nothing said.
    let synth = dir.join("s.pcapng");
    capture_like(&synth, "wirestamp synth: synthetic market with ground truth", (false, false));
    let other = wirestamp_testdata::data_file("libtrace_traces/test/traces/100_packets.pcapng");
    for p in [&synth, &other] {
        let r = json(p);
        assert_eq!(r["input"]["warnings"], serde_json::json!([]), "{}", p.display());
        assert_eq!(r["input"].get("losses_unknown"), None, "{}", p.display());
    }
    // frames: the same warning at the end of a whole read, none after `-c`.
    let frames = |args: &[&str]| {
        let out = wirestamp(&[&["frames"][..], args, &[killed.to_str().unwrap()]].concat());
        assert!(out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    assert!(frames(&[]).lines().any(|l| l == format!("wirestamp: warning: {want}")), "{}", frames(&[]));
    assert!(!frames(&["-c", "3"]).contains("warning"), "{}", frames(&["-c", "3"]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A statistics block without loss counters (capture writes one where its source gave none: libpcap's,
/// AF_XDP's or the eBPF programs' unreadable, a relayed stream's interface that recorded none) says
/// the interface's losses are unknown, not 0 (they read as 0: a clean capture). eth0's block records 1
/// packet dropped by the interface and 2 by the system, 3 lost; eth1's has no counters: the report
/// says 3 of eth0 and unknown of eth1, in the JSON (`counters.capture_drops`, `input.warnings`,
/// `input.losses_unknown`) and in the table.
#[test]
fn a_statistics_block_without_counters_says_the_losses_are_unknown() {
    let dir = tmpdir("losses-uncounted");
    let path = dir.join("u.pcapng");
    let capture = "wirestamp capture --source pcap -i eth0 -i eth1 on host h; eth0: software timestamps";
    let eth0 = RecordedStats { ifrecv: Some(9), ifdrop: Some(1), osdrop: Some(2), ..Default::default() };
    capture_counting(&path, capture, [Some(eth0), Some(RecordedStats::default())]);
    let file = path.to_str().unwrap();
    let lost = format!(
        "{file}: interface eth0 records 3 packets lost while capturing (1 by the interface, 2 by the operating \
         system; pcapng interface statistics): figures from this file may miss them"
    );
    let unknown = format!(
        "{file}: written by wirestamp capture, whose capture source gave no loss counters for interface eth1 (its \
         statistics block has none): the packets lost while capturing it are unknown, not 0, and figures from this \
         file may miss some"
    );
    let out = wirestamp(&["analyze", "-q", "--json", file]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["counters"]["capture_drops"], 3);
    assert_eq!(r["input"]["warnings"], serde_json::json!([lost, unknown]));
    assert_eq!(r["input"]["losses_unknown"], serde_json::json!([{ "file": file, "interfaces": ["eth1"] }]));
    let out = wirestamp(&["analyze", "-q", file]);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        format!("input: {lost}"),
        format!("input: {unknown}"),
        "capture: the input records 3 packets lost while it was captured (pcapng interface statistics, ERF loss \
         counters): the figures may miss them"
            .to_string(),
    ] {
        assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");
    }
    // frames says the same at the end of its read.
    let out = wirestamp(&["frames", file]);
    let err = String::from_utf8_lossy(&out.stderr);
    for w in [&lost, &unknown] {
        assert!(err.lines().any(|l| l == format!("wirestamp: warning: {w}")), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A forced trailer kind that the first frame does not carry stops reading at once: the report says
/// where (0-based and as tshark numbers it) and what to do, and does not open with "detected no
/// MoldUDP64 feed ... give them with --md / --orders", which nothing was read to support.
#[test]
fn a_forced_trailer_that_does_not_fit_is_named_with_its_fix_and_nothing_else() {
    let dir = support::tmpdir("forced-trailer-stop");
    let cap = small_capture(&dir);
    let out = wirestamp(&["analyze", "--trailer", "metamako", &cap]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("metric "), "{stdout}");
    assert!(!stdout.contains("detected"), "{stdout}");
    let want = format!(
        "input: stopped after 0 frames: {cap}: frame 0 (tshark's 1): --trailer metamako does not validate: no room \
         for a trailer after the packet; if this file's frames carry no metamako trailer, leave --trailer out (auto: \
         each kind is looked for and validated), or force it on the tapped file only with --trailer FILE=metamako: \
         the figures cover only the frames before it"
    );
    assert!(stdout.lines().any(|l| l == want), "no line {want:?} in\n{stdout}");
}

/// A `--pairs` file written before the tick_frame column came (its header one column shorter) is an
/// earlier output, replaced as any; the new file has the column.
#[test]
fn an_earlier_versions_pairs_file_is_replaced() {
    let dir = support::tmpdir("pairs-old-header");
    let cap = small_capture(&dir);
    let pairs = dir.join("pairs.csv");
    let old = "tick_session,tick_seq,tick_time_ns,order_id,token,order_time_ns,order_frame,order_last_frame,latency_ns";
    std::fs::write(&pairs, format!("{old}\nSESSION001,1,1,1,T1,2,3,3,1\n")).unwrap();
    let out = wirestamp(&["analyze", "-q", "--match", r"token:T(\d+)", "--pairs", pairs.to_str().unwrap(), &cap]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&pairs).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(text.lines().next(), Some(&*format!("{old},tick_frame")));
    assert!(text.lines().count() > 2, "{text}");
}

/// The feed bound counts distinct feeds, however many are given and however often: 65,533 others in
/// the file and synth's two (both given again on the command line) make 65,535, analysed (each of
/// synth's orders paired with its trigger); one more on the command line is refused, naming
/// the bound.
#[test]
fn the_feed_bound_counts_distinct_feeds() {
    let dir = tmpdir("feed-bound");
    let cap = small_capture(&dir);
    let truth = std::fs::read_to_string(format!("{cap}.truth.csv")).unwrap();
    let orders = truth.lines().skip(1).filter(|l| !l.is_empty()).count();
    let synths = ["udp:233.54.12.111:26477", "udp:233.54.12.112:26478"];
    let mut md: Vec<String> =
        (0..65_533u32).map(|i| format!("\"udp:239.{}.{}.1:{}\"", i >> 8, i & 0xff, 1_000 + i % 7)).collect();
    md.extend(synths.iter().map(|s| format!("\"{s}\"")));
    let conf = dir.join("feeds.toml");
    std::fs::write(&conf, format!("md = [{}]\n", md.join(","))).unwrap();
    let c = conf.to_str().unwrap();
    let run = |more: &[&str]| {
        let fixed =
            ["analyze", "-q", "--json", "--match", r"token:T(\d+)", "--orders", "tcp:10.1.0.1:8003", "--config", c];
        let args = [&fixed[..], more, &[cap.as_str()]].concat();
        wirestamp(&args)
    };
    let out = run(&["--md", synths[0], "--md", synths[1]]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let feeds = r["feeds"].as_array().unwrap();
    assert_eq!(feeds.len(), 65_535);
    assert_eq!(feeds[65_533]["feed"], synths[0]);
    assert_eq!(feeds[65_534]["feed"], synths[1]);
    let ttt = r["metrics"].as_array().unwrap().iter().find(|m| m["name"] == "tick_to_trade").unwrap();
    assert_eq!(ttt["count"].as_u64(), Some(orders as u64));
    let out = run(&["--md", "udp:239.255.255.1:1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "wirestamp: error: 65536 market-data feeds given (--md, md = ...): at most 65535 are analysed at once\n"
    );
}
