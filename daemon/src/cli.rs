//! The command line as data: clap definitions and the dispatch to each command's module.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Honest wire-to-wire latency for electronic trading
///
/// wirestamp reads captures from taps and hosts (pcap, pcapng, ERF; plain, gzip or zstd), decodes the
/// timestamp trailers tap devices append (Arista 7130/Metamako, Exablaze, Arista 7150/7280, cPacket),
/// and reports latency with every timestamp's provenance and every loss counted.
///
/// Examples:
///   wirestamp demo                      # synth, analyze and the check against the truth, in one
///   wirestamp synth market.pcapng       # a market whose latencies are known, and its truth
///   wirestamp analyze --match 'token:T(\d+)' market.pcapng
///   wirestamp analyze --md udp:233.54.12.111:26477 --orders tcp:10.1.0.1:8003 tap.pcapng
///   wirestamp frames tap.pcap | head    # each frame's timestamps and where they came from
///   wirestamp doctor                    # can this host measure?
///   wirestamp capture -i eth1 -w md.pcapng
///
/// `wirestamp COMMAND --help` teaches each command, with examples.
#[derive(Debug, Parser)]
#[command(name = "wirestamp", version, propagate_version = true, max_term_width = 110, verbatim_doc_comment)]
pub struct Cli {
    /// Log filter (e.g. `info`, `wirestamp_capture=debug`); default `warn`, or `RUST_LOG`.
    #[arg(long, global = true, value_name = "FILTER")]
    pub log: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every frame's timestamp, provenance and L3/L4 summary, one line per frame
    ///
    /// Like `tshark -T fields` for timestamps: what wirestamp sees in a capture. Several files are merged
    /// into one stream ordered by time. Tap trailers are detected automatically; `--trailer` forces one.
    ///
    /// Columns: index (0-based, in output order), time_ns (best timestamp, ns since the epoch: the
    /// trailer's when there is one, a keyframe's the time it left its device, else the record's, moved
    /// onto the tap's clock by the host's offset from it in a file the tap stamps, flagged
    /// host_offset), caplen, wirelen, interface (global number across the
    /// inputs), direction (in, out, or absent), ts_source (pcap, pcapng, erf, none, or the trailer's name),
    /// trailer, trailer_time_ns, device, port, src, dst, proto (the IP protocol number: 6 TCP, 17 UDP),
    /// sport, dport, payload_len (the transport payload as the headers declare it, without padding or
    /// trailer), then record_time_ns (the container's own time, always kept), quality (clock-quality
    /// flags: degraded, unsynced, stale_keyframe, extended, record_error, backwards, host_offset), vlan (outer/inner ids), anomaly (the first malformed header, as `LAYER header at byte
    /// OFFSET: REASON`), input (index of the file on the command line). Absent values are empty in
    /// CSV and null in JSON.
    ///
    /// Examples:
    ///   wirestamp frames capture.pcapng
    ///   wirestamp frames --trailer metamako tap1.pcap.gz tap2.pcap.zst
    ///   wirestamp frames --trailer tap1.pcap=arista7150 --format json tap1.pcap tap2.pcap
    #[command(verbatim_doc_comment)]
    Frames(FramesArgs),

    /// Tick-to-trade from captures, as distributions with the counters that qualify them
    ///
    /// Decodes market data (ITCH 5.0 over MoldUDP64) and orders (OUCH over SoupBinTCP), matches each
    /// order to the tick that triggered it, and reports honest percentiles.
    ///
    /// Feeds and order sessions come from --md / --orders, from --config, or, with neither, are
    /// detected from the traffic (what was chosen is printed). Every figure is printed beside the
    /// counters that qualify it: unmatched orders, gaps, duplicates, TCP holes, malformed input,
    /// and where the timestamps came from. A percentile with fewer than 100 samples beyond it is
    /// marked with `*`.
    ///
    /// Metrics: tick_to_trade (earliest copy of the trigger -> frame carrying the order's first
    /// byte), order_to_ack (order -> exchange response), feed_ab_delay (later copy of a tick behind
    /// the first), exchange_to_capture (ITCH timestamp, US Eastern time, -> capture); with
    /// --tx-events also tick_to_snd (trigger -> the kernel's SND time of the order's write) and
    /// snd_to_wire (that SND time -> the order's frame). Under the table: the load they were measured
    /// under (span, ticks and orders per second, the busiest second).
    ///
    /// Examples (the first for a `wirestamp synth` capture: each of its ClOrdIDs is T and the trigger's
    /// sequence, so the token rule pairs every order with its trigger, where the default symbol rule
    /// may take another tick of the symbol, so close together are synth's):
    ///   wirestamp analyze --match 'token:T(\d+)' market.pcapng
    ///   wirestamp analyze capture.pcapng
    ///   wirestamp analyze --md udp:233.54.12.111:26477 --orders tcp:10.1.0.1:8003@ouch42 cap.pcap
    ///   wirestamp analyze --json --pairs pairs.csv --hlog run.hlog tapA.pcap tapB.pcap
    ///   wirestamp analyze --match 'token:T(\d+)' --unmatched unmatched.csv capture.pcapng
    ///
    /// Exit status: 0, every input read to its end; 1, an input could not be opened, an output would
    /// replace another file or could not be written, or a malformed record stopped reading (the
    /// report, printed all the same, covers the frames before: see its `input`); 2, the command line
    /// or the --config file is wrong, as for an unknown flag or trailer kind, a capture or an output
    /// given twice, or an output named `-` (nothing was read).
    #[command(verbatim_doc_comment)]
    Analyze(AnalyzeArgs),

    /// Generate a synthetic capture whose tick-to-trade latencies are known exactly
    ///
    /// An ITCH 5.0 / MoldUDP64 feed (A and B copies, several messages per packet, bursts, VLAN tags,
    /// noise) and an OUCH 5.0 / SoupBinTCP session (segmentation, coalescing, a retransmission).
    ///
    /// Writes FILE and its truth as CSV (--truth, default FILE.truth.csv): one line per order with the
    /// trigger's MoldUDP64 sequence, tick time (earliest copy), order time (frame carrying its first
    /// byte), latency, and ack time. FILE's name chooses its format: `.pcap`, classic pcap (ns);
    /// `.pcapng`, pcapng with one interface per capture point; any other, pcapng, or pcap with --pcap.
    /// Deterministic for a seed.
    ///
    /// Each order's ClOrdID is `T` followed by the trigger's sequence in 13 digits, so
    /// `analyze --match 'token:T(\d+)'` pairs every order with its trigger exactly (the default symbol
    /// rule may take another tick of the symbol: synth's come so close together). synth prints that
    /// command on stderr.
    ///
    /// Examples:
    ///   wirestamp synth market.pcapng
    ///   wirestamp analyze --match 'token:T(\d+)' --pairs pairs.csv market.pcapng
    ///   wirestamp synth -n 1000000 --seed 7 --truth truth.csv big.pcap
    ///   wirestamp synth --no-feed-b --max-msgs 1 --median-ns 20000 thin.pcapng
    #[command(verbatim_doc_comment)]
    Synth(SynthArgs),

    /// Live table of the stage stamps a trading app writes with the probe library
    ///
    /// Per point and stage of a wirestamp-probe session: count, min, p50, p99, p99.9, max, and on each
    /// point's total row its orphans, abandoned spans and steps backwards. Records lost (overwritten
    /// before they were read: their point is unknown), corrupt ones and producers gone are counted for
    /// the session, on the line above the table. TSC ticks are converted to ns by a continuous fit
    /// against CLOCK_REALTIME.
    ///
    /// It is the session's one reader: what it prints is consumed (a second run, or a later
    /// --once, shows only what was stamped since). Run one at a time: the resume point in the
    /// segment is shared by all readers.
    ///
    /// Example: wirestamp probe-stats md-handler --interval 1s
    #[command(verbatim_doc_comment)]
    ProbeStats {
        /// Session name (the segment is /dev/shm/SESSION).
        #[arg(value_name = "SESSION")]
        session: String,
        /// Time between refreshes, e.g. 500ms, 1s.
        #[arg(long, default_value = "1s", value_name = "DURATION")]
        interval: String,
        /// Stop after this many refreshes (default: until interrupted).
        #[arg(short = 'c', long, value_name = "N")]
        count: Option<u64>,
        /// One refresh, then exit.
        #[arg(long)]
        once: bool,
        /// One JSON object per refresh instead of a table.
        #[arg(long)]
        json: bool,
    },

    /// Capture live frames to pcapng with their timestamps' provenance: a tcpdump for latency work
    ///
    /// Sources: `afpacket` (default; TPACKET_V3 ring, both directions, per-frame kernel timestamp flags,
    /// NIC hardware timestamping switched on where the driver has it and restored on exit), `pcap` (libpcap,
    /// best timestamp type the device offers), `stdin` (a pcap/pcapng stream, e.g. from a capture appliance),
    /// `ebpf` (wirestamp's tc programs: only the packets of the --md/--orders flows, stamped at the hook,
    /// each frame truncated to its headers + --snap-payload bytes, so caplen < wirelen; --ring-mb per interface),
    /// `afxdp` (for a port fed by a tap: an XDP program sends every frame of RX queue --queue to an AF_XDP
    /// socket in copy mode, with the NIC's RX timestamp or the program's time; those frames skip the stack).
    /// Each output file holds one interface block per interface and timestamp source, saying where the
    /// timestamps come from. Files are written as FILE.part and renamed when complete. With -G or -C,
    /// files are numbered: STEM.0000.EXT, STEM.0001.EXT, ... A FILE.part is made anew and locked while
    /// written: a second capture of one -w stops at once, saying so. The rename never replaces a file
    /// made at the name meanwhile: that file is left as it is, the frames stay in FILE.part, and the
    /// capture exits with status 1 naming both (with -G/-C it goes on, each file renamed on its own; a
    /// numbered name another capture holds when it comes to it is skipped, said, and named at exit;
    /// a FILE.part moved away while written, or a file the system will not rename, is said, named at
    /// exit, and the capture goes on with its next file).
    /// A start refused (a name taken, a --tx-events CSV that cannot be made) leaves no file of its own,
    /// --tx-events CSV included, and what --overwrite would have replaced as it was. A file that
    /// cannot be completed (no space left, during the run or at its last flush) stays as FILE.part: the
    /// summary says the frames were captured, not written, and how many of those written to it it holds
    /// (those not yet on it when the write failed are lost), and the error what to do.
    /// Drop counters are printed at exit and written into each file's statistics blocks: delivered =
    /// its frames, accepted = delivered + dropped (frames still queued when a file closes are counted
    /// in the next; at exit, in the last file's accepted).
    /// SIGINT, SIGTERM and SIGHUP (unless ignored, as under nohup) end the capture cleanly: the file is
    /// completed and renamed, its statistics blocks written, the NIC's timestamping restored.
    /// A file capture would write (-w, each numbered name, their .part, --tx-events) is never replaced
    /// when it exists and is not empty: a killed capture's FILE.part is refused, not lost (rename it, or
    /// read it as it is: `wirestamp analyze FILE.part`), unless it holds no frame (a capture killed
    /// before its file's first frame: its header alone), which is taken; --overwrite replaces earlier
    /// captures.
    /// The summary says when and why the capture stopped (-c, --duration, a signal, the stream's end).
    /// Exit status: 0 when the capture ended as asked (count, duration, signal); 1 when a source or an
    /// output failed, or an output exists (or was made at a file's name while it ran); 2 when the
    /// command line is wrong.
    ///
    /// Examples:
    ///   wirestamp capture -i eth1 -w md.pcapng
    ///   wirestamp capture -i eth1 -f 'udp and dst net 233.54.12.0/24' -G 60 -w md.pcapng
    ///   wirestamp capture -i eth1 --duration 500ms -w burst.pcapng
    ///   ssh tap 'cat /dev/capture' | wirestamp capture --source stdin -w tap.pcapng
    ///   wirestamp capture --source ebpf -i eth1 --md udp:233.54.12.111:26477 --orders tcp:10.1.0.1:8003 -w t.pcapng
    ///   wirestamp capture --source ebpf -i eth1 --orders tcp:10.1.0.1:8003 --cgroup CG --tx-events tx.csv -w t.pcapng
    #[command(verbatim_doc_comment)]
    Capture(CaptureArgs),

    /// Check whether this host can measure, each check with its reason and fix
    ///
    /// TSC and clocksource, NIC timestamping, PHC, offloads that merge captured frames (GRO, LRO,
    /// TSO), ptp4l/phc2sys, capabilities, CPU isolation and governor; for `capture --source ebpf
    /// --cgroup DIR --tx-events`: where cgroup v2 is mounted, the kernel (Linux 6.15+), bpffs (not
    /// needed). Each check passes, warns or fails with the reason and the fix; the exit status is
    /// non-zero when a check fails.
    ///
    /// Examples:
    ///   wirestamp doctor
    ///   wirestamp doctor -i eth1 --json
    #[command(verbatim_doc_comment)]
    Doctor(DoctorArgs),

    /// Run wirestamp's main job on a built-in default and check it against the ground truth
    ///
    /// Generates a synthetic market with known latencies (`synth`), analyses it (`analyze`), and
    /// checks every measured pair against the generator's truth.
    ///
    /// Examples:
    ///   wirestamp demo
    ///   wirestamp demo --keep demo-out -n 1000000
    #[command(verbatim_doc_comment)]
    Demo {
        /// Keep the generated capture, truth, pairs and interval log in this directory (default: a
        /// temporary directory, removed afterwards).
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
        /// Market-data packets to generate.
        #[arg(short = 'n', long, default_value_t = 200_000)]
        packets: u64,
    },
}

#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Capture files (merged by each frame's best time: a tap's stamp when it carries one): pcap,
    /// pcapng, ERF; optionally gzip or zstd. `-` reads standard input (`tcpdump -w - | wirestamp
    /// analyze -`): the `--pairs`, `--unmatched` and `--hlog` rows so far are written out whenever it
    /// waits (as for a FIFO), the report at its end.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// A market-data feed: `udp:GROUP:PORT[@moldudp64]` (GROUP may be `*`; `@itch` and `@itch50` are
    /// other names for `@moldudp64`, ITCH 5.0 over MoldUDP64, the default). Repeatable.
    #[arg(long = "md", value_name = "SPEC")]
    pub md: Vec<String>,

    /// An order session, by the exchange's end: `tcp:HOST:PORT[@ouch50|@ouch42]` (HOST may be `*`).
    /// Without a version, OUCH 5.0: the version is detected only for sessions detected from the
    /// traffic, when neither --md nor --orders is given. Repeatable.
    #[arg(long = "orders", value_name = "SPEC")]
    pub orders: Vec<String>,

    /// A TOML file with `md = [...]`, `orders = [...]`, `match = "..."`, `by = ["symbol"]`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// How orders are matched to ticks (default: `symbol:1s`, or the --config file's `match`):
    /// `token:REGEX` (the first capture group of REGEX, applied to the ClOrdID or order token, is the
    /// trigger's MoldUDP64 sequence; `token:T(\d+)` for a synth capture) or `symbol[:WINDOW]` (the
    /// last message for the order's symbol within WINDOW before it; WINDOW 1s when left out).
    #[arg(long = "match", value_name = "RULE")]
    pub matching: Option<String>,

    /// Extra breakdowns of tick_to_trade: `symbol`.
    #[arg(long, value_name = "DIM")]
    pub by: Vec<String>,

    /// Timestamp trailer decoding: `auto` (default: detect conservatively), `none`, or a KIND to force
    /// on every file: metamako, cpacket, exablaze_hpt, exablaze_fusion, arista7150, arista7280.
    /// `FILE=KIND` forces a kind on one file only. A forced kind that does not validate on a file's
    /// first frames is an error naming the file, the frame and the reason. Repeatable.
    #[arg(long, value_name = "KIND|FILE=KIND")]
    pub trailer: Vec<String>,

    /// Print the report as one JSON document (schema in the README) instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Write every matched pair to this CSV file, with the columns tick_session, tick_seq,
    /// tick_time_ns, order_id, token, order_time_ns, order_frame, order_last_frame, latency_ns,
    /// tick_frame. order_id is the order's UserRefNum (OUCH 5.0) or order token (4.2); token is what
    /// --match token: reads, the ClOrdID (5.0) or order token (4.2); order_frame and order_last_frame
    /// are the frames carrying the order's first and last bytes, tick_frame the frame carrying the
    /// trigger's earliest copy (0-based over all inputs; empty under the token rule past the inputs'
    /// 2^32nd frame, which the tick index's 32 bits of it cannot name for sure). A token blank on the
    /// wire (spaces only) is written whole, quoted; an empty one is none. An existing FILE is
    /// replaced only when empty or an earlier --pairs output: any other is refused.
    #[arg(long, value_name = "FILE")]
    pub pairs: Option<PathBuf>,

    /// Write every order that has no pair in --pairs to this CSV file, with why, so that what the
    /// tick_to_trade figures leave out can be checked order by order. Columns: order_frame (as in
    /// --pairs), order_time_ns, session (the order session: tcp:HOST:PORT@ouch50), order_id, token (as
    /// in --pairs), symbol (a Cancel's or Modify's that of its order; empty when not known, quoted
    /// spaces when blank on the wire), reason, tick_seq (the sequence the token rule read from the token;
    /// under the symbol rule, for beyond_window, the symbol's newest tick before the order; empty when
    /// none). reason is one of: not_correlated (a Cancel or Modify:
    /// no rule correlates them), no_token (no sequence in the token: check the --match regex),
    /// ambiguous (several MoldUDP64 sessions hold the sequence), beyond_window (symbol rule: its
    /// symbol's newest tick came longer than the window before: widen it), beyond_retention (the
    /// trigger was older than --tick-retention: raise it), released_for_room (it stopped waiting before
    /// its time: more orders waited than may), no_symbol (symbol rule: a Replace whose order was not
    /// seen), trigger_not_seen (no copy of the trigger found: lost on every feed, or a feed not
    /// captured; symbol rule: no tick of its symbol before it). The rows of each reason are as many as
    /// the report's counter of it (README). An existing FILE is replaced only when empty or an earlier
    /// --unmatched output: any other is refused.
    #[arg(long, value_name = "FILE")]
    pub unmatched: Option<PathBuf>,

    /// Write an HdrHistogram interval log (one interval per second of capture time, tagged per
    /// metric). An existing FILE is replaced only when empty or an earlier --hlog output.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,

    /// How long ticks are kept for A/B arbitration and token matching (e.g. 1s, 500ms). A copy arriving
    /// more than this after its first copy is counted as too late to arbitrate (stale), and an order whose
    /// trigger is older is counted as unmatched; memory grows with this window, not with the capture.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub tick_retention: String,

    /// How long a request (Enter, Replace, Cancel, Modify) waits for the exchange's response before it
    /// is counted as unacknowledged (e.g. 10s, 500ms). A response after that pairs with nothing: it is
    /// counted as late (`late_responses`, with a note: order_to_ack excludes it).
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub ack_timeout: String,

    /// TX timestamps of the order sessions' writes, as written by `wirestamp capture --source ebpf
    /// --tx-events` (repeatable): each order is joined to the write whose TCP byte range holds its last
    /// byte, giving tick_to_snd and snd_to_wire. snd_to_wire needs the order frames from a tap (or a
    /// hardware-stamped capture) downstream of the NIC: a capture on the sending host (AF_PACKET, the
    /// ebpf tc hook, libpcap) runs before the driver's send stamp, so its frames precede SND and every
    /// sample is negative.
    #[arg(long = "tx-events", value_name = "FILE")]
    pub tx_events: Vec<PathBuf>,

    /// No progress display on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Every frame through the general path (dissection, trailer check, full decode), none through
    /// the fast path for plain market data. The results are the same; this is for checking that.
    #[arg(long, hide = true)]
    pub no_fast_path: bool,
}

#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    /// Capture file to write: `.pcap`, classic pcap; `.pcapng` or any other name, pcapng (see --pcap).
    #[arg(value_name = "FILE")]
    pub output: PathBuf,
    /// Truth CSV to write (default: FILE.truth.csv).
    #[arg(long, value_name = "FILE")]
    pub truth: Option<PathBuf>,
    /// Market-data packets to generate (each on feed A and feed B), the Stock Directory packet that
    /// opens the feed included: at least 1.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub packets: u64,
    /// Random seed: the same seed gives the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write classic pcap (nanosecond) whatever FILE's name; with a `.pcapng` name, refused. Without
    /// it, FILE's name chooses: `.pcap`, pcap; any other, pcapng.
    #[arg(long)]
    pub pcap: bool,
    /// Probability that a market-data packet triggers an order (0 to 1).
    #[arg(long, default_value_t = 0.05, value_name = "P", allow_negative_numbers = true)]
    pub order_prob: f64,
    /// Median tick-to-trade latency, ns (above 0, at most 12.5 ms: synth writes its frames in time
    /// order within a 50 ms window; longer latencies drawn are clamped to 12.5 ms, and counted).
    #[arg(long, default_value_t = 6_000.0, value_name = "NS", allow_negative_numbers = true)]
    pub median_ns: f64,
    /// Spread of the log-normal latency body (standard deviation of its log; 0 to 5).
    #[arg(long, default_value_t = 0.35, allow_negative_numbers = true)]
    pub sigma: f64,
    /// Probability that an order stalls (0 to 1).
    #[arg(long, default_value_t = 0.002, value_name = "P", allow_negative_numbers = true)]
    pub stall_prob: f64,
    /// Typical stall, ns (each drawn uniformly between half and 1.5 times this; 0 to 8,333,333, so
    /// that a stall stays within the 12.5 ms limit of --median-ns).
    #[arg(long, default_value_t = 250_000.0, value_name = "NS", allow_negative_numbers = true)]
    pub stall_ns: f64,
    /// Mean gap between market-data packets outside bursts, ns (1 to 100,000: each gap is drawn
    /// from an exponential distribution and cut at 1 ms, so that held orders are written in time).
    #[arg(long, default_value_t = 4_000, value_name = "NS")]
    pub gap_ns: u64,
    /// Do not send a B copy of the feed.
    #[arg(long)]
    pub no_feed_b: bool,
    /// ITCH messages per MoldUDP64 packet: each packet carries a number drawn uniformly from 1 to
    /// this (1 to 30; 1 gives the one-message packets of a thin feed), except the first, the Stock
    /// Directory of every symbol (8 messages) that a trading day opens with.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub max_msgs: u64,
}

/// Where `capture` reads frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CaptureSource {
    /// AF_PACKET TPACKET_V3 ring with kernel timestamp flags.
    Afpacket,
    /// libpcap live capture.
    Pcap,
    /// A pcap or pcapng stream on standard input.
    Stdin,
    /// wirestamp's tc BPF programs: only the --md/--orders flows, frames truncated to headers + --snap-payload.
    Ebpf,
    /// An AF_XDP socket (copy mode) on one RX queue, fed by an XDP redirect: every frame of a tap-fed port.
    Afxdp,
}

/// `--rx-hook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RxHookArg {
    /// tc ingress (tcx, else clsact).
    Tc,
    /// Device-bound XDP where the NIC has hardware RX timestamps, else tc ingress.
    Xdp,
    /// Device-bound XDP on any interface.
    XdpAlways,
}

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// Interface to capture on (required for afpacket and pcap; afpacket takes several: -i a -i b,
    /// written in time order, each frame up to about 30 ms after it came while one shows nothing).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interface: Vec<String>,
    /// Frame source.
    #[arg(long, value_enum, default_value_t = CaptureSource::Afpacket)]
    pub source: CaptureSource,
    /// Output pcapng file. An existing, non-empty file of that name (with -G/-C: of any numbered name,
    /// STEM.NNNN.EXT), or a FILE.part left by a killed capture, is refused (see --overwrite); a FILE.part
    /// that holds no frame (its header alone) is taken.
    #[arg(short = 'w', value_name = "FILE")]
    pub output: std::path::PathBuf,
    /// Replace the earlier outputs of a capture at these names: captures (pcapng or pcap) at -w and its
    /// numbered names, a killed capture's FILE.part, an earlier --tx-events CSV. Any other file is still
    /// refused.
    #[arg(long)]
    pub overwrite: bool,
    /// Stop after N frames.
    #[arg(short = 'c', value_name = "N")]
    pub count: Option<u64>,
    /// Start a new file every SECS seconds: a file is closed at the first check (at each frame, and at
    /// least every 100 ms while idle) SECS seconds after it was opened, and the next one is opened then.
    /// A file still without frames then is not closed: its SECS seconds count again from that check, so
    /// an idle capture makes no empty files. With -C too, a file is closed at whichever comes first, and
    /// each new file's SECS seconds count from its opening. Files are numbered (STEM.0000.EXT, ...):
    /// unlike tcpdump's -G, -w is not a strftime pattern and a name holds no time (each frame has its
    /// own). A file a rotation left without frames when the capture ends is removed, unless it is the
    /// capture's only file.
    #[arg(short = 'G', value_name = "SECS")]
    pub rotate_secs: Option<u64>,
    /// Start a new file when the current one reaches MB megabytes (10^6 bytes). A file a rotation left
    /// without frames when the capture ends is removed, unless it is the capture's only file.
    #[arg(short = 'C', value_name = "MB")]
    pub rotate_mb: Option<u64>,
    /// Capture filter (tcpdump syntax), compiled by libpcap.
    #[arg(short = 'f', long, value_name = "FILTER")]
    pub filter: Option<String>,
    /// Stop after this long: a number with its unit (ns, us, ms, s, min, h: 500ms, 90s, 1.5min), or whole seconds
    /// without one (30: 30 s, as before units were taken). Above 0. The summary says when and why the
    /// capture stopped.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Frames are cut at this many bytes (afpacket, pcap, afxdp, stdin), and it is written to the interface
    /// blocks. 0 means the largest, 262144, as with tcpdump's `-s 0`. --source ebpf cuts frames by
    /// --snap-payload instead.
    #[arg(long, default_value_t = 262_144, value_name = "BYTES")]
    pub snaplen: u32,
    /// AF_PACKET ring size in MiB, per interface, in blocks of 1 MiB (256 KiB below 4 MiB: at least four
    /// blocks, one filled while another is read); ebpf: the BPF ring buffer per interface, rounded up
    /// to a power of two.
    /// The kernel takes it from the memory other processes use: at least 1, and at most a quarter of
    /// the memory available (MemAvailable) for all the interfaces.
    #[arg(long, default_value_t = 8, value_name = "MB")]
    pub ring_mb: u32,
    /// Leave the NIC's hardware timestamping alone and use software timestamps.
    #[arg(long)]
    pub no_hwtstamp: bool,
    /// Enable RX ALL even over a PTP filter another program (ptp4l) set; restored on exit.
    #[arg(long, conflicts_with = "no_hwtstamp")]
    pub force_hwtstamp: bool,
    /// Where the NIC's previous timestamping configuration is kept until restored (crash recovery).
    #[arg(long, default_value = "/run/wirestamp", value_name = "DIR")]
    pub state_dir: std::path::PathBuf,
    /// Flag frames captured while ptp4l's |master offset| exceeds NS (needs --ptp4l). Frames captured while
    /// the kernel reports the system clock unsynchronised (adjtimex STA_UNSYNC) are always flagged. A
    /// flagged frame carries its flags in the file, as a packet comment (`wirestamp clock: unsynced`):
    /// `analyze` counts it among the frames with clock warnings, `frames` shows them.
    #[arg(long, value_name = "NS", requires = "ptp4l")]
    pub max_offset_ns: Option<i64>,
    /// ptp4l's management socket, to check its offset during the capture (e.g. /var/run/ptp4l).
    #[arg(long, value_name = "PATH")]
    pub ptp4l: Option<std::path::PathBuf>,
    /// --source ebpf: a market-data feed to capture, udp:GROUP:PORT (packets to it); repeatable.
    #[arg(long = "md", value_name = "SPEC")]
    pub md: Vec<String>,
    /// --source ebpf: an order session to capture, tcp:HOST:PORT (the exchange's end; both directions).
    #[arg(long = "orders", value_name = "SPEC")]
    pub orders: Vec<String>,
    /// --source ebpf: L4 payload bytes kept per frame after the headers, at most 256 (frames are cut at 256
    /// bytes in all, headers included).
    #[arg(long, default_value_t = 64, value_name = "BYTES")]
    pub snap_payload: u16,
    /// --source ebpf: the hook that picks up inbound packets. `xdp` reads the NIC's RX hardware timestamp
    /// in a device-bound XDP program where the interface has hardware RX timestamping, and otherwise (or
    /// when XDP cannot attach) uses tc ingress and says why; `xdp-always` uses XDP regardless (a packet
    /// without a hardware stamp then carries the hook's time). Attaching XDP may briefly reset a NIC's
    /// queues on some drivers: not the default.
    #[arg(long, value_enum, default_value_t = RxHookArg::Tc, value_name = "HOOK")]
    pub rx_hook: RxHookArg,
    /// --source afxdp: the RX queue to capture (the others still reach the network stack).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub queue: u32,
    /// --source ebpf: the trading app's cgroup v2 directory; TX timestamps (SCHED, SND, ACK) of its
    /// --orders writes are taken there by a sockops program (Linux 6.15+) and written to --tx-events.
    #[arg(long, value_name = "PATH", requires = "tx_events")]
    pub cgroup: Option<std::path::PathBuf>,
    /// CSV of the TX timestamps: time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last
    /// (one row per write and event; seq_last is the write's last byte: the egress frame with
    /// seq + len - 1 = seq_last carried it). Flushed every second, as the capture file is. An existing,
    /// non-empty file is refused (see --overwrite) unless it holds the header alone (a capture killed
    /// before its first event), and it cannot be the -w file. A CSV that cannot be
    /// written (no space left) is said at once and the capture goes on; the summary counts the events
    /// the file holds and those lost, and the error at exit (status 1) says what to do.
    #[arg(long, value_name = "FILE", requires = "cgroup")]
    pub tx_events: Option<std::path::PathBuf>,
    /// No messages on standard error (errors excepted).
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Interfaces to check (default: every interface except lo).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// Print the checks as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Output format of `frames`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Comma-separated values with a header row.
    Csv,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct FramesArgs {
    /// Capture files: pcap (µs/ns, either byte order, modified), pcapng, ERF; optionally gzip or zstd.
    /// `-` reads standard input: each frame's line shows as it comes (as for a FIFO).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Timestamp trailer decoding: `auto` (default: detect conservatively), `none`, or a format to force
    /// on every file (metamako, cpacket, exablaze_hpt, exablaze_fusion, arista7150, arista7280). `FILE=KIND`
    /// forces a format on one file only. A forced format that does not validate on a file's first frames
    /// is an error naming the file, the frame and the reason. Repeatable.
    #[arg(long, value_name = "KIND|FILE=KIND")]
    pub trailer: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    pub format: Format,

    /// Stop after this many frames.
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,

    /// Write to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Do not print the summary of counts and warnings on standard error.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// `err` and its causes, as `{:#}` joins them (`a: b: c`), but a cause whose error says it already (a
/// library error that shows its source, which the chain would show again) only once.
pub fn describe(err: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut said = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        // Only the error just before it can have said it (its source).
        if out.is_empty() {
            out.clone_from(&text);
        } else if !said.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        said = text;
    }
    out
}

/// An error in what the user asked for (arguments, a config file), not in the inputs: exit status 2,
/// as for clap's own errors. Says what its error says.
#[derive(Debug)]
pub struct UsageError(pub anyhow::Error);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&describe(&self.0))
    }
}

impl std::error::Error for UsageError {}

/// Marks `e` as the command line's fault ([`UsageError`]).
pub fn usage(e: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(UsageError(e))
}

/// Refuses, as [`UsageError`]s, the inputs and `--trailer` values no capture could make right
/// ([`crate::pipeline::check_inputs`]; `Pipeline::open` refuses them too, but among the errors of
/// opening the files, which are not the command line's): checked first, before anything is opened.
pub fn check_inputs(files: &[PathBuf], trailer: &[String]) -> anyhow::Result<()> {
    crate::pipeline::check_inputs(files, trailer).map(drop).map_err(usage)
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Frames(args) => {
            check_inputs(&args.files, &args.trailer)?;
            if let Some(o) = &args.output {
                crate::output::refuse_stdout(o, "-o").map_err(usage)?;
            }
            crate::frames::run(&args)
        }
        Command::Analyze(args) => crate::analyze::run(&args),
        Command::Synth(args) => crate::synth::run(&args),
        Command::Capture(args) => crate::capture::run(&args),
        Command::Doctor(args) => crate::doctor::run(&args),
        Command::ProbeStats { session, interval, count, once, json } => {
            let ns = wirestamp_core::analyze::parse_duration_ns(&interval).filter(|ns| *ns > 0).ok_or_else(|| {
                usage(anyhow::anyhow!(
                    "--interval {interval}: not a duration above 0 with its unit ({}; e.g. 500ms, 1s)",
                    wirestamp_core::analyze::DURATION_UNITS
                ))
            })?;
            let args = wirestamp_probe::reader::ProbeStatsArgs {
                session,
                interval: std::time::Duration::from_nanos(ns as u64),
                count,
                once,
                json,
            };
            wirestamp_probe::reader::probe_stats(args, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { keep, packets } => crate::demo::run(keep.as_deref(), packets),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    /// A library error that says its source (`LiveError::Sys`) has it said once; other causes are
    /// joined as `{:#}` joins them.
    #[test]
    fn an_error_says_each_cause_once() {
        let io = || std::io::Error::from_raw_os_error(libc::EINVAL);
        let sys = wirestamp_capture::live::LiveError::Sys { what: "bind", iface: "va".into(), source: io() };
        let e = anyhow::Error::new(sys).context("opening the socket");
        let once = "opening the socket: bind on \"va\": Invalid argument (os error 22)";
        assert_eq!(describe(&e), once);
        assert_eq!(format!("{e:#}"), format!("{once}: Invalid argument (os error 22)"));
        let e = anyhow::Error::new(io()).context("reading x");
        assert_eq!(describe(&e), format!("{e:#}"));
    }
}
