//! The mounts of a mountinfo text (`/proc/self/mountinfo`, proc(5)): where a file system is mounted,
//! which `--cgroup` (cgroup2) and `wirestamp doctor` (cgroup2, bpffs) need to know.
//!
//! The text is read as bytes: a mount point may be any bytes (the kernel escapes only space, tab,
//! newline and backslash), and one that is not UTF-8 made the whole text unreadable as a string,
//! which read as "no cgroup2 mounted".

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// This process's mountinfo.
pub const MOUNTINFO: &str = "/proc/self/mountinfo";

/// [`MOUNTINFO`]'s text, as bytes; an error names the file.
pub fn read_mountinfo() -> io::Result<Vec<u8>> {
    std::fs::read(MOUNTINFO).map_err(|e| io::Error::new(e.kind(), format!("cannot read {MOUNTINFO}: {e}")))
}

/// The (mount point, file system type) of each mount of a mountinfo text, in its order: a line is `ID
/// PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS`, the mount point with the
/// kernel's octal escapes (`\040` a space, `\011` a tab, `\012` a newline, `\134` a backslash)
/// undone, its bytes kept as they are; the type read lossily. A line without the ` - ` separator or
/// those fields is passed over.
pub fn mounts(info: &[u8]) -> impl Iterator<Item = (PathBuf, String)> + '_ {
    info.split(|&b| b == b'\n').filter_map(|l| {
        let sep = l.windows(3).position(|w| w == b" - ")?;
        let dir = fields(&l[..sep]).nth(4)?;
        let fstype = fields(&l[sep + 3..]).next()?;
        Some((PathBuf::from(OsString::from_vec(unescape(dir))), String::from_utf8_lossy(fstype).into_owned()))
    })
}

/// The space-separated fields of `b`: the kernel escapes space, tab, newline and backslash in them,
/// and nothing else, so a carriage return or form feed is a byte of a field, not a separator.
fn fields(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    b.split(|&c| c == b' ').filter(|f| !f.is_empty())
}

/// `b` with each `\` and three octal digits as the byte they give.
fn unescape(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let digits = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match digits.map(|d| d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'))) {
            Some(v) if v <= 0xff => {
                out.push(v as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(info: &[u8]) -> Vec<(PathBuf, String)> {
        mounts(info).collect()
    }

    fn want(v: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        v.iter().map(|(m, t)| (PathBuf::from(m), t.to_string())).collect()
    }

    /// A hybrid host's lines (cgroup v1 controllers beside the unified v2 hierarchy), bpffs with a
    /// space in its mount point, a mount point with a tab, a backslash and a `\` not followed by three
    /// octal digits, optional tags before the separator, and two lines that are not mounts.
    #[test]
    fn mount_points_and_types() {
        let info = b"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                    32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:7 - cgroup cgroup rw,cpu\n\
                    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:8 master:2 - cgroup2 cgroup2 rw\n\
                    50 23 0:40 / /sys/fs/b\\040pf rw,relatime shared:9 - bpf bpf rw\n\
                    51 23 0:41 / /mnt/a\\011b\\134c\\9d\\04 rw - ext4 /dev/sda1 rw\n\
                    no separator here\n\
                    52 23 0:42 / - short\n";
        assert_eq!(
            pairs(info),
            want(&[
                ("/sys/fs/cgroup", "tmpfs"),
                ("/sys/fs/cgroup/cpu", "cgroup"),
                ("/sys/fs/cgroup/unified", "cgroup2"),
                ("/sys/fs/b pf", "bpf"),
                ("/mnt/a\tb\\c\\9d\\04", "ext4"),
            ])
        );
    }

    /// The kernel escapes only space, tab, newline and backslash: a mount point (or root)
    /// holding a carriage return or a form feed is written raw, and is one field.
    #[test]
    fn a_mount_point_with_a_raw_cr_or_form_feed_is_one_field() {
        let info = b"61 23 8:2 / /mnt/a\rb rw - ext4 /dev/sda2 rw\n\
                     62 23 8:3 /x\x0cy /mnt/c rw - ext4 /dev/sda3 rw\n";
        let got = pairs(info);
        let path = |b: &[u8]| PathBuf::from(OsString::from_vec(b.to_vec()));
        assert_eq!(got, vec![(path(b"/mnt/a\rb"), "ext4".to_string()), (path(b"/mnt/c"), "ext4".to_string())]);
    }

    /// A mount point that is not UTF-8 (Latin-1 `caf\xe9`, as the kernel writes it: unescaped) among
    /// good lines: every line is read, that one's bytes kept as they are, and the lines after it too
    /// (the cgroup2 and bpf mounts that `--cgroup` and doctor look for).
    #[test]
    fn a_mount_point_that_is_not_utf8_leaves_the_other_lines_read() {
        let info = b"31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
                     60 23 8:1 / /media/caf\xe9 rw,relatime - vfat /dev/sdb1 rw\n\
                     41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
                     50 23 0:40 / /sys/fs/bpf rw - bpf bpf rw\n";
        let got = pairs(info);
        let latin1 = PathBuf::from(OsString::from_vec(b"/media/caf\xe9".to_vec()));
        assert_eq!(
            got,
            vec![
                (PathBuf::from("/sys/fs/cgroup"), "tmpfs".to_string()),
                (latin1, "vfat".to_string()),
                (PathBuf::from("/sys/fs/cgroup/unified"), "cgroup2".to_string()),
                (PathBuf::from("/sys/fs/bpf"), "bpf".to_string()),
            ]
        );
    }
}
