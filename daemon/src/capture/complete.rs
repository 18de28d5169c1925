//! How capture ends a file: its statistics blocks, its last flush and sync, and its rename
//! (`claim::commit`); or, when it cannot be completed, what it holds and where its frames are.

use super::{
    Counters, Files, NO_COUNTERS, Out, Written, claim, dir_of, isb_counters, recovered_name, replaceable, span, wall_ns,
};
use anyhow::Result;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use wirestamp_capture::RecordedStats;
use wirestamp_capture::write::IfaceStats;

impl Files {
    /// Closes the current file, after an Interface Statistics Block per interface it has frames of,
    /// counting from that interface's previous block (or the capture's start: `isb_starttime`) to now.
    /// `counters` holds each interface's counters since the capture began, sampled once; `last`: the
    /// capture is ending.
    ///
    /// A live source's block says what became of the frames of that span, so that it is true of the file
    /// and the files add up (see [`isb_counters`]). A relayed stream's are its own blocks' counters, the
    /// span's share of them.
    pub(super) fn close(&mut self, counters: &Counters, last: bool) -> Result<()> {
        if let Some((w, _, _)) = self.current.as_mut() {
            let now = wall_ns();
            let mut blocks: Vec<(u32, IfaceStats, Option<String>)> = Vec::new();
            for (i, c) in counters.per_iface.iter().enumerate() {
                // The interface's first block in this file (one per timestamp source).
                let Some(id) = self.idbs.iter().filter(|(k, _)| k.0 as usize == i).map(|(_, id)| *id).min() else {
                    // No block to put them in: the last file has none of the interface's frames.
                    if last && !counters.relayed {
                        let before = self.counted.get(&i).map_or(RecordedStats::default(), |c| c.0);
                        let all = self.written_of.get(i).map_or(0, |w| w.all);
                        let (c, _) = isb_counters(c, &before, Written { file: 0, all }, true);
                        let lost = c.osdrop.unwrap_or(0);
                        let queued = c.filteraccept.map_or(0, |a| a.saturating_sub(lost));
                        if lost + queued > 0 {
                            self.unblocked.push((i, lost, queued));
                        }
                    }
                    continue;
                };
                let (before, since_ns) =
                    self.counted.insert(i, (*c, now)).unwrap_or((RecordedStats::default(), self.began_ns));
                let written = self.written_of.get(i).copied().unwrap_or_default();
                let (counters, comment) =
                    if counters.relayed { (span(c, &before), None) } else { isb_counters(c, &before, written, last) };
                blocks.push((id, IfaceStats { start_ns: Some(since_ns), end_ns: Some(now), counters }, comment));
            }
            // Every interface of a closed file has a block, counters or none: a reader that finds one
            // without knows the file was never closed (analyze warns that its losses are unknown).
            let mut uncounted: Vec<(u32, u32)> = self
                .idbs
                .iter()
                .filter(|(k, _)| k.0 as usize >= counters.per_iface.len())
                .map(|(k, id)| (k.0, *id))
                .collect();
            uncounted.sort_unstable();
            uncounted.dedup_by_key(|(i, _)| *i);
            for (i, id) in uncounted {
                let (_, since_ns) = self
                    .counted
                    .insert(i as usize, (RecordedStats::default(), now))
                    .unwrap_or((RecordedStats::default(), self.began_ns));
                let st = IfaceStats { start_ns: Some(since_ns), end_ns: Some(now), counters: RecordedStats::default() };
                blocks.push((id, st, Some(NO_COUNTERS.to_string())));
            }
            for (id, st, comment) in blocks {
                if let Err(e) = w.write_stats_commented(id, now, &st, comment.as_deref()) {
                    return Err(self.failed(e));
                }
            }
        }
        // A numbered file without a frame, left at exit by a rotation just before, is no file of the
        // capture's: removed, unless it is the only one (a capture leaves a file, frames or none).
        if last && self.numbered && self.idbs.is_empty() && !(self.written.is_empty() && self.kept.is_empty()) {
            self.discard();
            self.last_kept = false;
            return Ok(());
        }
        if let Some((w, part, path)) = self.current.take() {
            let file = match complete(w) {
                Ok(file) => file,
                Err(e) => return Err(self.not_completed(&part, &path, &e)),
            };
            // Its name no longer holds it (removed, or moved and another file put there, while the
            // capture ran): nothing is renamed (that would give another file the capture's name), and
            // its frames are not said to be written.
            if !still_at(&part, self.part_id) {
                let said = if last { "the error below says" } else { "said above, with" };
                self.incomplete.push(format!(
                    "{} could not be completed (removed or moved while written, not by this capture): {said} where \
                     its frames are",
                    part.display()
                ));
                let e = gone(&part, &path);
                return self.unfinished(part, e, last);
            }
            // Renamed while still locked: no other capture takes the `.part` for a killed one's.
            let overwrite = self.overwrite;
            let renamed = match claim::commit(&part, &path, |p| {
                std::fs::metadata(p).is_ok_and(|m| m.is_file()) && replaceable(p, overwrite).is_ok()
            }) {
                Ok(renamed) => renamed,
                Err(e) => return self.unfinished(part, e, last),
            };
            self.index += 1;
            self.last_kept = !renamed;
            if renamed {
                self.written.push(path);
                return Ok(());
            }
            let kept = claim::Kept { bytes: file.metadata().map_or(0, |m| m.len()), part, path };
            // Said now when the capture goes on (rotation), -q or not: the run's error names it at exit.
            if !last {
                crate::note!("wirestamp: {}", kept.message());
            }
            self.kept.push(kept);
        }
        Ok(())
    }

    /// A file closed but not finished: its `.part` moved away or removed while written, or not renamed
    /// (`e` says what, and where its frames are). The run's error when it is the last; a rotating capture
    /// says it now (-q or not), names it again at exit, and goes on with its next file: the frames still
    /// to come can be written (the next file's own trouble, if any, stops it then).
    fn unfinished(&mut self, part: PathBuf, e: anyhow::Error, last: bool) -> Result<()> {
        self.last_kept = false;
        if last || !self.numbered {
            return Err(e);
        }
        self.index += 1;
        crate::note!("wirestamp: {}; this capture goes on with {}", crate::cli::describe(&e), self.name().display());
        self.unfinished.push(part);
        Ok(())
    }

    /// Drops the current file unfinished and removes its `.part`, while it still holds the lock (no
    /// other capture can have it): at a start refused after the file was begun (its CSV could not be
    /// begun), and at exit a numbered
    /// file without frames ([`Files::close`]). Only while the name still holds this capture's file:
    /// moved away while it ran, whatever is at the name now is not its own to remove.
    pub(super) fn discard(&mut self) {
        if let Some((w, part, _)) = self.current.take() {
            if !still_at(&part, self.part_id) {
                crate::note!(
                    "wirestamp: {}: not removed: this capture's file (without frames) was moved or removed while it \
                     ran, and what is at the name now is not its own",
                    part.display()
                );
            } else if let Err(e) = std::fs::remove_file(&part) {
                crate::note!("wirestamp: {}: not removed ({e}); it holds no frame", part.display());
            }
            drop(w);
        }
    }

    /// A write to the current file failed: the file is dropped unfinished, left as its `.part` (not
    /// renamed: it may end in a cut block), and the error says so ([`incomplete`]).
    pub(super) fn failed(&mut self, e: std::io::Error) -> anyhow::Error {
        let Some((w, part, path)) = self.current.take() else { return e.into() };
        drop(w);
        self.not_completed(&part, &path, &e)
    }

    /// The current file, dropped, could not be completed: the frames it holds counted (a write that
    /// fails for want of space keeps what fitted: the rest of the buffer is lost, up to a second of
    /// frames), for the summary and the error ([`incomplete`]).
    fn not_completed(&mut self, part: &Path, path: &Path, e: &std::io::Error) -> anyhow::Error {
        let (from, before) = self.flushed_whole;
        let held = (before + frames_from(part, from)).min(self.in_file);
        self.incomplete.push(format!(
            "{} could not be completed ({e}): it holds {}; the error below says what to do",
            part.display(),
            held_words(held, self.in_file)
        ));
        incomplete(part, path, e, held, self.in_file)
    }
}

/// A file's device and inode.
pub(super) fn file_id(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

/// Whether `part` still names the file `id` (followed as its open followed it: a `.part` that is a
/// link to a file is that file).
fn still_at(part: &Path, id: (u64, u64)) -> bool {
    std::fs::metadata(part).is_ok_and(|m| file_id(&m) == id)
}

/// Ends a file: its last blocks flushed to the kernel, then to the disk.
fn complete(w: Out) -> std::io::Result<File> {
    let mut inner = w.finish()?;
    inner.flush()?;
    let file = inner.inner.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok(file)
}

/// Whether the file at `part` holds no frame: whole pcapng blocks, a section header and then interface
/// descriptions only, as a capture killed before its file's first frame leaves its `.part` (its header,
/// flushed a second after the file opened). Anything else (a frame, a block cut short, another kind of
/// block, more than a header's worth of bytes) is taken to hold data.
pub(super) fn holds_no_frame(part: &Path) -> bool {
    use std::io::Read;
    const SHB: u32 = 0x0A0D_0D0A;
    const IDB: u32 = 1;
    /// Far more than a header: the section's comment is the command line and the mode line.
    const MOST: u64 = 1 << 16;
    let mut bytes = Vec::new();
    let Ok(f) = File::open(part) else { return false };
    if f.take(MOST + 1).read_to_end(&mut bytes).is_err() || bytes.len() as u64 > MOST || bytes.len() < 12 {
        return false;
    }
    // The section's byte order, from its byte-order magic (pcapng spec §4.1).
    let word = |at: usize, little: bool| {
        let b: [u8; 4] = bytes[at..at + 4].try_into().expect("4 bytes");
        if little { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) }
    };
    let little = match bytes[8..12] {
        [0x4D, 0x3C, 0x2B, 0x1A] => true,
        [0x1A, 0x2B, 0x3C, 0x4D] => false,
        _ => return false,
    };
    let mut at = 0;
    while at < bytes.len() {
        if bytes.len() - at < 12 {
            return false;
        }
        let (kind, total) = (word(at, little), word(at + 4, little) as usize);
        let whole = total >= 12 && total.is_multiple_of(4) && total <= bytes.len() - at;
        // Whole: its length again at its end. A section header first, and only there.
        if !whole || word(at + total - 4, little) as usize != total || (kind == SHB) != (at == 0) {
            return false;
        }
        if !matches!(kind, SHB | IDB) {
            return false;
        }
        at += total;
    }
    true
}

/// The whole Enhanced Packet Blocks in `part` from byte `from` (a block's start) to its end: the
/// frames a file that could not be completed holds past its last whole flush. A block cut short, or
/// one that is no block (a write that failed half way), ends the count.
fn frames_from(part: &Path, from: u64) -> u64 {
    use std::io::{BufRead, BufReader, Seek, SeekFrom};
    const EPB: u32 = 6;
    let Ok(mut f) = File::open(part) else { return 0 };
    let Ok(len) = f.metadata().map(|m| m.len()) else { return 0 };
    if f.seek(SeekFrom::Start(from)).is_err() {
        return 0;
    }
    let mut r = BufReader::with_capacity(1 << 16, f);
    let (mut at, mut n) = (from, 0);
    let mut head = [0u8; 8];
    while std::io::Read::read_exact(&mut r, &mut head).is_ok() {
        let kind = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let total = u64::from(u32::from_le_bytes([head[4], head[5], head[6], head[7]]));
        if total < 12 || !total.is_multiple_of(4) || at + total > len {
            break;
        }
        n += u64::from(kind == EPB);
        // The rest of the block, skipped.
        let mut left = total - 8;
        while left > 0 {
            let Ok(buf) = r.fill_buf() else { return n };
            if buf.is_empty() {
                return n;
            }
            let k = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            r.consume(k);
            left -= k as u64;
        }
        at += total;
    }
    n
}

/// The error of a file that could not be completed (a write, its last flush or its sync failed: no
/// space left, an I/O error): what happened, what it holds (`held` of the `written` frames written to
/// it), and what to do.
fn incomplete(part: &Path, path: &Path, e: &std::io::Error, held: u64, written: u64) -> anyhow::Error {
    let (part, shown) = (part.display(), path.display());
    let free = match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => {
            format!(" (free space on its file system: `df {}`)", dir_of(path).display())
        }
        _ => String::new(),
    };
    anyhow::anyhow!(
        "-w {shown}: {part} could not be completed: {e}{free}; it is left as it is, holding {} and without its \
         statistics blocks: read it as it is (`wirestamp analyze {part}`: its losses are unknown) or keep it under \
         another name (mv -n {part} {}); a capture to -w {shown} refuses it while it is there",
        held_words(held, written),
        recovered_name(path).display()
    )
}

/// The frames a file that could not be completed holds, of those written to it: the others were still
/// in the capture's buffer when the write failed (or were the frame it failed on), and are lost.
fn held_words(held: u64, written: u64) -> String {
    match written - held {
        0 => format!("the {written} frames written to it"),
        lost => {
            format!("{held} of the {written} frames written to it ({lost} lost: not yet on it when the write failed)")
        }
    }
}

/// The error of a file whose `.part` was removed, or moved and another file put at its name, while
/// the capture wrote it: where its frames are, and that nothing was given the name.
fn gone(part: &Path, path: &Path) -> anyhow::Error {
    let (part, shown) = (part.display(), path.display());
    anyhow::anyhow!(
        "-w {shown}: {part} was removed, or moved, while this capture wrote it (not by this capture): its frames \
         are not at that name (complete in the file it was moved to; lost if it was removed); nothing was named \
         {shown}, and a file at {part} now is not this capture's: left as it is"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pcapng block, little- or big-endian (pcapng spec §3.1): type, total length, body, total length.
    fn block(little: bool, kind: u32, body: &[u8]) -> Vec<u8> {
        let total = (12 + body.len()) as u32;
        let w = |v: u32| if little { v.to_le_bytes() } else { v.to_be_bytes() };
        [&w(kind)[..], &w(total), body, &w(total)].concat()
    }

    /// A section header's body (§4.1): byte-order magic, version 1.0, section length unknown.
    fn shb(little: bool) -> Vec<u8> {
        let w = |v: u32| if little { v.to_le_bytes() } else { v.to_be_bytes() };
        // Major 1, minor 0 (16 bits each, in the section's order: 1 then 0 read as one word).
        let version = if little { 1u32 } else { 1 << 16 };
        block(little, 0x0A0D_0D0A, &[&w(0x1A2B_3C4D)[..], &w(version), &[0xFF; 8]].concat())
    }

    /// What a `.part` holds decides whether it holds no frame: its header and interface descriptions
    /// only, whole, in either byte order; a frame (enhanced or simple), a block of another kind, more
    /// than 64 KiB, a block cut short, anything after the magic that is no block, a second section or a
    /// header not first is taken to hold data.
    #[test]
    fn a_part_holds_no_frame_only_with_its_header_and_interfaces() {
        let dir = std::env::temp_dir().join(format!("wirestamp-complete-noframe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let part = dir.join("c.pcapng.part");
        let idb = |little| block(little, 1, &[1, 0, 0, 0, 0, 0, 4, 0]);
        let epb = block(true, 6, &[0; 20 + 60]);
        // An interface description of 4 KiB (a long description option): 17 of them are over 64 KiB.
        let big_idb = block(true, 1, &[&[1, 0, 0, 0, 0, 0, 4, 0][..], &[0; 4096]].concat());
        let spb = block(true, 3, &[&60u32.to_le_bytes()[..], &[0; 60]].concat());
        let cases: [(Vec<u8>, bool); 14] = [
            // A Simple Packet Block is a frame too; so may be any block not known here (a custom block).
            ([shb(true), idb(true), spb].concat(), false),
            ([shb(true), idb(true), block(true, 0x0000_0BAD, &[0; 8])].concat(), false),
            // A frame past 64 KiB of interfaces is not looked for: that much is taken to hold data.
            ([&shb(true)[..], &big_idb.repeat(17), &epb].concat(), false),
            ([&shb(true)[..], &big_idb.repeat(17)].concat(), false),
            ([&shb(true)[..], &big_idb.repeat(15)].concat(), true),
            (shb(true), true),
            ([shb(true), idb(true), idb(true)].concat(), true),
            ([shb(false), idb(false)].concat(), true),
            ([shb(true), idb(true), epb.clone()].concat(), false),
            (shb(true)[..20].to_vec(), false),
            ([shb(true), idb(true)[..12].to_vec()].concat(), false),
            ([&[0x0A, 0x0D, 0x0D, 0x0A][..], b"a killed capture's frames"].concat(), false),
            ([shb(true), shb(true)].concat(), false),
            ([idb(true), shb(true)].concat(), false),
        ];
        for (i, (bytes, none)) in cases.iter().enumerate() {
            std::fs::write(&part, bytes).unwrap();
            assert_eq!(holds_no_frame(&part), *none, "case {i}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
