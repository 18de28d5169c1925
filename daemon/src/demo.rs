//! `wirestamp demo`: the built-in default job. Generates a small capture of market-data frames stamped by
//! a tap (Arista 7130 / Metamako trailers) and recorded by a host whose clock lags the tap by a known
//! delay, reads it back through the same pipeline as `frames`, and reports the host-minus-tap delay
//! distribution next to the delays the generator used (they must agree exactly).

use anyhow::{Context, Result, ensure};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wirestamp_capture::MergedReader;
use wirestamp_core::dissect::dissect;
use wirestamp_core::time::format_epoch;
use wirestamp_core::trailer::{Decoded, TrailerDecoder, TrailerMode};

const FRAMES: u64 = 2_000;
/// 2026-11-30T14:30:00Z, in ns.
const START_NS: i64 = 1_796_049_000_000_000_000;
const DEVICE: u16 = 7130;

/// Deterministic host delay for frame `i`: a 4 µs base, a sawtooth of jitter and a rare stall.
fn host_delay_ns(i: u64) -> i64 {
    let jitter = ((i * 7919) % 1000) as i64;
    let stall = if i % 997 == 500 { 180_000 } else { 0 };
    4_000 + jitter + stall
}

/// One Ethernet/IPv4/UDP frame carrying a MoldUDP64 heartbeat-sized payload and a Metamako trailer.
fn frame(i: u64, tap_ns: i64) -> Vec<u8> {
    let mut udp_payload = Vec::with_capacity(20);
    udp_payload.extend_from_slice(b"DEMO000001");
    udp_payload.extend_from_slice(&(1_000 + i).to_be_bytes());
    udp_payload.extend_from_slice(&0u16.to_be_bytes());
    let udp_len = 8 + udp_payload.len() as u16;
    let ip_len = 20 + udp_len;
    let mut f = vec![0x01, 0x00, 0x5e, 0x36, 0x0c, 0x6f, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, (ip_len >> 8) as u8, ip_len as u8, 0, 0, 0, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, 1, 233, 54, 12, 111]);
    f.extend_from_slice(&52086u16.to_be_bytes());
    f.extend_from_slice(&26477u16.to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&udp_payload);
    // Metamako trailer: original FCS, seconds, nanoseconds, flags (FCS valid), device, port.
    f.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    f.extend_from_slice(&((tap_ns / 1_000_000_000) as u32).to_be_bytes());
    f.extend_from_slice(&((tap_ns % 1_000_000_000) as u32).to_be_bytes());
    f.push(0x01);
    f.extend_from_slice(&DEVICE.to_be_bytes());
    f.push((1 + i % 2) as u8);
    f
}

/// Writes the generated capture as a nanosecond pcap and returns the delays used, in frame order.
fn generate(path: &Path) -> Result<Vec<i64>> {
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
    );
    w.write_all(&0xa1b2_3c4d_u32.to_le_bytes())?;
    w.write_all(&2u16.to_le_bytes())?;
    w.write_all(&4u16.to_le_bytes())?;
    w.write_all(&[0; 8])?;
    w.write_all(&65_535u32.to_le_bytes())?;
    w.write_all(&1u32.to_le_bytes())?;
    let mut delays = Vec::with_capacity(FRAMES as usize);
    for i in 0..FRAMES {
        let tap_ns = START_NS + (i as i64) * 50_000;
        let delay = host_delay_ns(i);
        let rec_ns = tap_ns + delay;
        let bytes = frame(i, tap_ns);
        w.write_all(&((rec_ns / 1_000_000_000) as u32).to_le_bytes())?;
        w.write_all(&((rec_ns % 1_000_000_000) as u32).to_le_bytes())?;
        w.write_all(&(bytes.len() as u32).to_le_bytes())?;
        w.write_all(&(bytes.len() as u32).to_le_bytes())?;
        w.write_all(&bytes)?;
        delays.push(delay);
    }
    w.flush()?;
    Ok(delays)
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[i64], p: f64) -> i64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

pub fn run(keep: Option<&Path>) -> Result<ExitCode> {
    let tmp;
    let path: PathBuf = match keep {
        Some(p) => p.to_owned(),
        None => {
            tmp = TempFile(std::env::temp_dir().join(format!("wirestamp-demo-{}.pcap", std::process::id())));
            tmp.0.clone()
        }
    };
    let truth = generate(&path)?;
    println!(
        "generated {} ({} frames: Ethernet/IPv4/UDP market data with Arista 7130 trailers)",
        path.display(),
        FRAMES
    );

    let mut reader = MergedReader::open(std::slice::from_ref(&path))?;
    let mut decoder = TrailerDecoder::new(TrailerMode::Auto);
    let mut measured = Vec::with_capacity(truth.len());
    let mut first = None;
    while let Some((_, f)) = reader.next_frame()? {
        let d = dissect(f.data, f.link);
        if let Decoded::Stamp(s) = decoder.decode(&f, &d).map_err(|e| anyhow::anyhow!("{}", e.reason))? {
            first.get_or_insert(s.time_ns);
            measured.push(f.ts_ns - s.time_ns);
        }
    }
    ensure!(measured == truth, "read-back delays differ from the generated ones");
    let mut sorted = measured.clone();
    sorted.sort_unstable();
    println!("read back: {} frames, every one with a tap timestamp (device {DEVICE})", measured.len());
    println!("first tap timestamp: {}", format_epoch(first.unwrap_or_default()));
    println!();
    println!("tap -> host capture delay (record time minus trailer time), exact:");
    println!("{:>8} {:>9} {:>9} {:>9} {:>9} {:>9}", "count", "min", "p50", "p99", "p99.9", "max");
    let us = |ns: i64| format!("{:.3}us", ns as f64 / 1_000.0);
    println!(
        "{:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        sorted.len(),
        us(sorted[0]),
        us(percentile(&sorted, 50.0)),
        us(percentile(&sorted, 99.0)),
        us(percentile(&sorted, 99.9)),
        us(sorted[sorted.len() - 1])
    );
    println!("(p99.9 rests on {} samples beyond it: fewer than 100, so it is not stable)", sorted.len() / 1000);
    match keep {
        Some(p) => println!("\nsee every frame: wirestamp frames {}", p.display()),
        None => println!("\nkeep the capture with --keep FILE, then see every frame with `wirestamp frames FILE`"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Removes the demo's temporary capture when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
