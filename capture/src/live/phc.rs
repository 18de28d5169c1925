//! PTP hardware clocks (linux/ptp_clock.h): PHC-to-CLOCK_REALTIME offset with PTP_SYS_OFFSET_PRECISE
//! (cross-timestamp from the device), else PTP_SYS_OFFSET_EXTENDED (the minimum-delay sample), else
//! PTP_SYS_OFFSET, and a plain read of the PHC through its dynamic POSIX clock.
//!
//! ```text
//! ptp_clock_time (16)      ptp_sys_offset (832)            ptp_sys_offset_extended (1216)
//!  0 sec  i64               0 n_samples u32, rsv[3]         0 n_samples u32, clockid i32, rsv[2]
//!  8 nsec u32               16 ts[51]: sys,phc,sys,...,sys  16 ts[25][3]: {sys_before, phc, sys_after}
//! 12 reserved u32
//! ptp_sys_offset_precise (64): 0 device, 16 sys_realtime, 32 sys_monoraw, 48 rsv[4]
//! ```

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// _IOW('=', 5, struct ptp_sys_offset).
pub const PTP_SYS_OFFSET: libc::c_ulong = 0x4340_3d05;
/// _IOWR('=', 8, struct ptp_sys_offset_precise).
pub const PTP_SYS_OFFSET_PRECISE: libc::c_ulong = 0xc040_3d08;
/// _IOWR('=', 9, struct ptp_sys_offset_extended).
pub const PTP_SYS_OFFSET_EXTENDED: libc::c_ulong = 0xc4c0_3d09;
/// PTP_MAX_SAMPLES.
pub const MAX_SAMPLES: usize = 25;
const SYS_OFFSET_LEN: usize = 16 + (2 * MAX_SAMPLES + 1) * 16;
const EXTENDED_LEN: usize = 16 + MAX_SAMPLES * 3 * 16;
const PRECISE_LEN: usize = 64;

/// How an offset was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Precise,
    Extended,
    Basic,
    ReadAround,
}

/// PHC minus CLOCK_REALTIME, with the half-width of the window it was measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhcOffset {
    pub offset_ns: i64,
    pub uncertainty_ns: i64,
    pub method: Method,
}

fn clock_time(b: &[u8], at: usize) -> i64 {
    let sec = i64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let nsec = u32::from_ne_bytes(b[at + 8..at + 12].try_into().expect("4 bytes"));
    sec.saturating_mul(1_000_000_000).saturating_add(i64::from(nsec))
}

/// Decodes a PTP_SYS_OFFSET_PRECISE reply: the device's own cross-timestamp, no window.
pub fn decode_precise(b: &[u8; PRECISE_LEN]) -> PhcOffset {
    PhcOffset { offset_ns: clock_time(b, 0) - clock_time(b, 16), uncertainty_ns: 0, method: Method::Precise }
}

/// Picks the (sys_before, phc, sys_after) sample with the smallest window.
fn best(samples: impl Iterator<Item = (i64, i64, i64)>, method: Method) -> Option<PhcOffset> {
    samples.filter(|(b, _, a)| a >= b).min_by_key(|(b, _, a)| a - b).map(|(b, p, a)| PhcOffset {
        offset_ns: p - (b + (a - b) / 2),
        uncertainty_ns: (a - b + 1) / 2,
        method,
    })
}

/// Decodes a PTP_SYS_OFFSET_EXTENDED reply.
pub fn decode_extended(b: &[u8; EXTENDED_LEN]) -> Option<PhcOffset> {
    let n = (u32::from_ne_bytes(b[0..4].try_into().ok()?) as usize).min(MAX_SAMPLES);
    let s = (0..n).map(|i| {
        let at = 16 + i * 48;
        (clock_time(b, at), clock_time(b, at + 16), clock_time(b, at + 32))
    });
    best(s, Method::Extended)
}

/// Decodes a PTP_SYS_OFFSET reply (sys, phc, sys, phc, ..., sys).
pub fn decode_basic(b: &[u8; SYS_OFFSET_LEN]) -> Option<PhcOffset> {
    let n = (u32::from_ne_bytes(b[0..4].try_into().ok()?) as usize).min(MAX_SAMPLES);
    let s = (0..n).map(|i| {
        let at = 16 + i * 32;
        (clock_time(b, at), clock_time(b, at + 16), clock_time(b, at + 32))
    });
    best(s, Method::Basic)
}

fn ioctl(f: &File, req: libc::c_ulong, buf: &mut [u8]) -> io::Result<()> {
    // SAFETY: `buf` is exactly the size encoded in `req` and stays alive for the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), req as _, buf.as_mut_ptr()) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Measures `/dev/ptpN`'s offset to CLOCK_REALTIME with the best method the driver answers.
pub fn measure(dev: &Path) -> io::Result<PhcOffset> {
    let f = File::open(dev)?;
    let mut p = [0u8; PRECISE_LEN];
    if ioctl(&f, PTP_SYS_OFFSET_PRECISE, &mut p).is_ok() {
        return Ok(decode_precise(&p));
    }
    let mut e = [0u8; EXTENDED_LEN];
    e[0..4].copy_from_slice(&(MAX_SAMPLES as u32).to_ne_bytes());
    if ioctl(&f, PTP_SYS_OFFSET_EXTENDED, &mut e).is_ok()
        && let Some(o) = decode_extended(&e)
    {
        return Ok(o);
    }
    let mut s = [0u8; SYS_OFFSET_LEN];
    s[0..4].copy_from_slice(&(MAX_SAMPLES as u32).to_ne_bytes());
    ioctl(&f, PTP_SYS_OFFSET, &mut s)?;
    decode_basic(&s).ok_or_else(|| io::Error::other("PTP_SYS_OFFSET returned no usable sample"))
}

/// The PHC devices present (`/dev/ptp*`), sorted.
pub fn devices() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir("/dev")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("ptp")))
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(b: &mut [u8], at: usize, ns: i64) {
        b[at..at + 8].copy_from_slice(&(ns / 1_000_000_000).to_ne_bytes());
        b[at + 8..at + 12].copy_from_slice(&((ns % 1_000_000_000) as u32).to_ne_bytes());
    }

    #[test]
    fn ioctl_numbers_match_the_ioc_encoding() {
        // _IOC(dir, '=', nr, size) = dir << 30 | size << 16 | 0x3d << 8 | nr; write = 1, read|write = 3.
        assert_eq!(PTP_SYS_OFFSET, (1 << 30) | (832 << 16) | (0x3d << 8) | 5);
        assert_eq!(PTP_SYS_OFFSET_PRECISE, (3 << 30) | (64 << 16) | (0x3d << 8) | 8);
        assert_eq!(PTP_SYS_OFFSET_EXTENDED, (3 << 30) | (1216 << 16) | (0x3d << 8) | 9);
    }

    #[test]
    fn precise_is_device_minus_realtime() {
        let mut b = [0u8; PRECISE_LEN];
        put(&mut b, 0, 1_700_000_037_000_000_500); // PHC in TAI, 37 s ahead
        put(&mut b, 16, 1_700_000_000_000_000_000);
        put(&mut b, 32, 123);
        let o = decode_precise(&b);
        assert_eq!((o.offset_ns, o.uncertainty_ns, o.method), (37_000_000_500, 0, Method::Precise));
    }

    #[test]
    fn extended_takes_the_minimum_delay_sample() {
        let mut b = [0u8; EXTENDED_LEN];
        b[0..4].copy_from_slice(&3u32.to_ne_bytes());
        let t = 1_700_000_000_000_000_000i64;
        // (before, phc, after): windows 1000, 200, 5000 ns; the second wins: 250 - (100 + 100) = 50.
        for (i, (bf, p, af)) in [(0, 900, 1000), (100, 250, 300), (0, 0, 5000)].into_iter().enumerate() {
            put(&mut b, 16 + i * 48, t + bf);
            put(&mut b, 16 + i * 48 + 16, t + p);
            put(&mut b, 16 + i * 48 + 32, t + af);
        }
        let o = decode_extended(&b).unwrap();
        assert_eq!((o.offset_ns, o.uncertainty_ns, o.method), (50, 100, Method::Extended));
        b[0..4].copy_from_slice(&0u32.to_ne_bytes());
        assert_eq!(decode_extended(&b), None);
    }

    #[test]
    fn basic_interleaves_sys_and_phc() {
        let mut b = [0u8; SYS_OFFSET_LEN];
        b[0..4].copy_from_slice(&2u32.to_ne_bytes());
        let t = 1_700_000_000_000_000_000i64;
        // sys0=0, phc0=-400 (window 0..600), sys1=600, phc1=700 (window 600..700), sys2=700.
        for (i, v) in [0, -400, 600, 700, 700].into_iter().enumerate() {
            put(&mut b, 16 + i * 16, t + v);
        }
        let o = decode_basic(&b).unwrap();
        assert_eq!((o.offset_ns, o.uncertainty_ns), (700 - 650, 50));
    }

    #[test]
    fn no_phc_on_this_host() {
        // kernel.md 11a: no /dev/ptp* on these machines; opening one is ENOENT.
        assert!(devices().is_empty());
        assert_eq!(measure(Path::new("/dev/ptp0")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
