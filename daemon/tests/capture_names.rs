//! `wirestamp capture` never destroys a file, whoever made it and when, and `--duration` takes a unit.
//! Real processes, real files in a temporary directory; `--source stdin` relays stand in for a live
//! source (no root needed), fed a classic pcap written here by hand from its specification (24-byte
//! header with the nanosecond magic, 16-byte record headers), so that the frames expected back are the
//! ones fed, known before the capture runs.

mod relay;

use relay::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A free name is taken (the `.part` renamed to it, nothing else left); a name taken before the start
/// is refused by the start-up check before anything is read (the relay's stream is never written to,
/// and it exits at once: exit status 1, the file byte for byte as it was, no `.part` made).
#[test]
fn a_free_name_is_taken_and_a_name_taken_before_the_start_is_refused_at_once() {
    let dir = tmp("free");
    let out = dir.join("x.pcapng");
    let fed: Vec<_> = (0..5).map(|k| frame(k, 60 + k)).collect();
    let (child, mut pipe) = relay(&["-q"], &out);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed);
    drop(pipe);
    let o = ended(child, 10);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames(&out), (fed, true));
    assert_eq!(listing(&dir), ["x.pcapng"]);
    let notes = dir.join("notes.pcapng");
    std::fs::write(&notes, "someone's notes").unwrap();
    let (child, pipe) = relay(&[], &notes);
    let o = ended(child, 5);
    drop(pipe);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: error: -w {}: the file exists and is not a capture (pcapng or pcap): refusing to overwrite \
             it; remove it or choose another name\n",
            notes.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "someone's notes");
    assert_eq!(listing(&dir), ["notes.pcapng", "x.pcapng"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A symbolic link to nothing at `-w`, at its `.part`, or at a numbered name of `-G` is a name taken:
/// refused by the start-up check (exit status 1, the link named with where it points), the link left
/// as it was, nothing made. (It passed the check, as a missing file; the whole capture ran, then its
/// frames were kept in the `.part` with an error saying the name was made while it ran.)
#[test]
fn a_symbolic_link_to_nothing_at_a_name_is_refused_at_the_start() {
    let dir = tmp("dangling");
    let nowhere = dir.join("no-such-dir").join("f.pcapng");
    for (link, args) in [("l.pcapng", &[][..]), ("p.pcapng.part", &[][..]), ("g.0002.pcapng", &["-G", "60"][..])] {
        std::os::unix::fs::symlink(&nowhere, dir.join(link)).unwrap();
        let out = dir.join(link.replace(".part", "").replace(".0002", ""));
        let (child, mut pipe) = relay(args, &out);
        // Fed whole: the check is made before the stream is read, which must not change the outcome.
        let _ = pipe.write_all(&pcap_header());
        let _ = pipe.write_all(&pcap_record(frame(0, 60).0, &frame(0, 60).1));
        drop(pipe);
        let o = ended(child, 10);
        assert_eq!(o.status.code(), Some(1), "{link}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!(
                "wirestamp: error: -w {}: a symbolic link to {}, which does not exist: capture writes its file beside \
                 the link and renames it to the link's name, not where the link points; give the file's own name, \
                 or remove the link\n",
                dir.join(link).display(),
                nowhere.display()
            )
        );
        assert_eq!(std::fs::read_link(dir.join(link)).unwrap(), nowhere);
        assert_eq!(listing(&dir), [link]);
        std::fs::remove_file(dir.join(link)).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The message of a file whose name was taken during the capture (the run's error, or said at once
/// when the capture goes on).
fn kept_message(part: &Path, path: &Path, recovered: &Path) -> String {
    let bytes = std::fs::metadata(part).unwrap().len();
    let (part, path) = (part.display(), path.display());
    format!(
        "-w {path}: {path} was made (or written) while this capture ran, not by it: left as it is; this capture's \
         frames are kept in {part} ({bytes} bytes, complete). Move it to a free name (mv -n {part} {}) or read it \
         as it is (`wirestamp analyze {part}`)",
        recovered.display()
    )
}

/// A file made at `-w` while the capture runs (after its `.part` exists) is left byte for byte; the
/// capture's frames, all of them, stay in the `.part`, complete (statistics blocks written); the
/// capture exits with status 1 and an error naming both. (The rename replaced the file.)
#[test]
fn a_file_made_at_the_name_during_the_capture_is_left_as_it_is() {
    let dir = tmp("during");
    let (out, part) = (dir.join("x.pcapng"), dir.join("x.pcapng.part"));
    let fed: Vec<_> = (0..5).map(|k| frame(k, 60 + k)).collect();
    let (child, mut pipe) = relay(&["-q"], &out);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed[..2]);
    wait_for(&part);
    std::fs::write(&out, "another program's file").unwrap();
    feed(&mut pipe, &fed[2..]);
    drop(pipe);
    let o = ended(child, 10);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("wirestamp: error: {}\n", kept_message(&part, &out, &dir.join("x.recovered.pcapng")))
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "another program's file");
    assert_eq!(frames(&part), (fed.clone(), true));
    assert_eq!(listing(&dir), ["x.pcapng", "x.pcapng.part"]);
    // The other file gone, the next capture of the name finds the kept `.part`: refused, said to be a
    // file whose name was taken among what it may be, not only a killed capture's.
    std::fs::remove_file(&out).unwrap();
    let (next, next_pipe) = relay(&["-q"], &out);
    let o = ended(next, 5);
    drop(next_pipe);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (p, bytes) = (part.display(), std::fs::metadata(&part).unwrap().len());
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: error: -w {}: {p} is left by a capture that did not give it its name (killed, or the \
             machine stopped: its frames up to about a second before; a write failed; or the name was taken while \
             it ran, as it said): {bytes} bytes; refusing to overwrite it. Keep it under another name (mv {p} {}; \
             `wirestamp analyze` reads it as it is) or remove it, then start again; --overwrite replaces it\n",
            out.display(),
            dir.join("x.recovered.pcapng").display()
        )
    );
    assert_eq!(frames(&part), (fed, true));
    assert_eq!(listing(&dir), ["x.pcapng.part"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With rotation each file is renamed on its own: the first file's name, taken during the capture, is
/// left as it is and its frames kept in its `.part` (said at once, the capture going on); the second
/// file takes its name. Together they hold every frame fed, in order. 800 frames of 1,400 bytes (each
/// 1,432 bytes or more in pcapng) make more than 1 MB: two files at `-C 1`.
#[test]
fn a_rotated_file_whose_name_is_taken_keeps_its_frames_and_the_capture_goes_on() {
    let dir = tmp("rotated");
    let out = dir.join("r.pcapng");
    let (first, first_part) = (dir.join("r.0000.pcapng"), dir.join("r.0000.pcapng.part"));
    let fed: Vec<_> = (0..800).map(|k| frame(k, 1_400)).collect();
    let (child, mut pipe) = relay(&["-q", "-C", "1"], &out);
    pipe.write_all(&pcap_header()).unwrap();
    pipe.flush().unwrap();
    wait_for(&first_part);
    std::fs::write(&first, "another program's file").unwrap();
    feed(&mut pipe, &fed);
    drop(pipe);
    let o = ended(child, 20);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: {}\nwirestamp: error: names were taken while this capture ran: the frames of those files are \
             kept in (said above): {}\n",
            kept_message(&first_part, &first, &dir.join("r.0000.recovered.pcapng")),
            first_part.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "another program's file");
    let (mut got, complete) = frames(&first_part);
    let (second, second_complete) = frames(&dir.join("r.0001.pcapng"));
    assert!(complete && second_complete && !got.is_empty() && !second.is_empty());
    got.extend(second);
    assert_eq!(got, fed);
    assert_eq!(listing(&dir), ["r.0000.pcapng", "r.0000.pcapng.part", "r.0001.pcapng"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What a second capture of one `-w` says while the first holds the `.part`.
fn in_use(part: &Path) -> String {
    let (p, done) = (part.display(), part.to_str().unwrap().strip_suffix(".part").unwrap());
    format!(
        "wirestamp: error: -w {done}: {p} is being written by another capture, running now (it holds the file's \
         lock; `fuser -v {p}` names the process): two captures cannot write one file; give this one another -w, or \
         stop the other first\n"
    )
}

/// Two captures of one `-w`: the second stops at once (exit status 1), saying the first holds the
/// `.part`, whether it starts while the first runs (the start-up check) or with it, both waiting for
/// their streams (the `.part` made with O_EXCL when its stream comes); with rotation the same for the
/// numbered name. The first's file is whole: every frame fed, nothing else in the directory. A killed
/// capture's `.part` (the kernel dropped its lock) is said to be that, not a running capture's.
#[test]
fn a_second_capture_of_one_name_stops_at_once_and_the_first_is_whole() {
    let dir = tmp("two");
    let (out, part) = (dir.join("x.pcapng"), dir.join("x.pcapng.part"));
    let fed: Vec<_> = (0..4).map(|k| frame(k, 70)).collect();
    // Started together: the second waits for its stream while the first makes its .part.
    let (second, mut second_pipe) = relay(&["-q"], &out);
    let (first, mut first_pipe) = relay(&["-q"], &out);
    std::thread::sleep(Duration::from_millis(300));
    first_pipe.write_all(&pcap_header()).unwrap();
    first_pipe.flush().unwrap();
    wait_for(&part);
    // Its header only: it stops once it read it (a frame after could meet a closed pipe), or before,
    // had it been slow to start (then at the start-up check, with the same message).
    let _ = second_pipe.write_all(&pcap_header()).and_then(|()| second_pipe.flush());
    let o = ended(second, 5);
    assert_eq!((o.status.code(), stderr(&o)), (Some(1), in_use(&part)));
    drop(second_pipe);
    // Started while the first runs.
    let (third, third_pipe) = relay(&["-q"], &out);
    let o = ended(third, 5);
    drop(third_pipe);
    assert_eq!((o.status.code(), stderr(&o)), (Some(1), in_use(&part)));
    feed(&mut first_pipe, &fed);
    drop(first_pipe);
    let o = ended(first, 10);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames(&out), (fed.clone(), true));
    assert_eq!(listing(&dir), ["x.pcapng"]);
    // Rotation: the numbered name's .part.
    let rotated = dir.join("r.pcapng");
    let (first, mut first_pipe) = relay(&["-q", "-G", "60"], &rotated);
    first_pipe.write_all(&pcap_header()).unwrap();
    first_pipe.flush().unwrap();
    let rotated_part = dir.join("r.0000.pcapng.part");
    wait_for(&rotated_part);
    let (other, other_pipe) = relay(&["-q", "-C", "1"], &rotated);
    let o = ended(other, 5);
    drop(other_pipe);
    assert_eq!((o.status.code(), stderr(&o)), (Some(1), in_use(&rotated_part)));
    feed(&mut first_pipe, &fed);
    drop(first_pipe);
    let o = ended(first, 10);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames(&dir.join("r.0000.pcapng")), (fed.clone(), true));
    // Killed: its .part is a leftover, said as such.
    let (mut killed, mut pipe) = relay(&["-q"], &dir.join("k.pcapng"));
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed);
    let k_part = dir.join("k.pcapng.part");
    wait_for(&k_part);
    // Flushed within a second: a .part still empty would be no leftover.
    let t = Instant::now();
    while std::fs::metadata(&k_part).unwrap().len() == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "nothing flushed");
        std::thread::sleep(Duration::from_millis(20));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    let (next, next_pipe) = relay(&["-q"], &dir.join("k.pcapng"));
    let o = ended(next, 5);
    drop((pipe, next_pipe));
    let k = dir.join("k.pcapng").display().to_string();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(&format!(
            "wirestamp: error: -w {k}: {k}.part is left by a capture that did not give it its name (killed, or the \
             machine stopped: its frames up to about a second before; a write failed; or the name was taken while \
             it ran, as it said): {} bytes;",
            std::fs::metadata(&k_part).unwrap().len()
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(listing(&dir), ["k.pcapng.part", "r.0000.pcapng", "x.pcapng"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rotating capture that comes to a name another capture holds (here `-w r.0001.pcapng`, started
/// while `-w r.pcapng -C 1` writes its first file) skips it, saying so, and goes on with the next
/// name; it exits with status 1 naming it, every frame in its files, the other capture's file whole.
/// (It stopped there, exit status 1, every later frame lost.) `-C 1` rotates once a file holds
/// 1,000,000 bytes: frames of 60,000 bytes are 60,032 in a file (an Enhanced Packet Block's 32 bytes
/// around them), so 16 fit under it with the file's first blocks (far below 39,488 bytes) and the 17th
/// passes it: 17 frames a file.
#[test]
fn a_rotating_capture_skips_a_name_another_capture_holds_and_goes_on() {
    let dir = tmp("skipped");
    let base = dir.join("r.pcapng");
    let name = |i: u32| dir.join(format!("r.{i:04}.pcapng"));
    let fed: Vec<_> = (0..40).map(|k| frame(k, 60_000)).collect();
    let (a, mut a_pipe) = relay(&["-q", "-C", "1"], &base);
    a_pipe.write_all(&pcap_header()).unwrap();
    feed(&mut a_pipe, &fed[..1]);
    wait_for(&dir.join("r.0000.pcapng.part"));
    let b_fed = vec![frame(100, 70)];
    let (b, mut b_pipe) = relay(&["-q"], &name(1));
    b_pipe.write_all(&pcap_header()).unwrap();
    feed(&mut b_pipe, &b_fed);
    wait_for(&dir.join("r.0001.pcapng.part"));
    feed(&mut a_pipe, &fed[1..]);
    drop(a_pipe);
    let o = ended(a, 20);
    drop(b_pipe);
    let ob = ended(b, 10);
    assert!(ob.status.success(), "{}", stderr(&ob));
    let (r1, r2) = (name(1).display().to_string(), name(2).display().to_string());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: -w {}: {r1} skipped, its name taken: {r1}.part is being written by another capture, running \
             now (`fuser -v {r1}.part` names it); this capture goes on with {r2}\nwirestamp: error: names were taken \
             when this capture came to them, skipped (said above): {r1}\n",
            base.display()
        )
    );
    assert_eq!(listing(&dir), ["r.0000.pcapng", "r.0001.pcapng", "r.0002.pcapng", "r.0003.pcapng"]);
    assert_eq!(frames(&name(0)), (fed[..17].to_vec(), true));
    assert_eq!(frames(&name(1)), (b_fed, true));
    assert_eq!(frames(&name(2)), (fed[17..34].to_vec(), true));
    assert_eq!(frames(&name(3)), (fed[34..].to_vec(), true));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rotating capture that comes to a numbered name whose `.part` is a file that is no capture (made
/// while the capture ran: the start-up check found nothing) skips it, saying which file is there and
/// why once, the flag named once (it said "its name taken: -w r.0001.pcapng.part: the file exists..."),
/// and goes on with the next name; the file is left as it was. 20 frames of 60,000 bytes at `-C 1`:
/// 17 in the first file (see the test above), 3 in the next name's.
#[test]
fn a_rotating_capture_skips_a_name_a_file_took_and_says_it_once() {
    let dir = tmp("skipped-file");
    let base = dir.join("r.pcapng");
    let name = |i: u32| dir.join(format!("r.{i:04}.pcapng"));
    let fed: Vec<_> = (0..20).map(|k| frame(k, 60_000)).collect();
    let (a, mut pipe) = relay(&["-q", "-C", "1"], &base);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed[..1]);
    wait_for(&dir.join("r.0000.pcapng.part"));
    std::fs::write(dir.join("r.0001.pcapng.part"), "someone's notes").unwrap();
    feed(&mut pipe, &fed[1..]);
    drop(pipe);
    let o = ended(a, 20);
    let (r1, r2) = (name(1).display().to_string(), name(2).display().to_string());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: -w {}: {r1} skipped, its name taken: {r1}.part: the file exists and is not a capture (pcapng \
             or pcap): refusing to overwrite it; remove it or choose another name; this capture goes on with \
             {r2}\nwirestamp: error: names were taken when this capture came to them, skipped (said above): {r1}\n",
            base.display()
        )
    );
    assert_eq!(listing(&dir), ["r.0000.pcapng", "r.0001.pcapng.part", "r.0002.pcapng"]);
    assert_eq!(std::fs::read_to_string(dir.join("r.0001.pcapng.part")).unwrap(), "someone's notes");
    assert_eq!(frames(&name(0)), (fed[..17].to_vec(), true));
    assert_eq!(frames(&name(2)), (fed[17..].to_vec(), true));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Feeds a relay stopped by `--duration D` a frame every 10 ms, stamped with the time it is fed
/// (CLOCK_REALTIME), from when its `.part` exists (the relay's clock started before) until it exits.
/// Returns the time the relay said it ran (its summary: "stopped after S s: --duration D reached"), its
/// file's frames and the frames fed, and the wall time it ran for here.
fn trickled(dir: &Path, duration: &str) -> (Duration, Frames, Frames, Duration) {
    let out = dir.join(format!("d{duration}.pcapng"));
    let (mut child, mut pipe) = relay(&["--duration", duration], &out);
    pipe.write_all(&pcap_header()).unwrap();
    pipe.flush().unwrap();
    wait_for(&dir.join(format!("d{duration}.pcapng.part")));
    let t = Instant::now();
    let mut fed = Vec::new();
    while child.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(10) {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        let f = (ts.tv_sec * 1_000_000_000 + ts.tv_nsec, vec![fed.len() as u8; 60]);
        // The relay may have stopped reading: its pipe is closed then.
        if pipe.write_all(&pcap_record(f.0, &f.1)).and_then(|()| pipe.flush()).is_err() {
            break;
        }
        fed.push(f);
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = ended(child, 10);
    let wall = t.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let said = err
        .lines()
        .find_map(|l| l.strip_prefix("wirestamp: stopped after "))
        .and_then(|l| l.strip_suffix(&format!(" s: --duration {duration} reached")))
        .unwrap_or_else(|| panic!("no stop line: {err}"));
    let (secs, ms) = said.split_once('.').unwrap();
    let ran = Duration::from_secs(secs.parse().unwrap()) + Duration::from_millis(ms.parse().unwrap());
    let (got, complete) = frames(&out);
    assert!(complete);
    (ran, got, fed, wall)
}

/// `--duration 300ms` ends the capture after 300 ms, not the second a rounding to whole seconds would
/// give: the relay says it stopped after 300 ms or more and under 1 s (at 300 ms, plus one turn of its
/// loop: a frame every 10 ms), its file's frames span no more than that (fed from after its clock
/// started), and they are the first of those fed, exactly. A bare integer is still seconds: `1` runs
/// 1 s. Both at once; each under 5 s here, however loaded the machine.
#[test]
fn duration_takes_a_unit_and_a_bare_integer_is_seconds() {
    let dir = tmp("duration");
    let runs: Vec<_> = ["300ms", "1"]
        .into_iter()
        .map(|d| {
            let dir = dir.clone();
            std::thread::spawn(move || trickled(&dir, d))
        })
        .collect();
    let runs: Vec<_> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    for ((ran, got, fed, wall), (at_least, under)) in runs
        .into_iter()
        .zip([(Duration::from_millis(300), Duration::from_secs(1)), (Duration::from_secs(1), Duration::from_secs(2))])
    {
        assert!(ran >= at_least && ran < under, "ran {ran:?}");
        assert!(wall < Duration::from_secs(5), "{wall:?}");
        assert!(!got.is_empty() && got.len() <= fed.len(), "{} of {} frames", got.len(), fed.len());
        assert_eq!(got, fed[..got.len()]);
        let span = (got.last().unwrap().0 - got[0].0) as u128;
        assert!(span <= ran.as_nanos() + 1_000_000, "frames span {span} ns, ran {ran:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--duration` ends a relay whose stream has not begun (its header never came) as it ends one
/// reading frames: at the time given, exit status 0, the stop line, then what a stop before the header
/// says, no file. (It waited for the header for as long as the pipe stayed open, then failed on its
/// end: here, 5 s and exit status 1.)
#[test]
fn duration_ends_a_relay_still_waiting_for_its_streams_header() {
    let dir = tmp("duration-no-header");
    let (child, pipe) = relay(&["--duration", "300ms"], &dir.join("h.pcapng"));
    let t = Instant::now();
    let waited = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(5));
        drop(pipe);
    });
    let o = ended(child, 10);
    let wall = t.elapsed();
    waited.join().unwrap();
    assert!(wall < Duration::from_secs(2), "ran {wall:?} (the pipe closed at 5 s): {}", stderr(&o));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    let said = lines[0]
        .strip_prefix("wirestamp: stopped after ")
        .and_then(|l| l.strip_suffix(" s: --duration 300ms reached"))
        .unwrap_or_else(|| panic!("no stop line: {err}"));
    let (secs, ms) = said.split_once('.').unwrap();
    let ran = Duration::from_secs(secs.parse().unwrap()) + Duration::from_millis(ms.parse().unwrap());
    assert!(ran >= Duration::from_millis(300) && ran < Duration::from_secs(1), "ran {ran:?}");
    assert_eq!(lines[1..], ["wirestamp: stopped before the stream's header (no frame read); no file written"]);
    assert_eq!(listing(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Values that are no duration above 0 are the command line's error (exit status 2), saying what is
/// taken, before anything is opened: no file made.
#[test]
fn a_bad_duration_is_refused_with_what_is_taken() {
    let dir = tmp("bad-duration");
    let out = dir.join("x.pcapng");
    for bad in ["0", "0ms", "-1s", "1x", "", "s", "18446744073709551616"] {
        let o = Command::new(BIN)
            .args(["capture", "--source", "stdin", "--duration", bad, "-w"])
            .arg(&out)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let shown = if bad.is_empty() { "''" } else { bad };
        assert_eq!(
            (o.status.code(), stderr(&o)),
            (
                Some(2),
                format!(
                    "wirestamp: error: --duration {shown}: not a duration above 0: whole seconds (e.g. 30), or a number \
                     with its unit: ns, us, ms, s, min, h (e.g. 500ms, 90s, 1.5min, 8h)\n"
                )
            ),
            "{bad:?}"
        );
    }
    assert_eq!(listing(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}
