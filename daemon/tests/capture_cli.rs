//! `wirestamp capture`'s command line and outputs, without a live source: what it refuses, with exit
//! status 2 for the command line's errors and 1 for a file it would replace, and that a refused run
//! leaves every file byte for byte as it was. `--source stdin` stands in for a live source: outputs are
//! checked before any source is opened (so an `--source ebpf` run is refused before it loads anything).

mod relay;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use wirestamp_testdata::data_file;

const BIN: &str = env!("CARGO_BIN_EXE_wirestamp");

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wirestamp-capture-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `wirestamp capture ARGS`, standard input from `input` (else nothing).
fn capture(args: &[&str], input: Option<&Path>) -> Output {
    let stdin = match input {
        Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
        None => Stdio::null(),
    };
    Command::new(BIN).arg("capture").args(args).stdin(stdin).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The files of `dir`, sorted by name.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// An existing capture at `-w` (pcapng or pcap), a killed capture's `FILE.part`, and with rotation any
/// numbered name or its `.part` are refused (exit status 1) and kept byte for byte; `--overwrite`
/// replaces them, but never a file that is no capture; an empty file is replaced. (Each was truncated.)
#[test]
fn an_existing_capture_or_a_killed_captures_part_is_never_replaced() {
    let dir = tmp("keep");
    let input = data_file("pcap_market/elk_nasdaq.pcap");
    let w = |name: &str| dir.join(name).display().to_string();
    let o = capture(&["--source", "stdin", "-q", "-w", &w("a.pcapng")], Some(&input));
    assert!(o.status.success(), "{}", stderr(&o));
    let a = std::fs::read(dir.join("a.pcapng")).unwrap();
    // A capture at -w: refused, kept.
    let o = capture(&["--source", "stdin", "-w", &w("a.pcapng")], Some(&input));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: error: -w {}: the file exists and holds a capture ({} bytes): refusing to overwrite it; rename \
             or remove it, or choose another name; --overwrite replaces an earlier capture\n",
            w("a.pcapng"),
            a.len()
        )
    );
    assert_eq!(std::fs::read(dir.join("a.pcapng")).unwrap(), a);
    // A pcap given by mistake: the same.
    std::fs::copy(&input, dir.join("tap.pcap")).unwrap();
    let o = capture(&["--source", "stdin", "-w", &w("tap.pcap")], Some(&input));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.join("tap.pcap")).unwrap(), std::fs::read(&input).unwrap());
    // A killed capture's .part: refused, kept, and no file made beside it.
    std::fs::copy(dir.join("a.pcapng"), dir.join("crash.pcapng.part")).unwrap();
    let o = capture(&["--source", "stdin", "-w", &w("crash.pcapng")], Some(&input));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: error: -w {c}: {c}.part is left by a capture that did not give it its name (killed, or the \
             machine stopped: its frames up to about a second before; a write failed; or the name was taken while \
             it ran, as it said): {} bytes; refusing to overwrite it. Keep it under another name (mv {c}.part {}; \
             `wirestamp analyze` reads it as it is) or remove it, then start again; --overwrite replaces it\n",
            a.len(),
            w("crash.recovered.pcapng"),
            c = w("crash.pcapng"),
        )
    );
    assert_eq!(std::fs::read(dir.join("crash.pcapng.part")).unwrap(), a);
    assert!(!dir.join("crash.pcapng").exists());
    // Rotation: any numbered name the run would reach, or its .part.
    for name in ["r.0003.pcapng", "r.0000.pcapng.part", "r.10000.pcapng"] {
        std::fs::copy(dir.join("a.pcapng"), dir.join(name)).unwrap();
        let o = capture(&["--source", "stdin", "-C", "1", "-w", &w("r.pcapng")], Some(&input));
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{} ", w(name))) || stderr(&o).contains(&format!("{}: ", w(name))),
            "{name}: {}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), a);
        std::fs::remove_file(dir.join(name)).unwrap();
    }
    assert!(!dir.join("r.0000.pcapng").exists());
    // Not rotated: names beside -w that only look numbered are no obstacle.
    std::fs::copy(dir.join("a.pcapng"), dir.join("r.0000.pcapng")).unwrap();
    let o = capture(&["--source", "stdin", "-q", "-w", &w("r.pcapng")], Some(&input));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.join("r.0000.pcapng")).unwrap(), a);
    // --overwrite: the .part and the capture are replaced; a file that is no capture never is.
    let o = capture(&["--source", "stdin", "-q", "--overwrite", "-w", &w("crash.pcapng")], Some(&input));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!dir.join("crash.pcapng.part").exists() && dir.join("crash.pcapng").exists());
    let o = capture(&["--source", "stdin", "-q", "--overwrite", "-w", &w("a.pcapng")], Some(&input));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(dir.join("notes.txt"), "keep me").unwrap();
    let o = capture(&["--source", "stdin", "--overwrite", "-w", &w("notes.txt")], Some(&input));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not a capture (pcapng or pcap): refusing to overwrite it"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "keep me");
    // An empty file (mktemp's) is replaced.
    std::fs::write(dir.join("empty.pcapng"), "").unwrap();
    let o = capture(&["--source", "stdin", "-q", "-w", &w("empty.pcapng")], Some(&input));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.join("empty.pcapng")).unwrap().len(), a.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--tx-events` never replaces a capture, nor an earlier TX CSV without `--overwrite` (exit status 1),
/// and cannot be the `-w` file, its `.part` or a numbered name of it (exit status 2). Checked before the
/// eBPF programs are loaded: no live source is needed here.
#[test]
fn tx_events_replaces_no_capture_and_is_not_the_capture_file() {
    let dir = tmp("tx");
    let w = |name: &str| dir.join(name).display().to_string();
    let cg = dir.display().to_string();
    let run = |tx: &str, out: &str, extra: &[&str]| {
        let mut a = vec!["--source", "ebpf", "-i", "lo", "--orders", "tcp:10.200.0.2:8003", "--cgroup", &cg];
        a.extend(["--tx-events", tx, "-w", out]);
        a.extend(extra);
        capture(&a, None)
    };
    let input = data_file("pcap_market/elk_nasdaq.pcap");
    let original = std::fs::read(&input).unwrap();
    std::fs::copy(&input, dir.join("tap.pcap")).unwrap();
    for extra in [&[][..], &["--overwrite"]] {
        let o = run(&w("tap.pcap"), &w("new.pcapng"), extra);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!(
                "wirestamp: error: --tx-events {}: the file exists and is not an earlier --tx-events CSV (a capture \
                 given as its name?): refusing to overwrite it; remove it or choose another name\n",
                w("tap.pcap")
            )
        );
        assert_eq!(std::fs::read(dir.join("tap.pcap")).unwrap(), original);
    }
    let earlier =
        "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n1,sched,10.0.0.1:5,10.0.0.2:6,1,2,,\n";
    std::fs::write(dir.join("tx.csv"), earlier).unwrap();
    let o = run(&w("tx.csv"), &w("new.pcapng"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds the TX events of an earlier capture"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.join("tx.csv")).unwrap(), earlier);
    // Its header and a row cut short (a capture killed while writing it): an event, refused too. (A
    // CSV holding its header alone is taken: capture_netns, a killed capture's.)
    let cut = "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n1";
    std::fs::write(dir.join("tx.csv"), cut).unwrap();
    let o = run(&w("tx.csv"), &w("new.pcapng"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds the TX events of an earlier capture"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.join("tx.csv")).unwrap(), cut);
    // One file named twice, however spelt: the command line's error.
    let dot = format!("{}/./same.x", dir.display());
    for (tx, out, extra) in [
        (w("same.x"), dot.clone(), &[][..]),
        (w("r.pcapng.part"), w("r.pcapng"), &[]),
        (w("r.0000.pcapng"), w("r.pcapng"), &["-G", "60"]),
        (w("r.0000.pcapng.part"), w("r.pcapng"), &["-C", "1"]),
    ] {
        let o = run(&tx, &out, extra);
        assert_eq!(o.status.code(), Some(2), "{tx} {out}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with(&format!("wirestamp: error: -w and --tx-events name the same file, {tx}")),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(listing(&dir), ["tap.pcap", "tx.csv"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The command line's errors exit with status 2, as analyze's, frames' and synth's do (several exited
/// with 1, as a failed capture does), and make no file.
#[test]
fn command_line_errors_exit_with_status_2() {
    let dir = tmp("usage");
    let out = dir.join("x.pcapng").display().to_string();
    let md = ["--md", "udp:233.54.12.111:26477"];
    let ebpf = ["--source", "ebpf", "-i", "lo", md[0], md[1]];
    for (args, want) in [
        (vec!["-i", "lo", md[0], md[1]], "--md/--orders select flows for --source ebpf"),
        (vec!["-i", "lo", "-G", "0"], "-G and -C take at least 1"),
        (vec!["-i", "lo", "-C", "0"], "-G and -C take at least 1"),
        ([&ebpf[..], &["-f", "udp"]].concat(), "-f does not apply to --source ebpf"),
        (vec!["--source", "afxdp", "-i", "lo", "-f", "udp"], "-f does not apply to --source afxdp"),
        (vec!["--source", "stdin", "-f", "udp"], "-f applies to live sources"),
        (vec!["--source", "pcap", "-i", "lo", "-i", "lo2"], "several -i need --source afpacket or ebpf"),
        (vec!["--source", "pcap"], "this --source needs -i IFACE"),
        (vec!["-i", "lo", "-i", "lo"], "-i lo is given twice"),
        (vec!["-i", "lo", "--snaplen", "300000"], "--snaplen 300000: at most 262144"),
        (vec!["-i", "lo", "--ring-mb", "0"], "--ring-mb 0"),
        (vec!["-i", "lo", "--rx-hook", "xdp"], "--rx-hook chooses the hook of --source ebpf"),
        (vec!["--source", "ebpf", "-i", "lo"], "needs at least one flow"),
        (vec!["--source", "ebpf", "-i", "lo", "--md", "tcp:1.2.3.4:5"], "a feed is udp:GROUP:PORT"),
        (
            [&ebpf[..], &["--snap-payload", "1000"]].concat(),
            "--snap-payload 1000: at most 256 payload bytes; frames are cut at 256 bytes in all, headers included \
             (Ethernet + IPv4 + TCP: 54 bytes or more), so at most about 202 bytes of a TCP payload reach the file",
        ),
        (
            [&ebpf[..], &["--snaplen", "100"]].concat(),
            "--snaplen 100 does not apply to --source ebpf: its frames are cut at their headers + --snap-payload \
             bytes (at most 256 in all); give --snap-payload",
        ),
    ] {
        let mut a = args.clone();
        a.extend(["-w", &out]);
        let o = capture(&a, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.starts_with("wirestamp: error: ") && err.contains(want), "{args:?}: {err}");
    }
    let o = capture(&["-i", "lo", "-w", "-"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("-w -: capture writes a file"), "{}", stderr(&o));
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A relay's file is flushed every second while its input is idle, not only when a frame arrives: a
/// `capture --source stdin` fed three frames through a pipe that then stays open and idle, killed
/// (SIGKILL) 2.5 s later, leaves them in its `.part`, as they were fed. (It left the `.part` empty:
/// the flush waited for a frame that never came.) And SIGTERM ends such a relay at once, cleanly (its
/// blocked read had swallowed the signal).
#[test]
fn a_relay_killed_while_its_input_is_idle_keeps_its_frames() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    use wirestamp_capture::CaptureReader;
    use wirestamp_capture::write::{IfaceSpec, PcapngWriter};
    use wirestamp_core::{Direction, LinkType};
    let dir = tmp("idle-relay");
    let t = 1_796_049_000_000_000_000i64;
    let fed: Vec<(i64, Vec<u8>)> =
        [60usize, 61, 99].iter().enumerate().map(|(k, &n)| (t + k as i64 * 1_000, vec![k as u8 + 1; n])).collect();
    let mut w = PcapngWriter::new(Vec::new(), None).unwrap();
    let spec = IfaceSpec { link: LinkType::Ethernet, name: "eth9".into(), description: None, snaplen: 0 };
    let id = w.add_interface(&spec).unwrap();
    for (ts, data) in &fed {
        w.write(id, *ts, data, data.len() as u32, Direction::Inbound).unwrap();
    }
    let input = w.finish().unwrap();
    let frames = |path: &Path| {
        let mut r = CaptureReader::open(path).unwrap();
        let mut got = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            got.push((f.ts_ns, f.data.to_vec()));
        }
        got
    };
    // Both relays at once, each fed and left idle with its pipe open.
    let (killed, stopped) = (dir.join("k.pcapng"), dir.join("s.pcapng"));
    let mut relays: Vec<_> = [&killed, &stopped]
        .into_iter()
        .map(|out| {
            let mut child = Command::new(BIN)
                .args(["capture", "--source", "stdin", "-q", "-w"])
                .arg(out)
                .stdin(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(&input).unwrap();
            pipe.flush().unwrap();
            (child, pipe)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2_500));
    let (mut k, mut s) = (relays.remove(0), relays.remove(0));
    k.0.kill().unwrap();
    k.0.wait().unwrap();
    assert!(!killed.exists(), "a killed capture leaves no complete file");
    assert_eq!(frames(&dir.join("k.pcapng.part")), fed);
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(s.0.id() as i32, libc::SIGTERM) }, 0);
    let asked = Instant::now();
    let status = loop {
        match s.0.try_wait().unwrap() {
            Some(status) => break status,
            None if asked.elapsed() > Duration::from_secs(5) => {
                s.0.kill().unwrap();
                panic!("SIGTERM did not end an idle relay in 5 s");
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    assert!(status.success());
    assert_eq!(frames(&stopped), fed);
    drop((k.1, s.1));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A relay stopped before its stream's header (`sleep 6 | wirestamp capture --source stdin -w
/// a.pcapng`, SIGTERM at 1 s) ends at once: exit status 0, as for a stop after frames, "stopped
/// before the stream's header (no frame read); no file written", and no file (nor `.part`): none is
/// made before the header says what the stream holds. Also with part of a header fed: 12 of a pcap's
/// 24 header bytes, and a gzip member's 10-byte header (RFC 1952: 1f 8b, deflate, no flags, OS 3)
/// with nothing after it. (Its read blocked, retried after EINTR, until the pipe closed: then exit 1,
/// "file too short to identify".)
#[test]
fn a_relay_stopped_before_its_streams_header_ends_at_once_without_a_file() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let dir = tmp("stopped-before-header");
    let pcap_half = [0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0];
    let gzip_header = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    let mut relays: Vec<_> = [("empty", &[][..]), ("pcap-half", &pcap_half[..]), ("gzip-header", &gzip_header[..])]
        .into_iter()
        .map(|(name, fed)| {
            let mut child = Command::new(BIN)
                .args(["capture", "--source", "stdin", "-w"])
                .arg(dir.join(format!("{name}.pcapng")))
                .stdin(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(fed).unwrap();
            pipe.flush().unwrap();
            (name, child, pipe)
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    for (_, child, _) in &relays {
        // SAFETY: signals our own child by pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    }
    let asked = Instant::now();
    let mut ended = Vec::new();
    for (name, child, _) in &mut relays {
        let status = loop {
            match child.try_wait().unwrap() {
                Some(status) => break status,
                None if asked.elapsed() > Duration::from_secs(1) => {
                    child.kill().unwrap();
                    panic!("{name}: SIGTERM did not end a relay waiting for its stream's header in 1 s");
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        ended.push((*name, status.code(), err));
    }
    let said = "wirestamp: stopped before the stream's header (no frame read); no file written\n";
    assert_eq!(
        ended,
        [
            ("empty", Some(0), said.to_string()),
            ("pcap-half", Some(0), said.into()),
            ("gzip-header", Some(0), said.into())
        ]
    );
    assert_eq!(listing(&dir), Vec::<String>::new());
    drop(relays);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stop before the header is seen however the stream comes: bytes that keep coming (here, not a
/// pcap: the ERF probe judges once records are whole, or paused after whole ones) held SIGTERM off for as
/// long as they came, the stop being looked at only after 100 ms without any. Fed the 16-byte header
/// of an ERF Ethernet record of 65,528 bytes, then 100 zero bytes of it every 50 ms (never whole, never
/// a pause) for 3 s; SIGTERM at 1 s: the relay ends well within 1 s of it, as a stop before the header
/// does (exit 0, its message, no file).
#[test]
fn a_relay_stopped_before_its_header_while_bytes_trickle_ends_at_once() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let dir = tmp("stopped-trickle");
    let mut child = Command::new(BIN)
        .args(["capture", "--source", "stdin", "-w"])
        .arg(dir.join("a.pcapng"))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let mut head = erf_eth(1_796_049_000, &[0; 60]);
    head.truncate(16);
    head[10..12].copy_from_slice(&65_528u16.to_be_bytes());
    pipe.write_all(&head).unwrap();
    let start = Instant::now();
    let mut asked = None;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if asked.is_none() && start.elapsed() > Duration::from_secs(1) {
            // SAFETY: signals our own child by pid.
            assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
            asked = Some(Instant::now());
        }
        if start.elapsed() > Duration::from_secs(3) {
            break None;
        }
        let _ = pipe.write_all(&[0; 100]);
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = asked.map(|a| a.elapsed());
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    let files = listing(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(status.is_some() && took.unwrap() < Duration::from_secs(1), "SIGTERM held off {took:?} while bytes came");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "wirestamp: stopped before the stream's header (no frame read); no file written\n"
    );
    assert_eq!(files, Vec::<String>::new());
}

/// An ERF type 2 (Ethernet) record of `frame` at `secs` (binary fraction 0), interface 0: the 16-byte
/// header (timestamp little-endian, type, flags, rlen, lctr, wlen big-endian), the 2-byte Ethernet pad,
/// the frame, zeros to a multiple of 8 bytes.
fn erf_eth(secs: u32, frame: &[u8]) -> Vec<u8> {
    let rlen = (16 + 2 + frame.len()).next_multiple_of(8);
    let mut r = (u64::from(secs) << 32).to_le_bytes().to_vec();
    r.extend([2, 0]);
    r.extend((rlen as u16).to_be_bytes());
    r.extend(0u16.to_be_bytes());
    r.extend((frame.len() as u16).to_be_bytes());
    r.extend([0, 0]);
    r.extend(frame);
    r.resize(rlen, 0);
    r
}

/// The frames of a capture file, (time, data), as far as it reads.
fn frames_of(path: &Path) -> Vec<(i64, Vec<u8>)> {
    let Ok(mut r) = wirestamp_capture::CaptureReader::open(path) else { return Vec::new() };
    let mut got = Vec::new();
    while let Ok(Some(f)) = r.next_frame() {
        got.push((f.ts_ns, f.data.to_vec()));
    }
    got
}

/// A live ERF relay shows its records as they come: ERF has no header, and its probe wanted 64 KiB
/// (or the stream's end) before it judged, so two 80-byte records fed 300 ms apart through a pipe left
/// open showed nothing, and a SIGTERM ended the relay "stopped before the stream's header", without a
/// file. Now the records are judged once the stream pauses (100 ms): the relay's `.part` holds both
/// (flushed every second) within 3 s, and a SIGTERM then ends it cleanly (exit 0), the file holding
/// the two records as fed (60-byte frames of 1s and 2s, at whole seconds: the ERF binary fraction 0).
#[test]
fn a_live_erf_relay_shows_its_records_before_64_kib() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let dir = tmp("erf-relay");
    let out = dir.join("e.pcapng");
    let fed: Vec<(i64, Vec<u8>)> =
        (0..2).map(|k| (1_796_049_000_000_000_000 + k * 1_000_000_000, vec![k as u8 + 1; 60])).collect();
    let (child, mut pipe) = relay::relay(&[], &out);
    for (ts, data) in &fed {
        pipe.write_all(&erf_eth((ts / 1_000_000_000) as u32, data)).unwrap();
        pipe.flush().unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    let part = dir.join("e.pcapng.part");
    let start = Instant::now();
    while frames_of(&part) != fed && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let shown = frames_of(&part);
    let o = stopped(child, pipe);
    let err = stderr(&o);
    let written = frames_of(&out);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(shown == fed, "the .part held {} of the 2 records fed 3 s before; stderr: {err}", shown.len());
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("before the stream's header") && err.contains("stream: 2 records read"), "{err}");
    assert_eq!(written, fed);
}

/// SIGTERM to a relay, its end waited for (5 s at most) with its input still open, then its output.
fn stopped(child: std::process::Child, pipe: std::process::ChildStdin) -> std::process::Output {
    use std::time::{Duration, Instant};
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let mut child = child;
    let asked = Instant::now();
    while child.try_wait().unwrap().is_none() && asked.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// A relay whose input is idle when SIGTERM comes ends as asked, whatever its wait was doing: the
/// signal interrupts its poll() for bytes, whose read then says the stop was asked (before, any such
/// stop read "stopped before the stream's header", an error after frames). Fed a pcapng of 3 frames
/// through a pipe left open, SIGTERM at 1.5 s: exit 0, the summary's "stream: 3 records read", no
/// error, the file holding the 3 frames as fed.
#[test]
fn a_relay_stopped_while_idle_after_frames_ends_as_asked() {
    use std::io::Write;
    use std::time::Duration;
    use wirestamp_capture::write::{IfaceSpec, PcapngWriter};
    use wirestamp_core::{Direction, LinkType};
    let dir = tmp("idle-sigterm");
    let out = dir.join("s.pcapng");
    let fed: Vec<(i64, Vec<u8>)> =
        (0..3).map(|k| (1_796_049_000_000_000_000 + k * 1_000, vec![k as u8 + 7; 64])).collect();
    let mut w = PcapngWriter::new(Vec::new(), None).unwrap();
    let spec = IfaceSpec { link: LinkType::Ethernet, name: "eth9".into(), description: None, snaplen: 0 };
    let id = w.add_interface(&spec).unwrap();
    for (ts, data) in &fed {
        w.write(id, *ts, data, data.len() as u32, Direction::Inbound).unwrap();
    }
    let (child, mut pipe) = relay::relay(&[], &out);
    pipe.write_all(&w.finish().unwrap()).unwrap();
    pipe.flush().unwrap();
    std::thread::sleep(Duration::from_millis(1_500));
    let o = stopped(child, pipe);
    let err = stderr(&o);
    let written = frames_of(&out);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(o.status.success(), "{err}");
    // The stop line's time is the relay's, from its start (after the spawn): about the 1.5 s before
    // the signal, within its 5 s wait.
    let (before, stop) = err.split_once("wirestamp: stopped after ").expect("a stop line");
    let (secs, after) = stop.split_once(" s: SIGTERM received\n").expect("stopped by SIGTERM");
    let secs: f64 = secs.parse().unwrap();
    assert!((1.0..6.5).contains(&secs), "{err}");
    let said = format!(
        "wirestamp: stdin: timestamps as recorded by the stream's writer\nwirestamp: 3 frames written (pcapng 3)\n\
         wirestamp: stream: 3 records read\nwirestamp: wrote {}\n",
        out.display()
    );
    assert_eq!(format!("{before}{after}"), said);
    assert_eq!(written, fed);
}
