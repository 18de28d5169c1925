//! How `wirestamp capture` ends its files: a numbered file left without frames by a rotation just
//! before the stream ended is not kept, and a file that cannot be completed (no space left at its last
//! flush), renamed (its directory made read-only) or found at its `.part` name (removed or moved while
//! written) is said to be so, not counted as written, a rotating capture going on with its next file;
//! and a `.part` a killed capture left without frames is taken by the next. `--source stdin` relays fed
//! a classic pcap written by hand (tests/relay), so that the frames expected back are the ones fed.

mod relay;

use relay::*;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// `-C 1` rotates once a file holds 1,000,000 bytes: frames of 60,000 bytes are 60,032 in a file (an
/// Enhanced Packet Block's 32 bytes around them), so 16 fit under it with the file's first blocks (far
/// below 39,488 bytes) and the 17th passes it: 17 frames a file. 34 frames fill two files, the second
/// rotated the moment its 17th frame is written, just before the stream ends: the third file, opened
/// then, has no frame and is not kept (it was left, a header and nothing else). A stream without a
/// frame leaves its one file, empty, as without rotation.
#[test]
fn a_numbered_file_left_without_frames_at_the_end_is_not_kept() {
    let dir = tmp("ends-size");
    let base = dir.join("r.pcapng");
    let fed: Vec<_> = (0..34).map(|k| frame(k, 60_000)).collect();
    let (child, mut pipe) = relay(&["-q", "-C", "1"], &base);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed);
    drop(pipe);
    let o = ended(child, 20);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(listing(&dir), ["r.0000.pcapng", "r.0001.pcapng"]);
    assert_eq!(frames(&dir.join("r.0000.pcapng")), (fed[..17].to_vec(), true));
    assert_eq!(frames(&dir.join("r.0001.pcapng")), (fed[17..].to_vec(), true));
    // No frame at all: the capture's only file is kept, empty.
    let only = dir.join("e.pcapng");
    let (child, mut pipe) = relay(&["-q", "-C", "1"], &only);
    pipe.write_all(&pcap_header()).unwrap();
    drop(pipe);
    let o = ended(child, 10);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames(&dir.join("e.0000.pcapng")), (vec![], false));
    assert_eq!(listing(&dir), ["e.0000.pcapng", "r.0000.pcapng", "r.0001.pcapng"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The numbered file without frames a rotation left is removed at exit only while its name still
/// holds it: moved away while the capture ran (here after the rotation that made it, 17 frames of
/// 60,000 bytes at `-C 1`: see above), and a user's file put at its name, that file is left byte for
/// byte (it was removed), the capture saying why it removed nothing; the moved file is the capture's
/// (a header, no frame), and the first file holds the 17 frames fed.
#[test]
fn the_empty_last_file_is_not_removed_once_its_name_is_anothers() {
    let dir = tmp("ends-moved");
    let base = dir.join("r.pcapng");
    let fed: Vec<_> = (0..17).map(|k| frame(k, 60_000)).collect();
    let (child, mut pipe) = relay(&["-q", "-C", "1"], &base);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed);
    let part = dir.join("r.0001.pcapng.part");
    wait_for(&part);
    std::fs::rename(&part, dir.join("moved")).unwrap();
    std::fs::write(&part, "someone's notes").unwrap();
    drop(pipe);
    let o = ended(child, 20);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: {}: not removed: this capture's file (without frames) was moved or removed while it ran, and \
             what is at the name now is not its own\n",
            part.display()
        )
    );
    assert_eq!(listing(&dir), ["moved", "r.0000.pcapng", "r.0001.pcapng.part"]);
    assert_eq!(std::fs::read_to_string(&part).unwrap(), "someone's notes");
    assert_eq!(frames(&dir.join("r.0000.pcapng")), (fed, true));
    assert_eq!(frames(&dir.join("moved")), (vec![], false));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `.part` removed while the capture writes it (its frames lost with it), or moved away and another
/// file put at its name: the capture does not say its frames were written (it said "3 frames written",
/// and renamed the file put there to -w's name, exit status 0, or failed to rename the removed one
/// naming neither), gives -w's name to nothing, leaves the file at the `.part` name byte for byte, and
/// exits with status 1 saying where the frames are. The moved file holds the 3 frames fed, complete.
#[test]
fn a_part_removed_or_moved_while_written_is_not_said_to_be_written() {
    let dir = tmp("ends-gone");
    let fed: Vec<_> = (0..3).map(|k| frame(k, 100)).collect();
    for moved in [false, true] {
        let out = dir.join("x.pcapng");
        let part = dir.join("x.pcapng.part");
        let (child, mut pipe) = relay(&[], &out);
        pipe.write_all(&pcap_header()).unwrap();
        feed(&mut pipe, &fed);
        wait_for(&part);
        match moved {
            false => std::fs::remove_file(&part).unwrap(),
            true => {
                std::fs::rename(&part, dir.join("moved")).unwrap();
                std::fs::write(&part, "someone's notes").unwrap();
            }
        }
        drop(pipe);
        let o = ended(child, 10);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        let (p, x) = (part.display(), out.display());
        assert!(
            err.contains(&format!(
                "\nwirestamp: 3 frames captured (pcap 3); {p} could not be completed (removed or moved while written, \
                 not by this capture): the error below says where its frames are\n"
            )),
            "{err}"
        );
        assert!(!err.contains("written ("), "{err}");
        assert!(
            err.ends_with(&format!(
                "\nwirestamp: error: -w {x}: {p} was removed, or moved, while this capture wrote it (not by this \
                 capture): its frames are not at that name (complete in the file it was moved to; lost if it was \
                 removed); nothing was named {x}, and a file at {p} now is not this capture's: left as it is\n"
            )),
            "{err}"
        );
        match moved {
            false => assert!(listing(&dir).is_empty()),
            true => {
                assert_eq!(listing(&dir), ["moved", "x.pcapng.part"]);
                assert_eq!(std::fs::read_to_string(&part).unwrap(), "someone's notes");
                assert_eq!(frames(&dir.join("moved")), (fed.clone(), true));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rotating capture whose `.part` is moved away while it writes it says so once, when it comes to
/// close it (what, and where its frames are), and goes on with its next file, losing no frame: 22 frames
/// of 60,000 bytes at `-C 1` (17 a file: see the first test), the first file's `.part` moved away before
/// them. The moved file holds the first 17, complete (its statistics blocks written); the next name the
/// other 5; the summary says the frames were captured, not written; the exit status is 1, the error at
/// exit naming the file said above. (The capture stopped at the first rotation, every later frame lost.)
#[test]
fn a_rotating_capture_goes_on_when_a_part_is_moved_away() {
    let dir = tmp("ends-moved-rotating");
    let base = dir.join("r.pcapng");
    let (part0, r1) = (dir.join("r.0000.pcapng.part"), dir.join("r.0001.pcapng"));
    let fed: Vec<_> = (0..22).map(|k| frame(k, 60_000)).collect();
    let (child, mut pipe) = relay(&["-C", "1"], &base);
    pipe.write_all(&pcap_header()).unwrap();
    pipe.flush().unwrap();
    wait_for(&part0);
    std::fs::rename(&part0, dir.join("moved")).unwrap();
    feed(&mut pipe, &fed);
    drop(pipe);
    let o = ended(child, 20);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let (p, r0) = (part0.display(), dir.join("r.0000.pcapng").display().to_string());
    let said = format!(
        "\nwirestamp: -w {r0}: {p} was removed, or moved, while this capture wrote it (not by this capture): its \
         frames are not at that name (complete in the file it was moved to; lost if it was removed); nothing was \
         named {r0}, and a file at {p} now is not this capture's: left as it is; this capture goes on with {}\n",
        r1.display()
    );
    assert!(err.contains(&said), "{err}");
    assert_eq!(err.matches(" was removed, or moved, ").count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "\nwirestamp: 22 frames captured (pcap 22); {p} could not be completed (removed or moved while written, \
             not by this capture): said above, with where its frames are\n"
        )),
        "{err}"
    );
    assert!(err.contains(&format!("\nwirestamp: wrote {}\n", r1.display())), "{err}");
    assert!(
        err.ends_with(&format!(
            "\nwirestamp: error: files could not be completed or named while this capture ran (said above, each \
             with where its frames are): {p}\n"
        )),
        "{err}"
    );
    assert_eq!(listing(&dir), ["moved", "r.0001.pcapng"]);
    assert_eq!(frames(&dir.join("moved")), (fed[..17].to_vec(), true));
    assert_eq!(frames(&r1), (fed[17..].to_vec(), true));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-G 1` with the stream idle for 4 s between two bursts: the first burst's file is rotated a second
/// after it opened; while idle, the file opened then, without a frame, is not rotated (it made a file
/// a second, each a header and nothing else), and after the second burst the stream ends. Every file
/// left holds frames, the first the first burst exactly, and together every frame in order (the second
/// burst in one file or, had a rotation fallen inside it, two), named from 0000 without a gap.
#[test]
fn an_idle_capture_with_g_makes_no_empty_files() {
    let dir = tmp("ends-time");
    let base = dir.join("g.pcapng");
    let fed: Vec<_> = (0..6).map(|k| frame(k, 100)).collect();
    let (child, mut pipe) = relay(&["-q", "-G", "1"], &base);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed[..3]);
    std::thread::sleep(Duration::from_millis(4_000));
    feed(&mut pipe, &fed[3..]);
    drop(pipe);
    let o = ended(child, 10);
    assert!(o.status.success(), "{}", stderr(&o));
    let names = listing(&dir);
    let numbered: Vec<String> = (0..names.len()).map(|i| format!("g.{i:04}.pcapng")).collect();
    assert_eq!(names, numbered);
    assert!(names.len() == 2 || names.len() == 3, "{names:?}");
    let mut all = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let (got, complete) = frames(&dir.join(name));
        assert!(complete && !got.is_empty(), "{name}: {got:?}");
        if i == 0 {
            assert_eq!(got, fed[..3]);
        }
        all.extend(got);
    }
    assert_eq!(all, fed);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What `-G` does with a file left without frames, as `--help` says: it is not closed, its seconds
/// count again from the check that found it empty. `-G 2`: frame A in the first file; its rotation
/// (seen as the second `.part` appearing, at t) opens the second, empty at t + 2 s, when its count
/// begins again: frames B (t + 2.5 s) and C (t + 3.3 s) are both in it, before its next rotation at
/// t + 4 s (closed the moment B was written, C would be in a third file; before the change, B and C
/// were in a third file, the second empty).
#[test]
fn g_counts_a_files_seconds_again_while_it_has_no_frame() {
    let dir = tmp("ends-g-again");
    let base = dir.join("g.pcapng");
    let fed: Vec<_> = (0..3).map(|k| frame(k, 100)).collect();
    let (child, mut pipe) = relay(&["-q", "-G", "2"], &base);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed[..1]);
    wait_for(&dir.join("g.0001.pcapng.part"));
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(2_500));
    feed(&mut pipe, &fed[1..2]);
    std::thread::sleep(Duration::from_millis(3_300).saturating_sub(t.elapsed()));
    feed(&mut pipe, &fed[2..]);
    drop(pipe);
    let o = ended(child, 10);
    assert!(t.elapsed() < Duration::from_millis(4_000), "too late to tell: {:?}", t.elapsed());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(listing(&dir), ["g.0000.pcapng", "g.0001.pcapng"]);
    assert_eq!(frames(&dir.join("g.0000.pcapng")), (fed[..1].to_vec(), true));
    assert_eq!(frames(&dir.join("g.0001.pcapng")), (fed[1..].to_vec(), true));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A capture killed (SIGKILL) while idle, before its file's first frame, leaves a `.part` holding the
/// file's header and no frame: nothing to lose, so the next start takes it (it was refused as a killed
/// capture's, to be moved or removed by hand, or replaced with --overwrite). With -G 1, the file a
/// rotation opened after 3 frames (flushed a second later: its header); once the complete file is
/// moved away (as a job collecting them does), a second start with the same -w and -G takes that name
/// when it comes to it: 3 frames, a rotation, 3 frames, each file whole. Without -G, a capture killed
/// before its first frame; the next one takes its `.part` at the start.
#[test]
fn a_part_left_without_frames_by_a_killed_capture_is_taken_by_the_next() {
    let dir = tmp("ends-killed-idle");
    let base = dir.join("g.pcapng");
    let (part0, part1) = (dir.join("g.0000.pcapng.part"), dir.join("g.0001.pcapng.part"));
    let fed: Vec<_> = (0..9).map(|k| frame(k, 100)).collect();
    let killed_idle = |args: &[&str], out: &Path, fed: &[(i64, Vec<u8>)], idle: &Path| {
        let (mut child, mut pipe) = relay(args, out);
        pipe.write_all(&pcap_header()).unwrap();
        feed(&mut pipe, fed);
        wait_for(idle);
        grown_to(idle, 28);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(frames(idle), (vec![], false));
    };
    killed_idle(&["-q", "-G", "1"], &base, &fed[..3], &part1);
    assert_eq!(listing(&dir), ["g.0000.pcapng", "g.0001.pcapng.part"]);
    assert_eq!(frames(&dir.join("g.0000.pcapng")), (fed[..3].to_vec(), true));
    std::fs::create_dir(dir.join("collected")).unwrap();
    std::fs::rename(dir.join("g.0000.pcapng"), dir.join("collected/g.0000.pcapng")).unwrap();
    let (mut child, mut pipe) = relay(&["-q", "-G", "1"], &base);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed[3..6]);
    // The first file renamed at its rotation (the capture refused at the start, said).
    let t = Instant::now();
    while !dir.join("g.0000.pcapng").exists() {
        if child.try_wait().unwrap().is_some() {
            panic!("{}", stderr(&child.wait_with_output().unwrap()));
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no rotation");
        std::thread::sleep(Duration::from_millis(5));
    }
    feed(&mut pipe, &fed[6..]);
    drop(pipe);
    let o = ended(child, 10);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_eq!(listing(&dir), ["collected", "g.0000.pcapng", "g.0001.pcapng"]);
    assert_eq!(frames(&dir.join("g.0000.pcapng")), (fed[3..6].to_vec(), true));
    assert_eq!(frames(&dir.join("g.0001.pcapng")), (fed[6..].to_vec(), true));
    assert!(!part0.exists());
    // Without rotation.
    let (out, part) = (dir.join("x.pcapng"), dir.join("x.pcapng.part"));
    killed_idle(&["-q"], &out, &[], &part);
    let (child, mut pipe) = relay(&["-q"], &out);
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed[..2]);
    drop(pipe);
    let o = ended(child, 10);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames(&out), (fed[..2].to_vec(), true));
    assert!(!part.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Feeds a capture to `part` (in `fs`) 22 frames, the last sized so that the `.part` ends on a page
/// boundary once they are flushed, then takes every page left (a file `filler` beside it): the next
/// block the capture writes (its statistics blocks at the latest) finds no space. The frames fed.
fn fed_then_full(fs: &SmallFs, pipe: &mut std::process::ChildStdin, part: &Path) -> Frames {
    let mut fed: Vec<_> = (0..20).map(|k| frame(k, 1_000)).collect();
    pipe.write_all(&pcap_header()).unwrap();
    feed(pipe, &fed);
    let seen = fs.seen(part);
    let before = grown_to(&seen, 20 * (32 + 1_000));
    // A frame's bytes in the file beyond its data (an Enhanced Packet Block's 32 at least, pcapng's
    // layout; options, even none, may add some): measured, so that the last frame can be sized to end
    // the `.part` on a page boundary.
    fed.push(frame(20, 64));
    feed(pipe, &fed[20..]);
    let grown = grown_to(&seen, before + 32 + 64);
    let around = grown - before - 64;
    // pcapng blocks are 4-byte aligned: so is `len`.
    let mut len = (4096 - (grown + around) % 4096) % 4096;
    if len < 64 {
        len += 4096;
    }
    fed.push(frame(21, len as usize));
    feed(pipe, &fed[21..]);
    assert_eq!(grown_to(&seen, grown + around + len) % 4096, 0);
    // Every page taken.
    let mut filler = std::fs::File::create(fs.seen(&part.with_file_name("filler"))).unwrap();
    let e = loop {
        if let Err(e) = filler.write_all(&[0u8; 4096]) {
            break e;
        }
    };
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    fed
}

/// No space left when the capture completes its file: the statistics blocks and the last flush fail.
/// The file system (a 256 KiB tmpfs) is filled once every frame fed is on it, the `.part` ending on a
/// page boundary (its last frame's length chosen for it), so that the statistics block needs a page
/// there is not.
/// The summary says the frames were captured and that the file could not be completed (it said "22
/// frames written", then the error), and the error names the `.part`, what is in it and what to do
/// (it named no file). The `.part` is left as it is, every frame fed in it, without statistics blocks;
/// nothing is at the name.
#[test]
fn a_file_that_cannot_be_completed_is_not_said_to_be_written() {
    let dir = tmp("ends-full");
    let at = dir.join("small");
    std::fs::create_dir(&at).unwrap();
    let fs = SmallFs::new(&at, "size=256k");
    let (out, part) = (at.join("x.pcapng"), at.join("x.pcapng.part"));
    let (child, mut pipe) = fs.capture(&[], &out);
    let fed = fed_then_full(&fs, &mut pipe, &part);
    let seen = fs.seen(&part);
    drop(pipe);
    let o = ended(child, 10);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC).to_string();
    let (p, x) = (part.display(), out.display());
    assert!(
        err.contains(&format!(
            "\nwirestamp: 22 frames captured (pcap 22); {p} could not be completed ({enospc}): it holds the 22 frames \
             written to it; the error below says what to do\n"
        )),
        "{err}"
    );
    assert!(!err.contains("wirestamp: 22 frames written"), "{err}");
    assert!(
        err.ends_with(&format!(
            "\nwirestamp: error: -w {x}: {p} could not be completed: {enospc} (free space on its file system: `df \
             {}`); it is left as it is, holding the 22 frames written to it and without its statistics blocks: read \
             it as it is (`wirestamp analyze {p}`: its losses are unknown) or keep it under another name (mv -n {p} \
             {}); a capture to -w {x} refuses it while it is there\n",
            at.display(),
            at.join("x.recovered.pcapng").display()
        )),
        "{err}"
    );
    assert_eq!(frames(&seen), (fed, false));
    assert_eq!(listing(&fs.seen(&at)), ["filler", "x.pcapng.part"]);
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// No space left during the run: 300 frames of 1,000 bytes (about 310 KB) fed at once, held in the
/// capture's buffer (1 MiB) until its flush a second later, which a 256 KiB tmpfs cannot take whole.
/// The summary and the error say how many of the 300 the `.part` holds, and that the others are lost
/// (they said "the frames flushed to it (up to about a second before)": none of the 300 was flushed a
/// second before, and a third of them never reached the file). The number expected is the frames a
/// reader finds in the `.part` (the first of those fed, in order), fewer than 300.
#[test]
fn frames_lost_when_no_space_is_left_during_the_run_are_counted() {
    let dir = tmp("ends-full-run");
    let at = dir.join("small");
    std::fs::create_dir(&at).unwrap();
    let fs = SmallFs::new(&at, "size=256k");
    let (out, part) = (at.join("x.pcapng"), at.join("x.pcapng.part"));
    let (child, mut pipe) = fs.capture(&[], &out);
    let fed: Vec<_> = (0..300).map(|k| frame(k, 1_000)).collect();
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed);
    let o = ended(child, 10);
    drop(pipe);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let (kept, complete) = frames(&fs.seen(&part));
    let held = kept.len();
    assert!(!complete && held > 0 && held < 300, "{held}: {err}");
    assert_eq!(kept, fed[..held]);
    let lost = 300 - held;
    let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC).to_string();
    let (p, x) = (part.display(), out.display());
    assert!(
        err.contains(&format!(
            "\nwirestamp: 300 frames captured (pcap 300); {p} could not be completed ({enospc}): it holds {held} of \
             the 300 frames written to it ({lost} lost: not yet on it when the write failed); the error below says \
             what to do\n"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "\nwirestamp: error: -w {x}: {p} could not be completed: {enospc} (free space on its file system: `df \
             {}`); it is left as it is, holding {held} of the 300 frames written to it ({lost} lost: not yet on it \
             when the write failed) and without its statistics blocks:",
            at.display()
        )),
        "{err}"
    );
    assert_eq!(listing(&fs.seen(&at)), ["x.pcapng.part"]);
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `.part` the file system will not make (a tmpfs without a free inode: `nr_inodes=1`, its root's)
/// is an error naming -w and the `.part` once, with the system's reason (it said "creating X.part: ...",
/// no flag), and nothing is made.
#[test]
fn a_part_that_cannot_be_made_is_named_with_its_flag() {
    let dir = tmp("ends-inodes");
    let at = dir.join("small");
    std::fs::create_dir(&at).unwrap();
    let fs = SmallFs::new(&at, "size=256k,nr_inodes=1");
    let out = at.join("x.pcapng");
    let (child, mut pipe) = fs.capture(&["-q"], &out);
    pipe.write_all(&pcap_header()).unwrap();
    drop(pipe);
    let o = ended(child, 10);
    let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC).to_string();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o), format!("wirestamp: error: -w {x}: cannot create {x}.part: {enospc}\n", x = out.display()));
    assert!(listing(&fs.seen(&at)).is_empty());
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A directory made read-only while the capture writes into it (a read-only bind mount over it in the
/// capture's mount namespace: as root, permissions would not stop it): the file is completed but cannot
/// be renamed. The error names -w, the `.part`, the system's reason and where the frames are (it said
/// "renaming X.part to X: EROFS: Read-only file system"), exit status 1; the `.part` holds every frame
/// fed, with its statistics blocks.
#[test]
fn a_file_that_cannot_be_renamed_says_where_its_frames_are() {
    let dir = tmp("ends-readonly");
    let at = dir.join("small");
    std::fs::create_dir(&at).unwrap();
    let fs = SmallFs::new(&at, "size=1m");
    let (out, part) = (at.join("x.pcapng"), at.join("x.pcapng.part"));
    let (child, mut pipe) = fs.capture(&["-q"], &out);
    let fed: Vec<_> = (0..3).map(|k| frame(k, 100)).collect();
    pipe.write_all(&pcap_header()).unwrap();
    feed(&mut pipe, &fed);
    wait_for(&fs.seen(&part));
    fs.read_only(&at);
    drop(pipe);
    let o = ended(child, 10);
    let erofs = std::io::Error::from_raw_os_error(libc::EROFS).to_string();
    let (p, x) = (part.display(), out.display());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "wirestamp: error: -w {x}: {p} could not be renamed to {x}: {erofs}; its frames are in {p}, complete: \
             give it its name yourself (mv -n {p} {x}) or read it as it is (`wirestamp analyze {p}`)\n"
        )
    );
    assert_eq!(listing(&fs.seen(&at)), ["x.pcapng.part"]);
    assert_eq!(frames(&fs.seen(&part)), (fed, true));
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rotating capture whose complete file the system will not rename (its directory made append-only,
/// `chattr +a`: files can be made there, not renamed) says so once, when it happens (what, and where
/// the frames are), and goes on with its next file, losing no frame: 22 frames of 60,000 bytes at `-C 1`
/// (17 a file), the directory append-only from before the first rotation until the second file is
/// open. The first file's frames are in its `.part`, complete; the second file, renamed at exit, holds
/// the other 5; the exit status is 1, the error at exit naming the `.part` said above. (The capture
/// stopped at the first rotation, every later frame lost.)
#[test]
fn a_rotating_capture_goes_on_when_a_file_cannot_be_renamed() {
    let dir = tmp("ends-unrenamed-rotating");
    let at = dir.join("small");
    std::fs::create_dir(&at).unwrap();
    let fs = SmallFs::new(&at, "size=4m");
    let base = at.join("r.pcapng");
    let (part0, r0, part1, r1) = (
        at.join("r.0000.pcapng.part"),
        at.join("r.0000.pcapng"),
        at.join("r.0001.pcapng.part"),
        at.join("r.0001.pcapng"),
    );
    let chattr = |flag: &str| {
        let s = fs.command("chattr").arg(flag).arg(&at).status().unwrap();
        assert!(s.success(), "chattr {flag} {}", at.display());
    };
    let fed: Vec<_> = (0..22).map(|k| frame(k, 60_000)).collect();
    let (child, mut pipe) = fs.capture(&["-q", "-C", "1"], &base);
    pipe.write_all(&pcap_header()).unwrap();
    pipe.flush().unwrap();
    wait_for(&fs.seen(&part0));
    chattr("+a");
    feed(&mut pipe, &fed[..17]);
    wait_for(&fs.seen(&part1));
    chattr("-a");
    feed(&mut pipe, &fed[17..]);
    drop(pipe);
    let o = ended(child, 20);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let eperm = std::io::Error::from_raw_os_error(libc::EPERM);
    let (p, x) = (part0.display(), r0.display());
    assert_eq!(
        err,
        format!(
            "wirestamp: -w {x}: {p} could not be renamed to {x}: {eperm}; its frames are in {p}, complete: give it \
             its name yourself (mv -n {p} {x}) or read it as it is (`wirestamp analyze {p}`); this capture goes on \
             with {}\nwirestamp: error: files could not be completed or named while this capture ran (said above, \
             each with where its frames are): {p}\n",
            r1.display()
        )
    );
    assert_eq!(listing(&fs.seen(&at)), ["r.0000.pcapng.part", "r.0001.pcapng"]);
    assert_eq!(frames(&fs.seen(&part0)), (fed[..17].to_vec(), true));
    assert_eq!(frames(&fs.seen(&r1)), (fed[17..].to_vec(), true));
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stream that fails (a record whose length field says 2^31 - 1 bytes: a reading error, exit
/// status 1) while no space is left for the file's statistics blocks: both errors are said, the
/// stream's (the run's) and the file's (what it holds and what to do, which the summary points to);
/// the file's was not said at all. The `.part` holds the 22 frames fed before (see `fed_then_full`).
#[test]
fn a_file_that_cannot_be_completed_after_the_source_failed_is_said_too() {
    let dir = tmp("ends-full-bad");
    let at = dir.join("small");
    std::fs::create_dir(&at).unwrap();
    let fs = SmallFs::new(&at, "size=256k");
    let (out, part) = (at.join("x.pcapng"), at.join("x.pcapng.part"));
    let (child, mut pipe) = fs.capture(&["-q"], &out);
    let fed = fed_then_full(&fs, &mut pipe, &part);
    // A pcap record header (16 bytes): seconds, nanoseconds, captured and wire length.
    let mut bad = 1_796_049_100u32.to_le_bytes().to_vec();
    for v in [0u32, 0x7fff_ffff, 0x7fff_ffff] {
        bad.extend(v.to_le_bytes());
    }
    pipe.write_all(&bad).unwrap();
    drop(pipe);
    let o = ended(child, 10);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    let (p, x) = (part.display(), out.display());
    let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC).to_string();
    assert!(
        lines.iter().any(|l| l.starts_with(&format!(
            "wirestamp: error: -w {x}: {p} could not be completed: {enospc} (free space on its file system: `df {}`); \
             it is left as it is, holding the 22 frames written to it and without its statistics blocks:",
            at.display()
        ))),
        "{err}"
    );
    // The stream's error: its record (the 23rd, number 22 from 0) named.
    assert!(lines.iter().any(|l| l.starts_with("wirestamp: error: stdin: ") && l.contains("(record 22, ")), "{err}");
    assert_eq!(frames(&fs.seen(&part)), (fed, false));
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}
