//! Offline read throughput: `cargo bench -p wirestamp-capture --bench read`.
//!
//! Generates (once, into `$CARGO_TARGET_TMPDIR`) a nanosecond pcap and the same frames as pcapng
//! (if_tsresol = 9): `WIRESTAMP_BENCH_FRAMES` (default 5,000,000) Ethernet/IPv4/UDP frames of
//! 60-100 bytes. Reads each through `CaptureReader` (counting frames and summing one byte per
//! frame so the work is not optimised away) and times `tcpdump -r F -w /dev/null` on the same
//! file in the same run. Prints frames/s, GB/s and the ratio to tcpdump (best of 3 runs each;
//! the files are in the page cache after being written).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use wirestamp_capture::CaptureReader;

fn frame(i: u64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[0x01, 0x00, 0x5e, 0x01, 0x02, 0x03, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let ip_len = (len - 14) as u16;
    out.extend_from_slice(&[0x45, 0]);
    out.extend_from_slice(&ip_len.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 233, 54, 12, 111]);
    out.extend_from_slice(&30001u16.to_be_bytes());
    out.extend_from_slice(&26477u16.to_be_bytes());
    out.extend_from_slice(&(ip_len - 20).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&i.to_be_bytes());
    out.resize(len, (i % 251) as u8);
}

/// Writes the pcap and pcapng files; returns their paths.
fn generate(dir: &Path, n: u64) -> std::io::Result<(PathBuf, PathBuf)> {
    let pcap = dir.join(format!("bench-{n}.pcap"));
    let ng = dir.join(format!("bench-{n}.pcapng"));
    if pcap.exists() && ng.exists() {
        return Ok((pcap, ng));
    }
    let mut p = BufWriter::with_capacity(1 << 20, File::create(&pcap)?);
    let mut g = BufWriter::with_capacity(1 << 20, File::create(&ng)?);
    p.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
    p.write_all(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0])?;
    p.write_all(&65535u32.to_le_bytes())?;
    p.write_all(&1u32.to_le_bytes())?;
    // SHB (28 bytes) and IDB with if_tsresol = 9 (32 bytes).
    g.write_all(&[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0])?;
    g.write_all(&[0xff; 8])?;
    g.write_all(&28u32.to_le_bytes())?;
    g.write_all(&[1, 0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0])?;
    g.write_all(&32u32.to_le_bytes())?;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = Vec::with_capacity(128);
    let mut ts: u64 = 1_700_000_000_000_000_000;
    for i in 0..n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = 60 + (seed % 41) as usize;
        ts += 50 + seed % 1000;
        frame(i, len, &mut buf);
        let (s, ns) = ((ts / 1_000_000_000) as u32, (ts % 1_000_000_000) as u32);
        for v in [s, ns, len as u32, len as u32] {
            p.write_all(&v.to_le_bytes())?;
        }
        p.write_all(&buf)?;
        let padded = (len + 3) & !3;
        let blen = (32 + padded) as u32;
        for v in [6, blen, 0, (ts >> 32) as u32, ts as u32, len as u32, len as u32] {
            g.write_all(&v.to_le_bytes())?;
        }
        g.write_all(&buf)?;
        g.write_all(&[0u8; 3][..padded - len])?;
        g.write_all(&blen.to_le_bytes())?;
    }
    p.flush()?;
    g.flush()?;
    Ok((pcap, ng))
}

fn read_once(path: &Path) -> (u64, u64, Duration) {
    let t = Instant::now();
    let mut r = CaptureReader::open(path).expect("open");
    let (mut n, mut sum) = (0u64, 0u64);
    while let Some(f) = r.next_frame().expect("read") {
        n += 1;
        sum = sum.wrapping_add(f.data[f.data.len() - 1] as u64 ^ f.ts_ns as u64);
    }
    (n, sum, t.elapsed())
}

fn tcpdump_once(path: &Path) -> Option<Duration> {
    let t = Instant::now();
    let ok = Command::new("tcpdump").arg("-r").arg(path).args(["-w", "/dev/null"]).output().ok()?.status.success();
    ok.then(|| t.elapsed())
}

fn best<T>(runs: usize, mut f: impl FnMut() -> T, key: impl Fn(&T) -> Duration) -> T {
    let mut out = f();
    for _ in 1..runs {
        let x = f();
        if key(&x) < key(&out) {
            out = x;
        }
    }
    out
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let n: u64 = std::env::var("WIRESTAMP_BENCH_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(5_000_000);
    let dir = PathBuf::from(
        option_env!("CARGO_TARGET_TMPDIR")
            .map(String::from)
            .unwrap_or_else(|| std::env::temp_dir().to_string_lossy().into_owned()),
    );
    std::fs::create_dir_all(&dir).expect("bench dir");
    let t = Instant::now();
    let (pcap, ng) = generate(&dir, n).expect("generate bench files");
    eprintln!("files ready in {:.1} s: {} / {}", t.elapsed().as_secs_f64(), pcap.display(), ng.display());
    println!(
        "{:<8} {:>10} {:>9} {:>9} {:>8} {:>11} {:>9}",
        "format", "frames", "Mframes/s", "GB/s", "ms", "tcpdump ms", "x tcpdump"
    );
    for (name, path) in [("pcap", &pcap), ("pcapng", &ng)] {
        let size = std::fs::metadata(path).unwrap().len() as f64;
        let _ = read_once(path); // warm the page cache
        let (frames, sum, d) = best(3, || read_once(path), |x| x.2);
        assert_eq!(frames, n);
        let td = best(3, || tcpdump_once(path), |x| x.unwrap_or(Duration::MAX));
        let s = d.as_secs_f64();
        let (td_ms, ratio) = match td {
            Some(td) => (format!("{:.0}", td.as_secs_f64() * 1e3), format!("{:.2}", td.as_secs_f64() / s)),
            None => ("n/a".into(), "n/a".into()),
        };
        println!(
            "{name:<8} {frames:>10} {:>9.1} {:>9.2} {:>8.0} {td_ms:>11} {ratio:>9}   (checksum {sum:x})",
            frames as f64 / s / 1e6,
            size / s / 1e9,
            s * 1e3
        );
    }
}
