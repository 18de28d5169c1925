//! `wirestamp synth`: writes a synthetic capture and its ground truth (see `wirestamp-lab`).

use crate::cli::SynthArgs;
use anyhow::{Context, Result, ensure};
use std::io::Write;
use std::process::ExitCode;
use wirestamp_lab::synth::{Container, LatencyModel, SynthConfig, synth, write_truth};

pub fn run(args: &SynthArgs) -> Result<ExitCode> {
    for (name, p) in [("--order-prob", args.order_prob), ("--stall-prob", args.stall_prob)] {
        ensure!((0.0..=1.0).contains(&p), "{name} {p}: a probability must lie in 0..1");
    }
    ensure!(args.median_ns > 0.0 && args.sigma >= 0.0 && args.stall_ns >= 0.0, "latency parameters must be positive");
    let defaults = SynthConfig::default();
    let cfg = SynthConfig {
        seed: args.seed,
        packets: args.packets,
        mean_gap_ns: args.gap_ns,
        feed_b: !args.no_feed_b,
        order_prob: args.order_prob,
        latency: LatencyModel {
            median_ns: args.median_ns,
            sigma: args.sigma,
            stall_prob: args.stall_prob,
            stall_ns: args.stall_ns,
        },
        container: if args.pcap { Container::Pcap } else { Container::Pcapng },
        ..defaults
    };
    let (truth, sum) = synth(&cfg, &args.output).with_context(|| format!("cannot write {}", args.output.display()))?;
    let truth_path = args.truth.clone().unwrap_or_else(|| {
        let mut p = args.output.clone().into_os_string();
        p.push(".truth.csv");
        p.into()
    });
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(&truth_path).with_context(|| format!("cannot create {}", truth_path.display()))?,
    );
    write_truth(&truth, &mut f)?;
    f.flush()?;
    println!(
        "wrote {}: {} frames ({} market-data packets with {} ITCH messages, seq {}..{} of session {}, {} heartbeats, {} noise; {} orders in {} segments)",
        args.output.display(),
        sum.frames,
        sum.md_packets,
        sum.md_messages,
        sum.first_seq,
        sum.last_seq,
        sum.session,
        sum.heartbeats,
        sum.noise,
        sum.orders,
        sum.order_segments
    );
    println!("wrote {}: {} tick-to-trade pairs", truth_path.display(), truth.len());
    Ok(ExitCode::SUCCESS)
}
