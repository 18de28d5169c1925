//! The mounts of a mountinfo text (`/proc/self/mountinfo`, proc(5)): where a file system is mounted,
//! which `--cgroup` (cgroup2) and `wirestamp doctor` (cgroup2, bpffs) need to know.

/// The (mount point, file system type) of each mount of a mountinfo text, in its order: a line is `ID
/// PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS`, the mount point with the
/// kernel's octal escapes (`\040` a space, `\011` a tab, `\012` a newline, `\134` a backslash)
/// undone. A line without the ` - ` separator or those fields is passed over.
pub fn mounts(info: &str) -> impl Iterator<Item = (String, &str)> {
    info.lines().filter_map(|l| {
        let (mount, rest) = l.split_once(" - ")?;
        let dir = mount.split_whitespace().nth(4)?;
        Some((unescape(dir), rest.split_whitespace().next()?))
    })
}

/// `s` with each `\` and three octal digits as the byte they give.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
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
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hybrid host's lines (cgroup v1 controllers beside the unified v2 hierarchy), bpffs with a
    /// space in its mount point, a mount point with a tab, a backslash and a `\` not followed by three
    /// octal digits, optional tags before the separator, and two lines that are not mounts.
    #[test]
    fn mount_points_and_types() {
        let info = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                    32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:7 - cgroup cgroup rw,cpu\n\
                    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:8 master:2 - cgroup2 cgroup2 rw\n\
                    50 23 0:40 / /sys/fs/b\\040pf rw,relatime shared:9 - bpf bpf rw\n\
                    51 23 0:41 / /mnt/a\\011b\\134c\\9d\\04 rw - ext4 /dev/sda1 rw\n\
                    no separator here\n\
                    52 23 0:42 / - short\n";
        let got: Vec<(String, &str)> = mounts(info).collect();
        let want = [
            ("/sys/fs/cgroup", "tmpfs"),
            ("/sys/fs/cgroup/cpu", "cgroup"),
            ("/sys/fs/cgroup/unified", "cgroup2"),
            ("/sys/fs/b pf", "bpf"),
            ("/mnt/a\tb\\c\\9d\\04", "ext4"),
        ];
        assert_eq!(got, want.map(|(m, t)| (m.to_string(), t)));
    }
}
