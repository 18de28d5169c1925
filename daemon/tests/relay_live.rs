//! A capture relayed while the relay stays open (`tcpdump -w - | wirestamp frames -`): what `frames`
//! and `analyze` found is written out whenever the input has to wait, not only at its end (a live
//! relay's output showed nothing until the pipe closed). Each test writes whole records of a synth
//! capture, waits for their results with the pipe still open (5 s at most, where a few ms do), then
//! writes the rest and closes it. Expected values come from the records the test wrote, walked from
//! their header fields, and from synth's truth.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

mod relay;
mod support;

use support::{synth_pcap, tmpdir};

/// How long results may take to show: generous (they take milliseconds).
const BOUND: Duration = Duration::from_secs(5);

/// One record of a classic pcap (ns, little-endian, as synth writes it): its time, captured and wire
/// lengths, and where it ends in the file.
#[derive(Debug, Clone, Copy)]
struct Record {
    time_ns: i64,
    caplen: u32,
    wirelen: u32,
    end: usize,
}

/// The records of `pcap`, walked from their 16-byte headers.
fn records(pcap: &[u8]) -> Vec<Record> {
    assert_eq!(pcap[..4], [0x4d, 0x3c, 0xb2, 0xa1], "a little-endian ns pcap");
    let field = |at: usize| u32::from_le_bytes(pcap[at..at + 4].try_into().unwrap());
    let (mut at, mut out) = (24, Vec::new());
    while at + 16 <= pcap.len() {
        let (caplen, wirelen) = (field(at + 8), field(at + 12));
        let time_ns = i64::from(field(at)) * 1_000_000_000 + i64::from(field(at + 4));
        at += 16 + caplen as usize;
        out.push(Record { time_ns, caplen, wirelen, end: at });
    }
    assert_eq!(at, pcap.len());
    out
}

/// `wirestamp ARGS`, its standard input and output piped.
fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The lines of `out` as they come.
fn lines_of(out: ChildStdout) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { return };
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    rx
}

/// Up to `n` lines from `rx`, waiting [`BOUND`] at most.
fn take(rx: &Receiver<String>, n: usize) -> Vec<String> {
    let until = Instant::now() + BOUND;
    let mut got = Vec::new();
    while got.len() < n {
        match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(l) => got.push(l),
            Err(_) => break,
        }
    }
    got
}

/// `frames` CSV lines: index, time_ns, caplen, wirelen and input of each.
fn columns(lines: &[String]) -> Vec<(String, String, String, String, String)> {
    let cols = |l: &String| {
        let c: Vec<&str> = l.split(',').collect();
        (c[0].into(), c[1].into(), c[2].into(), c[3].into(), c[c.len() - 1].into())
    };
    lines.iter().map(cols).collect()
}

/// What `frames` says of `records` of input `input`, numbered from `first`.
fn expected(records: &[Record], first: usize, input: usize) -> Vec<(String, String, String, String, String)> {
    let row = |(i, r): (usize, &Record)| {
        ((first + i).to_string(), r.time_ns.to_string(), r.caplen.to_string(), r.wirelen.to_string(), input.to_string())
    };
    records.iter().enumerate().map(row).collect()
}

const HEADER: &str = "index,time_ns,caplen,wirelen,";

/// Where a test's relay goes in: `frames`' standard input, or a FIFO given by name.
enum Via {
    Stdin,
    Fifo(PathBuf),
}

/// `frames` of a relay through `via` (with `more`, other inputs): the first `n` records written, then
/// waited for with the relay open, which then stays idle for a second without the reader spending
/// its CPU; then the rest, and the relay closed. Returns the lines shown while it was open and those
/// after.
fn relay_frames(bytes: &[u8], n: usize, via: &Via, more: &[&Path]) -> (Vec<String>, Vec<String>) {
    let recs = records(bytes);
    let input = match via {
        Via::Stdin => "-".to_owned(),
        Via::Fifo(p) => p.display().to_string(),
    };
    let mut args = vec!["frames", input.as_str()];
    args.extend(more.iter().map(|p| p.to_str().unwrap()));
    let mut child = spawn(&args);
    let lines = lines_of(child.stdout.take().unwrap());
    let mut relay: Box<dyn Write> = match via {
        Via::Stdin => Box::new(child.stdin.take().unwrap()),
        // Opened once the reader opened it.
        Via::Fifo(p) => Box::new(std::fs::OpenOptions::new().write(true).open(p).unwrap()),
    };
    relay.write_all(&bytes[..recs[n - 1].end]).unwrap();
    relay.flush().unwrap();
    let shown = take(&lines, 1 + n + more.len());
    // The relay idle: the reader sleeps in poll() (a wait told once, then waited), it does not spin.
    let before = wirestamp_testdata::cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(1));
    let spent = wirestamp_testdata::cpu_ticks(child.id()) - before;
    assert!(spent < 25, "{spent} ticks of CPU (at 100 Hz) in 1 s of an idle relay: the read loop spins");
    relay.write_all(&bytes[recs[n - 1].end..]).unwrap();
    drop(relay);
    let rest: Vec<String> = lines.iter().collect();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(child.wait().unwrap().success(), "{err}");
    (shown, rest)
}

/// `frames -` with 75 of a capture's records on its standard input, which stays open: the header and
/// a line for each of them show before it closes, each with the record's time and lengths; the rest
/// after. (It printed nothing until the pipe closed: standard output was flushed at the end only.)
#[test]
fn frames_of_a_relay_show_while_it_is_open() {
    let dir = tmpdir("relay-frames");
    let bytes = std::fs::read(synth_pcap(&dir, "s.pcap", 300)).unwrap();
    let recs = records(&bytes);
    let (shown, rest) = relay_frames(&bytes, 75, &Via::Stdin, &[]);
    assert_eq!(shown.len(), 76, "lines shown while the relay was open: {shown:?}");
    assert!(shown[0].starts_with(HEADER), "{}", shown[0]);
    assert_eq!(columns(&shown[1..]), expected(&recs[..75], 0, 0));
    assert_eq!(columns(&rest), expected(&recs[75..], 75, 0));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The same through a FIFO given by name (`mkfifo relay; tcpdump -w relay & wirestamp frames relay`).
#[test]
fn frames_of_a_fifo_show_while_it_is_open() {
    let dir = tmpdir("relay-fifo");
    let bytes = std::fs::read(synth_pcap(&dir, "s.pcap", 300)).unwrap();
    let recs = records(&bytes);
    let fifo = dir.join("relay.pcap");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let (shown, rest) = relay_frames(&bytes, 40, &Via::Fifo(fifo), &[]);
    assert_eq!(shown.len(), 41, "lines shown while the FIFO was open: {shown:?}");
    assert_eq!(columns(&shown[1..]), expected(&recs[..40], 0, 0));
    assert_eq!(columns(&rest), expected(&recs[40..], 40, 0));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Merged with a file (`frames - early.pcap`), the relay's frames show as they come too: the file's
/// one record, a second before the relay's first, then the 60 records written, before the relay closes.
#[test]
fn frames_of_a_relay_merged_with_a_file_show_while_it_is_open() {
    let dir = tmpdir("relay-merged");
    let bytes = std::fs::read(synth_pcap(&dir, "s.pcap", 300)).unwrap();
    let recs = records(&bytes);
    // The file header and the first record, stamped a second earlier.
    let mut early = bytes[..recs[0].end].to_vec();
    let secs = u32::from_le_bytes(early[24..28].try_into().unwrap()) - 1;
    early[24..28].copy_from_slice(&secs.to_le_bytes());
    let early_path = dir.join("early.pcap");
    std::fs::write(&early_path, &early).unwrap();
    let (shown, rest) = relay_frames(&bytes, 60, &Via::Stdin, &[&early_path]);
    assert_eq!(shown.len(), 62, "lines shown while the relay was open: {shown:?}");
    let first = Record { time_ns: recs[0].time_ns - 1_000_000_000, ..recs[0] };
    assert_eq!(columns(&shown[1..2]), expected(&[first], 0, 1));
    assert_eq!(columns(&shown[2..]), expected(&recs[..60], 1, 0));
    assert_eq!(columns(&rest), expected(&recs[60..], 61, 0));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The complete lines of `path` (none if it is not there yet).
fn complete_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole.lines().map(str::to_owned).collect()
}

/// `analyze - --pairs FILE` of a relay that stays open: the pairs of the orders written so far are in
/// FILE before it closes, exactly synth's truth for them (tick sequence and time, UserRefNum, ClOrdID,
/// order time, latency), so that `tail -f FILE` follows a live relay; all pairs once it closes. The
/// relay stops 5 ms after an order (an order is paired once 1 ms of capture time passed its first byte)
/// that the next follows more than 10 ms later, so what it wrote pairs exactly the orders up to it.
#[test]
fn pairs_of_a_relay_are_written_while_it_is_open() {
    let dir = tmpdir("relay-pairs");
    let cap = dir.join("s.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["synth", "--pcap", "-n", "40000", "--order-prob", "0.0005", "--seed", "3"])
        .arg(&cap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&cap).unwrap();
    let recs = records(&bytes);
    // truth: tick_seq,tick_time_ns,first_feed,user_ref_num,cl_ord_id,order_time_ns,latency_ns,...
    let truth: Vec<Vec<String>> = std::fs::read_to_string(dir.join("s.pcap.truth.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    let want = |rows: &[Vec<String>]| -> Vec<[String; 6]> {
        let mut w: Vec<[String; 6]> = rows.iter().map(|t| [0, 1, 3, 4, 5, 6].map(|i| t[i].clone())).collect();
        w.sort();
        w
    };
    let order_time = |t: &Vec<String>| t[5].parse::<i64>().unwrap();
    // The first order after the third that the next follows more than 10 ms later.
    let last = (3..truth.len() - 1)
        .find(|&i| order_time(&truth[i + 1]) - order_time(&truth[i]) > 10_000_000)
        .expect("a gap of 10 ms between two orders");
    let n = recs.iter().take_while(|r| r.time_ns <= order_time(&truth[last]) + 5_000_000).count();
    let pairs = dir.join("pairs.csv");
    let mut child = spawn(&["analyze", "-q", "--match", r"token:T(\d+)", "--pairs", pairs.to_str().unwrap(), "-"]);
    let report = lines_of(child.stdout.take().unwrap());
    let mut relay = child.stdin.take().unwrap();
    relay.write_all(&bytes[..recs[n - 1].end]).unwrap();
    relay.flush().unwrap();
    // pairs: tick_session,tick_seq,tick_time_ns,order_id,token,order_time_ns,order_frame,order_last_frame,
    // latency_ns,tick_frame
    let ours = |lines: &[String]| -> Vec<[String; 6]> {
        let mut w: Vec<[String; 6]> = lines
            .iter()
            .map(|l| {
                let p: Vec<&str> = l.split(',').collect();
                [1, 2, 3, 4, 5, 8].map(|i| p[i].to_owned())
            })
            .collect();
        w.sort();
        w
    };
    let until = Instant::now() + BOUND;
    let mut shown = complete_lines(&pairs);
    while shown.len() < last + 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        shown = complete_lines(&pairs);
    }
    assert!(shown.len() > 1, "no pair in {} while the relay was open: {shown:?}", pairs.display());
    assert!(shown[0].starts_with("tick_session,tick_seq,"), "{}", shown[0]);
    assert_eq!(ours(&shown[1..]), want(&truth[..=last]), "the pairs written while the relay was open");
    relay.write_all(&bytes[recs[n - 1].end..]).unwrap();
    drop(relay);
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(child.wait().unwrap().success(), "{err}");
    assert!(report.iter().any(|l| l.starts_with("tick_to_trade")), "a report at the end");
    assert_eq!(ours(&complete_lines(&pairs)[1..]), want(&truth));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A zstd relay cut short (elk_nasdaq.pcap compressed, 50,000 of its 50,086 bytes): the warning places
/// the cut in the decompressed stream and says so ("at decompressed byte 131070"), beside the
/// compressed bytes it names as such. Expected: what `zstd -dc` decodes of the cut stream, 131,072
/// bytes, holds records 0..1,181 whole (walked from their lengths), the next beginning at byte 131,070;
/// the first block ends at compressed byte 30,757, so 19,243 bytes are undecodable. `capture --source
/// stdin` says the same place. A plain relay's place stays "at byte".
#[test]
fn a_compressed_relay_cut_short_places_the_cut_in_its_decompressed_bytes() {
    let elk = wirestamp_testdata::data_file("pcap_market/elk_nasdaq.pcap");
    let z = Command::new("zstd").arg("-q").arg("-c").arg(&elk).output().expect("zstd (scripts/setup.sh installs it)");
    assert!(z.status.success());
    let cut = &z.stdout[..50_000];
    // (zstd -dc says on stderr that the stream ends early.)
    let mut dc = Command::new("zstd")
        .args(["-q", "-dc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    dc.stdin.take().unwrap().write_all(cut).unwrap();
    let decoded = dc.wait_with_output().unwrap().stdout.len();
    let pcap = std::fs::read(&elk).unwrap();
    let field = |at: usize| u32::from_le_bytes(pcap[at..at + 4].try_into().unwrap()) as usize;
    let (mut at, mut whole) = (24, 0);
    while at + 16 + field(at + 8) <= decoded {
        at += 16 + field(at + 8);
        whole += 1;
    }
    assert_eq!((decoded, whole, at), (131_072, 1_181, 131_070));
    let stderr_of = |bytes: &[u8]| {
        let mut child = spawn(&["frames", "-"]);
        let mut out = child.stdout.take().unwrap();
        let drain = std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()).unwrap());
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let o = child.wait_with_output().unwrap();
        drain.join().unwrap();
        assert!(o.status.success());
        String::from_utf8(o.stderr).unwrap()
    };
    let err = stderr_of(cut);
    let want = format!(
        "wirestamp: warning: stdin: at decompressed byte {at} (record {whole}, after {whole} packets): compressed \
         stream ends early (file cut short): the last 19243 compressed bytes, an incomplete zstd block, could not be \
         decoded (a compressed block is decoded only whole); 88938 of the frame's 220010 decoded bytes are missing\n"
    );
    assert!(err.ends_with(&want), "{err}");
    // `capture --source stdin` relays it, saying the same place.
    let dir = tmpdir("relay-zstd-cut");
    let out = dir.join("relayed.pcapng");
    let (child, mut pipe) = relay::relay(&[], &out);
    pipe.write_all(cut).unwrap();
    drop(pipe);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(o.status.success(), "{err}");
    let place =
        format!("warning: stdin: at decompressed byte {at} (record {whole}, after {whole} packets): compressed");
    assert!(err.contains(&place), "{place:?} in {err}");
    std::fs::remove_dir_all(&dir).unwrap();
    let err = stderr_of(&pcap[..at + 20]);
    let want =
        format!("wirestamp: warning: stdin: at byte {at} (record {whole}, after {whole} packets): file cut short");
    assert!(err.contains(&want), "{err}");
}

/// The `--hlog` intervals a relay closed are written before it waits, also when the frame closing
/// them came in a run of market data (the fast path's, which returns to the loop only at the run's
/// end or the wait). Synth without orders, a packet every 100 µs or so (1 s intervals), its market
/// data only, without MoldUDP64 heartbeats (synth's heartbeats and noise come on the second, and a
/// frame of the general path ends a run); the relay pauses after the first frame at or past 2 s from the start of the first interval:
/// the one that closes the second interval. Expected: the lines the whole capture's analysis writes
/// for the intervals ending by that frame's time, in order.
#[test]
fn intervals_of_a_relay_are_written_while_it_is_open() {
    let dir = tmpdir("relay-hlog");
    let cap = dir.join("s.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["synth", "--pcap", "-n", "40000", "--order-prob", "0", "--gap-ns", "100000", "--seed", "5"])
        .arg(&cap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let synth = std::fs::read(&cap).unwrap();
    // Its frames to the feeds' ports (UDP 26477 and 26478, untagged or in one 802.1Q tag) whose
    // MoldUDP64 packet has messages (a message count, bytes 18-19 of the UDP payload, above 0).
    let mut bytes = synth[..24].to_vec();
    let mut at = 24;
    for r in records(&synth) {
        let f = &synth[at + 16..r.end];
        let ip = if f[12..14] == [0x81, 0x00] { 18 } else { 14 };
        let dport = u16::from_be_bytes([f[ip + 22], f[ip + 23]]);
        let feed = f[ip + 9] == 17 && (dport == 26477 || dport == 26478);
        if feed && u16::from_be_bytes([f[ip + 28 + 18], f[ip + 28 + 19]]) > 0 {
            bytes.extend_from_slice(&synth[at..r.end]);
        }
        at = r.end;
    }
    let cap = dir.join("market.pcap");
    std::fs::write(&cap, &bytes).unwrap();
    let recs = records(&bytes);
    let whole = dir.join("whole.hlog");
    let args = |hlog: &Path| ["analyze", "-q", "--hlog", hlog.to_str().unwrap()].map(str::to_owned).to_vec();
    let mut a = args(&whole);
    a.push(cap.to_str().unwrap().to_owned());
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(&a).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Interval lines: Tag=NAME,START,LENGTH,MAX,HISTOGRAM (seconds from the log's StartTime).
    let data = |lines: Vec<String>| -> Vec<String> { lines.into_iter().filter(|l| l.starts_with("Tag=")).collect() };
    let all = data(complete_lines(&whole));
    let start_s: f64 = complete_lines(&whole)
        .iter()
        .find_map(|l| l.strip_prefix("#[StartTime: ")?.split_whitespace().next()?.parse().ok())
        .expect("StartTime");
    let first = (start_s * 1e3).round() as i64 * 1_000_000;
    let k = recs.iter().position(|r| r.time_ns >= first + 2_000_000_000).expect("2 s of capture");
    let pause_ns = recs[k].time_ns - first;
    let ends = |l: &String| {
        let f: Vec<f64> = l.split(',').skip(1).take(2).map(|v| v.parse().unwrap()).collect();
        ((f[0] + f[1]) * 1e9).round() as i64
    };
    let want: Vec<String> = all.iter().filter(|l| ends(l) <= pause_ns).cloned().collect();
    assert!(want.len() >= 2 * 2 && want.len() < all.len(), "{} of {} lines", want.len(), all.len());
    let live = dir.join("live.hlog");
    let mut a = args(&live);
    a.push("-".to_owned());
    let mut child = spawn(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let mut relay = child.stdin.take().unwrap();
    relay.write_all(&bytes[..recs[k].end]).unwrap();
    relay.flush().unwrap();
    let until = Instant::now() + BOUND;
    let mut shown = data(complete_lines(&live));
    while shown.len() < want.len() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        shown = data(complete_lines(&live));
    }
    assert_eq!(shown, want, "the intervals written while the relay was open");
    relay.write_all(&bytes[recs[k].end..]).unwrap();
    drop(relay);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(data(complete_lines(&live)), all);
    std::fs::remove_dir_all(&dir).unwrap();
}
