//! How capture takes a file name without replacing anyone's file. Each file is written as `NAME.part`,
//! created anew (`O_EXCL`) and locked while written (an open file description lock: the kernel drops
//! it however the process ends, so a killed capture's `.part` is found unlocked), then renamed to
//! `NAME` only if nothing is there (`renameat2` with `RENAME_NOREPLACE`). So a second capture of one
//! `-w` stops at once instead of writing the first one's `.part`, and a file made at `NAME` while the
//! capture ran is left as it is, the frames staying in the `.part`. A lock is kept only on the file
//! still at the name it was opened by (a capture renames its `.part` while it holds the lock).
//!
//! A file is claimed ([`Claim`]: locked, nothing in it changed) before anything is emptied: a leftover
//! a run replaces (`--overwrite`) is emptied only once every file of the run is claimed
//! ([`Claim::take`]), so a start refused at its second file leaves the first as it found it.

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, FcntlArg, RenameFlags, fcntl, renameat2};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A name [`create`] refuses because it is taken: held by a running capture, or a file there that may
/// not be replaced. A rotating capture goes on with its next name instead (`Files::claim`); any other
/// error (no permission, no space) stops it. Said as `FLAG NAME: WHY`, in parts, so that a message that
/// names the flag and the file itself says only why.
#[derive(Debug)]
pub(super) struct Taken {
    /// `-w` or `--tx-events`, and the file it names (for a `.part`, the name it is written for).
    pub flag: &'static str,
    pub name: PathBuf,
    pub why: String,
}

impl Taken {
    pub fn new(flag: &'static str, name: &Path, why: String) -> Taken {
        Taken { flag, name: name.to_path_buf(), why }
    }

    /// A `.part` a running capture holds.
    pub fn part_in_use(part: &Path) -> Taken {
        let shown = part.display();
        let name = shown.to_string();
        let done = name.strip_suffix(".part").unwrap_or(&name);
        Taken::new(
            "-w",
            Path::new(done),
            format!(
                "{shown} is being written by another capture, running now (it holds the file's lock; `fuser -v \
                 {shown}` names the process): two captures cannot write one file; give this one another -w, or \
                 stop the other first"
            ),
        )
    }

    /// A `--tx-events` CSV a running capture holds.
    pub fn tx_in_use(path: &Path) -> Taken {
        let shown = path.display();
        Taken::new(
            "--tx-events",
            path,
            format!(
                "another capture is writing it, running now (it holds the file's lock; `fuser -v {shown}` names the \
                 process): two captures cannot write one file; give this one another --tx-events, or stop the other \
                 first"
            ),
        )
    }
}

impl std::fmt::Display for Taken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.flag, self.name.display(), self.why)
    }
}

impl std::error::Error for Taken {}

/// A write lock on the whole file, for `F_OFD_SETLK` and `F_OFD_GETLK`.
fn whole_file() -> libc::flock {
    libc::flock { l_type: libc::F_WRLCK as i16, l_whence: libc::SEEK_SET as i16, l_start: 0, l_len: 0, l_pid: 0 }
}

/// Locks `f` for this capture; false when another open file holds a lock on it. A file system without
/// these locks is taken as locked by us (`O_EXCL` still keeps two captures from one new `.part`).
fn lock(f: &File, path: &Path) -> bool {
    match fcntl(f, FcntlArg::F_OFD_SETLK(&whole_file())) {
        Ok(_) => true,
        Err(Errno::EAGAIN | Errno::EACCES) => false,
        Err(e) => {
            tracing::warn!("{}: not locked ({e}): a second capture would see it as a killed one's", path.display());
            true
        }
    }
}

/// Whether a running capture holds `path` (its lock is taken). Not a lock taken to look, which could
/// make a capture starting this instant fail to take its own.
pub(super) fn in_use(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(f) = File::open(path) else { return false };
    let mut l = whole_file();
    fcntl(&f, FcntlArg::F_OFD_GETLK(&mut l)).is_ok() && i32::from(l.l_type) != libc::F_UNLCK
}

/// Claims `part` for this capture (see [`create`]).
pub(super) fn create_part(part: &Path, replaceable: impl Fn(&Path) -> Result<(), Taken>) -> Result<Claim> {
    create(part, Messages { held: Taken::part_in_use, failed: part_failed }, replaceable)
}

/// Claims the `--tx-events` CSV (see [`create`]): the same lock as a `.part`'s, so that two captures of
/// one CSV do not empty each other's.
pub(super) fn create_tx(path: &Path, replaceable: impl Fn(&Path) -> Result<(), Taken>) -> Result<Claim> {
    create(path, Messages { held: Taken::tx_in_use, failed: tx_failed }, replaceable)
}

/// What [`create`] says of a file, each naming the flag and the file once: held by another capture,
/// or (the context of an error of the system's) not made.
struct Messages {
    held: fn(&Path) -> Taken,
    failed: fn(&Path) -> String,
}

/// A `.part` the system would not make (no permission, no space, a read-only file system).
fn part_failed(part: &Path) -> String {
    let shown = part.display();
    let name = shown.to_string();
    format!("-w {}: cannot create {shown}", name.strip_suffix(".part").unwrap_or(&name))
}

/// A `--tx-events` CSV the system would not make.
fn tx_failed(path: &Path) -> String {
    format!("--tx-events {}: cannot create it", path.display())
}

/// A file claimed for this capture: created anew, or an existing one [`create`] may take, locked, and
/// nothing in it changed yet.
#[derive(Debug)]
#[must_use = "a claim is taken, or released"]
pub(super) struct Claim {
    file: File,
    path: PathBuf,
    kind: Kind,
    failed: fn(&Path) -> String,
}

/// What a [`Claim`] holds.
#[derive(Debug)]
enum Kind {
    /// Made by the claim (`O_EXCL`), empty: removed when released.
    Made,
    /// A file that was there (empty, or a leftover `replaceable` allowed): emptied when taken, left
    /// as it was when released.
    Found,
    /// Not a regular file (a CSV to a FIFO): written as it is.
    AsIs,
}

impl Claim {
    /// The file, for this capture to write: a file that was there is emptied now, every file of the
    /// run claimed.
    pub fn take(self) -> Result<File> {
        if matches!(self.kind, Kind::Found) {
            self.file.set_len(0).with_context(|| (self.failed)(&self.path))?;
        }
        Ok(self.file)
    }

    /// Gives the file up, the start refused: one the claim made is removed while still locked (no other
    /// capture can have it) and still at its name; any other is left as it was found.
    pub fn release(self) {
        use std::os::unix::fs::MetadataExt;
        if !matches!(self.kind, Kind::Made) {
            return;
        }
        let id = |m: std::fs::Metadata| (m.dev(), m.ino());
        if let (Ok(a), Ok(b)) = (self.file.metadata().map(id), std::fs::symlink_metadata(&self.path).map(id))
            && a == b
            && let Err(e) = std::fs::remove_file(&self.path)
        {
            tracing::warn!("{}: not removed ({e}); this capture made it and wrote nothing to it", self.path.display());
        }
    }
}

/// Claims `path`: created anew (`O_EXCL`), or an existing file taken when no capture holds it and
/// `replaceable` allows it (empty, or with `--overwrite` a killed capture's), then locked. Nothing is
/// emptied here ([`Claim::take`] does, once every file of the run is claimed). Refused otherwise, saying
/// why: held by a running capture (`held`), or `replaceable`'s reason (each names the flag and the file:
/// the caller adds neither).
fn create(path: &Path, say: Messages, replaceable: impl Fn(&Path) -> Result<(), Taken>) -> Result<Claim> {
    let creating = || (say.failed)(path);
    let held = say.held;
    let claim = |file, kind| Claim { file, path: path.to_path_buf(), kind, failed: say.failed };
    // A file opened, then renamed away by the capture that held it (done) before its lock was ours, is
    // not `path`'s: the name is tried again, and is free by then. Bounded: renamed every time is a
    // capture after capture at this name, which a capture that holds it keeps off.
    for _ in 0..3 {
        let f = match OpenOptions::new().read(true).write(true).create_new(true).open(path) {
            Ok(f) => match hold(f, path) {
                Held::Ours(f) => return Ok(claim(f, Kind::Made)),
                // Another capture found it just made, and took it first.
                Held::Locked => return Err(held(path).into()),
                Held::Moved => continue,
            },
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                // Not a regular file: `replaceable` refuses it, or it is written as it is (a CSV to a
                // FIFO), not locked nor emptied. (Opened to write only, as `File::create` would: a FIFO
                // waits for its reader.)
                if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
                    replaceable(path)?;
                    let f = OpenOptions::new().write(true).open(path).with_context(creating)?;
                    return Ok(claim(f, Kind::AsIs));
                }
                OpenOptions::new().read(true).write(true).open(path).with_context(creating)?
            }
            Err(e) => return Err(e).with_context(creating),
        };
        match hold(f, path) {
            Held::Ours(f) => {
                replaceable(path)?;
                return Ok(claim(f, Kind::Found));
            }
            Held::Locked => return Err(held(path).into()),
            Held::Moved => {}
        }
    }
    Err(held(path).into())
}

/// What became of a file opened at a name when its lock was asked for.
enum Held {
    /// Locked, and still the file at the name.
    Ours(File),
    /// Another open file holds its lock: a running capture.
    Locked,
    /// Locked, but renamed or removed since it was opened (its lock dropped here).
    Moved,
}

/// Locks `f`, opened at `path`, and makes sure it is still the file there: a capture renames its
/// `.part` while it holds the lock and drops the lock once done, so a lock won on a file opened before
/// the rename is on that capture's complete file, now at another name (emptying it would lose it).
fn hold(f: File, path: &Path) -> Held {
    use std::os::unix::fs::MetadataExt;
    if !lock(&f, path) {
        return Held::Locked;
    }
    let id = |m: std::fs::Metadata| (m.dev(), m.ino());
    // (Followed as the open followed it: a `.part` that is a link to a file is that file.)
    match (f.metadata().map(id), std::fs::metadata(path).map(id)) {
        (Ok(a), Ok(b)) if a == b => Held::Ours(f),
        _ => Held::Moved,
    }
}

/// Gives `part` the name `path` unless something is there that `replaceable` does not allow (an empty
/// file, or with `--overwrite` an earlier capture, is replaced): true when renamed, false when the
/// frames stay in `part` (the caller says so). Never replaces anything else: `RENAME_NOREPLACE`, or on
/// a file system that refuses it (`EINVAL`: NFS, SMB) a hard link and an unlink, which do not either.
pub(super) fn commit(part: &Path, path: &Path, replaceable: impl Fn(&Path) -> bool) -> Result<bool> {
    match renameat2(AT_FDCWD, part, AT_FDCWD, path, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => return Ok(true),
        Err(Errno::EEXIST) => {}
        Err(Errno::EINVAL | Errno::ENOSYS) => {
            if link_then_unlink(part, path).with_context(|| {
                format!(
                    "{}: the file system neither renames without replacing nor links: the frames are in {}; give \
                     it its name yourself (mv -n {} {})",
                    path.display(),
                    part.display(),
                    part.display(),
                    path.display()
                )
            })? {
                return Ok(true);
            }
        }
        Err(e) => return Err(not_renamed(part, path, e.into())),
    }
    if !replaceable(path) {
        return Ok(false);
    }
    // What was there when the run began, or a capture --overwrite replaces: checked just now.
    std::fs::rename(part, path).map_err(|e| not_renamed(part, path, e))?;
    Ok(true)
}

/// A complete `part` the system would not rename (its directory made read-only, no permission): where
/// its frames are, and what to do.
fn not_renamed(part: &Path, path: &Path, e: std::io::Error) -> anyhow::Error {
    let (part, path) = (part.display(), path.display());
    anyhow::anyhow!(
        "-w {path}: {part} could not be renamed to {path}: {e}; its frames are in {part}, complete: give it its \
         name yourself (mv -n {part} {path}) or read it as it is (`wirestamp analyze {part}`)"
    )
}

/// `part` named `path` by a hard link, then its old name removed: false, nothing changed, when `path`
/// exists (link(2) replaces nothing).
fn link_then_unlink(part: &Path, path: &Path) -> std::io::Result<bool> {
    match std::fs::hard_link(part, path) {
        Ok(()) => std::fs::remove_file(part).map(|()| true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// A file whose name was taken while the capture wrote it: its frames are in `part`.
#[derive(Debug, Clone)]
pub(super) struct Kept {
    pub part: PathBuf,
    pub path: PathBuf,
    pub bytes: u64,
}

impl Kept {
    /// What happened and what to do, naming both files.
    pub fn message(&self) -> String {
        let (part, path) = (self.part.display(), self.path.display());
        format!(
            "-w {path}: {path} was made (or written) while this capture ran, not by it: left as it is; this \
             capture's frames are kept in {part} ({} bytes, complete). Move it to a free name (mv -n {part} {}) \
             or read it as it is (`wirestamp analyze {part}`)",
            self.bytes,
            super::recovered_name(&self.path).display()
        )
    }
}

/// The error of a capture that kept files under their `.part` names: the last one's message in full,
/// the earlier ones (said as each happened) named.
pub(super) fn kept_error(kept: &[Kept], last_kept: bool) -> Option<String> {
    let (last, earlier) = match (kept.split_last(), last_kept) {
        (None, _) => return None,
        (Some((last, earlier)), true) => (Some(last), earlier),
        (Some(_), false) => (None, kept),
    };
    let names = |k: &[Kept]| k.iter().map(|k| k.part.display().to_string()).collect::<Vec<_>>().join(", ");
    Some(match (last, earlier) {
        (Some(last), []) => last.message(),
        (Some(last), earlier) => format!(
            "{}; earlier names were taken too: the frames of those files are kept in (said above): {}",
            last.message(),
            names(earlier)
        ),
        (None, earlier) => format!(
            "names were taken while this capture ran: the frames of those files are kept in (said above): {}",
            names(earlier)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wirestamp-claim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A `.part` one capture holds is refused to a second (the lock of another open file, as another
    /// process's is), whatever `replaceable` says, and left as it was; once the first closes it (as a
    /// killed capture's is closed by the kernel), it is `replaceable`'s to judge.
    #[test]
    fn a_part_held_by_a_capture_is_refused_to_another() {
        let dir = test_dir("held");
        let part = dir.join("c.pcapng.part");
        let first = create_part(&part, |_| Ok(())).unwrap().take().unwrap();
        std::io::Write::write_all(&mut &first, b"first capture's bytes").unwrap();
        assert!(in_use(&part));
        let e = create_part(&part, |_| Ok(())).unwrap_err();
        let p = part.display();
        assert_eq!(
            format!("{e:#}"),
            format!(
                "-w {d}/c.pcapng: {p} is being written by another capture, running now (it holds the file's lock; \
                 `fuser -v {p}` names the process): two captures cannot write one file; give this one another -w, \
                 or stop the other first",
                d = dir.display()
            )
        );
        assert_eq!(std::fs::read(&part).unwrap(), b"first capture's bytes");
        drop(first);
        assert!(!in_use(&part));
        let e = create_part(&part, |p| Err(Taken::new("-w", p, "a leftover".into()))).unwrap_err();
        assert_eq!(format!("{e:#}"), format!("-w {}: a leftover", part.display()));
        assert_eq!(std::fs::read(&part).unwrap(), b"first capture's bytes");
        // Allowed (--overwrite): claimed, locked, left as it is until taken; released, as it was.
        let again = create_part(&part, |_| Ok(())).unwrap();
        assert_eq!((std::fs::read(&part).unwrap(), in_use(&part)), (b"first capture's bytes".to_vec(), true));
        again.release();
        assert_eq!((std::fs::read(&part).unwrap(), in_use(&part)), (b"first capture's bytes".to_vec(), false));
        // Taken: emptied, still locked.
        let again = create_part(&part, |_| Ok(())).unwrap().take().unwrap();
        assert_eq!((std::fs::read(&part).unwrap().len(), in_use(&part)), (0, true));
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file a claim made is removed when the claim is released (a start refused after it), while it
    /// is still the one at the name; one moved away meanwhile is left, and nothing is removed at the name.
    #[test]
    fn a_released_claim_removes_only_the_file_it_made() {
        let dir = test_dir("released");
        let part = dir.join("c.pcapng.part");
        create_part(&part, |_| panic!("nothing was there")).unwrap().release();
        assert!(!part.exists());
        let made = create_part(&part, |_| panic!("nothing was there")).unwrap();
        std::fs::rename(&part, dir.join("moved")).unwrap();
        std::fs::write(&part, b"someone's notes").unwrap();
        made.release();
        assert_eq!(std::fs::read(&part).unwrap(), b"someone's notes");
        assert!(dir.join("moved").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A second capture that opened a `.part` just before the capture holding it renamed it (and ended,
    /// dropping its lock) wins a lock on the complete file, now at its name: that file is not taken
    /// (emptying it lost the first capture whole); the name, free again, gets a new `.part`.
    #[test]
    fn a_lock_won_on_a_file_renamed_meanwhile_is_not_taken() {
        let dir = test_dir("moved");
        let (part, path) = (dir.join("c.pcapng.part"), dir.join("c.pcapng"));
        let first = create_part(&part, |_| Ok(())).unwrap().take().unwrap();
        std::io::Write::write_all(&mut &first, b"first capture's frames").unwrap();
        let second = OpenOptions::new().read(true).write(true).open(&part).unwrap();
        assert!(commit(&part, &path, |_| panic!("nothing was there")).unwrap());
        drop(first);
        // The lock alone does not tell: the renamed file is unlocked now.
        let probe = File::open(&path).unwrap();
        assert!(lock(&probe, &path));
        drop(probe);
        assert!(matches!(hold(second, &part), Held::Moved));
        assert_eq!(std::fs::read(&path).unwrap(), b"first capture's frames");
        // The name is free again: a new, empty `.part`, the first capture's file as it was.
        let again = create_part(&part, |_| panic!("nothing is at the .part")).unwrap().take().unwrap();
        assert_eq!((std::fs::read(&part).unwrap().len(), in_use(&part)), (0, true));
        assert_eq!(std::fs::read(&path).unwrap(), b"first capture's frames");
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A `.part` that is a symbolic link to a file is that file (opened through the link), not a file
    /// renamed meanwhile: taken as the file is, not refused as held by another capture.
    #[test]
    fn a_part_that_links_to_a_file_is_that_file() {
        let dir = test_dir("linked");
        let (part, target) = (dir.join("c.pcapng.part"), dir.join("elsewhere"));
        std::fs::write(&target, b"").unwrap();
        std::os::unix::fs::symlink(&target, &part).unwrap();
        let f = create_part(&part, |_| Ok(())).unwrap().take().unwrap();
        std::io::Write::write_all(&mut &f, b"frames").unwrap();
        assert!(in_use(&target));
        assert_eq!(std::fs::read(&target).unwrap(), b"frames");
        drop(f);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The rename takes a free name; a name taken is left byte for byte, the frames staying in the
    /// `.part`, unless `replaceable` allows it.
    #[test]
    fn commit_replaces_only_what_it_may() {
        let dir = test_dir("commit");
        let (part, path) = (dir.join("c.pcapng.part"), dir.join("c.pcapng"));
        std::fs::write(&part, b"frames").unwrap();
        assert!(commit(&part, &path, |_| panic!("nothing was there")).unwrap());
        assert_eq!((std::fs::read(&path).unwrap(), part.exists()), (b"frames".to_vec(), false));
        std::fs::write(&part, b"more frames").unwrap();
        assert!(!commit(&part, &path, |_| false).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"frames");
        assert_eq!(std::fs::read(&part).unwrap(), b"more frames");
        assert!(commit(&part, &path, |_| true).unwrap());
        assert_eq!((std::fs::read(&path).unwrap(), part.exists()), (b"more frames".to_vec(), false));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The fallback for file systems that refuse `RENAME_NOREPLACE` replaces nothing either.
    #[test]
    fn link_then_unlink_replaces_nothing() {
        let dir = test_dir("link");
        let (part, path) = (dir.join("c.pcapng.part"), dir.join("c.pcapng"));
        std::fs::write(&part, b"frames").unwrap();
        std::fs::write(&path, b"someone else's").unwrap();
        assert!(!link_then_unlink(&part, &path).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's");
        assert_eq!(std::fs::read(&part).unwrap(), b"frames");
        std::fs::remove_file(&path).unwrap();
        assert!(link_then_unlink(&part, &path).unwrap());
        assert_eq!((std::fs::read(&path).unwrap(), part.exists()), (b"frames".to_vec(), false));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
