//! `wirestamp capture` for real: live traffic between two network namespaces (needs root), and a
//! stream on stdin. Files are read back with `wirestamp frames` and with tshark as the oracle.

#[path = "../../capture/tests/netns/mod.rs"]
mod netns;
mod relay;

use netns::{ADDR_A, ADDR_B, VethPair, netstamp_holder, realtime_ns};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wirestamp_testdata::{cpu_ticks, data_file, epoch_to_ns, tshark_fields};

const BIN: &str = env!("CARGO_BIN_EXE_wirestamp");
const PORT: u16 = 40000;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wirestamp-capture-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts `wirestamp capture ARGS` in `w`'s namespace and waits until its output file exists (the
/// source is open and bound by then).
fn start(w: &netns::NsWorker, args: Vec<String>, part: PathBuf) -> Child {
    let child = w.run(move || {
        Command::new(BIN).arg("capture").args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    });
    let t = Instant::now();
    while !part.exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "capture never created {}", part.display());
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Waits for the capture to exit; after `secs` it is sent SIGTERM (then SIGKILL), so a test never hangs.
fn finish(child: Child, secs: u64) -> std::process::Output {
    let pid = child.id() as i32;
    let t = Instant::now();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    while !waiter.is_finished() {
        if t.elapsed() > Duration::from_secs(secs) {
            // SAFETY: signals our own child by pid.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(2));
            if !waiter.is_finished() {
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            let out = waiter.join().unwrap();
            panic!("capture did not finish in {secs} s: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    waiter.join().unwrap()
}

fn send_all(src: &UdpSocket, dst: &str, n: u32, size: usize) -> Vec<(i64, i64)> {
    let msg = vec![0x5au8; size];
    (0..n)
        .map(|_| {
            let t0 = realtime_ns();
            src.send_to(&msg, (dst, PORT)).unwrap();
            let t1 = realtime_ns();
            std::thread::sleep(Duration::from_millis(1));
            (t0, t1)
        })
        .collect()
}

/// `wirestamp frames` CSV rows as (time_ns, direction, caplen).
fn frames(file: &Path) -> Vec<(i64, String, u32)> {
    let out = Command::new(BIN).args(["frames", "-q"]).arg(file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c[1].parse().unwrap(), c[5].to_string(), c[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn both_directions_captured_and_read_back_with_identical_timestamps() {
    const N: u32 = 20;
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("both");
    let out = dir.join("va.pcapng");
    let args: Vec<String> = ["-i", "va", "-f", "udp port 40000", "-c", "40", "--state-dir"]
        .iter()
        .map(|s| s.to_string())
        .chain([dir.display().to_string(), "-w".into(), out.display().to_string()])
        .collect();
    let child = start(&pair.a, args, dir.join("va.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    let out_iv = send_all(&sa, ADDR_B, N, 100);
    let in_iv = send_all(&sb, ADDR_A, N, 100);
    let res = finish(child, 10);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    assert!(err.contains("va: SOFTWARE timestamps"), "{err}");
    assert!(err.contains("40 frames written (kernel_sw 40)"), "{err}");
    assert!(err.contains("40 passed the filter: 40 read, 0 dropped"), "{err}");
    assert!(!dir.join("va.pcapng.part").exists());
    // Clock quality: this kernel's clock is unsynchronised (kernel.md 12: STA_UNSYNC), read independently here.
    // SAFETY: adjtimex with modes = 0 only reads.
    let unsync = unsafe {
        let mut tx: libc::timex = std::mem::zeroed();
        let st = libc::adjtimex(&mut tx);
        tx.status & libc::STA_UNSYNC != 0 || st == libc::TIME_ERROR
    };
    let flagged = if unsync {
        "40 of 40 frames captured while the clock was flagged: system clock unsynchronised"
    } else {
        "0 of 40 frames"
    };
    assert!(err.contains(flagged), "{err}");
    // Each frame's flags are in the file, as a packet comment: tshark shows it, wirestamp reads it back
    // (they were only counted on stderr: a file could not tell which frames were taken so).
    let comments = tshark_fields(&out, &[], &["frame.comment"]);
    let want = if unsync { "wirestamp clock: unsynced" } else { "" };
    assert!(comments.len() == 40 && comments.iter().all(|c| c[0] == want), "{comments:?}");
    let json = Command::new(BIN).args(["frames", "-q", "--format", "json"]).arg(&out).output().unwrap();
    let quality: Vec<serde_json::Value> = String::from_utf8(json.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["quality"].clone())
        .collect();
    let want = if unsync { serde_json::json!("unsynced") } else { serde_json::Value::Null };
    assert!(quality.len() == 40 && quality.iter().all(|q| *q == want), "{quality:?}");

    let rows = frames(&out);
    assert_eq!(rows.len(), 40);
    // tshark reads the same file and prints the same times (ns), in the same order.
    let ts = tshark_fields(&out, &[], &["frame.time_epoch", "frame.interface_description"]);
    assert_eq!(ts.len(), 40);
    for (r, t) in rows.iter().zip(&ts) {
        assert_eq!(r.0, epoch_to_ns(&t[0]));
        assert!(t[1].starts_with("kernel software timestamps"), "{}", t[1]);
    }
    for (want, iv) in [("out", &out_iv), ("in", &in_iv)] {
        let got: Vec<_> = rows.iter().filter(|r| r.1 == want).collect();
        assert_eq!(got.len(), N as usize, "{want}");
        for (k, r) in got.iter().enumerate() {
            assert_eq!(r.2, 142, "14 + 20 + 8 + 100 bytes");
            assert!(iv[k].0 <= r.0 && r.0 <= iv[k].1, "{want} #{k}: {} outside [{}, {}]", r.0, iv[k].0, iv[k].1);
            if k > 0 {
                assert!(r.0 > got[k - 1].0, "{want}: monotonic");
            }
        }
    }
}

/// `--snaplen` cuts every frame there, with a filter or without, for the AF_PACKET ring and libpcap alike
/// (the ring used to cut filtered frames at libpcap's 65535 and unfiltered ones not at all, whatever the
/// interface block said). Read back by tshark: caplen is the snaplen, the wire length the datagram's.
#[test]
fn snaplen_cuts_every_frame_with_or_without_a_filter() {
    const N: u32 = 5;
    let _holder = netstamp_holder();
    for (source, filter) in [("afpacket", None), ("afpacket", Some("udp port 40000")), ("pcap", Some("udp"))] {
        let pair = VethPair::new();
        let dir = tmp(&format!("snap-{source}-{}", filter.is_some()));
        let out = dir.join("s.pcapng");
        let mut a: Vec<String> = ["-i", "va", "--source", source, "--snaplen", "100", "--no-hwtstamp"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if let Some(f) = filter {
            a.extend(["-f".to_string(), f.to_string()]);
        }
        a.extend(["-w".to_string(), out.display().to_string()]);
        let child = start(&pair.a, a, dir.join("s.pcapng.part"));
        let sb = pair.b.run(|| UdpSocket::bind((ADDR_B, 0)).unwrap());
        send_all(&sb, ADDR_A, N, 300);
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: signals our own child by pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let res = finish(child, 10);
        assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
        let rows = tshark_fields(&out, &["-Y", "udp.dstport == 40000 && !icmp"], &["frame.cap_len", "frame.len"]);
        assert_eq!(rows.len(), N as usize, "{source} {filter:?}");
        for r in &rows {
            // 14 Ethernet + 20 IPv4 + 8 UDP + 300 payload on the wire, 100 captured.
            assert_eq!((r[0].as_str(), r[1].as_str()), ("100", "342"), "{source} {filter:?}");
        }
    }
}

#[test]
fn libpcap_source_captures_both_directions_in_send_order() {
    const N: u32 = 10;
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("pcap");
    let out = dir.join("p.pcapng");
    let args: Vec<String> =
        ["-i", "va", "--source", "pcap", "-f", "udp port 40000", "-c", "20", "--max-offset-ns", "1000"]
            .iter()
            .map(|s| s.to_string())
            .chain(["--ptp4l".into(), dir.join("no-ptp4l").display().to_string(), "-w".into()])
            .chain([out.display().to_string()])
            .collect();
    let child = start(&pair.a, args, dir.join("p.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    let mut iv = send_all(&sa, ADDR_B, N, 64);
    iv.extend(send_all(&sb, ADDR_A, N, 64));
    let res = finish(child, 10);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    // kernel.md 5: libpcap lists only `host` on veth.
    assert!(err.contains("va: libpcap, timestamp type host (nanosecond precision)"), "{err}");
    // No ptp4l answers on that socket: every frame is flagged, and the reason is given.
    assert!(err.contains("20 of 20 frames captured while the clock was flagged"), "{err}");
    assert!(err.contains("ptp4l not answering"), "{err}");
    let rows = frames(&out);
    assert_eq!(rows.len(), 20, "{err}");
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(r.2, 106);
        assert!(iv[k].0 <= r.0 && r.0 <= iv[k].1, "#{k}: {} outside [{}, {}]", r.0, iv[k].0, iv[k].1);
    }
}

/// A capture killed outright (SIGKILL, the OOM killer) leaves its `.part` holding the frames written
/// more than a second before, readable: at a low rate they were all still in the output buffer, and
/// the file was empty. Its interface has no statistics block (capture writes them when it closes a
/// file): analyze names it in `input.losses_unknown` and warns (it read the file as loss-free).
#[test]
fn a_killed_capture_leaves_what_it_wrote_a_second_before() {
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("killed");
    let out = dir.join("k.pcapng");
    let part = dir.join("k.pcapng.part");
    let args = args(&["-i", "va", "-f", "udp port 40000", "--no-hwtstamp"], &out);
    let mut child = start(&pair.a, args.clone(), part.clone());
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    // A few frames, then quiet.
    send_all(&sa, ADDR_B, 3, 10);
    std::thread::sleep(Duration::from_millis(2_500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.exists(), "a killed capture does not complete its file");
    assert_eq!(frames(&part).len(), 3);
    let r = analyze_input(&part);
    assert_eq!(r["losses_unknown"], serde_json::json!([{ "file": part.to_str().unwrap(), "interfaces": ["va"] }]));
    let w = r["warnings"][0].as_str().unwrap();
    assert!(
        w.starts_with(&format!("{}: written by wirestamp capture, but interface va has no", part.display())),
        "{w}"
    );
    // A steady 100 frames/s, killed after 2.5 s while still sending: the file holds at least the
    // frames sent in its first second (flushed by two seconds in), whatever the count since.
    std::fs::remove_file(&part).unwrap();
    let mut child = start(&pair.a, args, part.clone());
    let t = Instant::now();
    let mut sent = 0;
    while t.elapsed() < Duration::from_millis(2_500) {
        sa.send_to(b"steady", (ADDR_B, PORT)).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let n = frames(&part).len();
    assert!((90..=sent).contains(&n), "{n} of {sent} frames in the killed capture's file");
}

#[test]
fn sigterm_completes_the_file_and_size_rotation_numbers_files() {
    const N: u32 = 800;
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("rot");
    let out = dir.join("r.pcapng");
    let args = args(&["-i", "va", "-f", "udp port 40000", "-C", "1", "--no-hwtstamp"], &out);
    let child = start(&pair.a, args, dir.join("r.0000.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    // 800 x 1442-byte frames (+ 32 bytes of EPB each) = 1.18 MB: two files at -C 1.
    let t = Instant::now();
    for _ in 0..N {
        sa.send_to(&[0u8; 1400], (ADDR_B, PORT)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300).saturating_sub(t.elapsed()) + Duration::from_millis(200));
    // SAFETY: signals our own child process by its pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let res = finish(child, 10);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    assert!(err.contains("--no-hwtstamp"), "{err}");
    let f0 = dir.join("r.0000.pcapng");
    let f1 = dir.join("r.0001.pcapng");
    assert!(f0.exists() && f1.exists() && !dir.join("r.0002.pcapng").exists(), "{err}");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().to_string_lossy().ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let n0 = tshark_fields(&f0, &[], &["frame.len"]).len();
    let n1 = tshark_fields(&f1, &[], &["frame.len"]).len();
    assert_eq!(n0 + n1, N as usize, "every frame in exactly one file; stderr: {err}");
    assert!(std::fs::metadata(&f0).unwrap().len() >= 1_000_000);
    assert!(err.contains(&format!("{N} frames written")), "{err}");
    // Each file closed: a statistics block per interface, nothing said of unknown losses.
    for f in [&f0, &f1] {
        let r = analyze_input(f);
        assert_eq!((r.get("losses_unknown"), &r["warnings"]), (None, &serde_json::json!([])), "{}", f.display());
    }
}

/// `wirestamp analyze -q --json FILE`'s `input` object.
fn analyze_input(file: &Path) -> serde_json::Value {
    let out = Command::new(BIN).args(["analyze", "-q", "--json"]).arg(file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    r["input"].clone()
}

#[test]
fn sigterm_stops_an_idle_capture_for_each_live_source() {
    let pair = VethPair::new();
    let dir = tmp("idle");
    for source in ["afpacket", "pcap"] {
        let out = dir.join(format!("{source}.pcapng"));
        let args = args(&["-i", "va", "--source", source, "-f", "udp port 40000", "--no-hwtstamp"], &out);
        let child = start(&pair.a, args, dir.join(format!("{source}.pcapng.part")));
        std::thread::sleep(Duration::from_millis(300));
        let t = Instant::now();
        // SAFETY: signals our own child by pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let res = finish(child, 5);
        assert!(res.status.success(), "{source}: {}", String::from_utf8_lossy(&res.stderr));
        assert!(t.elapsed() < Duration::from_secs(1), "{source}: stopped within the 100 ms poll");
        assert_eq!(tshark_fields(&out, &[], &["frame.len"]).len(), 0, "{source}: a complete, empty file");
    }
}

#[test]
fn bad_input_fails_clearly_and_leaves_no_file() {
    let pair = VethPair::new();
    let dir = tmp("bad");
    let out = dir.join("x.pcapng");
    let o = out.display().to_string();
    let run = |w: &netns::NsWorker, args: &[&str]| {
        let mut a: Vec<&str> = vec!["capture"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-c", "1", "--state-dir", "/tmp/wirestamp-test-state", "-w", &o]);
        let r = w.command(BIN, &a);
        (r.status.success(), String::from_utf8_lossy(&r.stderr).into_owned())
    };
    let (ok, err) = run(&pair.a, &["-i", "nosuch0"]);
    assert!(!ok && err.contains("\"nosuch0\" does not exist"), "{err}");
    let (ok, err) = run(&pair.a, &["-i", "va", "-f", "udp port notaport"]);
    assert!(!ok && err.contains("filter \"udp port notaport\" does not compile"), "{err}");
    let (ok, err) = run(&pair.a, &["-i", "va", "--source", "pcap", "-f", "tcp and ("]);
    assert!(!ok && err.contains("does not compile"), "{err}");
    pair.a.ip(&["link", "set", "va", "down"]);
    let (ok, err) = run(&pair.a, &["-i", "va"]);
    assert!(!ok && err.contains("\"va\" is down"), "{err}");
    let (ok, err) = run(&pair.a, &["-i", "va", "--source", "pcap"]);
    assert!(!ok, "{err}");
    let (ok, err) = run(&pair.b, &["--source", "pcap"]);
    assert!(!ok && err.contains("needs -i IFACE"), "{err}");
    // No permission: the same command as user nobody, without capabilities.
    let r = pair.b.command(
        "setpriv",
        &[
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            BIN,
            "capture",
            "-i",
            "vb",
            "--no-hwtstamp",
            "-w",
            &o,
        ],
    );
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success() && err.contains("permission denied"), "{err}");
    // What cannot be meant is refused before anything is opened. A ring the kernel would take from
    // other processes' memory (an OOM killer's victims), the same interface twice (each frame twice),
    // a rotation of 0 (a file every check), a snaplen beyond the largest.
    for (args, want) in [
        (&["-i", "vb", "--ring-mb", "4000000"][..], "more than a quarter of the memory available"),
        (&["-i", "vb", "--ring-mb", "0"], "--ring-mb 0: the ring takes at least 1 MiB"),
        (&["-i", "vb", "-i", "vb"], "-i vb is given twice"),
        (&["-i", "any"], "-i any is libpcap's pseudo-interface"),
        (&["-i", "any", "--source", "afxdp"], "use --source pcap -i any"),
        (&["-i", "vb", "-G", "0"], "-G and -C take at least 1"),
        (&["-i", "vb", "-C", "0"], "-G and -C take at least 1"),
        (&["-i", "vb", "--snaplen", "300000"], "--snaplen 300000: at most 262144"),
        (&["-i", "vb", "--no-hwtstamp", "--force-hwtstamp"], "cannot be used with"),
        (
            &["-i", "vb", "--source", "afxdp", "--queue", "5", "--no-hwtstamp"],
            "on \"vb\": RX queue 5 does not exist: the interface has 1 (0 to 0); give --queue below 1\n",
        ),
    ] {
        let (ok, err) = run(&pair.b, args);
        assert!(!ok && err.contains(want), "{args:?}: {err}");
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "no file, not even a .part: {left:?}");
    // Outputs: standard output, a directory, a missing directory, a file that is not a capture.
    let text = dir.join("notes.txt");
    std::fs::write(&text, "keep me").unwrap();
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (w, want) in [
        ("-".to_owned(), "capture writes a file".to_owned()),
        (dir.display().to_string(), "is a directory".to_owned()),
        (format!("{}/none/x.pcapng", dir.display()), "does not exist".to_owned()),
        (text.display().to_string(), "is not a capture (pcapng or pcap): refusing to overwrite it".to_owned()),
        (fifo.display().to_string(), "not a regular file (a device, a FIFO?)".to_owned()),
    ] {
        let r = pair.b.command(BIN, &["capture", "-i", "vb", "-c", "1", "-w", &w]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success() && err.contains(&want), "-w {w}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "keep me");
    assert!(!Path::new("-").exists());
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    // An earlier capture is refused (capture_cli.rs has the details, and --overwrite). With rotation the
    // numbered files are written and checked, not the name given: a text file of that name stays and is
    // no obstacle, one of a numbered file's name is refused.
    let stdin_capture = |w: &Path, rotate: bool| {
        let mut cmd = Command::new(BIN);
        cmd.args(["capture", "--source", "stdin"]);
        if rotate {
            cmd.args(["-C", "1"]);
        }
        let input = std::fs::File::open(data_file("pcap_market/elk_nasdaq.pcap")).unwrap();
        let out = cmd.arg("-w").arg(w).stdin(input).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let old = dir.join("old.pcap");
    std::fs::copy(data_file("pcap_market/elk_nasdaq.pcap"), &old).unwrap();
    let (ok, err) = stdin_capture(&old, false);
    assert!(!ok && err.contains("old.pcap: the file exists and holds a capture"), "{err}");
    let (ok, err) = stdin_capture(&text, true);
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "keep me");
    let numbered = dir.join("log.txt");
    std::fs::write(dir.join("log.0000.txt"), "keep me too").unwrap();
    let (ok, err) = stdin_capture(&numbered, true);
    assert!(!ok && err.contains("log.0000.txt: the file exists and is not a capture"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("log.0000.txt")).unwrap(), "keep me too");
}

#[test]
fn stdin_stream_is_rewritten_with_identical_timestamps() {
    let dir = tmp("stdin");
    for (k, rel) in
        ["pcap_market/elk_nasdaq.pcap", "pcapng_test_generator/output_le/basic/test006.pcapng"].iter().enumerate()
    {
        let input = data_file(rel);
        // A file each: capture replaces no earlier capture.
        let out = dir.join(format!("s{k}.pcapng"));
        let (child, mut pipe) = relay::relay(&[], &out);
        std::io::copy(&mut std::fs::File::open(&input).unwrap(), &mut pipe).unwrap();
        drop(pipe);
        let res = finish(child, 10);
        assert!(res.status.success(), "{rel}: {}", String::from_utf8_lossy(&res.stderr));
        let (a, b) = (frames(&input), frames(&out));
        assert!(!a.is_empty(), "{rel}");
        assert_eq!(a, b, "{rel}: same times, directions and lengths");
        // The input's timestamp resolution is kept: both are µs (a pcap's magic 0xa1b2c3d4; a pcapng
        // interface without if_tsresol). They were written as ns, and analyze's note that no figure
        // is finer than a µs went away.
        let resolution = |p: &Path| {
            let r = Command::new(BIN).args(["analyze", "-q", "--json"]).arg(p).output().unwrap();
            let r: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
            r["input"]["resolutions"][0]["record_resolution_ns"].as_u64()
        };
        assert_eq!((resolution(&input), resolution(&out)), (Some(1_000), Some(1_000)), "{rel}");
    }
}

/// Relays `input`'s bytes through `capture --source stdin -w out`: its exit status and stderr.
fn relay(input: &[u8], out: &Path) -> (bool, String) {
    let mut child = Command::new(BIN)
        .args(["capture", "--source", "stdin", "-w"])
        .arg(out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), input).unwrap();
    drop(child.stdin.take());
    let res = finish(child, 10);
    (res.status.success(), String::from_utf8_lossy(&res.stderr).into_owned())
}

/// A relayed pcapng keeps its interfaces' names and what its statistics blocks recorded: a relay of a
/// capture that lost packets must not read as a clean one (user audit 10, F5: the names became
/// "stdin" and the blocks were dropped).
#[test]
fn a_relayed_stream_keeps_its_interface_names_and_recorded_losses() {
    use wirestamp_capture::write::{IfaceSpec, IfaceStats, PcapngWriter};
    use wirestamp_capture::{CaptureReader, RecordedStats};
    use wirestamp_core::{Direction, LinkType};
    let dir = tmp("relay-isb");
    let spec = |name: &str| IfaceSpec { link: LinkType::Ethernet, name: name.into(), description: None, snaplen: 9000 };
    let frame: Vec<u8> = (0..60u8).collect();
    let t = 1_796_049_000_000_000_000i64;
    let mut w = PcapngWriter::new(Vec::new(), None).unwrap();
    let (vb, vd) = (w.add_interface(&spec("vb")).unwrap(), w.add_interface(&spec("vd")).unwrap());
    for k in 0..5 {
        w.write([vb, vb, vd, vb, vd][k], t + k as i64, &frame, 60, Direction::Inbound).unwrap();
    }
    let lossy =
        RecordedStats { filteraccept: Some(51_000), osdrop: Some(47_073), usrdeliv: Some(3_927), ..Default::default() };
    let clean = RecordedStats { filteraccept: Some(2), osdrop: Some(0), usrdeliv: Some(2), ..Default::default() };
    w.write_stats(vb, t + 5, &IfaceStats { counters: lossy, ..Default::default() }).unwrap();
    w.write_stats(vd, t + 5, &IfaceStats { counters: clean, ..Default::default() }).unwrap();
    let input = w.finish().unwrap();

    let out = dir.join("relayed.pcapng");
    let (ok, err) = relay(&input, &out);
    assert!(ok, "{err}");
    let mut r = CaptureReader::open(&out).unwrap();
    let mut by_iface = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        by_iface.push(f.interface);
    }
    let names: Vec<_> = r.interfaces().iter().map(|i| i.name.clone().unwrap_or_default()).collect();
    let named: Vec<&str> = by_iface.iter().map(|&i| names[i as usize].as_str()).collect();
    assert_eq!(named, ["vb", "vb", "vd", "vb", "vd"]);
    let recorded = |name: &str| r.interfaces().iter().find(|i| i.name.as_deref() == Some(name)).unwrap().recorded;
    assert_eq!(recorded("vb"), Some(lossy));
    assert_eq!(recorded("vd"), Some(clean));
    // And the analysis of the relayed file says what the capture lost, as it does of the original.
    let a = Command::new(BIN).args(["analyze", "-q"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&a.stderr);
    assert!(stderr.contains("interface vb records 47073 packets lost while capturing"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stream cut inside a record is said to be, as `frames` and `analyze` say it of a file (user audit
/// 10, F6: it ended with exit 0 and not a word). The place is computed here from the pcap's record
/// headers.
#[test]
fn a_stream_cut_inside_a_record_is_warned_of() {
    let dir = tmp("relay-cut");
    let bytes = std::fs::read(data_file("pcap_market/elk_nasdaq.pcap")).unwrap();
    assert_eq!(bytes[..4], [0xd4, 0xc3, 0xb2, 0xa1], "a little-endian µs pcap");
    // Walk the records to the 100th and cut 10 bytes into its data.
    let (mut at, mut k) = (24usize, 0u64);
    while k < 100 {
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
        k += 1;
    }
    let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    let cut = at + 16 + 10;
    let out = dir.join("cut.pcapng");
    let (ok, err) = relay(&bytes[..cut], &out);
    assert!(ok, "a cut stream is read up to the cut: {err}");
    let want = format!(
        "warning: stdin: at byte {at} (record 100, after 100 packets): file cut short inside a record: 26 of {} bytes \
         present, {} missing",
        16 + caplen,
        16 + caplen - 26
    );
    assert!(err.contains(&want), "want {want:?} in:\n{err}");
    assert_eq!(frames(&out).len(), 100);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Sends `n` datagrams of 200 bytes from `a` to `b` in an open loop, as fast as the sender goes (a
/// 1 MiB ring may overflow, and every loss must be counted), then stops the capture: its stderr.
fn overload(pair: &VethPair, child: Child, n: u32) -> String {
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    for _ in 0..n {
        sa.send_to(&[7u8; 200], (ADDR_B, PORT)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let res = finish(child, 20);
    let err = String::from_utf8_lossy(&res.stderr).into_owned();
    assert!(res.status.success(), "{err}");
    err
}

#[test]
fn under_load_written_plus_dropped_equals_sent() {
    const N: u32 = 30_000;
    let t_test = realtime_ns();
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("load");
    let out = dir.join("l.pcapng");
    let args = args(&["-i", "va", "-f", "udp port 40000", "--ring-mb", "1", "--no-hwtstamp"], &out);
    let child = start(&pair.a, args, dir.join("l.pcapng.part"));
    let err = overload(&pair, child, N);
    let written = tshark_fields(&out, &[], &["frame.len"]).len() as u64;
    // "kernel: P passed the filter: R read, D dropped (ring full), Q still queued at exit; ..."
    let (line, nums) = counter_line(&err, "passed the filter");
    let (passed, read, dropped, queued) = (nums[0], nums[1], nums[2], nums[3]);
    assert_eq!(passed, N as u64, "{line}");
    assert_eq!(read, written, "{line}");
    assert_eq!(queued, 0, "{line}");
    assert_eq!(written + dropped, N as u64, "written {written} + dropped {dropped} = sent: {line}");
    eprintln!("load: {N} sent, {written} written, {dropped} dropped");
    // The file says so too: one Interface Statistics Block (capinfos counts it) with the same counters.
    let ci = Command::new("capinfos").arg(&out).output().unwrap();
    assert!(String::from_utf8_lossy(&ci.stdout).contains("Number of stat entries = 1"));
    let isbs = isbs(&out);
    assert_eq!(isbs.len(), 1, "{isbs:?}");
    let (iface, opts) = &isbs[0];
    assert_eq!(*iface, 0);
    let opt = |code| isb_u64(opts, code);
    // isb_filteraccept (6), isb_osdrop (7), isb_usrdeliv (8); no interface counters (4, 5) from AF_PACKET.
    assert_eq!((opt(6), opt(7), opt(8)), (Some(passed), Some(dropped), Some(read)), "{opts:?}");
    assert_eq!((opt(4), opt(5)), (None, None));
    // isb_starttime (2) and isb_endtime (3): high then low 32-bit halves of ns since the epoch; the
    // capture ran inside this test.
    let (start, end) = (isb_time(opts, 2), isb_time(opts, 3));
    assert!(t_test <= start && start <= end && end <= realtime_ns(), "{t_test} {start} {end}");
}

/// The line of `err` holding `marker` (a counter summary), and its numbers in order.
fn counter_line<'a>(err: &'a str, marker: &str) -> (&'a str, Vec<u64>) {
    let line = err.lines().find(|l| l.contains(marker)).unwrap_or_else(|| panic!("no `{marker}` line: {err}"));
    let nums =
        line.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    (line, nums)
}

/// An option of a pcapng block: (code, value).
type IsbOption = (u16, Vec<u8>);

/// An ISB counter option (8 bytes, little-endian), if present.
fn isb_u64(opts: &[IsbOption], code: u16) -> Option<u64> {
    opts.iter().find(|o| o.0 == code).map(|o| u64::from_le_bytes(o.1[..8].try_into().unwrap()))
}

/// An ISB time option: high then low 32-bit halves of ns since the epoch.
fn isb_time(opts: &[IsbOption], code: u16) -> i64 {
    let v = &opts.iter().find(|o| o.0 == code).unwrap_or_else(|| panic!("no option {code}: {opts:?}")).1;
    let (hi, lo) = (u32::from_le_bytes(v[..4].try_into().unwrap()), u32::from_le_bytes(v[4..8].try_into().unwrap()));
    (i64::from(hi) << 32) | i64::from(lo)
}

/// The Interface Statistics Blocks of a little-endian pcapng (pcapng spec §4.6), parsed here by hand:
/// (interface id, [(option code, value)]).
fn isbs(path: &Path) -> Vec<(u32, Vec<IsbOption>)> {
    let b = std::fs::read(path).unwrap();
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut off = 0;
    while off + 12 <= b.len() {
        let (kind, len) = (u32_at(off), u32_at(off + 4) as usize);
        if kind == 5 {
            let mut opts = Vec::new();
            let mut o = off + 20;
            while o + 4 <= off + len - 4 {
                let code = u16::from_le_bytes([b[o], b[o + 1]]);
                let n = usize::from(u16::from_le_bytes([b[o + 2], b[o + 3]]));
                if code == 0 {
                    break;
                }
                opts.push((code, b[o + 4..o + 4 + n].to_vec()));
                o += 4 + n.div_ceil(4) * 4;
            }
            out.push((u32_at(off + 8), opts));
        }
        off += len;
    }
    out
}

#[test]
fn time_rotation_starts_a_new_complete_file_each_period() {
    let pair = VethPair::new();
    let dir = tmp("time");
    let out = dir.join("t.pcapng");
    let args = args(&["-i", "va", "-f", "udp port 40000", "-G", "1", "--duration", "3", "--no-hwtstamp"], &out);
    let child = start(&pair.a, args, dir.join("t.0000.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    // One datagram every 50 ms for 2.5 s, so every period has frames (rotation happens on the next frame).
    let mut sent = 0;
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(2500) {
        sa.send_to(b"tick", (ADDR_B, PORT)).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let res = finish(child, 10);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.iter().all(|f| f.extension().unwrap() == "pcapng"), "no .part left: {files:?}");
    assert!((3..=4).contains(&files.len()), "3 s at -G 1: {files:?}");
    let total: usize = files.iter().map(|f| tshark_fields(f, &[], &["frame.len"]).len()).sum();
    assert_eq!(total, sent, "{err}");
    // Each file holds its own second: the first frame of file k+1 is after the last of file k.
    let times: Vec<Vec<i64>> = files.iter().map(|f| frames(f).iter().map(|r| r.0).collect()).collect();
    for w in times.windows(2) {
        if let (Some(a), Some(b)) = (w[0].last(), w[1].first()) {
            assert!(a < b);
        }
    }
}

#[test]
fn several_interfaces_in_one_file_one_idb_each() {
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("multi");
    let out = dir.join("m.pcapng");
    let args = args(&["-i", "va", "-i", "lo", "-f", "udp port 40000", "-c", "15", "--no-hwtstamp"], &out);
    let child = start(&pair.a, args, dir.join("m.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    let lo = pair.a.run(|| UdpSocket::bind(("127.0.0.1", PORT)).unwrap());
    send_all(&sa, ADDR_B, 5, 10); // va: 5 outgoing
    for _ in 0..5 {
        lo.send_to(b"loop", ("127.0.0.1", PORT)).unwrap(); // lo: each seen outgoing and incoming
    }
    let res = finish(child, 10);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    assert!(
        err.contains("kernel (va): 5 passed the filter") && err.contains("kernel (lo): 10 passed the filter"),
        "{err}"
    );
    let rows = tshark_fields(&out, &[], &["frame.interface_name", "frame.p2p_dir"]);
    let count = |name: &str, dir: &str| rows.iter().filter(|r| r[0] == name && r[1] == dir).count();
    assert_eq!((count("va", "0"), count("va", "1")), (5, 0), "{rows:?}");
    assert_eq!((count("lo", "0"), count("lo", "1")), (5, 5), "{rows:?}");
}

/// Two interfaces' frames interleaved in time (va and lo take turns every 200 us, for about 60 ms):
/// the file holds them in time order. (The rings were taken in turn, a block at a time: blocks
/// retire every 10 ms, so frames of one interface came up to that long before earlier ones of the
/// other.)
#[test]
fn several_interfaces_are_written_in_time_order() {
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("multi-order");
    let out = dir.join("m.pcapng");
    const N: u32 = 150;
    let args =
        args(&["-i", "va", "-i", "lo", "-f", "udp port 40000", "-c", &(3 * N).to_string(), "--no-hwtstamp"], &out);
    let child = start(&pair.a, args, dir.join("m.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    let lo = pair.a.run(|| UdpSocket::bind(("127.0.0.1", PORT)).unwrap());
    for _ in 0..N {
        sa.send_to(b"va", (ADDR_B, PORT)).unwrap(); // va: seen outgoing
        std::thread::sleep(Duration::from_micros(200));
        lo.send_to(b"loop", ("127.0.0.1", PORT)).unwrap(); // lo: seen outgoing and incoming
        std::thread::sleep(Duration::from_micros(200));
    }
    let res = finish(child, 10);
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    let times: Vec<i64> = frames(&out).into_iter().map(|f| f.0).collect();
    assert_eq!(times.len(), 3 * N as usize);
    let back: Vec<(usize, i64)> =
        times.windows(2).enumerate().filter(|(_, w)| w[1] < w[0]).map(|(k, w)| (k + 1, w[0] - w[1])).collect();
    assert!(
        back.is_empty(),
        "{} frames written after a later one (index, ns): {:?}",
        back.len(),
        &back[..back.len().min(10)]
    );
}

/// A busy interface beside an idle one, on a small ring (4 MiB: four blocks): the merge waits for the
/// idle one with the busy one's frames copied out, not held in the ring's blocks (holding them froze
/// the ring: about half the frames were dropped). Every frame is written, none dropped.
#[test]
fn an_idle_interface_beside_a_busy_one_loses_nothing_on_a_small_ring() {
    steady_rate_loses_nothing("multi-idle", &["-i", "va", "-i", "lo", "--ring-mb", "4"]);
}

/// Captures 2,000 UDP frames va sends at 2 kHz with `capture_args` (and a filter for them): the kernel
/// passes every one, wirestamp reads every one, none is dropped, and the file holds them all.
fn steady_rate_loses_nothing(name: &str, capture_args: &[&str]) {
    const N: u32 = 2_000;
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp(name);
    let out = dir.join("s.pcapng");
    let n = N.to_string();
    let a = [capture_args, &["-f", "udp port 40000", "-c", &n, "--no-hwtstamp"]].concat();
    let child = start(&pair.a, args(&a, &out), dir.join("s.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    for _ in 0..N {
        sa.send_to(&[0x5a; 100], (ADDR_B, PORT)).unwrap();
        std::thread::sleep(Duration::from_micros(500));
    }
    let res = finish(child, 15);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    let (_, va) = counter_line(&err, "kernel (va):");
    assert_eq!(va[..3], [u64::from(N), u64::from(N), 0], "passed, read, dropped: {err}");
    assert_eq!(frames(&out).len(), N as usize);
}

// ---- --source ebpf ----

const FEED_GROUP: &str = "239.7.7.7";
const FEED_PORT: u16 = 30001;
const GW_PORT: u16 = 9000;

/// One frame's identity, parsed here by hand from its Ethernet/IPv4/UDP-or-TCP bytes (RFC 791/768/793).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    outbound: bool,
    proto: u8,
    src: (std::net::Ipv4Addr, u16),
    dst: (std::net::Ipv4Addr, u16),
    seq: u32,
    ack: u32,
    flags: u8,
    ip_len: u16,
}

/// (key, header length up to the L4 payload) of a frame; None for anything but IPv4 UDP/TCP.
fn parse_key(outbound: bool, f: &[u8]) -> Option<(Key, usize)> {
    if f.len() < 34 || f[12..14] != [0x08, 0x00] {
        return None;
    }
    let ihl = usize::from(f[14] & 0x0f) * 4;
    let ip = |i: usize| std::net::Ipv4Addr::new(f[i], f[i + 1], f[i + 2], f[i + 3]);
    let l4 = 14 + ihl;
    let be16 = |i: usize| u16::from_be_bytes([f[i], f[i + 1]]);
    let be32 = |i: usize| u32::from_be_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
    let proto = f[23];
    let (seq, ack, flags, hdr) = match proto {
        17 => (0, 0, 0, l4 + 8),
        6 => (be32(l4 + 4), be32(l4 + 8), f[l4 + 13], l4 + usize::from(f[l4 + 12] >> 4) * 4),
        _ => return None,
    };
    let key = Key {
        outbound,
        proto,
        src: (ip(26), be16(l4)),
        dst: (ip(30), be16(l4 + 2)),
        seq,
        ack,
        flags,
        ip_len: be16(16),
    };
    Some((key, hdr))
}

/// Every frame of a pcapng file: (time_ns, outbound, data, wire_len, ts_source name).
fn read_all(path: &Path) -> Vec<(i64, bool, Vec<u8>, u32, &'static str)> {
    let mut r = wirestamp_capture::CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        let outbound = f.direction == wirestamp_core::Direction::Outbound;
        out.push((f.ts_ns, outbound, f.data.to_vec(), f.wire_len, f.ts_source.name()));
    }
    out
}

fn args(v: &[&str], out: &Path) -> Vec<String> {
    v.iter().map(|s| s.to_string()).chain(["-w".into(), out.display().to_string()]).collect()
}

/// `capture`'s arguments for the eBPF source on `va` with sockops TX events of the order session
/// `tcp:ADDR_B:GW_PORT` from cgroup `cg` into `csv`, `extra` beside them, writing `out`.
fn tx_args(cg: &str, csv: &str, extra: &[&str], out: &Path) -> Vec<String> {
    let orders = format!("tcp:{ADDR_B}:{GW_PORT}");
    let a = ["--source", "ebpf", "-i", "va", "--orders", &orders, "--no-hwtstamp", "--cgroup", cg, "--tx-events", csv];
    args(&[&a[..], extra].concat(), out)
}

#[test]
fn ebpf_source_captures_exactly_the_configured_flows_once_with_hook_timestamps() {
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpListener, TcpStream};
    const N_FEED: u64 = 20;
    const N_ORDERS: usize = 10;
    let pair = VethPair::new();
    pair.a.ip(&["route", "add", "224.0.0.0/4", "dev", "va"]);
    let dir = tmp("ebpf");
    let (out, oracle_out) = (dir.join("e.pcapng"), dir.join("o.pcapng"));
    let md = format!("udp:{FEED_GROUP}:{FEED_PORT}");
    let orders = format!("tcp:{ADDR_B}:{GW_PORT}");
    let ebpf = start(
        &pair.a,
        args(&["--source", "ebpf", "-i", "va", "--md", &md, "--orders", &orders, "--no-hwtstamp"], &out),
        dir.join("e.pcapng.part"),
    );
    // The oracle: AF_PACKET on the same interface, all UDP and TCP; the test applies the flows itself.
    let oracle = start(
        &pair.a,
        args(&["-i", "va", "-f", "udp or tcp", "--no-hwtstamp"], &oracle_out),
        dir.join("o.pcapng.part"),
    );

    // A second eBPF capture on the same interface is refused, clearly, and leaves the first one alone.
    let second = pair.a.command(
        BIN,
        &["capture", "--source", "ebpf", "-i", "va", "--md", &md, "-w", &dir.join("x.pcapng").display().to_string()],
    );
    let err2 = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success() && err2.contains("another wirestamp capture is running"), "{err2}");
    assert!(!dir.join("x.pcapng").exists() && !dir.join("x.pcapng.part").exists());

    // B: the gateway (replies to each order) and an unconfigured TCP service.
    let (gw, other) = pair
        .b
        .run(|| (TcpListener::bind((ADDR_B, GW_PORT)).unwrap(), TcpListener::bind((ADDR_B, GW_PORT + 100)).unwrap()));
    let gw_thread = std::thread::spawn(move || {
        let (mut s, _) = gw.accept().unwrap();
        let mut o = [0u8; 40];
        for _ in 0..N_ORDERS {
            s.read_exact(&mut o).unwrap();
            s.write_all(&[b'R'; 20]).unwrap();
        }
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
    });
    let other_thread = std::thread::spawn(move || {
        let (mut s, _) = other.accept().unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
    });
    let (feed, noise) = pair.a.run(|| (UdpSocket::bind((ADDR_A, 0)).unwrap(), UdpSocket::bind((ADDR_A, 0)).unwrap()));
    let noise_b = pair.b.run(|| UdpSocket::bind((ADDR_B, 0)).unwrap());
    let mut feed_iv = Vec::new();
    for seq in 0..N_FEED {
        let mut d = seq.to_be_bytes().to_vec();
        d.resize(300, 0xab); // longer than headers + 64: the eBPF frame is truncated
        let t0 = realtime_ns();
        feed.send_to(&d, (FEED_GROUP, FEED_PORT)).unwrap();
        feed_iv.push((t0, realtime_ns()));
        noise.send_to(b"same group, other port", (FEED_GROUP, FEED_PORT + 1)).unwrap();
        noise.send_to(b"gateway, over udp", (ADDR_B, GW_PORT)).unwrap();
        noise_b.send_to(b"inbound udp noise", (ADDR_A, FEED_PORT)).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut client = pair.a.run(|| TcpStream::connect((ADDR_B, GW_PORT)).unwrap());
    client.set_nodelay(true).unwrap();
    let mut noise_tcp = pair.a.run(|| TcpStream::connect((ADDR_B, GW_PORT + 100)).unwrap());
    let mut order_iv = Vec::new();
    for k in 0..N_ORDERS {
        let mut o = format!("ORDER{k:03}").into_bytes();
        o.resize(40, b'.');
        let t0 = realtime_ns();
        client.write_all(&o).unwrap();
        order_iv.push((o[..8].to_vec(), t0, realtime_ns()));
        noise_tcp.write_all(b"not an order session").unwrap();
        let mut r = [0u8; 20];
        client.read_exact(&mut r).unwrap();
    }
    drop(client);
    drop(noise_tcp);
    gw_thread.join().unwrap();
    other_thread.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    for c in [&ebpf, &oracle] {
        // SAFETY: signals our own child by pid.
        assert_eq!(unsafe { libc::kill(c.id() as i32, libc::SIGTERM) }, 0);
    }
    let (res, ores) = (finish(ebpf, 10), finish(oracle, 10));
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success() && ores.status.success(), "{err}\n{}", String::from_utf8_lossy(&ores.stderr));
    assert!(err.contains("frames TRUNCATED to their headers + 64 payload bytes"), "{err}");

    // What the test itself says the flows are, applied to the oracle's frames.
    let (group, gw) = (FEED_GROUP.parse::<Ipv4Addr>().unwrap(), ADDR_B.parse::<Ipv4Addr>().unwrap());
    let in_flows = |k: &Key| {
        (k.proto == 17 && k.dst == (group, FEED_PORT))
            || (k.proto == 6 && (k.dst == (gw, GW_PORT) || k.src == (gw, GW_PORT)))
    };
    let oracle_frames = read_all(&oracle_out);
    let mut want: Vec<(Key, Vec<u8>, u32)> = Vec::new();
    let mut noise_seen = 0;
    for (_, outbound, data, wire, _) in &oracle_frames {
        let (k, hdr) = parse_key(*outbound, data).unwrap();
        if in_flows(&k) {
            want.push((k, data[..data.len().min(hdr + 64)].to_vec(), *wire));
        } else {
            noise_seen += 1;
        }
    }
    let got_frames = read_all(&out);
    let mut got: Vec<(Key, Vec<u8>, u32)> =
        got_frames.iter().map(|(_, o, d, w, _)| (parse_key(*o, d).unwrap().0, d.clone(), *w)).collect();
    want.sort();
    got.sort();
    // 20 feed datagrams; the session: handshake (3), 10 orders, 10 replies (ACKs ride on them), 2 FINs at least.
    assert!(want.len() >= (N_FEED as usize) + 3 + 2 * N_ORDERS + 2, "{}", want.len());
    assert!(noise_seen >= 3 * N_FEED as usize + 2 * N_ORDERS, "the oracle saw the noise: {noise_seen}");
    assert_eq!(got.len(), want.len(), "{err}");
    assert_eq!(got, want, "each configured packet exactly once, same bytes up to headers + 64, same wire length");
    let n = got.len();
    assert!(err.contains(&format!("{n} frames written")), "{err}");
    assert!(
        err.contains(&format!("bpf (va, tc): {n} matched of "))
            && err.contains(&format!(
                ": {n} frames read in all, 0 lost (ring full), 0 dropped (user-space queue full), 0 still queued at exit"
            )),
        "{err}"
    );

    // Read back through `wirestamp frames`: same count, times and lengths; caplen < wirelen for the feed.
    let out_csv = Command::new(BIN).args(["frames", "-q"]).arg(&out).output().unwrap();
    assert!(out_csv.status.success());
    let rows: Vec<Vec<String>> = String::from_utf8(out_csv.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    assert_eq!(rows.len(), n);
    // The provenance travels in each frame's interface block (one per interface and timestamp source).
    let descr = tshark_fields(&out, &[], &["frame.interface_description"]);
    assert_eq!(descr.len(), n);
    let mut feed_frames = 0;
    for ((row, (ts, outbound, data, wire, _)), d) in rows.iter().zip(&got_frames).zip(&descr) {
        let source = if d[0].starts_with("eBPF hook time") { "bpf_hook" } else { d[0].as_str() };
        assert_eq!(row[1].parse::<i64>().unwrap(), *ts);
        assert_eq!(row[2].parse::<usize>().unwrap(), data.len());
        assert_eq!(row[3].parse::<u32>().unwrap(), *wire);
        assert_eq!(row[6], "pcapng");
        let (k, _) = parse_key(*outbound, data).unwrap();
        if k.proto == 17 {
            // Egress UDP carries no stamp: the hook's time, inside the send call.
            assert_eq!((source, *outbound), ("bpf_hook", true));
            assert_eq!((data.len(), *wire), (14 + 20 + 8 + 64, 14 + 20 + 8 + 300), "truncated");
            let seq = u64::from_be_bytes(data[42..50].try_into().unwrap());
            assert_eq!(seq, feed_frames, "in send order");
            let (t0, t1) = feed_iv[seq as usize];
            assert!(t0 <= *ts && *ts <= t1, "feed {seq}: {ts} outside [{t0}, {t1}]");
            feed_frames += 1;
        } else if *outbound && data.len() > 54 && data[54..].starts_with(b"ORDER") {
            let (_, t0, t1) = order_iv.iter().find(|o| data[54..].starts_with(&o.0)).unwrap();
            assert_eq!(source, "bpf_hook");
            assert!(t0 <= ts && ts <= t1, "order: {ts} outside [{t0}, {t1}]");
        }
    }
    assert_eq!(feed_frames, N_FEED);
}

/// `--rx-hook`: XDP takes the inbound packets only where it can give a hardware RX timestamp. veth has
/// none: `xdp` falls back to tc ingress and says why; `xdp-always` attaches XDP anyway, and every inbound
/// packet is captured there once, with the hook's time (counted as without a hardware stamp), while the
/// outbound ones still come from tc egress.
#[test]
fn ebpf_source_rx_hook_xdp_takes_inbound_packets_or_says_why_not() {
    const N: u64 = 25;
    let feed_port = FEED_PORT + 7;
    let md = format!("udp:{ADDR_A}:{feed_port}");
    // The kernel's receive stamps on (tc ingress then sees one on every inbound skb).
    let _stamps = netstamp_holder();
    for (hook, via_xdp) in [("xdp", false), ("xdp-always", true)] {
        let pair = VethPair::new();
        let dir = tmp(&format!("ebpf-{hook}"));
        let out = dir.join("x.pcapng");
        let child = start(
            &pair.a,
            args(&["--source", "ebpf", "-i", "va", "--md", &md, "--rx-hook", hook, "--no-hwtstamp"], &out),
            dir.join("x.pcapng.part"),
        );
        let rx = pair.a.run(move || UdpSocket::bind((ADDR_A, feed_port)).unwrap());
        let tx = pair.b.run(|| UdpSocket::bind((ADDR_B, 0)).unwrap());
        // Inbound datagrams (B to A), each sent and received inside a known interval, and one outbound
        // datagram to the same flow (A to itself over the wire is not possible: A sends to B's port, not in
        // the flow, so the outbound side is checked through the counters instead).
        let mut iv = Vec::new();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 64];
        for seq in 0..N {
            let t0 = realtime_ns();
            tx.send_to(&seq.to_be_bytes(), (ADDR_A, feed_port)).unwrap();
            let (n, _) = rx.recv_from(&mut buf).unwrap();
            iv.push((t0, realtime_ns()));
            assert_eq!(n, 8);
        }
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: signals our own child by pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let res = finish(child, 10);
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(res.status.success(), "{hook}: {err}");
        let frames = read_all(&out);
        assert_eq!(frames.len() as u64, N, "{hook}: each inbound datagram once: {err}");
        // The provenance travels in each frame's interface block.
        let descr = tshark_fields(&out, &[], &["frame.interface_description"]);
        for (k, ((ts, outbound, data, _, _), d)) in frames.iter().zip(&descr).enumerate() {
            assert!(!outbound, "{hook}");
            let seq = u64::from_be_bytes(data[42..50].try_into().unwrap());
            assert_eq!(seq, k as u64, "{hook}: in order");
            let (t0, t1) = iv[k];
            assert!(t0 <= *ts && *ts <= t1, "{hook}: datagram {k}: {ts} outside [{t0}, {t1}]");
            // XDP runs before any skb: only its own time. tc ingress sees the kernel's receive stamp.
            let want = if via_xdp { "eBPF hook time" } else { "kernel software timestamps" };
            assert!(d[0].starts_with(want), "{hook}: {}", d[0]);
        }
        if via_xdp {
            assert!(err.contains("va: inbound through device-bound XDP"), "{err}");
            assert!(err.contains("bpf (va, tc, outbound): 0 matched of "), "tc saw no inbound packet: {err}");
            assert!(
                err.contains(&format!("xdp (va, inbound): {N} matched of "))
                    && err.contains(&format!(
                        ": {N} read, 0 lost (ring full), {N} without an RX hardware timestamp (hook time used)"
                    )),
                "{err}"
            );
        } else {
            // The flag as given (not the enum's `Xdp`), and what tc ingress gives: the kernel's stamp only
            // while a socket has RX timestamping on (here `_stamps`), else the hook's time as XDP would.
            assert!(
                err.contains(
                    "va: --rx-hook xdp: inbound packets through tc ingress instead (XDP not used: the interface \
                     reports no hardware RX timestamping (ethtool -T), so XDP could only give the hook's time; tc \
                     ingress gives the kernel's software receive stamp while a socket on this host has RX \
                     timestamping on (the kernel then stamps every packet), else the hook's time as well (counted \
                     as bpf_hook))"
                ),
                "{err}"
            );
            assert_eq!(err.matches("--rx-hook").count(), 1, "said once: {err}");
            assert!(err.contains(&format!("bpf (va, tc): {N} matched of ")) && !err.contains("xdp (va"), "{err}");
        }
    }
    // Only --source ebpf has a choice of hook.
    let pair = VethPair::new();
    let never = tmp("rx-hook-afpacket").join("n.pcapng");
    let o = pair.a.command(
        BIN,
        &["capture", "--source", "afpacket", "-i", "va", "--rx-hook", "xdp", "-w", &never.display().to_string()],
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("--rx-hook chooses the hook of --source ebpf"), "{e}");
    assert!(!never.exists(), "no file for a refused command");
}

#[test]
fn ebpf_source_detaches_on_sigterm_and_rejects_bad_arguments() {
    let pair = VethPair::new();
    let dir = tmp("ebpf-idle");
    for round in 0..2 {
        // The second round attaches again: the first one's programs were detached at exit.
        let out = dir.join(format!("i{round}.pcapng"));
        let child = start(
            &pair.a,
            args(&["--source", "ebpf", "-i", "va", "--orders", "tcp:10.77.0.2:9000", "--no-hwtstamp"], &out),
            dir.join(format!("i{round}.pcapng.part")),
        );
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        // SAFETY: signals our own child by pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let res = finish(child, 5);
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(res.status.success(), "round {round}: {err}");
        assert!(t.elapsed() < Duration::from_secs(1), "stopped within the 100 ms poll");
        assert!(err.contains("0 frames written\n"), "{err}");
        // Looking for an earlier clsact filter finds no qdisc: an answer, not a warning.
        assert!(!err.contains("libbpf"), "{err}");
        // veth's TSO is on, but egress sees a write before the stack segments it whatever the
        // offloads: no `ethtool -K` would help, so none is given. (GRO, off, is not warned of either.)
        assert!(!err.contains("TSO") && !err.contains("ethtool -K"), "{err}");
        assert_eq!(tshark_fields(&out, &[], &["frame.len"]).len(), 0, "a complete, empty file");
    }
    let o = dir.join("bad.pcapng").display().to_string();
    for (a, want) in [
        (vec!["--source", "ebpf", "-i", "va"], "needs at least one flow"),
        (vec!["--source", "ebpf", "-i", "va", "--md", "tcp:1.2.3.4:5"], "a feed is udp:GROUP:PORT"),
        (vec!["--source", "ebpf", "-i", "va", "--md", "udp:1.2.3.4:5", "-f", "udp"], "-f does not apply"),
        (vec!["-i", "va", "--md", "udp:1.2.3.4:5"], "select flows for --source ebpf"),
        (
            vec!["--source", "ebpf", "-i", "nosuch0", "--md", "udp:1.2.3.4:5", "--no-hwtstamp"],
            "\"nosuch0\" does not exist",
        ),
    ] {
        let mut v = vec!["capture"];
        v.extend(a);
        v.extend(["-w", &o]);
        let r = pair.a.command(BIN, &v);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success() && err.contains(want), "{v:?}: {err}");
    }
    assert!(!dir.join("bad.pcapng").exists());
}

const TX_CLIENT_ENV: &str = "WS_CAPTURE_TX_CLIENT";
/// How many orders the TX client writes, when not [`TX_WRITES`].
const TX_WRITES_ENV: &str = "WS_CAPTURE_TX_WRITES";
const TX_WRITES: usize = 5;
/// One SoupBinTCP Unsequenced Data packet holding an OUCH 5.0 Enter Order (2 + 1 + 47 bytes).
const TX_WRITE_LEN: usize = 50;
/// The gateway's answer to each order: a SoupBinTCP Server Heartbeat.
const TX_ANSWER: [u8; 3] = [0, 1, b'H'];

/// The `k`th order of the TX client: one OUCH 5.0 Enter Order in a SoupBinTCP packet, one write.
fn tx_order(k: usize) -> Vec<u8> {
    use wirestamp_lab::encode::{ouch, soup};
    let o = ouch::Order {
        user_ref_num: k as u32 + 1,
        side: b'B',
        quantity: 100,
        symbol: "AAPL".into(),
        price: 1_000_000,
        cl_ord_id: format!("T{k}"),
    };
    let mut m = Vec::new();
    ouch::enter_order(&mut m, &o);
    let mut p = Vec::new();
    soup::packet(&mut p, b'U', &m);
    assert_eq!(p.len(), TX_WRITE_LEN);
    p
}

/// The trading app of `ebpf_source_writes_sockops_tx_timestamps_of_an_unmodified_client`, run by it in a
/// child process inside a cgroup: connects to $WS_CAPTURE_TX_CLIENT, writes TX_WRITES OUCH orders of
/// TX_WRITE_LEN bytes (or $WS_CAPTURE_TX_WRITES of them; each answered by a heartbeat), never touching
/// SO_TIMESTAMPING; prints its port.
#[test]
#[ignore = "helper: run in a child process by ebpf_source_writes_sockops_tx_timestamps_of_an_unmodified_client"]
fn ebpf_tx_client_child() {
    use std::io::{Read, Write};
    let addr: std::net::SocketAddr = std::env::var(TX_CLIENT_ENV).expect("run by the parent test").parse().unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    let mut r = [0u8; TX_ANSWER.len()];
    let writes = std::env::var(TX_WRITES_ENV).map_or(TX_WRITES, |n| n.parse().unwrap());
    for k in 0..writes {
        s.write_all(&tx_order(k)).unwrap();
        s.read_exact(&mut r).unwrap();
    }
    println!("CLIENT local_port={}", s.local_addr().unwrap().port());
}

/// The first cgroup2 mount (/proc/self/mounts), read here independently of the code under test.
fn cgroup2_root() -> PathBuf {
    let m = std::fs::read_to_string("/proc/self/mounts").unwrap();
    m.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(f[1]))
        })
        .expect("a cgroup2 mount")
}

/// A cgroup of its own for a test (`wirestamp-capture-test-TAGPID` under the cgroup2 mount), removed
/// when dropped: its processes may take a moment to leave it, so removal is tried for up to a second,
/// and a cgroup still there then fails the test (unless it is failing already).
struct TestCgroup(PathBuf);

impl TestCgroup {
    fn new(tag: &str) -> TestCgroup {
        let cg = cgroup2_root().join(format!("wirestamp-capture-test-{tag}{}", std::process::id()));
        std::fs::create_dir(&cg).unwrap();
        TestCgroup(cg)
    }
}

impl std::ops::Deref for TestCgroup {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if !std::thread::panicking() {
            panic!("cgroup {} not removed", self.0.display());
        }
    }
}

/// Runs the TX client (`ebpf_tx_client_child`) in `pair.a`'s namespace inside cgroup `cg`, writing
/// `writes` orders, against a gateway in `pair.b` that answers each; returns the client's port once both
/// are done.
fn run_tx_client(pair: &VethPair, cg: &Path, writes: usize) -> u16 {
    use std::io::{Read, Write};
    use std::os::unix::process::CommandExt;
    let gw = pair.b.run(|| std::net::TcpListener::bind((ADDR_B, GW_PORT)).unwrap());
    let gw_thread = std::thread::spawn(move || {
        let (mut s, _) = gw.accept().unwrap();
        let mut o = [0u8; TX_WRITE_LEN];
        for _ in 0..writes {
            s.read_exact(&mut o).unwrap();
            s.write_all(&TX_ANSWER).unwrap();
        }
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
    });
    let procs = std::ffi::CString::new(cg.join("cgroup.procs").to_str().unwrap()).unwrap();
    let client_out = pair.a.run(move || {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "ebpf_tx_client_child", "--ignored", "--nocapture", "--test-threads=1"])
            .env(TX_CLIENT_ENV, format!("{ADDR_B}:{GW_PORT}"))
            .env(TX_WRITES_ENV, writes.to_string());
        // SAFETY: only async-signal-safe calls (open, write, close) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                libc::close(fd);
                if ok { Ok(()) } else { Err(std::io::Error::last_os_error()) }
            });
        }
        cmd.output().unwrap()
    });
    let stdout = String::from_utf8_lossy(&client_out.stdout).into_owned();
    assert!(client_out.status.success(), "{stdout}{}", String::from_utf8_lossy(&client_out.stderr));
    let port: u16 = stdout
        .lines()
        .find_map(|l| l.split_once("CLIENT local_port=").map(|(_, p)| p.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("{stdout}"));
    gw_thread.join().unwrap();
    port
}

#[test]
fn ebpf_source_writes_sockops_tx_timestamps_of_an_unmodified_client() {
    let pair = VethPair::new();
    let dir = tmp("ebpf-tx");
    let cg = TestCgroup::new("");
    let (out, csv) = (dir.join("t.pcapng"), dir.join("tx.csv"));
    let orders = format!("tcp:{ADDR_B}:{GW_PORT}");
    let (cgs, csvs) = (cg.display().to_string(), csv.display().to_string());
    let cap = start(&pair.a, tx_args(&cgs, &csvs, &[], &out), dir.join("t.pcapng.part"));
    let port = run_tx_client(&pair, &cg, TX_WRITES);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(cap.id() as i32, libc::SIGTERM) }, 0);
    let res = finish(cap, 10);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    assert!(err.contains("sockops: 1 connections timestamped"), "{err}");
    assert!(err.contains("0 lost (ring full), 0 bad records; 0 connections the kernel could not"), "{err}");

    // The CSV: one established row, then one sched, snd_sw and ack row per write, keyed by its last byte.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last"));
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect::<Vec<_>>())
        .filter(|r| r[2].ends_with(&format!(":{port}")))
        .collect();
    assert!(rows.iter().all(|r| r[3] == format!("{ADDR_B}:{GW_PORT}")), "{text}");
    let est: Vec<&Vec<String>> = rows.iter().filter(|r| r[1] == "established").collect();
    assert_eq!(est.len(), 1, "{text}");
    let isn1: u32 = est[0][5].parse().unwrap();
    let n = TX_WRITE_LEN as u32;
    let want: Vec<(u32, u32, String, String)> = (0..TX_WRITES as u32)
        .map(|k| {
            (
                isn1.wrapping_add(k * n),
                isn1.wrapping_add((k + 1) * n - 1),
                (k * n).to_string(),
                ((k + 1) * n - 1).to_string(),
            )
        })
        .collect();
    let mut times: std::collections::HashMap<&str, Vec<i64>> = std::collections::HashMap::new();
    for kind in ["sched", "snd_sw", "ack"] {
        let got: Vec<(u32, u32, String, String)> = rows
            .iter()
            .filter(|r| r[1] == kind)
            .map(|r| (r[4].parse().unwrap(), r[5].parse().unwrap(), r[6].clone(), r[7].clone()))
            .collect();
        assert_eq!(got, want, "{kind}: one per write with its byte range\n{text}");
        times.insert(kind, rows.iter().filter(|r| r[1] == kind).map(|r| r[0].parse().unwrap()).collect());
    }
    // Each write's last byte was carried by one captured egress frame, stamped at tc before the SND time.
    let frames: Vec<(u32, i64)> = read_all(&out)
        .into_iter()
        .filter_map(|(ts, outbound, data, _, _)| {
            let (k, hdr) = parse_key(outbound, &data)?;
            let payload = usize::from(k.ip_len) + 14 - hdr;
            (outbound && k.src.1 == port && payload > 0).then(|| (k.seq.wrapping_add(payload as u32 - 1), ts))
        })
        .collect();
    assert_eq!(frames.iter().map(|f| f.0).collect::<Vec<_>>(), want.iter().map(|w| w.1).collect::<Vec<_>>());
    for (k, (_, hook)) in frames.iter().enumerate() {
        let snd = times["snd_sw"][k];
        assert!(*hook <= snd && snd - hook < 10_000_000, "write {k}: tc egress {hook}, SND {snd}");
    }
    let stages = times["sched"].iter().zip(&times["snd_sw"]).zip(&times["ack"]);
    for (k, ((s, d), a)) in stages.enumerate() {
        assert!(s <= d && d <= a, "write {k}: sched {s} snd {d} ack {a}");
    }

    // analyze joins both: each order (one write, one frame) gets its write's SND time, and snd_to_wire is
    // the frame's capture time less it, exactly as computed above from the two files.
    let r = Command::new(BIN)
        .args(["analyze", "-q", "--json", "--orders", &orders, "--tx-events", &csvs, out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let rep: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let c = &rep["counters"];
    assert_eq!(c["orders"], TX_WRITES, "{rep}");
    assert_eq!(c["orders_with_snd"], TX_WRITES, "{rep}");
    assert_eq!(c["orders_without_snd"], 0, "{rep}");
    assert_eq!(c["tx_events"], text.lines().count() as u64 - 1, "{rep}");
    // A complete, closed connection: no byte missing in either direction (the ACK of a FIN is not one).
    for dir in ["to_exchange", "from_exchange"] {
        assert_eq!(rep["connections"][0][dir]["tcp"]["holes"], 0, "{dir}: {rep}");
    }
    let want: Vec<i64> = frames.iter().zip(&times["snd_sw"]).map(|((_, hook), snd)| hook - snd).collect();
    let s2w = rep["metrics"].as_array().unwrap().iter().find(|m| m["name"] == "snd_to_wire").unwrap();
    assert_eq!(s2w["count"], TX_WRITES, "{rep}");
    assert_eq!(s2w["min_ns"], *want.iter().min().unwrap(), "{rep}");
    assert_eq!(s2w["max_ns"], *want.iter().max().unwrap(), "{rep}");
    assert_eq!(s2w["negative"], want.iter().filter(|v| **v < 0).count(), "{rep}");
}

#[test]
fn afxdp_source_delivers_every_frame_with_its_metadata_in_copy_mode() {
    const N: usize = 50;
    let pair = VethPair::new();
    let dir = tmp("afxdp");
    let out = dir.join("x.pcapng");
    let child =
        start(&pair.a, args(&["--source", "afxdp", "-i", "va", "--no-hwtstamp"], &out), dir.join("x.pcapng.part"));
    // One AF_XDP socket per queue (and one XDP program per interface): a second capture is refused, clearly.
    let second = pair.a.command(
        BIN,
        &[
            "capture",
            "--source",
            "afxdp",
            "-i",
            "va",
            "--no-hwtstamp",
            "-w",
            &dir.join("y.pcapng").display().to_string(),
        ],
    );
    let err2 = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success() && err2.contains("another wirestamp capture"), "{err2}");

    let sb = pair.b.run(|| UdpSocket::bind((ADDR_B, 0)).unwrap());
    let mut iv = Vec::new();
    for k in 0..N {
        let mut d = (k as u32).to_be_bytes().to_vec();
        d.resize(20 + 17 * k, k as u8); // 20 .. 853 bytes: lengths differ frame to frame
        iv.push(realtime_ns());
        sb.send_to(&d, (ADDR_A, PORT)).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    iv.push(realtime_ns() + 50_000_000);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let res = finish(child, 10);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    let frames = read_all(&out);
    let descr = tshark_fields(&out, &[], &["frame.interface_description"]);
    assert_eq!(descr.len(), frames.len());
    let mut got = 0;
    for ((ts, outbound, data, wire, _), d) in frames.iter().zip(&descr) {
        assert!(!outbound);
        assert_eq!(data.len() as u32, *wire, "whole frames");
        // Anything else the kernel sent on the link (IPv6 neighbour discovery) is captured too; ours are UDP.
        let Some((key, hdr)) = parse_key(false, data) else { continue };
        if key.proto != 17 || key.dst.1 != PORT {
            continue;
        }
        let k = u32::from_be_bytes(data[hdr..hdr + 4].try_into().unwrap()) as usize;
        assert_eq!(k, got, "every datagram once, in order");
        assert_eq!(data.len(), 14 + 20 + 8 + 20 + 17 * k);
        assert!(data[hdr + 4..].iter().all(|&b| b == k as u8), "frame {k}: payload intact");
        assert!(d[0].starts_with("eBPF hook time"), "frame {k}: from the metadata: {}", d[0]);
        assert!(iv[k] <= *ts && *ts < iv[k + 1], "frame {k}: {ts} outside [{}, {})", iv[k], iv[k + 1]);
        got += 1;
    }
    assert_eq!(got, N, "{err}");
    let n = frames.len();
    assert!(
        err.contains(&format!("{n} redirected, 0 passed"))
            && err.contains(&format!("; {n} read, 0 dropped by the kernel (0 RX ring full)"))
            && err.contains(&format!("0 without metadata, {n} without a hardware stamp")),
        "{err}"
    );
}

#[test]
fn ebpf_source_under_load_written_plus_lost_equals_matched() {
    const N: u64 = 30_000;
    let pair = VethPair::new();
    pair.a.ip(&["route", "add", "224.0.0.0/4", "dev", "va"]);
    let dir = tmp("ebpf-load");
    let out = dir.join("l.pcapng");
    let md = format!("udp:{FEED_GROUP}:{FEED_PORT}");
    let child = start(
        &pair.a,
        args(&["--source", "ebpf", "-i", "va", "--md", &md, "--ring-mb", "1", "--no-hwtstamp"], &out),
        dir.join("l.pcapng.part"),
    );
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, 0)).unwrap());
    // Open loop, as fast as the sender goes: a 1 MiB BPF ring (about 2 800 records) may overflow, and every
    // loss must be counted.
    for _ in 0..N {
        sa.send_to(&[7u8; 200], (FEED_GROUP, FEED_PORT)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let res = finish(child, 20);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    let written = tshark_fields(&out, &[], &["frame.len"]).len() as u64;
    // "bpf (va, tc): M matched of S seen: R frames read in all, F lost (ring full), U dropped (user-space queue full), Q still ..."
    let (line, nums) = counter_line(&err, "matched of");
    let (matched, read, lost, dropped, queued) = (nums[0], nums[2], nums[3], nums[4], nums[5]);
    assert_eq!(matched, N, "{line}");
    assert_eq!(read, written, "{line}");
    assert_eq!(queued, 0, "{line}");
    assert_eq!(written + lost + dropped, N, "written {written} + lost {lost} + dropped {dropped} = sent: {line}");
    // The file's Interface Statistics Block: matched (isb_filteraccept), lost in the ring or the queue
    // (isb_osdrop), written (isb_usrdeliv).
    let isbs = isbs(&out);
    assert_eq!(isbs.len(), 1, "{isbs:?}");
    let opt = |code| isb_u64(&isbs[0].1, code);
    assert_eq!((opt(6), opt(7), opt(8)), (Some(matched), Some(lost + dropped), Some(written)));
    eprintln!("ebpf load: {N} sent, {written} written, {lost} lost (ring full), {dropped} dropped in user space");
}

/// A link that goes down and comes back: the AF_PACKET capture waits while it is down (the socket's
/// ENETDOWN, left untaken, made every poll return at once: a core spun until the capture ended), goes
/// on capturing after, and says the link went down. An interface deleted under it ends the capture
/// with an error that says so, the frames before written (it spun silently until stopped).
#[test]
fn a_link_down_is_waited_out_and_an_interface_deleted_ends_the_capture() {
    let pair = VethPair::new();
    let dir = tmp("link-down");
    let out = dir.join("va.pcapng");
    let args = |out: &Path| -> Vec<String> {
        ["-i", "va", "-f", "udp port 40000", "--no-hwtstamp", "-w"]
            .iter()
            .map(|s| s.to_string())
            .chain([out.display().to_string()])
            .collect()
    };
    let child = start(&pair.a, args(&out), dir.join("va.pcapng.part"));
    let sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    send_all(&sb, ADDR_A, 5, 100);
    pair.a.ip(&["link", "set", "va", "down"]);
    std::thread::sleep(Duration::from_millis(200));
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(1));
    // A spinning wait takes a core: about 100 ticks a second. Waiting takes next to none.
    let spent = cpu_ticks(child.id()) - before;
    if spent >= 30 {
        // SAFETY: signals our own child by pid (a spinning capture must not outlive the test).
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        panic!("{spent} CPU ticks in 1 s with the link down");
    }
    pair.a.ip(&["link", "set", "va", "up"]);
    std::thread::sleep(Duration::from_millis(200));
    send_all(&sb, ADDR_A, 5, 100);
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let res = finish(child, 5);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    assert!(err.contains("the link went down 1 times"), "{err}");
    assert_eq!(frames(&out).len(), 10, "5 before the link went down, 5 after it came back: {err}");

    // Deleted while up, or deleted after it went down (the socket says nothing of the deletion then:
    // the capture waited forever). libpcap's error named no interface ("pcap_next_ex on \"\"").
    for (source, down_first) in [("afpacket", false), ("afpacket", true), ("pcap", false)] {
        let pair = VethPair::new();
        let sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
        let out = dir.join(format!("gone-{source}-{down_first}.pcapng"));
        let mut a = args(&out);
        a.extend(["--source".to_string(), source.to_string()]);
        let child = start(&pair.a, a, dir.join(format!("gone-{source}-{down_first}.pcapng.part")));
        send_all(&sb, ADDR_A, 3, 100);
        std::thread::sleep(Duration::from_millis(100));
        if down_first {
            pair.a.ip(&["link", "set", "va", "down"]);
            std::thread::sleep(Duration::from_millis(300));
        }
        pair.a.ip(&["link", "del", "va"]);
        let res = finish(child, 5);
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(1), "{source}, down first: {down_first}: {err}");
        assert!(err.contains("interface \"va\" disappeared while capturing"), "{source}: {err}");
        assert_eq!(frames(&out).len(), 3, "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files rotated by size under load: each file's statistics block counts that file's own frames and
/// drops, from its start, so that the files read together add up to what the capture said at exit
/// (each counted from the capture's start, and `analyze` over the files summed their drops several
/// times over).
#[test]
fn rotated_files_count_their_own_frames_and_drops() {
    const N: u32 = 30_000;
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("rot-load");
    let out = dir.join("r.pcapng");
    let args = args(&["-i", "va", "-f", "udp port 40000", "--ring-mb", "1", "-C", "1", "--no-hwtstamp"], &out);
    let child = start(&pair.a, args, dir.join("r.0000.pcapng.part"));
    let err = overload(&pair, child, N);
    let (line, nums) = counter_line(&err, "passed the filter");
    let (read, dropped) = (nums[1], nums[2]);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 3, "about 7 MB in 1 MB files: {files:?}");
    let (mut delivered, mut lost, mut starts) = (0, 0, Vec::new());
    for f in &files {
        for (_, opts) in isbs(f) {
            delivered += isb_u64(&opts, 8).unwrap();
            lost += isb_u64(&opts, 7).unwrap();
            starts.push(isb_time(&opts, 2));
        }
    }
    assert_eq!((delivered, lost), (read, dropped), "{line}");
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "each file counts from its own start: {starts:?}");
    let mut cmd = Command::new(BIN);
    cmd.args(["analyze", "-q", "--json"]).args(&files);
    let report: serde_json::Value = serde_json::from_slice(&cmd.output().unwrap().stdout).unwrap();
    assert_eq!(report["counters"]["capture_drops"], dropped, "{line}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Sends datagrams from `a` to `b` at `per_ms` a millisecond: `n` of them, or (`n` = 0) until `stop`.
/// Returns how many were sent.
fn send_paced(sa: &UdpSocket, n: u32, per_ms: u32, stop: &std::sync::atomic::AtomicBool) -> u32 {
    let t = Instant::now();
    let mut sent = 0u32;
    while (n == 0 || sent < n) && !stop.load(std::sync::atomic::Ordering::Relaxed) {
        sa.send_to(&sent.to_be_bytes(), (ADDR_B, PORT)).unwrap();
        sent += 1;
        let due = Duration::from_micros(u64::from(sent) * 1000 / u64::from(per_ms));
        if let Some(wait) = due.checked_sub(t.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    sent
}

/// The `opt_comment` of an ISB, if any.
fn isb_comment(opts: &[IsbOption]) -> Option<String> {
    opts.iter().find(|o| o.0 == 1).map(|o| String::from_utf8_lossy(&o.1).into_owned())
}

/// Time-rotated files at a steady rate (frames still queued in the ring at each rotation): each file's
/// statistics block is true of that file, its delivered count the frames it holds and its accepted
/// count those plus its drops, and the files add up to what was sent and to the summary. (Each block
/// was the kernel's counters since the previous one: a file with 61 accepted frames neither delivered
/// nor dropped, the next with more delivered than accepted.)
#[test]
fn each_rotated_file_s_statistics_block_is_true_of_that_file() {
    const N: u32 = 8_000;
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("rot-isb");
    let out = dir.join("g.pcapng");
    let args = args(&["-i", "va", "-f", "udp port 40000", "-G", "1", "--duration", "4", "--no-hwtstamp"], &out);
    let child = start(&pair.a, args, dir.join("g.0000.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    // 4 a millisecond for 2 s: three files or so, each closed while frames are in the ring.
    assert_eq!(send_paced(&sa, N, 4, &std::sync::atomic::AtomicBool::new(false)), N);
    let res = finish(child, 15);
    let err = String::from_utf8_lossy(&res.stderr).into_owned();
    assert!(res.status.success(), "{err}");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let (mut accepted, mut lost, mut delivered, mut with_frames) = (0, 0, 0, 0);
    for f in &files {
        let n = tshark_fields(f, &[], &["frame.len"]).len() as u64;
        let isbs = isbs(f);
        // A file without frames (the sending over) has no interface, so no block.
        assert_eq!(isbs.len(), usize::from(n > 0), "{}: {isbs:?}", f.display());
        let Some((_, opts)) = isbs.first() else { continue };
        with_frames += 1;
        let opt = |code| isb_u64(opts, code).unwrap_or_else(|| panic!("{}: no option {code}: {opts:?}", f.display()));
        let (fa, od, ud) = (opt(6), opt(7), opt(8));
        assert_eq!(ud, n, "{}: usrdeliv is the file's frames: {opts:?}", f.display());
        // Nothing was queued at exit (the sending ended 2 s before): in every file, accepted =
        // delivered + dropped.
        assert_eq!(fa, ud + od, "{}: {opts:?} {:?}", f.display(), isb_comment(opts));
        (accepted, lost, delivered) = (accepted + fa, lost + od, delivered + ud);
    }
    assert!(with_frames >= 2, "2 s at -G 1: {files:?}");
    let (line, nums) = counter_line(&err, "passed the filter");
    let (passed, read, dropped, queued) = (nums[0], nums[1], nums[2], nums[3]);
    assert_eq!((passed, queued), (u64::from(N), 0), "{line}");
    assert_eq!((accepted, lost, delivered), (passed, dropped, read), "{line}");
    assert_eq!(delivered + lost, u64::from(N), "{line}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-c N` while the sender keeps sending: the file's statistics block and the summary on stderr are made
/// of one sample and say the same, the frames that passed the filter and were never written counted in
/// the block's accepted and named in its comment. (The block said 156 accepted, the summary 236.)
#[test]
fn a_count_limited_file_s_statistics_block_agrees_with_the_summary() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("count-isb");
    let out = dir.join("c.pcapng");
    let args = args(&["-i", "va", "-f", "udp port 40000", "-c", "100", "--no-hwtstamp"], &out);
    let child = start(&pair.a, args, dir.join("c.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let sender = {
        let stop = stop.clone();
        std::thread::spawn(move || send_paced(&sa, 0, 5, &stop))
    };
    let res = finish(child, 15);
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().unwrap();
    let err = String::from_utf8_lossy(&res.stderr).into_owned();
    assert!(res.status.success(), "{err}");
    assert_eq!(tshark_fields(&out, &[], &["frame.len"]).len(), 100);
    let (line, nums) = counter_line(&err, "passed the filter");
    let (passed, read, dropped, queued) = (nums[0], nums[1], nums[2], nums[3]);
    assert_eq!(read, 100, "{line}");
    assert!(queued > 0 && passed <= u64::from(sent), "still sending at the end: {line}");
    let isbs = isbs(&out);
    assert_eq!(isbs.len(), 1, "{isbs:?}");
    let opts = &isbs[0].1;
    let opt = |code| isb_u64(opts, code);
    assert_eq!((opt(6), opt(7), opt(8)), (Some(passed), Some(dropped), Some(100)), "{line}: {opts:?}");
    assert_eq!(passed, 100 + dropped + queued, "{line}");
    let comment = isb_comment(opts).unwrap_or_default();
    assert!(
        comment.contains(&format!("+ {queued} frames that passed the filter and were never written")),
        "{comment:?}, {line}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Offloads that merge what a host capture sees: with veth's TSO on (its default), 20,000 bytes of TCP
/// written at once are captured as frames longer than any on the wire, and the capture says so, with
/// the fix, on stderr and in the file's comment (capinfos reads it); with TSO off, every frame is a
/// wire packet (at most 1,514 bytes) and nothing is said. Both host sources (AF_PACKET, libpcap).
#[test]
fn offloads_that_merge_frames_are_warned_of_and_are_what_the_capture_sees() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    const TCP_PORT: u16 = 40100;
    let pair = VethPair::new();
    let dir = tmp("offload");
    let listener = pair.b.run(|| TcpListener::bind((ADDR_B, TCP_PORT)).unwrap());
    let warning = "va: TSO on: sent TCP may be captured as one frame the NIC then cuts into several segments (one \
                   stamp for them all); for a frame per wire packet: ethtool -K va tso off";
    for source in ["afpacket", "pcap"] {
        for tso in ["on", "off"] {
            let o = pair.a.command("ethtool", &["-K", "va", "tso", tso]);
            assert!(o.status.success(), "ethtool: {}", String::from_utf8_lossy(&o.stderr));
            let out = dir.join(format!("{source}-{tso}.pcapng"));
            let a = args(&["--source", source, "-i", "va", "-f", "tcp port 40100", "--no-hwtstamp"], &out);
            let child = start(&pair.a, a, dir.join(format!("{source}-{tso}.pcapng.part")));
            let mut client = pair.a.run(|| TcpStream::connect((ADDR_B, TCP_PORT)).unwrap());
            let (mut server, _) = listener.accept().unwrap();
            client.write_all(&[0x5a; 20_000]).unwrap();
            server.read_exact(&mut [0; 20_000]).unwrap();
            drop((client, server));
            std::thread::sleep(Duration::from_millis(300));
            // SAFETY: signals our own child by pid.
            assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
            let res = finish(child, 10);
            let err = String::from_utf8_lossy(&res.stderr);
            assert!(res.status.success(), "{err}");
            // (libpcap gives no direction; what comes back is ACKs.)
            let longest = frames(&out).iter().map(|f| f.2).max().unwrap();
            let info = Command::new("capinfos").arg("-k").arg(&out).output().unwrap();
            let comment = String::from_utf8_lossy(&info.stdout);
            if tso == "on" {
                assert!(longest > 1_514, "{source}: TSO on, longest frame {longest}");
                assert_eq!(err.matches(warning).count(), 1, "{source}: said once: {err}");
                assert!(!err.contains("WARN"), "{source}: no log line besides: {err}");
                assert!(comment.contains(warning), "{source}: {comment}");
            } else {
                assert!(longest <= 1_514, "{source}: TSO off, longest frame {longest}");
                assert!(!err.contains("TSO") && !comment.contains("TSO"), "{source}: {err}\n{comment}");
            }
        }
    }
    // -q: nothing on standard error, the warning included (it is still in the file's comment).
    let o = pair.a.command("ethtool", &["-K", "va", "tso", "on"]);
    assert!(o.status.success(), "ethtool: {}", String::from_utf8_lossy(&o.stderr));
    let out = dir.join("quiet.pcapng");
    let res = pair.a.command(
        BIN,
        &["capture", "-q", "-i", "va", "--no-hwtstamp", "--duration", "1", "-w", &out.display().to_string()],
    );
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    assert_eq!(String::from_utf8_lossy(&res.stderr), "", "-q");
    let info = Command::new("capinfos").arg("-k").arg(&out).output().unwrap();
    assert!(String::from_utf8_lossy(&info.stdout).contains(warning));
}

/// The smallest ring, `--ring-mb 1`, loses nothing at a steady rate: it is cut into blocks the kernel
/// fills while wirestamp reads another (as one block of 1 MiB, every frame that came while wirestamp
/// held it was dropped).
#[test]
fn the_smallest_ring_loses_nothing_at_a_steady_rate() {
    steady_rate_loses_nothing("ring-1", &["-i", "va", "--ring-mb", "1"]);
}

/// SIGHUP (the terminal or ssh session closed) ends a capture as SIGTERM does: the file completed and
/// renamed, its statistics block written, the summary printed. It killed the capture, leaving a `.part`
/// without statistics. Ignored at start (`nohup`), it stays ignored.
/// Starts `wirestamp capture ARGS` in `w`'s namespace with SIGHUP ignored (`ignored`, as under nohup)
/// or at its default, whatever this process has.
fn spawn_with_sighup(w: &netns::NsWorker, args: Vec<String>, ignored: bool) -> Child {
    w.run(move || {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(BIN);
        cmd.arg("capture").args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        let disposition = if ignored { libc::SIG_IGN } else { libc::SIG_DFL };
        // SAFETY: signal() is async-signal-safe; only it runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(libc::SIGHUP, disposition);
                Ok(())
            });
        }
        cmd.spawn().unwrap()
    })
}

/// Waits until `part` exists (the capture's source is open by then).
fn wait_for(part: &Path) {
    let t = Instant::now();
    while !part.exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "capture never created {}", part.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sighup_completes_the_file_unless_it_is_ignored() {
    const N: u32 = 50;
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let dir = tmp("hup");
    let out = dir.join("h.pcapng");
    // With SIGHUP at its default, whatever this test inherited (a run under nohup ignores it, and an
    // ignored signal stays ignored across exec: the capture would rightly leave it so).
    let child = spawn_with_sighup(&pair.a, args(&["-i", "va", "-f", "udp port 40000", "--no-hwtstamp"], &out), false);
    wait_for(&dir.join("h.pcapng.part"));
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    send_all(&sa, ADDR_B, N, 10);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    let res = finish(child, 20);
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{err}");
    assert!(!dir.join("h.pcapng.part").exists(), "{err}");
    assert_eq!(frames(&out).len(), N as usize, "{err}");
    let stats = isbs(&out);
    assert_eq!(stats.len(), 1, "one statistics block: {stats:?}");
    assert_eq!(isb_u64(&stats[0].1, 8), Some(u64::from(N)), "{stats:?}");
    assert!(err.contains(&format!("wirestamp: {N} frames written")), "{err}");
    assert!(err.contains(&format!("wirestamp: wrote {}", out.display())), "{err}");

    // Under nohup: SIGHUP ignored before exec is left so.
    let out2 = dir.join("nohup.pcapng");
    let a = args(&["-i", "va", "-f", "udp port 40000", "--no-hwtstamp"], &out2);
    let child = spawn_with_sighup(&pair.a, a, true);
    let part = dir.join("nohup.pcapng.part");
    wait_for(&part);
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    std::thread::sleep(Duration::from_millis(500));
    assert!(part.exists() && !out2.exists(), "still capturing after an ignored SIGHUP");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let res = finish(child, 20);
    assert_eq!(res.status.code(), Some(0), "{}", String::from_utf8_lossy(&res.stderr));
    assert!(out2.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A killed capture keeps its TX events up to a second before, as it keeps its frames: the CSV is flushed
/// with the capture file. (It sat in an 8 KiB buffer until exit: a SIGKILL lost every row of a short
/// session, the header included, and left a longer one's last row cut.) `analyze` then reads the CSV
/// and the `.part` together.
#[test]
fn a_killed_capture_keeps_its_tx_events() {
    let pair = VethPair::new();
    let dir = tmp("ebpf-tx-kill");
    let cg = TestCgroup::new("kill-");
    let (out, csv) = (dir.join("t.pcapng"), dir.join("tx.csv"));
    let orders = format!("tcp:{ADDR_B}:{GW_PORT}");
    let (cgs, csvs) = (cg.display().to_string(), csv.display().to_string());
    let mut cap = start(&pair.a, tx_args(&cgs, &csvs, &[], &out), dir.join("t.pcapng.part"));
    let port = run_tx_client(&pair, &cg, TX_WRITES);
    // Two flushes' worth of quiet, then SIGKILL: nothing runs at exit.
    std::thread::sleep(Duration::from_millis(2_500));
    cap.kill().unwrap();
    cap.wait().unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    // The header, the connection's established row, then sched, snd_sw and ack of each write: every row.
    assert_eq!(text.lines().count(), 2 + 3 * TX_WRITES, "{text}");
    assert!(text.ends_with('\n'), "{text}");
    let mine = text.lines().skip(1).filter(|l| l.split(',').nth(2).is_some_and(|l| l.ends_with(&format!(":{port}"))));
    assert_eq!(mine.count(), 1 + 3 * TX_WRITES, "{text}");
    let part = dir.join("t.pcapng.part");
    let r = Command::new(BIN)
        .args(["analyze", "-q", "--json", "--orders", &orders, "--tx-events", &csvs, part.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let rep: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(rep["counters"]["orders_with_snd"], TX_WRITES, "{rep}");
    assert_eq!(rep["counters"]["tx_events"], 1 + 3 * TX_WRITES, "{rep}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--cgroup` given a directory that is not cgroup v2 says so, and where cgroup2 is mounted (it said
/// "Bad file descriptor (os error 9)").
#[test]
fn a_cgroup_that_is_not_cgroup_v2_is_named_as_such() {
    let pair = VethPair::new();
    let dir = tmp("not-cgroup");
    let out = dir.join("x.pcapng");
    let cg = dir.join("plain");
    std::fs::create_dir(&cg).unwrap();
    let (cgs, csv) = (cg.display().to_string(), dir.join("tx.csv").display().to_string());
    let mut a = vec!["capture".to_string()];
    a.extend(args(
        &[
            "--source",
            "ebpf",
            "-i",
            "va",
            "--orders",
            "tcp:10.77.0.2:9000",
            "--no-hwtstamp",
            "--cgroup",
            &cgs,
            "--tx-events",
            &csv,
        ],
        &out,
    ));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let r = pair.a.command(BIN, &a);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    let want = format!(
        "cgroup {cgs}: not a cgroup v2 directory (a cgroup v1 hierarchy or another file system); cgroup2 is mounted \
         at {} (/proc/self/mountinfo): give the trading app's directory under it\n",
        cgroup2_root().display()
    );
    assert!(err.ends_with(&want), "{err}");
    assert!(!err.contains("Bad file descriptor"), "{err}");
    assert!(!out.exists() && !dir.join("x.pcapng.part").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--snaplen` with `--source afxdp` cuts the frames, as the interface block says (the frames were
/// written whole under a block claiming the snap length).
#[test]
fn afxdp_source_cuts_frames_at_the_snaplen() {
    const N: usize = 5;
    let pair = VethPair::new();
    let dir = tmp("afxdp-snap");
    let out = dir.join("x.pcapng");
    let child = start(
        &pair.a,
        args(&["--source", "afxdp", "-i", "va", "--no-hwtstamp", "--snaplen", "100"], &out),
        dir.join("x.pcapng.part"),
    );
    let sb = pair.b.run(|| UdpSocket::bind((ADDR_B, 0)).unwrap());
    for k in 0..N {
        sb.send_to(&[k as u8; 500], (ADDR_A, PORT)).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let res = finish(child, 10);
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    let ours: Vec<(usize, u32)> = read_all(&out)
        .into_iter()
        .filter(|(_, _, data, _, _)| parse_key(false, data).is_some_and(|(k, _)| k.proto == 17 && k.dst.1 == PORT))
        .map(|(_, _, data, wire, _)| (data.len(), wire))
        .collect();
    assert_eq!(ours, vec![(100, 14 + 20 + 8 + 500); N], "{err}");
    let snap = tshark_fields(&out, &[], &["frame.cap_len"]);
    assert!(snap.iter().all(|c| c[0].parse::<u32>().unwrap() <= 100), "{snap:?}");
    // The interface block's snap length (IDB: type 1, then length, link type, reserved, snaplen).
    let b = std::fs::read(&out).unwrap();
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let (mut off, mut snaplens) = (0, Vec::new());
    while off + 16 <= b.len() {
        if u32_at(off) == 1 {
            snaplens.push(u32_at(off + 12));
        }
        off += u32_at(off + 4) as usize;
    }
    assert_eq!(snaplens, [100]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Waits until process `pid` holds a BPF object (its eBPF source is being opened, past the start-up
/// checks of its files) and stops it there (SIGSTOP), so that a test can take one of its names before
/// it claims them. Looked for without pause: the loading takes a fraction of a second.
fn stop_while_loading(pid: u32) {
    let fds = PathBuf::from(format!("/proc/{pid}/fd"));
    let t = Instant::now();
    loop {
        let loading = std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("anon_inode:bpf")));
        if loading {
            // SAFETY: signals our own child by pid.
            assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
            return;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "capture {pid} opened no BPF object");
        std::thread::yield_now();
    }
}

/// Lets a process stopped by [`stop_while_loading`] go on.
fn resume(pid: u32) {
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGCONT) }, 0);
}

/// A start refused because a name was taken after the start-up checks (while the eBPF programs
/// loaded) leaves nothing of its own, and says the flag and the file once:
/// - `-w`'s `.part` held by another capture (a relay to the same -w, started meanwhile): no TX CSV is
///   left (one was, its header only, which the next start refused as an earlier capture's); the
///   relay's file is whole; once it is moved away, a capture with the same names runs (exit status 0,
///   the CSV its header only: no TX event in an empty cgroup).
/// - the `--tx-events` CSV held (a lock taken here, the one a capture takes on it): the error names
///   --tx-events once (it said "--tx-events X: cannot create it: --tx-events X: another capture..."),
///   and the `.part` made for the capture is removed.
#[test]
fn a_start_refused_on_a_name_taken_meanwhile_leaves_nothing_behind() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let pair = VethPair::new();
    let dir = tmp("ebpf-claims");
    let cg = TestCgroup::new("claims-");
    let (out, part, csv) = (dir.join("x.pcapng"), dir.join("x.pcapng.part"), dir.join("tx.csv"));
    let cgs = cg.display().to_string();
    let ebpf = |csv: &Path, out: &Path| {
        let csv = csv.display().to_string();
        tx_args(&cgs, &csv, &[], out)
    };
    let spawn = |a: Vec<String>| {
        pair.a.run(move || {
            Command::new(BIN)
                .arg("capture")
                .arg("-q")
                .args(a)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
    };
    // -w's .part, taken by a relay while the capture loads its programs.
    let b = spawn(ebpf(&csv, &out));
    stop_while_loading(b.id());
    let mut relay = Command::new(BIN)
        .args(["capture", "--source", "stdin", "-q", "-w"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = relay.stdin.take().unwrap();
    pipe.write_all(&relay::pcap_header()).unwrap();
    pipe.flush().unwrap();
    let t = Instant::now();
    while !part.exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "the relay never made {}", part.display());
        std::thread::sleep(Duration::from_millis(5));
    }
    resume(b.id());
    let o = finish(b, 20);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let p = part.display();
    assert!(
        err.ends_with(&format!(
            "wirestamp: error: -w {}: {p} is being written by another capture, running now (it holds the file's \
             lock; `fuser -v {p}` names the process): two captures cannot write one file; give this one another \
             -w, or stop the other first\n",
            out.display()
        )),
        "{err}"
    );
    assert!(!csv.exists(), "{err}");
    drop(pipe);
    let o = relay.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(relay::listing(&dir), ["x.pcapng"]);
    std::fs::rename(&out, dir.join("relayed.pcapng")).unwrap();
    // The same names again: taken.
    let c = start(&pair.a, ebpf(&csv, &out), part.clone());
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(c.id() as i32, libc::SIGTERM) }, 0);
    let o = finish(c, 20);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n"
    );
    assert_eq!(relay::listing(&dir), ["relayed.pcapng", "tx.csv", "x.pcapng"]);
    // The CSV, held while the capture loads its programs.
    let (out2, held) = (dir.join("y.pcapng"), dir.join("held.csv"));
    let b = spawn(ebpf(&held, &out2));
    stop_while_loading(b.id());
    let lock = std::fs::File::create(&held).unwrap();
    // SAFETY: flock is plain data, all zeroes a valid value (a whole-file range).
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = libc::F_WRLCK as i16;
    l.l_whence = libc::SEEK_SET as i16;
    // SAFETY: `l` is a valid flock for F_OFD_SETLK (whole file: start and length 0, pid 0).
    assert_eq!(unsafe { libc::fcntl(lock.as_raw_fd(), libc::F_OFD_SETLK, &l) }, 0);
    resume(b.id());
    let o = finish(b, 20);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let h = held.display();
    assert!(
        err.ends_with(&format!(
            "wirestamp: error: --tx-events {h}: another capture is writing it, running now (it holds the file's \
             lock; `fuser -v {h}` names the process): two captures cannot write one file; give this one another \
             --tx-events, or stop the other first\n"
        )),
        "{err}"
    );
    assert_eq!(err.matches("--tx-events").count(), 2, "{err}");
    assert_eq!(relay::listing(&dir), ["held.csv", "relayed.pcapng", "tx.csv", "x.pcapng"]);
    drop(lock);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--tx-events` in a directory that does not exist, or naming a directory, is refused with the start-up
/// checks (exit status 1, nothing opened), as `-w`'s are: it was found only once the first `.part` was
/// claimed, which with `--overwrite` had emptied a killed capture's `.part` left at `-w` (and the start
/// refused then removed it). The leftover is byte for byte as it was, and nothing else is made.
#[test]
fn a_tx_events_csv_that_cannot_be_made_is_refused_before_any_file_is_claimed() {
    let pair = VethPair::new();
    let dir = tmp("ebpf-tx-dir");
    let cg = TestCgroup::new("txdir-");
    let (out, part) = (dir.join("x.pcapng"), dir.join("x.pcapng.part"));
    // A killed capture's .part: a pcapng section header's first bytes, then anything.
    let leftover = [&[0x0a, 0x0d, 0x0d, 0x0a][..], b"a killed capture's frames"].concat();
    std::fs::write(&part, &leftover).unwrap();
    std::fs::create_dir(dir.join("adir")).unwrap();
    for (tx, why) in [
        (dir.join("nowhere/tx.csv"), format!("the directory {} does not exist", dir.join("nowhere").display())),
        (dir.join("adir"), "is a directory; give a file name".to_string()),
    ] {
        let a = tx_args(&cg.display().to_string(), &tx.display().to_string(), &["--overwrite"], &out);
        let child = pair.a.run(move || {
            Command::new(BIN)
                .arg("capture")
                .arg("-q")
                .args(a)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        });
        let o = finish(child, 20);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(relay::listing(&dir), ["adir", "x.pcapng.part"], "{err}");
        assert_eq!(std::fs::read(&part).unwrap(), leftover);
        assert_eq!(err, format!("wirestamp: error: --tx-events {}: {why}\n", tx.display()));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A killed capture's `.part` at -w (a relay fed 3 frames, flushed to its `.part`, then SIGKILL), and a
/// start with --overwrite whose --tx-events CSV the system will not make once the start-up checks have
/// passed (its directory made read-only in the capture's mount namespace: EROFS, as no permission, or a
/// CSV another capture makes just then, would refuse it): the start is refused (exit status 1, the
/// CSV's error) and the `.part` is left byte for byte, its 3 frames readable. (It was emptied when
/// claimed for the run, then removed with the start refused: nothing is emptied before every file of
/// the run is claimed.)
#[test]
fn a_killed_captures_part_survives_a_start_refused_when_its_tx_events_csv_is_claimed() {
    use std::io::Write;
    let pair = VethPair::new();
    let dir = tmp("ebpf-tx-claim");
    let cg = TestCgroup::new("txclaim-");
    let (out, part) = (dir.join("x.pcapng"), dir.join("x.pcapng.part"));
    let fed: Vec<_> = (0..3).map(|k| relay::frame(k, 100)).collect();
    let (mut killed, mut pipe) = relay::relay(&["-q"], &out);
    pipe.write_all(&relay::pcap_header()).unwrap();
    relay::feed(&mut pipe, &fed);
    relay::grown_to(&part, 3 * (32 + 100));
    killed.kill().unwrap();
    killed.wait().unwrap();
    drop(pipe);
    let leftover = std::fs::read(&part).unwrap();
    assert_eq!(relay::frames(&part), (fed.clone(), false));
    let ro = dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    let fs = relay::SmallFs::new(&ro, "size=64k");
    fs.read_only(&ro);
    let tx = ro.join("tx.csv");
    let (cgs, txs) = (cg.display().to_string(), tx.display().to_string());
    let a = tx_args(&cgs, &txs, &["--overwrite"], &out);
    let mut cmd = fs.command(BIN);
    cmd.arg("capture").arg("-q").args(a).stdout(Stdio::null()).stderr(Stdio::piped());
    let child = pair.a.run(move || cmd.spawn().unwrap());
    let o = finish(child, 20);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let erofs = std::io::Error::from_raw_os_error(libc::EROFS);
    assert_eq!(err, format!("wirestamp: error: --tx-events {txs}: cannot create it: {erofs}\n"));
    assert_eq!(relay::listing(&dir), ["ro", "x.pcapng.part"]);
    assert_eq!(std::fs::read(&part).unwrap(), leftover);
    assert_eq!(relay::frames(&part), (fed, false));
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A --tx-events CSV that can no longer be written (no space left: its tmpfs filled once the header was
/// on it, the header's page leaving room for about 45 rows) while a client's 30 orders bring 91 events
/// (`established`, then `sched`, `snd_sw` and `ack` per write): the summary says how many events the
/// file holds (its whole rows, counted here) and how many were not written (it said "91 events written":
/// those taken into the buffer), and the error at exit says what the file holds and what to do (it said
/// "--tx-events X: writing: No space left on device"); exit status 1. The capture goes on: its own file,
/// elsewhere, is complete, every order's frame in it. Then a CSV that fails from its first flush.
#[test]
fn tx_events_that_could_not_be_written_are_not_said_to_be() {
    use std::io::Write;
    const WRITES: usize = 30;
    let pair = VethPair::new();
    let dir = tmp("ebpf-tx-full");
    let cg = TestCgroup::new("txfull-");
    let at = dir.join("small");
    std::fs::create_dir(&at).unwrap();
    let fs = relay::SmallFs::new(&at, "size=64k");
    let (out, csv) = (dir.join("t.pcapng"), at.join("tx.csv"));
    let (cgs, csvs) = (cg.display().to_string(), csv.display().to_string());
    let a = tx_args(&cgs, &csvs, &[], &out);
    let mut cmd = fs.command(BIN);
    cmd.arg("capture").args(a).stdout(Stdio::null()).stderr(Stdio::piped());
    let cap = pair.a.run(move || cmd.spawn().unwrap());
    // The header on the file (flushed with the capture's file, a second after its start).
    let header = "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n";
    let seen = fs.seen(&csv);
    let t = Instant::now();
    while std::fs::metadata(&seen).map_or(0, |m| m.len()) < header.len() as u64 {
        assert!(t.elapsed() < Duration::from_secs(10), "the CSV's header never written");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Every page left taken.
    let mut filler = std::fs::File::create(fs.seen(&at.join("filler"))).unwrap();
    let e = loop {
        if let Err(e) = filler.write_all(&[0u8; 4096]) {
            break e;
        }
    };
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    let port = run_tx_client(&pair, &cg, WRITES);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(cap.id() as i32, libc::SIGTERM) }, 0);
    let o = finish(cap, 10);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let text = String::from_utf8_lossy(&std::fs::read(&seen).unwrap()).into_owned();
    assert!(text.starts_with(header), "{text}");
    let (taken, whole) = (1 + 3 * WRITES, text.matches('\n').count() - 1);
    assert!(whole > 0 && whole < taken, "{whole} rows: {text}");
    let lost = taken - whole;
    assert!(
        err.contains(&format!(
            "\nwirestamp: sockops: 1 connections timestamped, {whole} events written, {lost} not (the --tx-events CSV \
             could not be written: see the error), 0 lost (ring full),"
        )),
        "{err}"
    );
    let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC);
    assert!(
        err.ends_with(&format!(
            "\nwirestamp: error: --tx-events {csvs}: writing it failed: {enospc}; it holds the first {whole} of the \
             {taken} TX events taken ({lost} lost): read it as it is (`wirestamp analyze --tx-events {csvs}` leaves \
             out a last row cut short, saying so); free space on its file system (`df {}`) before the next capture\n",
            at.display()
        )),
        "{err}"
    );
    // The capture's file: complete, each order's frame (its payload a write's bytes) in it.
    let orders_in = |out: &Path, port: u16| {
        read_all(out)
            .into_iter()
            .filter(|(_, outbound, data, _, _)| {
                parse_key(*outbound, data).is_some_and(|(k, hdr)| {
                    *outbound && k.src.1 == port && usize::from(k.ip_len) + 14 - hdr == TX_WRITE_LEN
                })
            })
            .count()
    };
    assert_eq!(orders_in(&out, port), WRITES);
    // The file system still full: a CSV whose first flush (its header) fails, before the client
    // connects. Said at once; the capture goes on (it stopped there, the orders never captured), and
    // at exit none of the 91 events is said written.
    let (out, csv) = (dir.join("t2.pcapng"), at.join("tx2.csv"));
    let csvs = csv.display().to_string();
    let a = tx_args(&cgs, &csvs, &[], &out);
    let mut cmd = fs.command(BIN);
    cmd.arg("capture").args(a).stdout(Stdio::null()).stderr(Stdio::piped());
    let cap = pair.a.run(move || cmd.spawn().unwrap());
    let t = Instant::now();
    while !dir.join("t2.pcapng.part").exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "the capture never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Past its first flush.
    std::thread::sleep(Duration::from_millis(1_500));
    let port = run_tx_client(&pair, &cg, WRITES);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child by pid.
    assert_eq!(unsafe { libc::kill(cap.id() as i32, libc::SIGTERM) }, 0);
    let o = finish(cap, 10);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(std::fs::metadata(fs.seen(&csv)).unwrap().len(), 0);
    assert!(
        err.contains(&format!(
            "\nwirestamp: --tx-events {csvs}: writing it failed: {enospc}; nothing more is written to it: it holds \
             the first 0 TX events; those to come are lost (counted at exit); the capture goes on, its frames still \
             written\n"
        )),
        "{err}"
    );
    assert!(err.contains(&format!(", 0 events written, {taken} not (the --tx-events CSV could not")), "{err}");
    assert!(
        err.contains(&format!("--tx-events {csvs}: writing it failed: {enospc}; it holds the first 0 of the {taken}")),
        "{err}"
    );
    assert_eq!(orders_in(&out, port), WRITES);
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A capture with --tx-events killed (SIGKILL) before its first frame and its first TX event leaves
/// its `.part` holding the file's header alone and its CSV the CSV's header alone (both flushed a
/// second after the start): nothing to lose in either. The next start with the same command line (a
/// supervisor's restart) takes both and runs: a client's orders then bring their events, every row
/// in the CSV, its header once. (The `.part` was taken, but the CSV was refused as "the TX events of an
/// earlier capture": the restart refused over nothing, until the CSV was removed by hand.)
#[test]
fn a_killed_captures_tx_events_csv_holding_its_header_alone_is_taken_by_the_next() {
    let pair = VethPair::new();
    let dir = tmp("ebpf-tx-header-only");
    let cg = TestCgroup::new("txhead-");
    let (out, part, csv) = (dir.join("t.pcapng"), dir.join("t.pcapng.part"), dir.join("tx.csv"));
    let (cgs, csvs) = (cg.display().to_string(), csv.display().to_string());
    let a = tx_args(&cgs, &csvs, &[], &out);
    let header = "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n";
    let mut killed = start(&pair.a, a.clone(), part.clone());
    relay::grown_to(&csv, header.len() as u64);
    relay::grown_to(&part, 28);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), header);
    assert_eq!(relay::frames(&part), (vec![], false));
    let cap = pair.a.run(move || {
        Command::new(BIN).arg("capture").args(a).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
    });
    // Past its first flush: running, the CSV its own.
    std::thread::sleep(Duration::from_millis(1_500));
    let port = run_tx_client(&pair, &cg, TX_WRITES);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child by pid.
    unsafe { libc::kill(cap.id() as i32, libc::SIGTERM) };
    let o = finish(cap, 10);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().next(), Some(header.trim_end()), "{text}");
    assert_eq!(text.matches("time_ns,").count(), 1, "{text}");
    let mine = text.lines().skip(1).filter(|l| l.split(',').nth(2).is_some_and(|l| l.ends_with(&format!(":{port}"))));
    assert_eq!(mine.count(), 1 + 3 * TX_WRITES, "{text}");
    assert_eq!(relay::listing(&dir), ["t.pcapng", "tx.csv"]);
    assert!(relay::frames(&out).1);
    std::fs::remove_dir_all(&dir).unwrap();
}
