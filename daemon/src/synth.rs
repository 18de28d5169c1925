//! `wirestamp synth`: writes a synthetic capture and its ground truth (see `wirestamp-lab`).

use crate::cli::{SynthArgs, usage};
use crate::output::{begins_with, create_output, distinct, kept_file, refuse_stdout, say, writing};
use crate::progress::ProgressLine;
use anyhow::{Context, Result, bail, ensure};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirestamp_lab::synth::{
    Container, LatencyModel, MAX_LATENCY_NS, SynthConfig, TRUTH_HEADER, synth_with_progress, write_truth,
};

/// The token rule that pairs a synth capture's orders exactly: each ClOrdID is `T` and the trigger's
/// MoldUDP64 sequence.
pub const TOKEN_RULE: &str = r"token:T(\d+)";

/// `synth`: writes the capture and its truth, then says how to analyse them.
pub fn run(args: &SynthArgs) -> Result<ExitCode> {
    write(args)?;
    // The default symbol rule is ambiguous on synth's ticks, several of a symbol within a
    // microsecond: the token rule is the one that pairs each order with its trigger.
    crate::note!(
        "wirestamp: to analyse it, each order paired with its trigger by its ClOrdID (T and the trigger's sequence):\n  \
         wirestamp analyze --match {} {}",
        shell_word(TOKEN_RULE),
        shell_word(&args.output.to_string_lossy())
    );
    Ok(ExitCode::SUCCESS)
}

/// `s` as one word for a POSIX shell: as it is when it holds only characters no shell reads
/// specially, else in single quotes.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !s.is_empty() && s.chars().all(plain) { s.to_owned() } else { format!("'{}'", s.replace('\'', r"'\''")) }
}

/// The container `args` ask for: the file name's extension (`.pcap` or `.pcapng`) chooses it, `--pcap`
/// for any other name; `--pcap` on a `.pcapng` name is a contradiction, refused.
fn container(args: &SynthArgs) -> Result<Container> {
    let ext = args.output.extension().map(|e| e.to_ascii_lowercase());
    match (ext.as_ref().and_then(|e| e.to_str()), args.pcap) {
        (Some("pcapng"), true) => bail!(
            "--pcap with {}: a .pcapng name for a classic pcap file; name it .pcap, or leave out --pcap",
            args.output.display()
        ),
        (Some("pcapng"), false) => Ok(Container::Pcapng),
        (Some("pcap"), _) | (_, true) => Ok(Container::Pcap),
        _ => Ok(Container::Pcapng),
    }
}

/// The generator's configuration `args` ask for, or why they cannot be: the command line's fault.
fn config(args: &SynthArgs) -> Result<SynthConfig> {
    for (name, p) in [("--order-prob", args.order_prob), ("--stall-prob", args.stall_prob)] {
        ensure!((0.0..=1.0).contains(&p), "{name} {p}: a probability must lie in 0..1");
    }
    // What the generator can produce (see `--help`): refused, not silently clamped.
    let max_latency = MAX_LATENCY_NS as f64;
    ensure!(
        args.median_ns > 0.0 && args.median_ns <= max_latency,
        "--median-ns {}: must lie above 0 and at most {max_latency} (12.5 ms)",
        args.median_ns
    );
    ensure!((0.0..=5.0).contains(&args.sigma), "--sigma {}: must lie in 0..5", args.sigma);
    ensure!(
        (0.0..=max_latency / 1.5).contains(&args.stall_ns),
        "--stall-ns {}: must lie in 0..{} (its stalls reach 1.5 times it, at most 12.5 ms)",
        args.stall_ns,
        (max_latency / 1.5).floor()
    );
    ensure!(
        (1..=100_000).contains(&args.gap_ns),
        "--gap-ns {}: must lie in 1..100000 (each gap is cut at 1 ms)",
        args.gap_ns
    );
    ensure!(
        (1..=30).contains(&args.max_msgs),
        "--max-msgs {}: must lie in 1..30 (messages per packet, drawn uniformly from 1 to it)",
        args.max_msgs
    );
    ensure!(args.packets >= 1, "-n 0: at least 1 packet (the Stock Directory packet that opens the feed)");
    let defaults = SynthConfig::default();
    Ok(SynthConfig {
        seed: args.seed,
        packets: args.packets,
        mean_gap_ns: args.gap_ns,
        feed_b: !args.no_feed_b,
        max_msgs: args.max_msgs,
        order_prob: args.order_prob,
        latency: LatencyModel {
            median_ns: args.median_ns,
            sigma: args.sigma,
            stall_prob: args.stall_prob,
            stall_ns: args.stall_ns,
        },
        container: container(args)?,
        ..defaults
    })
}

/// Writes the capture and its truth `args` ask for, saying on standard output what was written.
pub fn write(args: &SynthArgs) -> Result<()> {
    let cfg = config(args).map_err(usage)?;
    let truth_path: PathBuf = args.truth.clone().unwrap_or_else(|| {
        let mut p = args.output.clone().into_os_string();
        p.push(".truth.csv");
        p.into()
    });
    // The truth never replaces the capture, nor a file that is no earlier truth (a capture whose
    // name took the place of --truth's): checked, and the file made, before anything is written.
    refuse_stdout(&args.output, "the capture").map_err(usage)?;
    if let Some(t) = &args.truth {
        refuse_stdout(t, "--truth").map_err(usage)?;
    }
    distinct(&[("the capture", &args.output), ("--truth", &truth_path)]).map_err(usage)?;
    // A capture is replaced only when it is an earlier synth's, known by its truth beside it: a real
    // capture given by mistake (`synth tap.pcap`) is refused.
    ensure!(
        !kept_file(&args.output) || begins_with(&truth_path, TRUTH_HEADER),
        "{}: the file exists and is no earlier synth capture (its truth, {}, is not beside it): refusing to \
         overwrite it; remove it or choose another name",
        args.output.display(),
        truth_path.display()
    );
    let truth_file = if args.truth.is_some() {
        create_output(&truth_path, "--truth", TRUTH_HEADER)?
    } else {
        // Named as the user knows it: the file synth names after the capture, not a flag not given.
        ensure!(
            !kept_file(&truth_path) || begins_with(&truth_path, TRUTH_HEADER),
            "{}: the truth synth writes beside the capture exists there and is no earlier truth: refusing to \
             overwrite it; remove it, or give --truth",
            truth_path.display()
        );
        std::fs::File::create(&truth_path)
            .with_context(|| format!("cannot create {} (the capture's truth)", truth_path.display()))?
    };
    let mut line = ProgressLine::new(false);
    let written = synth_with_progress(&cfg, &args.output, &mut |done| {
        if line.due().is_some() {
            let pct = 100.0 * done as f64 / cfg.packets as f64;
            line.show(&format!("{pct:>5.1}% {done} of {} market-data packets", cfg.packets));
        }
    });
    line.finish();
    let (truth, sum) = written.with_context(|| format!("{}: writing", args.output.display()))?;
    let mut f = std::io::BufWriter::new(truth_file);
    write_truth(&truth, &mut f).and_then(|()| f.flush()).with_context(|| match &args.truth {
        Some(t) => writing("--truth", t),
        None => format!("{} (the capture's truth): writing", truth_path.display()),
    })?;
    say(format_args!(
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
    ))?;
    say(format_args!("wrote {}: {} tick-to-trade pairs", truth_path.display(), truth.len()))?;
    // The truth holds what was written; these say where it departs from the distribution asked for.
    if sum.clamped_latencies > 0 {
        crate::note!(
            "wirestamp: warning: {} drawn latencies were above 12.5 ms and clamped to it (the truth has the clamped ones)",
            sum.clamped_latencies
        );
    }
    if sum.delayed_orders > 0 {
        // By design (a single-threaded strategy sends in order), but it shapes the distribution: said.
        say(format_args!(
            "{} orders went out later than their drawn latency, queued behind an earlier one (a stall, or orders \
             due less than 100 ns apart); the truth has their actual times",
            sum.delayed_orders
        ))?;
    }
    Ok(())
}
