//! Output files of the commands (`--pairs`, `--unmatched`, `--hlog`, `frames -o`, `synth --truth`): they never replace
//! a capture or another file the user keeps, and never one of the run's inputs or other outputs.

use anyhow::{Context, Result, bail};
use std::path::Path;

/// Creates the output file `p` of `flag`, which begins with `first_line`. An existing file is only
/// replaced when empty or when it begins so (an earlier run's output): anything else is refused,
/// because `--pairs tapA.pcap tapB.pcap` (the file name forgotten) would otherwise destroy a capture.
pub fn create_output(p: &Path, flag: &str, first_line: &str) -> Result<std::fs::File> {
    refuse_stdout(p, flag)?;
    if kept_file(p) && !begins_with(p, first_line) {
        bail!(
            "{flag} {}: the file exists and is not an earlier {flag} output: refusing to overwrite it \
             (was the file name after {flag} forgotten, so that a capture took its place?); \
             remove it or choose another name",
            p.display()
        );
    }
    std::fs::File::create(p).with_context(|| format!("{flag} {}: cannot create it", p.display()))
}

/// Whether `p` is a regular file with something in it (`/dev/stdout` or a FIFO must not be read).
pub fn kept_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0)
}

/// Whether the file `p` begins with `first_line`.
pub fn begins_with(p: &Path, first_line: &str) -> bool {
    begins_with_bytes(p, first_line.as_bytes())
}

/// Whether the file `p` begins with `head`.
pub fn begins_with_bytes(p: &Path, want: &[u8]) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let read = std::fs::File::open(p).and_then(|f| f.take(want.len() as u64).read_to_end(&mut head));
    read.is_ok() && head == want
}

/// What a path names: the file's device and inode when it exists (through symbolic and hard links
/// alike), else the path through its resolved directory: an output not made yet, which `x.csv` and
/// `./x.csv` both name.
#[derive(Debug, PartialEq, Eq, Hash)]
enum FileId {
    Inode(u64, u64),
    Path(std::path::PathBuf),
}

fn file_id(p: &Path) -> FileId {
    use std::os::unix::fs::MetadataExt;
    // `-`, standard input: the file it reads, when redirected from one (`analyze f.pcap - < f.pcap`).
    let p = if p.as_os_str() == wirestamp_capture::STDIN { Path::new("/dev/stdin") } else { p };
    if let Ok(m) = std::fs::metadata(p) {
        return FileId::Inode(m.dev(), m.ino());
    }
    // A symbolic link to a file not made yet names its target (a chain of them, 8 deep at most).
    let mut p = p.to_path_buf();
    for _ in 0..8 {
        match std::fs::read_link(&p) {
            Ok(target) => p = p.parent().unwrap_or(Path::new(".")).join(target),
            Err(_) => break,
        }
    }
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match (dir.canonicalize(), p.file_name()) {
        (Ok(d), Some(name)) => FileId::Path(d.join(name)),
        _ => FileId::Path(p.clone()),
    }
}

/// Whether `a` and `b` name the same file: one device and inode, or for files not made yet one
/// resolved directory and name.
pub fn same_file(a: &Path, b: &Path) -> bool {
    file_id(a) == file_id(b)
}

/// The first two of `paths` (by index) that name the same file. One look at each: a day of
/// one-second captures is 86,400 files.
pub fn same_pair<P: AsRef<Path>>(paths: &[P]) -> Option<(usize, usize)> {
    let mut seen = std::collections::HashMap::with_capacity(paths.len());
    for (j, p) in paths.iter().enumerate() {
        match seen.entry(file_id(p.as_ref())) {
            std::collections::hash_map::Entry::Occupied(i) => return Some((*i.get(), j)),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(j),
        };
    }
    None
}

/// Refuses two of `paths` (flag, path) that name the same file: one output written over another, or
/// over an input.
pub fn distinct(paths: &[(&str, &Path)]) -> Result<()> {
    let files: Vec<&Path> = paths.iter().map(|p| p.1).collect();
    match same_pair(&files) {
        Some((i, j)) => {
            bail!("{} and {} name the same file, {}: each needs its own", paths[i].0, paths[j].0, paths[j].1.display())
        }
        None => Ok(()),
    }
}

/// `-` names standard input for captures; as an output it would make a file named `-`, which no
/// one asked for (and standard output has the command's own output: the report, frames' rows):
/// refused.
pub fn refuse_stdout(p: &Path, flag: &str) -> Result<()> {
    if p.as_os_str() == wirestamp_capture::STDIN {
        bail!(
            "{flag} -: outputs are written to a named file (standard output has the command's own output); give a \
             file name"
        );
    }
    Ok(())
}

/// `println!` that hands back the write's error instead of panicking: a closed pipe (`wirestamp synth f
/// | head -1`) then ends the command quietly in `main`, as for `analyze` and `frames`, and a full
/// disk is an error naming standard output.
pub fn say(line: std::fmt::Arguments<'_>) -> Result<()> {
    use std::io::Write;
    writeln!(std::io::stdout(), "{line}").context(STDOUT_WRITING)
}

/// What a failed write to standard output says before the system's reason (`> /dev/full`).
pub const STDOUT_WRITING: &str = "standard output: writing";

/// What a failed write to output `flag` `p` says before the system's reason: which output failed.
pub fn writing(flag: &str, p: &Path) -> String {
    format!("{flag} {}: writing", p.display())
}
