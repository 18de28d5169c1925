//! `wirestamp demo`: the built-in default job. `synth` writes a market whose tick-to-trade latencies
//! are known exactly, `analyze` measures them from the capture alone, and the demo checks that every
//! matched pair equals the ground truth.

use crate::cli::{AnalyzeArgs, SynthArgs};
use crate::output::say;
use anyhow::{Context, Result, ensure};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(keep: Option<&Path>, packets: u64) -> Result<ExitCode> {
    let tmp;
    let dir: PathBuf = match keep {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            d.to_owned()
        }
        None => {
            tmp = TempDir(std::env::temp_dir().join(format!("wirestamp-demo-{}", std::process::id())));
            std::fs::create_dir_all(&tmp.0)?;
            tmp.0.clone()
        }
    };
    let capture = dir.join("market.pcapng");
    let truth = dir.join("market.pcapng.truth.csv");
    let pairs = dir.join("pairs.csv");
    say(format_args!("== wirestamp synth: a market with known tick-to-trade latencies"))?;
    // Not `synth::run`: its advice to analyse the capture is what the demo does next.
    crate::synth::write(&SynthArgs {
        output: capture.clone(),
        truth: None, // beside the capture: `truth`
        packets,
        seed: 1,
        pcap: false,
        order_prob: 0.05,
        median_ns: 6_000.0,
        sigma: 0.35,
        stall_prob: 0.002,
        stall_ns: 250_000.0,
        gap_ns: 4_000,
        no_feed_b: false,
        max_msgs: 3,
    })?;
    let rule = crate::synth::TOKEN_RULE;
    say(format_args!("\n== wirestamp analyze --match '{rule}' {}", capture.display()))?;
    crate::analyze::run(&AnalyzeArgs {
        files: vec![capture.clone()],
        md: Vec::new(),
        orders: Vec::new(),
        config: None,
        matching: Some(rule.to_owned()),
        by: Vec::new(),
        trailer: Vec::new(),
        json: false,
        pairs: Some(pairs.clone()),
        unmatched: None,
        hlog: Some(dir.join("run.hlog")),
        tick_retention: "1s".to_owned(),
        ack_timeout: "10s".to_owned(),
        tx_events: Vec::new(),
        quiet: false,
        no_fast_path: false,
    })?;

    // The check: the pairs measured from the capture equal the generator's truth, one for one.
    let read = |p: &Path, seq: usize, lat: usize| -> Result<Vec<(u64, i64)>> {
        let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
        let mut v: Vec<(u64, i64)> = text
            .lines()
            .skip(1)
            .map(|l| {
                let c: Vec<&str> = l.split(',').collect();
                Ok((c[seq].parse()?, c[lat].parse()?))
            })
            .collect::<Result<_>>()?;
        v.sort_unstable();
        Ok(v)
    };
    let want = read(&truth, 0, 6)?;
    let got = read(&pairs, 1, 8)?;
    ensure!(got == want, "the measured pairs differ from the ground truth ({} vs {})", got.len(), want.len());
    // A check of nothing is no pass.
    ensure!(
        !want.is_empty(),
        "-n {packets} made no order, so nothing was checked: give more packets (an order comes about once \
         every 20; the default is 200,000)"
    );
    say(format_args!(
        "\n== check: all {} measured tick-to-trade pairs equal the ground truth, to the nanosecond",
        got.len()
    ))?;
    match keep {
        Some(d) => say(format_args!("files kept in {}: market.pcapng, its truth, pairs.csv, run.hlog", d.display()))?,
        None => say(format_args!("(run with --keep DIR to keep the capture, truth, pairs and interval log)"))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Removes the demo's temporary directory when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
