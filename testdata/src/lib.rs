//! Test support shared by every crate's tests: the reference data folder, peer tools as oracles, and a
//! seeded generator for mutation tests.
//!
//! Reference captures stay in `../shared/data` (never copied into the project). A test that needs them
//! calls [`shared_data`], which panics with the path it looked at when the folder is missing: a missing
//! oracle is a failure, never a silent pass.

pub mod netns;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shared reference data folder: `$WIRESTAMP_SHARED_DATA`, else `../shared/data` beside the
/// workspace root. Panics, naming the path, when it does not exist.
pub fn shared_data() -> PathBuf {
    let dir = match std::env::var_os("WIRESTAMP_SHARED_DATA") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
    };
    assert!(
        dir.join("README.md").is_file(),
        "reference data not found at {} (set WIRESTAMP_SHARED_DATA to the shared/data folder)",
        dir.display()
    );
    dir
}

/// A file inside the shared reference data folder; panics naming it when it is missing.
pub fn data_file(rel: &str) -> PathBuf {
    let p = shared_data().join(rel);
    assert!(p.is_file(), "reference file missing: {}", p.display());
    p
}

/// Runs `tshark -r FILE -T fields -E separator=| -E occurrence=a ... -e F1 -e F2 ...` with extra args
/// (e.g. `--enable-heuristic metamako_eth`) and returns one row of field strings per frame.
/// Panics with tshark's stderr when it is missing or fails, so an absent oracle fails the test.
pub fn tshark_fields(file: &Path, extra: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(file).args(extra).args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=a"]);
    for f in fields {
        cmd.arg("-e").arg(f);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run tshark (scripts/setup.sh installs it): {e}"));
    assert!(out.status.success(), "tshark failed on {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| l.split('|').map(str::to_owned).collect()).collect()
}

/// Parses tshark's `frame.time_epoch` (`seconds.fraction`, up to 9 digits) into integer nanoseconds,
/// with no float on the way. tshark prints negative times with the seconds rounded toward minus
/// infinity and a positive fraction (-6.5 s is `-7.500000000`), so the fraction is always added.
pub fn epoch_to_ns(s: &str) -> i64 {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    assert!(frac.len() <= 9, "more than 9 fractional digits in {s}");
    let sec: i64 = sec.parse().unwrap_or_else(|_| panic!("bad epoch seconds in {s}"));
    let frac_ns: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().expect("bad fraction") };
    sec * 1_000_000_000 + frac_ns
}

/// CPU ticks (user + system) process `pid` has used: /proc/PID/stat fields 14 and 15. A process that
/// spins takes about 100 a second; one that waits, next to none.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name may hold spaces: fields count from after its closing parenthesis.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_parsing() {
        assert_eq!(epoch_to_ns("1527552589.170404442"), 1_527_552_589_170_404_442);
        assert_eq!(epoch_to_ns("1473799831.415144"), 1_473_799_831_415_144_000);
        assert_eq!(epoch_to_ns("12"), 12_000_000_000);
        assert_eq!(epoch_to_ns("-7.500000000"), -6_500_000_000);
    }
}

/// xorshift64*: a small fixed-seed generator for mutation and robustness tests, so a failure
/// reproduces from its seed and the tests need no dependency.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits (the seed must not be 0).
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A random byte.
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}
