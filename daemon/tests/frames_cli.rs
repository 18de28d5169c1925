//! `wirestamp frames` as a user meets it: trailers in the output, forced formats that do not
//! validate, files cut short, bad paths, JSON lines.

use std::process::Command;
use wirestamp_testdata::data_file;

fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).arg("frames").args(args).output().unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn metamako_trailers_in_the_output() {
    let f = data_file("omi_data_packets/Nasdaq/Nasdaq.Nsm.Ouch.v5.0/CancelOrderMessage.pcap");
    let (ok, out, err) = run(&[f.to_str().unwrap()]);
    assert!(ok, "{err}");
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 2);
    let cols: Vec<&str> = rows[1].split(',').collect();
    // index,time_ns,caplen,wirelen,interface,direction,ts_source,trailer,trailer_time_ns,device,port,...
    // Expected values: data README §1.2 (device 19484, port 46, 16:24:07.483428074 UTC).
    assert_eq!(cols[6], "metamako");
    assert_eq!(cols[7], "metamako");
    assert_eq!(cols[1], "1714407847483428074");
    assert_eq!(cols[8], "1714407847483428074");
    assert_eq!(cols[9], "19484");
    assert_eq!(cols[10], "46");
    assert_eq!(cols[16], "12", "payload_len excludes the trailer");
    assert!(err.contains("trailer timestamps: metamako 1"), "{err}");
    assert!(
        err.contains(&format!(
            "wirestamp: tap trailers in {} (--trailer auto): 1 of 1 frame stamped (metamako 1)\n",
            f.display()
        )),
        "{err}"
    );
}

/// The summary says per input what the trailer check found and refused: a counter device's
/// keyframes and stamps (Arista 7150 test-1: 14 and 70 of 84, as core's `trailers_counters`
/// derives them from the bytes), and nothing of trailers for a capture without any.
#[test]
fn the_summary_says_what_the_trailer_check_found() {
    let f = data_file("hwts_arista7150/test-1.pcap");
    let (ok, _, err) = run(&[f.to_str().unwrap()]);
    assert!(ok, "{err}");
    let want = format!(
        "wirestamp: tap trailers in {} (--trailer auto): 70 of 84 frames stamped (arista7150 70), 14 keyframes (arista7150 14)",
        f.display()
    );
    assert!(err.lines().any(|l| l == want), "{want:?} in {err}");
    let (ok, _, err) = run(&[data_file("pcap_market/elk_nasdaq.pcap").to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(!err.contains("tap trailers"), "{err}");
}

#[test]
fn forced_trailer_that_does_not_validate_is_an_error_naming_file_and_frame() {
    let f = data_file("pcap_market/elk_nasdaq.pcap");
    let (ok, _out, err) = run(&["--trailer", "metamako", f.to_str().unwrap()]);
    assert!(!ok);
    // Named as tshark numbers it too, and with what to do.
    assert!(err.contains("elk_nasdaq.pcap: frame 0 (tshark's 1): --trailer metamako does not validate: "), "{err}");
    assert!(
        err.contains(
            "; if this file's frames carry no metamako trailer, leave --trailer out (auto: each kind is looked for \
             and validated), or force it on the tapped file only with --trailer FILE=metamako"
        ),
        "{err}"
    );
    let (ok, _, err) = run(&["--trailer", "nosuch", f.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("--trailer nosuch"), "{err}");
}

#[test]
fn a_file_cut_short_keeps_its_frames_and_warns() {
    let f = data_file("hwts_arista7150/test.pcap");
    let (ok, out, err) = run(&["--trailer", "none", f.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count() - 1, 609, "complete records before the cut");
    assert!(err.contains("warning"), "{err}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let (ok, _, err) = run(&["/nonexistent/capture.pcap"]);
    assert!(!ok);
    assert!(err.contains("/nonexistent/capture.pcap"), "{err}");
}

#[test]
fn json_lines_carry_the_same_fields() {
    let f = data_file("omi_data_packets/Nasdaq/Nasdaq.Nsm.Ouch.v5.0/CancelOrderMessage.pcap");
    let (ok, out, _) = run(&["--format", "json", f.to_str().unwrap()]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(v["device"], 19484);
    assert_eq!(v["port"], 46);
    assert_eq!(v["time_ns"], 1_714_407_847_483_428_074i64);
    assert_eq!(v["src"], "10.49.247.1");
    assert_eq!(v["payload_len"], 12);
}

/// JSON writes an absent value as null in every column, the string columns (quality, vlan) too,
/// and a present one as in CSV. Expected values: the data README (elk_nasdaq's 11 HSRP frames are
/// tagged with VLAN 3050, its MoldUDP64 frames untagged) and tcpdump's invalid-timestamp file
/// (fractions of a second at or above one second: `record_error`).
#[test]
fn json_absent_values_are_null() {
    let f = data_file("pcap_market/elk_nasdaq.pcap");
    let (ok, out, err) = run(&["--format", "json", f.to_str().unwrap()]);
    assert!(ok, "{err}");
    let rows: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let tagged = rows.iter().filter(|v| v["vlan"] == "3050").count();
    let untagged = rows.iter().filter(|v| v["vlan"].is_null()).count();
    assert_eq!((tagged, untagged), (11, rows.len() - 11));
    assert!(rows.iter().all(|v| v["quality"].is_null() && v["anomaly"].is_null() && v["trailer"].is_null()));
    // A pcap says nothing of direction.
    assert!(rows.iter().all(|v| v["direction"].is_null()));

    let f = data_file("tcpdump_tests/tests/timestamp_invalid_nano.pcap");
    let (_, out, _) = run(&["--format", "json", f.to_str().unwrap()]);
    let rows: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(rows.iter().any(|v| v["quality"] == "record_error"), "{out}");
}

/// An ERF of provenance (META) records only: neither command has a frame to show, and both say how many
/// records carried none, by kind, rather than ending with "0 frames" and no word. tshark, which shows
/// each record, is the count's oracle (its ERF type 27).
#[test]
fn records_without_a_frame_are_counted_by_kind() {
    let f = data_file("libtrace_traces/test/traces/provenance.erf");
    let meta = wirestamp_testdata::tshark_fields(&f, &[], &["erf.types.type"]).iter().filter(|r| r[0] == "27").count();
    assert!(meta > 0);
    let want = format!("{meta} records carried no frame and were not analysed: erf META {meta}");
    let (ok, _out, err) = run(&[f.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(err.lines().any(|l| l == format!("wirestamp: {want}")), "{want:?} in {err}");
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).arg("analyze").arg(&f).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l == want), "{want:?} in {text}");
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(["analyze", "--json"]).arg(&f).output().unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["input"]["records_without_frame"], serde_json::json!({ "erf META": meta }));
    // A capture whose every record is a frame (or a statistics block) has no such key.
    let f = data_file("pcap_market/elk_nasdaq.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(["analyze", "--json"]).arg(&f).output().unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["input"].get("records_without_frame"), None);
}

/// `frames -` on a pipe whose read end is non-blocking (`O_NONBLOCK` is the pipe's, shared with
/// whoever set it), fed after a pause, half the file, a pause, the rest: read as the file itself, to
/// its end, the cut included (609 records, then 73 of the 138-byte record 609's bytes: 83,885 bytes in
/// the file, the cut record at byte 83,812). (The first read that found nothing failed the input:
/// "Resource temporarily unavailable".)
#[test]
fn standard_input_made_non_blocking_is_waited_for() {
    use std::io::Write;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::process::Stdio;
    use std::time::Duration;
    let f = data_file("hwts_arista7150/test.pcap");
    let bytes = std::fs::read(&f).unwrap();
    assert_eq!(bytes.len(), 83_885);
    let (_, from_file, _) = run(&["--trailer", "none", f.to_str().unwrap()]);
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, owned from here on; fcntl acts on the read end.
    let (read_end, write_end) = unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        assert_eq!(libc::fcntl(fds[0], libc::F_SETFL, libc::O_NONBLOCK), 0);
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    let child = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["frames", "--trailer", "none", "-"])
        .stdin(Stdio::from(read_end))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = std::fs::File::from(write_end);
    let fed = (|| {
        std::thread::sleep(Duration::from_millis(300));
        pipe.write_all(&bytes[..40_000])?;
        std::thread::sleep(Duration::from_millis(300));
        pipe.write_all(&bytes[40_000..])
    })();
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    // (A reader that gave up early closed the pipe: its error says why.)
    assert!(out.status.success() && fed.is_ok(), "{err}");
    assert!(String::from_utf8(out.stdout).unwrap() == from_file, "the frames differ from the file's");
    assert_eq!(
        err,
        "wirestamp: 609 frames from 1 input\nwirestamp: warning: stdin: at byte 83812 (record 609, after 609 packets): \
         file cut short inside a record: 73 of 138 bytes present, 65 missing\n"
    );
}

/// Standard input that ends before any byte (/dev/null: the producer never wrote, or never started)
/// says so, for the three commands that read it: exit status 1 and "standard input ended before any
/// byte (nothing to read; was the producer started?)", not a file "too short to identify (0 bytes)";
/// the relay writes no file.
#[test]
fn empty_standard_input_says_nothing_came() {
    use std::process::Stdio;
    let said = "standard input ended before any byte (nothing to read; was the producer started?)";
    let dir = std::env::temp_dir().join(format!("wirestamp-frames-cli-empty-stdin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("e.pcapng");
    let got: Vec<(Option<i32>, String)> =
        [vec!["analyze", "-"], vec!["frames", "-"], vec!["capture", "--source", "stdin", "-w", out.to_str().unwrap()]]
            .iter()
            .map(|args| {
                let o = Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(args).stdin(Stdio::null()).output().unwrap();
                (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
            })
            .collect();
    let files = std::fs::read_dir(&dir).unwrap().count();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        got,
        [
            (Some(1), format!("wirestamp: error: {said}\n")),
            (Some(1), format!("wirestamp: error: {said}\n")),
            (Some(1), format!("wirestamp: error: reading a pcap/pcapng stream on stdin: {said}\n")),
        ]
    );
    assert_eq!(files, 0);
}
