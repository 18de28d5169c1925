//! `wirestamp capture`: live frames (AF_PACKET ring, libpcap, or a pcap/pcapng stream on stdin) to
//! pcapng files with nanosecond timestamps.
//!
//! Output layout: one IDB per (interface, timestamp source), added when that pair first occurs; its
//! `if_description` says where the timestamps come from (hardware / software / none, and the NIC
//! timestamping mode with its reason); the section comment records the command and the host. Direction
//! goes in `epb_flags`. Each file is written as `FILE.part` and renamed to its name once complete, so a
//! failed or interrupted run never leaves a file without its last block. The `.part` is created anew and
//! locked while written, and the rename replaces no file made at the name meanwhile (`claim`). With
//! `-G`/`-C`, files are `STEM.0000.EXT`, `STEM.0001.EXT`, ... (a name taken when the capture comes to
//! it is skipped: `Files::claim`); a file without frames is not rotated, and one left without frames at
//! exit is removed unless it is the only one (`Files::close`). A file that cannot be completed (a write,
//! its last flush or its sync failing) stays as its `.part`, said so (`complete`).
//!
//! Several `-i` (afpacket) open one ring per interface, read round-robin: frames are in time order per
//! interface, not across interfaces (pcapng does not require it; `wirestamp frames` merges by time).
//!
//! SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session; left ignored when it is, as under
//! `nohup`) stop the loop; the files are completed, the counters printed, and the NIC's timestamping
//! configuration restored (the guard's drop). A relay stopped before its stream's header ends at once,
//! without a file (none is made before the header is read).
//!
//! Outputs: a capture is data no later run can make again, so no existing, non-empty file is replaced
//! (see `check_outputs`): not `-w`, not one of its numbered names, not a killed capture's `.part`
//! (unless it holds no frame: `complete::holds_no_frame`), not `--tx-events` (unless it holds its
//! header alone: `tx_replaceable`); `--overwrite` replaces earlier captures and TX CSVs, never another
//! file.

mod claim;
mod complete;
mod tx_csv;

use crate::cli::{CaptureArgs, CaptureSource, RxHookArg, usage};
use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use complete::file_id;
use std::cell::Cell;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};
use tx_csv::{TX_HEADER, TxCsv};
use wirestamp_capture::live::clock::ClockWatch;
use wirestamp_capture::live::ebpf::{FRAME_MAX, RxHook};
use wirestamp_capture::live::pmc::Pmc;
use wirestamp_capture::live::{
    AfPacket, AfXdp, AfXdpStats, EbpfConfig, EbpfSource, EbpfStats, HwTsGuard, Ioctl, LiveError, PcapLive, PcapStats,
    PolledStdin, RingConfig, RingMerge, RingStats, Step, TsMode, offloads,
};
use wirestamp_capture::write::{CAPTURE_COMMENT, IfaceSpec, PcapngWriter};
use wirestamp_capture::{CaptureReader, ReadErrorKind, RecordedStats, TsResolution};
use wirestamp_core::analyze::flows::FlowSpec;
use wirestamp_core::{ClockQuality, Frame, LinkType, TsSource};

static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that set [`STOP`], for the summary.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::Relaxed);
    STOP.store(true, Ordering::Relaxed);
}

/// Why the capture ended as asked (said in the summary, with when).
#[derive(Debug, Clone, Copy)]
enum Stop {
    Count,
    Duration,
    Signal,
    EndOfStream,
}

impl Stop {
    fn words(self, args: &CaptureArgs) -> String {
        match self {
            Stop::Count => format!("-c {} reached", args.count.unwrap_or_default()),
            Stop::Duration => format!("--duration {} reached", args.duration.as_deref().unwrap_or_default()),
            Stop::Signal => match STOP_SIGNAL.load(Ordering::Relaxed) {
                libc::SIGINT => "SIGINT received".into(),
                libc::SIGHUP => "SIGHUP received".into(),
                _ => "SIGTERM received".into(),
            },
            Stop::EndOfStream => "the end of the stream on stdin".into(),
        }
    }
}

/// `--duration`: a duration with its unit, as the other options take one (`--interval`,
/// `--tick-retention`), or whole seconds without one (all it took before units); above 0.
fn duration_arg(value: &str) -> Result<Duration> {
    let d = match value.parse::<u64>() {
        Ok(secs) => Some(Duration::from_secs(secs)),
        Err(_) => wirestamp_core::analyze::parse_duration_ns(value).map(|ns| Duration::from_nanos(ns.unsigned_abs())),
    };
    d.filter(|d| !d.is_zero()).ok_or_else(|| {
        anyhow::anyhow!(
            "--duration {}: not a duration above 0: whole seconds (e.g. 30), or a number with its unit: {} (e.g. \
             500ms, 90s, 1.5min, 8h)",
            if value.is_empty() { "''" } else { value },
            wirestamp_core::analyze::DURATION_UNITS
        )
    })
}

/// SIGINT/SIGTERM/SIGHUP set [`STOP`]; no SA_RESTART, so a blocking read returns EINTR and the loop sees
/// it. A SIGHUP ignored at start (`nohup wirestamp capture ...`) stays ignored, as tcpdump leaves it.
fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe); the sigaction structs are fully
        // initialised (zeroed, then handler and empty mask); `old` is written by the kernel.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            // (SIGINT is taken even when ignored: a shell starts background jobs with it ignored.)
            if sig == libc::SIGHUP
                && libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// A `Write` that counts bytes, for size rotation.
struct Counting<W> {
    inner: W,
    count: Rc<Cell<u64>>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

type Out = PcapngWriter<Counting<BufWriter<File>>>;

/// The output files: the current one, its IDBs, rotation.
struct Files {
    base: PathBuf,
    numbered: bool,
    index: u32,
    comment: String,
    current: Option<(Out, PathBuf, PathBuf)>,
    /// The current `.part`'s device and inode, as made: whether its name still holds it
    /// (`complete::still_at`).
    part_id: (u64, u64),
    idbs: HashMap<(u32, TsSource), u32>,
    bytes: Rc<Cell<u64>>,
    opened: Instant,
    /// When the capture began, ns since the epoch: an interface's first statistics block counts from there.
    began_ns: i64,
    /// Per interface, the sample its last statistics block was made of, and when: the next block counts
    /// from there, so that rotated files read together add up.
    counted: HashMap<usize, (RecordedStats, i64)>,
    /// Per interface, indexed by it, the frames written to the current file and to all files (a
    /// stream's interfaces are its reader's rows, 65,536 at most: the table stays small).
    written_of: Vec<Written>,
    /// Interfaces whose last counts are in no file (lost, still queued at exit), the last file having
    /// none of their frames: said in the summary instead.
    unblocked: Vec<(usize, u64, u64)>,
    written: Vec<PathBuf>,
    /// When the current file was last flushed to the kernel ([`Files::flush_due`]).
    flushed: Instant,
    /// `--overwrite`: an earlier capture at a name (or its `.part`) is replaced.
    overwrite: bool,
    /// Files whose name was taken while they were written: their frames stay in their `.part`.
    kept: Vec<claim::Kept>,
    /// Whether the last file closed is among `kept`.
    last_kept: bool,
    /// Names a rotating capture skipped, taken when it came to them ([`Files::claim`]).
    skipped: Vec<PathBuf>,
    /// What the summary says of each `.part` a write, the final flush or the sync failed on (left as
    /// it is), or that was removed or moved while written: it does not call the frames written.
    incomplete: Vec<String>,
    /// The `.part` of each file a rotating capture closed but could not finish (moved away or
    /// removed while written, or not renamed), said when it happened: the capture went on.
    unfinished: Vec<PathBuf>,
    /// Frames written to the current file (to its buffer), or whose write to it failed.
    in_file: u64,
    /// The current file's length and its frames when it was last flushed whole: what it holds for sure
    /// if a later write fails ([`Files::failed`]).
    flushed_whole: (u64, u64),
}

/// Names taken in a row a rotating capture skips before it stops: past this, something takes every
/// name it comes to.
const MAX_SKIPPED: usize = 100;

/// How long written frames may wait in the output buffer (1 MiB): a capture killed (SIGKILL, the OOM
/// killer) leaves its `.part` with every frame up to about this long before, not a buffer's worth
/// fewer (or, at a low rate, nothing).
const FLUSH_EVERY: Duration = Duration::from_secs(1);

fn wall_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A source's counters, read once for each use: at a rotation for the closing file's statistics blocks;
/// at exit for the last file's and for the summary on stderr, which therefore say the same.
enum Sample {
    Rings(Vec<Result<RingStats, LiveError>>),
    Pcap(Result<PcapStats, LiveError>),
    Ebpf(Result<Vec<EbpfStats>, LiveError>),
    AfXdp(Result<AfXdpStats, LiveError>),
    /// A stream's counters are its own statistics blocks' (read with it), per interface; and for the
    /// summary, its records read and its warnings.
    Relayed {
        recorded: Vec<RecordedStats>,
        records: u64,
        warnings: Vec<String>,
    },
}

fn sample(source: &mut Source) -> Sample {
    match source {
        Source::Rings(rings, _) => Sample::Rings(rings.iter_mut().map(|r| r.stats()).collect()),
        Source::Pcap(p) => Sample::Pcap(p.stats()),
        Source::Ebpf(s) => Sample::Ebpf(s.stats()),
        Source::AfXdp(s) => Sample::AfXdp(s.stats()),
        Source::Stream(r) => Sample::Relayed {
            recorded: r.interfaces().iter().map(|i| i.recorded.unwrap_or_default()).collect(),
            records: r.stats().frames,
            warnings: r.warnings().iter().map(|w| w.to_string()).collect(),
        },
    }
}

/// Each interface's counters since the capture began, for the files' statistics blocks.
struct Counters {
    /// Per interface (empty, or all unknown, when the source has none or they could not be read; the
    /// summary on stderr says so). `usrdeliv` is left to [`Files`], which counts the frames written.
    per_iface: Vec<RecordedStats>,
    /// A stream's, relayed as its statistics blocks recorded them.
    relayed: bool,
}

/// The counters of `sample` (see [`isb_counters`] for what each becomes in a file).
fn iface_stats(sample: &Sample) -> Counters {
    let none = RecordedStats::default();
    let live = |per_iface| Counters { per_iface, relayed: false };
    match sample {
        // filteraccept: tp_packets (TPACKET_V3: queued in the ring + dropped); osdrop: tp_drops.
        Sample::Rings(v) => live(
            v.iter()
                .map(|r| {
                    r.as_ref().map_or(none, |s| RecordedStats {
                        filteraccept: Some(s.kernel_packets),
                        osdrop: Some(s.kernel_drops),
                        ..none
                    })
                })
                .collect(),
        ),
        Sample::Pcap(p) => live(
            p.as_ref()
                .map(|s| {
                    vec![RecordedStats {
                        ifrecv: Some(s.received),
                        ifdrop: Some(s.if_dropped),
                        osdrop: Some(s.dropped),
                        ..none
                    }]
                })
                .unwrap_or_default(),
        ),
        // What the stream's own statistics blocks recorded (the capture it relays lost those packets):
        // carried into the output's, so that a relay does not turn a lossy capture into a clean one.
        Sample::Relayed { recorded, .. } => Counters { per_iface: recorded.clone(), relayed: true },
        Sample::AfXdp(s) => live(
            s.as_ref()
                .map(|s| vec![RecordedStats { ifrecv: Some(s.prog.seen), osdrop: Some(s.rx_dropped), ..none }])
                .unwrap_or_default(),
        ),
        // filteraccept: matched, which is lost in the BPF ring (full), lost here (queue full, a bad
        // record), written, or still queued: osdrop counts the losses.
        Sample::Ebpf(v) => live(
            v.as_ref()
                .map(|v| {
                    v.iter()
                        .map(|e| {
                            let (xm, xl) = e.xdp.map_or((0, 0), |x| (x.matched, x.ringbuf_full + x.bad_records));
                            RecordedStats {
                                filteraccept: Some(e.bpf.matched + xm),
                                osdrop: Some(e.bpf.ringbuf_full + e.bpf.bad_records + xl + e.queue_drops),
                                ..none
                            }
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
    }
}

/// The comment of a statistics block without counters: the source gave none for the interface.
const NO_COUNTERS: &str = "the capture source gave no counters for this interface: the packets it lost are unknown";

/// Frames of one interface written to the file being closed, and to all files so far.
#[derive(Debug, Clone, Copy, Default)]
struct Written {
    file: u64,
    all: u64,
}

/// Each counter's part in a span: `now` less `then` (a counter the source does not have stays unknown).
fn span(now: &RecordedStats, then: &RecordedStats) -> RecordedStats {
    let d = |n: Option<u64>, t: Option<u64>| n.map(|n| n.saturating_sub(t.unwrap_or(0)));
    RecordedStats {
        ifrecv: d(now.ifrecv, then.ifrecv),
        ifdrop: d(now.ifdrop, then.ifdrop),
        filteraccept: d(now.filteraccept, then.filteraccept),
        osdrop: d(now.osdrop, then.osdrop),
        usrdeliv: d(now.usrdeliv, then.usrdeliv),
    }
}

/// A live source's statistics block for one interface of a file, and its comment: `now` and `then` are
/// the interface's counters since the capture began when this block and its previous one were made.
///
/// The rule: a frame that passed the filter is counted in the file where its fate was settled.
/// - `isb_usrdeliv`: the interface's frames written to this file.
/// - `isb_osdrop`: those lost in the span (ring full; ebpf: also the user-space queue full, bad records).
/// - `isb_filteraccept`: usrdeliv + osdrop. Frames that had passed the filter when the file closed but
///   were still queued (in the kernel's ring, or read and held for the time-order merge) are written to
///   the next file and counted in its block; the comment says how many. At exit, those never written
///   (still queued when the capture stopped: `-c` reached, a signal) are counted in the last file's:
///   there filteraccept = usrdeliv + osdrop + queued, the comment says how many, and the summary on
///   stderr gives the same numbers (one sample).
///
/// So each file's block is exact about that file, and summed over the files filteraccept is the
/// kernel's count, osdrop its losses, usrdeliv the frames written. (The kernel's own filteraccept of
/// each span put a frame accepted before a rotation and written after in one file's accepted and the
/// next file's delivered: a file with more frames than it said were accepted, the one before with some
/// neither delivered nor dropped.) `isb_ifrecv`, `isb_ifdrop`: the interface's counts of the span
/// (before any queue: nothing to settle).
fn isb_counters(now: &RecordedStats, then: &RecordedStats, w: Written, last: bool) -> (RecordedStats, Option<String>) {
    let spanned = span(now, then);
    let osdrop = spanned.osdrop;
    // Passed the filter since the capture began, neither lost nor written.
    let queued = now.filteraccept.map(|a| a.saturating_sub(now.osdrop.unwrap_or(0) + w.all));
    let settled = w.file + osdrop.unwrap_or(0);
    let (filteraccept, comment) = match queued {
        None => (None, None),
        Some(0) => (Some(settled), None),
        Some(q) if last => (
            Some(settled + q),
            Some(format!(
                "wirestamp: isb_filteraccept = isb_usrdeliv + isb_osdrop + {q} frames that passed the filter and were \
                 never written (still queued when the capture stopped)"
            )),
        ),
        Some(q) => (
            Some(settled),
            Some(format!(
                "wirestamp: isb_filteraccept = isb_usrdeliv + isb_osdrop; {q} more frames had passed the filter when \
                 this file closed, still queued: written to the next file, and counted in its block"
            )),
        ),
    };
    (
        RecordedStats { ifrecv: spanned.ifrecv, ifdrop: spanned.ifdrop, filteraccept, osdrop, usrdeliv: Some(w.file) },
        comment,
    )
}

/// The name of output file `index`: `base` itself, or with rotation `STEM.NNNN.EXT`.
fn file_name(base: &Path, numbered: bool, index: u32) -> PathBuf {
    if !numbered {
        return base.to_path_buf();
    }
    let stem = base.file_stem().unwrap_or_default().to_string_lossy();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.{index:04}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{index:04}"),
    };
    base.with_file_name(name)
}

impl Files {
    /// No file open yet; the capture's start is now (the first file's statistics blocks count from it).
    fn new(base: PathBuf, numbered: bool, comment: String, overwrite: bool) -> Files {
        Files {
            base,
            numbered,
            index: 0,
            comment,
            current: None,
            part_id: (0, 0),
            idbs: HashMap::new(),
            bytes: Rc::new(Cell::new(0)),
            opened: Instant::now(),
            began_ns: wall_ns(),
            counted: HashMap::new(),
            written_of: Vec::new(),
            unblocked: Vec::new(),
            written: Vec::new(),
            flushed: Instant::now(),
            overwrite,
            kept: Vec::new(),
            last_kept: false,
            skipped: Vec::new(),
            incomplete: Vec::new(),
            unfinished: Vec::new(),
            in_file: 0,
            flushed_whole: (0, 0),
        }
    }

    fn name(&self) -> PathBuf {
        file_name(&self.base, self.numbered, self.index)
    }

    /// Opens the next file: claims it ([`Files::claim`]) and begins it ([`Files::begin`]).
    fn open(&mut self) -> Result<()> {
        let claimed = self.claim()?;
        self.begin(claimed)
    }

    /// Claims the next file (see [`Files::claim_at`]). A rotating capture whose next name is taken
    /// (another capture holds its `.part`, or a file there may not be replaced) skips it, saying so, and
    /// goes on with the one after, as when a name is taken at the rename: a collision must not end a
    /// long capture. The first name is the start's, refused then.
    fn claim(&mut self) -> Result<claim::Claim> {
        for _ in 0..MAX_SKIPPED {
            let e = match self.claim_at() {
                Err(e) if self.numbered && self.index > 0 => e,
                r => return r,
            };
            let Some(taken) = e.downcast_ref::<claim::Taken>() else { return Err(e) };
            let (name, part) = (self.name(), part_of(&self.name()));
            let why = match claim::in_use(&part) {
                true => format!(
                    "{} is being written by another capture, running now (`fuser -v {}` names it)",
                    part.display(),
                    part.display()
                ),
                // Why, without the flag, which this message names: the file it is about named when it is
                // not the name skipped (its `.part`).
                false if taken.name == name => taken.why.clone(),
                false => format!("{}: {}", taken.name.display(), taken.why),
            };
            self.index += 1;
            // Said now, -q or not, and named again at exit.
            crate::note!(
                "wirestamp: -w {}: {} skipped, its name taken: {why}; this capture goes on with {}",
                self.base.display(),
                name.display(),
                self.name().display()
            );
            self.skipped.push(name);
        }
        bail!("-w {}: {MAX_SKIPPED} names in a row were taken; stopped", self.base.display())
    }

    /// Claims file `index`: its `.part` made anew, or one [`replaceable`] allows, and locked (a second
    /// capture of this name is refused: [`claim::Taken`]); nothing in it changed yet. A file at its name
    /// is not refused here: the rename leaves it be ([`claim::commit`]), and the capture goes on.
    fn claim_at(&self) -> Result<claim::Claim> {
        let overwrite = self.overwrite;
        claim::create_part(&part_of(&self.name()), |p| replaceable(p, overwrite))
    }

    /// Begins file `index` in the `.part` claimed for it: what was there is emptied now ([`claim::Claim::take`]).
    fn begin(&mut self, claimed: claim::Claim) -> Result<()> {
        let path = self.name();
        let part = part_of(&path);
        let f = claimed.take()?;
        // (An fstat that fails leaves no id: the file is then never taken for the one at its name.)
        self.part_id = f.metadata().map_or((0, 0), |m| file_id(&m));
        self.bytes = Rc::new(Cell::new(0));
        let w = Counting { inner: BufWriter::with_capacity(1 << 20, f), count: self.bytes.clone() };
        let w = PcapngWriter::new(w, Some(&self.comment)).with_context(|| format!("writing {}", part.display()))?;
        self.current = Some((w, part, path));
        self.idbs.clear();
        self.written_of.iter_mut().for_each(|w| w.file = 0);
        self.opened = Instant::now();
        self.flushed = self.opened;
        (self.in_file, self.flushed_whole) = (0, (0, 0));
        Ok(())
    }

    /// Flushes the current file if it was last flushed [`FLUSH_EVERY`] ago; true when it did (the
    /// `--tx-events` CSV is flushed with it).
    fn flush_due(&mut self) -> Result<bool> {
        if let Some((w, _, _)) = self.current.as_mut()
            && self.flushed.elapsed() >= FLUSH_EVERY
        {
            if let Err(e) = w.flush() {
                return Err(self.failed(e));
            }
            self.flushed = Instant::now();
            self.flushed_whole = (self.bytes.get(), self.in_file);
            return Ok(true);
        }
        Ok(false)
    }

    /// Whether the current file holds a frame (its interfaces are added with their first frames).
    fn has_frames(&self) -> bool {
        !self.idbs.is_empty()
    }

    /// Writes `f`; its interface's first frame in this file (and timestamp source) adds the interface,
    /// its timestamps in units of 10^-`decimals` s.
    fn write(
        &mut self,
        f: &Frame<'_>,
        name: &str,
        describe: &dyn Fn(TsSource) -> String,
        snaplen: u32,
        decimals: u8,
    ) -> Result<()> {
        if self.current.is_none() {
            self.open()?;
        }
        let (w, _, _) = self.current.as_mut().expect("opened above");
        // Counted before it is written: a frame whose write fails is one of those the file lost.
        self.in_file += 1;
        let key = (f.interface, f.ts_source);
        let id = match self.idbs.get(&key) {
            Some(&id) => id,
            None => {
                let spec = IfaceSpec {
                    link: f.link,
                    name: name.to_string(),
                    description: Some(describe(f.ts_source)),
                    snaplen,
                };
                match w.add_interface_in(&spec, decimals) {
                    Ok(id) => {
                        self.idbs.insert(key, id);
                        id
                    }
                    Err(e) => return Err(self.failed(e)),
                }
            }
        };
        if let Err(e) = w.write_flagged(id, f.ts_ns, f.data, f.wire_len, f.direction, f.quality) {
            return Err(self.failed(e));
        }
        let at = f.interface as usize;
        if at >= self.written_of.len() {
            self.written_of.resize(at + 1, Written::default());
        }
        let w = &mut self.written_of[at];
        w.file += 1;
        w.all += 1;
        Ok(())
    }

    /// Whether the current file is to be closed and the next one opened: `-G` seconds since it was
    /// opened, or `-C` megabytes written. A file without a frame is not rotated: its `-G` interval
    /// begins again instead, so that an idle capture makes no empty files (and a frame after the idle
    /// time is in a file opened at most `-G` seconds before it).
    fn rotate_due(&mut self, secs: Option<u64>, mb: Option<u64>) -> bool {
        let due = self.current.is_some()
            && (secs.is_some_and(|s| self.opened.elapsed() >= Duration::from_secs(s))
                || mb.is_some_and(|m| self.bytes.get() >= m * 1_000_000));
        if due && !self.has_frames() {
            self.opened = Instant::now();
            return false;
        }
        due
    }
}

/// Interfaces of a stream given their own name in the output; beyond, frames are written under the
/// capture's `-i` name (an interface id is the stream's to choose: a hostile one must not size a table).
const MAX_STREAM_NAMES: usize = 65_536;

/// `--snaplen`'s default, the largest.
const SNAPLEN_DEFAULT: u32 = 262_144;

/// `--snaplen`: 0 means the largest, as with tcpdump's `-s 0`.
fn snaplen_arg(s: u32) -> u32 {
    if s == 0 { SNAPLEN_DEFAULT } else { s }
}

/// What a frame's timestamp means, for `if_description`.
fn ts_words(ts: TsSource) -> &'static str {
    match ts {
        TsSource::KernelHardware => "NIC hardware timestamps (raw PHC time)",
        TsSource::KernelSoftware => "kernel software timestamps (CLOCK_REALTIME at the driver)",
        TsSource::KernelNone => "no timestamp flag: CLOCK_REALTIME when the kernel copied the frame",
        TsSource::BpfHook => {
            "eBPF hook time: bpf_ktime_get_tai_ns() when the tc/XDP program ran, less the kernel's TAI offset \
             (CLOCK_REALTIME); the packet carried no stamp"
        }
        TsSource::PcapngNone => "NO timestamp in the input (pcapng Simple Packet Block): written as 0",
        _ => "timestamps as read from the input stream",
    }
}

enum Source {
    /// One ring per interface, their frames merged in time order.
    Rings(Vec<AfPacket>, Box<RingMerge>),
    Pcap(PcapLive),
    Stream(Box<CaptureReader>),
    Ebpf(Box<EbpfSource>),
    AfXdp(Box<AfXdp>),
}

/// Waits up to `ms` for any ring to have a block ready (or a signal). A ring's socket error (its link
/// went down, or away) is taken: left, it would make every wait return at once.
fn poll_all(rings: &mut [AfPacket], ms: i32) -> Result<()> {
    use std::os::fd::AsRawFd;
    let mut fds: Vec<libc::pollfd> = rings
        .iter()
        .map(|r| libc::pollfd { fd: r.as_raw_fd(), events: libc::POLLIN | libc::POLLERR, revents: 0 })
        .collect();
    // SAFETY: `fds` is a valid array of `fds.len()` pollfds.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("poll");
        }
        return Ok(());
    }
    for (ring, fd) in rings.iter_mut().zip(&fds) {
        if fd.revents & libc::POLLERR != 0 {
            ring.take_error()?;
        }
        ring.check_gone()?;
    }
    Ok(())
}

/// `MemAvailable` of /proc/meminfo, in MiB.
fn mem_available_mib() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib / 1024)
}

/// The first bytes of a capture: pcapng's section header, then pcap's magic in its four forms.
const CAPTURE_MAGICS: [[u8; 4]; 5] = [
    [0x0a, 0x0d, 0x0d, 0x0a],
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0x4d, 0x3c, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
];

/// The file written while `path` is not complete: `path.part`.
fn part_of(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".part");
    p.into()
}

/// Whether capture may write `path` (`-w`'s name, a numbered name, or the `.part` of one): it is missing
/// or empty, a `.part` that holds no frame ([`complete::holds_no_frame`]), or (`overwrite`) an earlier
/// capture. Anything else is refused, saying what is there and
/// what to do: a capture (or a killed capture's `.part`) is data no later run can make again, and the
/// file is written beside `path` and renamed over it, so a device or a FIFO would become a regular file.
fn replaceable(path: &Path, overwrite: bool) -> Result<(), claim::Taken> {
    let refused = |name: &Path, why: String| Err(claim::Taken::new("-w", name, why));
    let shown = path.display();
    let Ok(meta) = std::fs::metadata(path) else {
        // A link to nothing is a name taken all the same: the rename would find it there at the end
        // and keep the frames in the `.part`, a whole capture later.
        if let Ok(to) = std::fs::read_link(path) {
            return refused(
                path,
                format!(
                    "a symbolic link to {}, which does not exist: capture writes its file beside the link and renames \
                     it to the link's name, not where the link points; give the file's own name, or remove the link",
                    to.display()
                ),
            );
        }
        return Ok(());
    };
    if !meta.is_file() {
        return refused(
            path,
            "not a regular file (a device, a FIFO?): capture writes a file beside it and renames it over it; give a \
             file name"
                .into(),
        );
    }
    if meta.len() == 0 {
        return Ok(());
    }
    if !CAPTURE_MAGICS.iter().any(|m| crate::output::begins_with_bytes(path, m)) {
        return refused(
            path,
            "the file exists and is not a capture (pcapng or pcap): refusing to overwrite it; remove it or choose \
             another name"
                .into(),
        );
    }
    let done = path.to_str().and_then(|p| p.strip_suffix(".part"));
    // A `.part` without a frame (a capture killed before its first: its header alone) holds nothing to
    // lose: taken, so that it does not hold off the next capture until removed by hand.
    if overwrite || (done.is_some() && complete::holds_no_frame(path)) {
        return Ok(());
    }
    let bytes = meta.len();
    match done {
        Some(done) => refused(
            Path::new(done),
            format!(
                "{shown} is left by a capture that did not give it its name (killed, or the machine stopped: its \
                 frames up to about a second before; a write failed; or the name was taken while it ran, as it \
                 said): {bytes} bytes; refusing to overwrite it. Keep it under another name (mv {shown} {}; \
                 `wirestamp analyze` reads it as it is) or remove it, then start again; --overwrite replaces it",
                recovered_name(Path::new(done)).display()
            ),
        ),
        None => refused(
            path,
            format!(
                "the file exists and holds a capture ({bytes} bytes): refusing to overwrite it; rename or remove it, \
                 or choose another name; --overwrite replaces an earlier capture"
            ),
        ),
    }
}

/// A name for a killed capture's `.part` of `path`: `STEM.recovered.EXT` (pcapng whatever `path`'s
/// extension: capture writes pcapng).
fn recovered_name(path: &Path) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!("{stem}.recovered.pcapng"))
}

/// Whether `name` is one of the files a rotating capture to `base` writes (`STEM.NNNN.EXT`: four digits
/// or more), or the `.part` of one.
fn is_numbered_name(base: &Path, name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else { return false };
    let name = name.strip_suffix(".part").unwrap_or(name);
    let stem = base.file_stem().unwrap_or_default().to_string_lossy();
    let digits = match base.extension() {
        Some(ext) => name.strip_suffix(&format!(".{}", ext.to_string_lossy())),
        None => Some(name),
    };
    let digits = digits.and_then(|n| n.strip_prefix(&*stem)).and_then(|n| n.strip_prefix('.'));
    digits.is_some_and(|d| d.len() >= 4 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The directory of `p` (`.` for a bare name).
fn dir_of(p: &Path) -> &Path {
    p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Whether capture to `base` would write `p`: `base` or its `.part`, or with rotation a numbered name or
/// its `.part` in `base`'s directory.
fn writes(base: &Path, numbered: bool, p: &Path) -> bool {
    use crate::output::same_file;
    if !numbered {
        return same_file(p, base) || same_file(p, &part_of(base));
    }
    let same_dir = match (dir_of(p).canonicalize(), dir_of(base).canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => dir_of(p) == dir_of(base),
    };
    same_dir && p.file_name().is_some_and(|n| is_numbered_name(base, n))
}

/// Refuses the outputs that would replace a file (see [`replaceable`]): `-w` and its `.part`, or with
/// rotation every numbered name and `.part` already in its directory (the run would reach them), and
/// `--tx-events`. A `.part` a running capture holds is said to be that first, whatever `--overwrite`
/// says. `-w` and `--tx-events` on one file is the command line's fault ([`usage`]).
fn check_outputs(args: &CaptureArgs) -> Result<()> {
    let (base, numbered) = (&args.output, args.rotate_secs.is_some() || args.rotate_mb.is_some());
    if let Some(tx) = &args.tx_events {
        crate::output::refuse_stdout(tx, "--tx-events").map_err(usage)?;
        if writes(base, numbered, tx) {
            let what = if numbered { " (one -w writes with -G/-C, or its .part)" } else { "" };
            return Err(usage(anyhow::anyhow!(
                "-w and --tx-events name the same file, {}{what}: each needs its own",
                tx.display()
            )));
        }
    }
    if numbered {
        let dir = dir_of(base);
        let mut present: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("-w {}: listing {}", base.display(), dir.display()))?
            .filter_map(|e| e.ok())
            .filter(|e| is_numbered_name(base, &e.file_name()))
            .map(|e| base.with_file_name(e.file_name()))
            .collect();
        present.sort();
        if let Some(p) = present.iter().find(|p| claim::in_use(p)) {
            return Err(claim::Taken::part_in_use(p).into());
        }
        for p in present {
            replaceable(&p, args.overwrite)?;
        }
    } else {
        let part = part_of(base);
        if claim::in_use(&part) {
            return Err(claim::Taken::part_in_use(&part).into());
        }
        replaceable(base, args.overwrite)?;
        replaceable(&part, args.overwrite)?;
    }
    if let Some(tx) = args.tx_events.as_deref() {
        if claim::in_use(tx) {
            return Err(claim::Taken::tx_in_use(tx).into());
        }
        tx_replaceable(tx, args.overwrite)?;
    }
    Ok(())
}

/// Whether capture may write the `--tx-events` CSV `tx`: missing, empty or not a regular file (a FIFO),
/// an earlier CSV holding its header alone (no event: a capture killed before its first, as a `.part`
/// holding no frame is taken), or (`overwrite`) an earlier capture's; anything else is refused, saying
/// what to do.
fn tx_replaceable(tx: &Path, overwrite: bool) -> Result<(), claim::Taken> {
    let refused = |why: &str| Err(claim::Taken::new("--tx-events", tx, why.into()));
    if !crate::output::kept_file(tx) {
        return Ok(());
    }
    if !crate::output::begins_with(tx, TX_HEADER) {
        return refused(
            "the file exists and is not an earlier --tx-events CSV (a capture given as its name?): refusing to \
             overwrite it; remove it or choose another name",
        );
    }
    let header_alone = std::fs::metadata(tx).is_ok_and(|m| m.len() == TX_HEADER.len() as u64 + 1)
        && crate::output::begins_with(tx, &format!("{TX_HEADER}\n"));
    if !overwrite && !header_alone {
        return refused(
            "the file exists and holds the TX events of an earlier capture: refusing to overwrite it; rename or \
             remove it, or choose another name; --overwrite replaces it",
        );
    }
    Ok(())
}

/// Refuses what cannot be meant, before anything is opened: each message says what to give instead.
/// These are the command line's errors (exit status 2, [`usage`]).
fn check_usage(args: &CaptureArgs, ifaces: &[String]) -> Result<()> {
    if let Some(dup) = ifaces.iter().enumerate().find_map(|(i, a)| ifaces[..i].contains(a).then_some(a)) {
        bail!("-i {dup} is given twice: each frame would be captured twice");
    }
    // libpcap's pseudo-interface: no interface of that name exists for the other sources.
    if ifaces.iter().any(|i| i == "any") && !matches!(args.source, CaptureSource::Pcap | CaptureSource::Stdin) {
        bail!(
            "-i any is libpcap's pseudo-interface (every interface, with cooked Linux headers instead of Ethernet): \
             use --source pcap -i any, or name the interfaces (-i a -i b; `ip link` lists them)"
        );
    }
    if args.rotate_secs == Some(0) || args.rotate_mb == Some(0) {
        bail!("-G and -C take at least 1 (seconds, MB): 0 would start a new file at every check");
    }
    if args.snaplen > SNAPLEN_DEFAULT {
        bail!("--snaplen {}: at most {SNAPLEN_DEFAULT} (0 means that)", args.snaplen);
    }
    if args.source == CaptureSource::Ebpf && snaplen_arg(args.snaplen) != SNAPLEN_DEFAULT {
        bail!(
            "--snaplen {} does not apply to --source ebpf: its frames are cut at their headers + --snap-payload \
             bytes (at most {FRAME_MAX} in all); give --snap-payload",
            args.snaplen
        );
    }
    if args.source == CaptureSource::Ebpf && u32::from(args.snap_payload) > FRAME_MAX {
        bail!(
            "--snap-payload {}: at most {FRAME_MAX} payload bytes; frames are cut at {FRAME_MAX} bytes in all, \
             headers included (Ethernet + IPv4 + TCP: 54 bytes or more), so at most about {} bytes of a TCP \
             payload reach the file",
            args.snap_payload,
            FRAME_MAX - 54
        );
    }
    if args.filter.is_some() {
        match args.source {
            CaptureSource::Ebpf => {
                bail!("-f does not apply to --source ebpf: its programs capture the --md/--orders flows")
            }
            CaptureSource::Afxdp => {
                bail!("-f does not apply to --source afxdp: its program takes every frame of the queue")
            }
            CaptureSource::Stdin => bail!("-f applies to live sources; filter a stream before it reaches wirestamp"),
            CaptureSource::Afpacket | CaptureSource::Pcap => {}
        }
    }
    let live = !matches!(args.source, CaptureSource::Stdin);
    if live && args.ring_mb == 0 {
        bail!("--ring-mb 0: the ring takes at least 1 MiB");
    }
    // The BPF ring buffer is a power of two: what the kernel takes, not what was asked.
    let per_iface = match args.source {
        CaptureSource::Ebpf => u64::from(args.ring_mb.max(1)).next_power_of_two().min(2048),
        _ => u64::from(args.ring_mb),
    };
    let total = per_iface * ifaces.len() as u64;
    if let Some(avail) = mem_available_mib().filter(|avail| live && total > avail / 4) {
        let most = (avail / 4 / ifaces.len() as u64).max(1);
        // ebpf: the largest power of two within it.
        let most = if matches!(args.source, CaptureSource::Ebpf) { 1 << (63 - most.leading_zeros()) } else { most };
        bail!(
            "--ring-mb {} for {} interface(s) is {total} MiB, more than a quarter of the memory available ({avail} MiB): \
             the kernel would take it from other processes; give at most {most}",
            args.ring_mb,
            ifaces.len(),
        );
    }
    if args.output.as_os_str() == "-" {
        bail!("-w -: capture writes a file (its statistics blocks are written at its end), not standard output");
    }
    Ok(())
}

/// Refuses the outputs the file system does not allow (exit status 1), and those that would replace a
/// file ([`check_outputs`]), before any source is opened.
fn check_files(args: &CaptureArgs) -> Result<()> {
    let out = &args.output;
    if out.is_dir() {
        bail!("-w {}: is a directory; give a file name", out.display());
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        bail!("-w {}: the directory {} does not exist", out.display(), dir.display());
    }
    // Found now, before the source is opened, as -w's are (not once the files are claimed).
    if let Some(tx) = args.tx_events.as_deref() {
        if tx.is_dir() {
            bail!("--tx-events {}: is a directory; give a file name", tx.display());
        }
        if let Some(dir) = tx.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
            bail!("--tx-events {}: the directory {} does not exist", tx.display(), dir.display());
        }
    }
    // Every file of the run that exists now (each is checked again as it is opened).
    check_outputs(args)?;
    if let Some(p) = args.ptp4l.as_deref().filter(|p| !p.exists()) {
        // Not refused: ptp4l may start later. Said now, not only in the count at exit.
        crate::note!(
            "wirestamp: --ptp4l {}: no such socket (yet): frames are flagged until ptp4l answers there \
             (its socket is /var/run/ptp4l unless its uds_address says otherwise)",
            p.display()
        );
    }
    Ok(())
}

/// Refuses flows and hooks the source does not take (the command line's errors).
fn check_flows(args: &CaptureArgs, flows: &[FlowSpec]) -> Result<()> {
    if args.source == CaptureSource::Ebpf {
        if flows.is_empty() {
            bail!("--source ebpf needs at least one flow: --md udp:GROUP:PORT and/or --orders tcp:HOST:PORT");
        }
    } else if !flows.is_empty() {
        bail!("--md/--orders select flows for --source ebpf; with other sources use -f (tcpdump syntax)");
    } else if args.cgroup.is_some() {
        bail!("--cgroup (sockops TX timestamps) needs --source ebpf");
    } else if args.rx_hook != RxHookArg::Tc {
        bail!("--rx-hook chooses the hook of --source ebpf; --source afxdp always uses XDP");
    }
    Ok(())
}

/// The offloads of `iface` that merge what a source sees inbound (`rx`: after GRO) or outbound (`tx`:
/// before the NIC segments): part of the mode line, printed at start (unless `-q`) and written into the
/// file's comment. (Not logged as well: it was printed twice, and `-q` did not silence the log line.)
fn offload_warning(iface: &str, rx: bool, tx: bool) -> Option<String> {
    match offloads(iface) {
        Ok(o) => o.warning(iface, rx, tx),
        Err(e) => {
            tracing::debug!("{iface}: offloads not read (ethtool): {e}");
            None
        }
    }
}

pub fn run(args: &CaptureArgs) -> Result<ExitCode> {
    install_signal_handlers();
    let ifaces: Vec<String> = match (&args.source, args.interface.as_slice()) {
        (CaptureSource::Stdin, []) => vec!["stdin".into()],
        (CaptureSource::Stdin, [one]) => vec![one.clone()],
        (CaptureSource::Pcap | CaptureSource::Afxdp, [one]) => vec![one.clone()],
        (CaptureSource::Afpacket | CaptureSource::Ebpf, [_, ..]) => args.interface.clone(),
        (_, []) => return Err(usage(anyhow::anyhow!("this --source needs -i IFACE"))),
        (_, _) => return Err(usage(anyhow::anyhow!("several -i need --source afpacket or ebpf"))),
    };
    check_usage(args, &ifaces).map_err(usage)?;
    let duration = args.duration.as_deref().map(duration_arg).transpose().map_err(usage)?;
    let flows: Vec<FlowSpec> = args
        .md
        .iter()
        .map(|s| if s.starts_with("udp:") { Ok(s) } else { Err(anyhow::anyhow!("--md {s}: a feed is udp:GROUP:PORT")) })
        .chain(args.orders.iter().map(|s| {
            if s.starts_with("tcp:") { Ok(s) } else { Err(anyhow::anyhow!("--orders {s}: a session is tcp:HOST:PORT")) }
        }))
        .map(|s| s.and_then(|s| s.parse::<FlowSpec>().map_err(anyhow::Error::from)))
        .collect::<Result<_>>()
        .map_err(usage)?;
    check_flows(args, &flows).map_err(usage)?;
    check_files(args)?;
    let iface = ifaces.join(",");
    // Open the source first: a missing interface, a bad filter or no permission fails before any file exists.
    let snaplen = snaplen_arg(args.snaplen);
    let mut guards = Vec::new();
    let mode_line;
    // When a relay began: its --duration counts the wait for its stream's header (see `started`).
    let began = Instant::now();
    let mut source = match args.source {
        CaptureSource::Ebpf => {
            let mut modes = Vec::new();
            for name in &ifaces {
                if !args.no_hwtstamp {
                    // The programs take the skb's hardware stamp where the NIC gives one.
                    let ioctl = Ioctl::new().context("ioctl socket")?;
                    let g = HwTsGuard::enable(ioctl, name, &args.state_dir, args.force_hwtstamp)?;
                    modes.push(g.mode.describe(name));
                    guards.push(g);
                }
            }
            let ring_bytes = args.ring_mb.max(1).checked_next_power_of_two().unwrap_or(1 << 31).min(2048) << 20;
            let cfg = EbpfConfig {
                ifaces: ifaces.clone(),
                flows: flows.clone(),
                snap_len: args.snap_payload,
                ring_bytes,
                cgroup: args.cgroup.clone(),
                rx_hook: match args.rx_hook {
                    RxHookArg::Tc => RxHook::Tc,
                    RxHookArg::Xdp => RxHook::Xdp,
                    RxHookArg::XdpAlways => RxHook::XdpAlways,
                },
            };
            let src = EbpfSource::open(&cfg)?;
            for (name, c) in ifaces.iter().zip(src.rx_choices()) {
                match (&c.fallback, c.hook) {
                    // Part of the mode line (printed unless -q), as the flag is written.
                    (Some(why), _) => modes.push(format!(
                        "{name}: --rx-hook {}: inbound packets through tc ingress instead (XDP not used: {why})",
                        args.rx_hook.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
                    )),
                    (None, "xdp") => modes.push(format!(
                        "{name}: inbound through device-bound XDP (the driver's RX hardware timestamp; packets it \
                         gives none for carry the hook's time, counted)"
                    )),
                    _ => {}
                }
                // tc ingress runs after GRO. Egress runs before the stack cuts a write into segments,
                // whatever the offloads (GSO): its records count as such, and no ethtool setting helps.
                modes.extend(offload_warning(name, c.hook == "tc", false));
            }
            let specs: Vec<String> = flows.iter().map(flow_name).collect();
            modes.push(format!(
                "{iface}: eBPF tc programs ({}) on {}; frames TRUNCATED to their headers + {} payload bytes (at most \
                 {FRAME_MAX}: caplen < wirelen); timestamps: the skb's stamp when it has one, else the hook's time \
                 (TAI offset {} s)",
                src.attach_kinds().join(","),
                specs.join(" "),
                args.snap_payload,
                src.tai_offset_ns() / 1_000_000_000
            ));
            if let Some(cg) = &args.cgroup {
                modes.push(format!("TX timestamps of the order sessions' writes from cgroup {}", cg.display()));
            }
            mode_line = modes.join("; ");
            Source::Ebpf(Box::new(src))
        }
        CaptureSource::Afxdp => {
            let mut modes = Vec::new();
            if !args.no_hwtstamp {
                let ioctl = Ioctl::new().context("ioctl socket")?;
                let g = HwTsGuard::enable(ioctl, &iface, &args.state_dir, args.force_hwtstamp)?;
                modes.push(g.mode.describe(&iface));
                guards.push(g);
            }
            let s = AfXdp::open(&iface, args.queue, 0)?;
            modes.push(format!(
                "{iface}: AF_XDP copy mode on RX queue {} (every frame of that queue, which no longer reaches the \
                 network stack); timestamps: the NIC's RX stamp in the XDP metadata, else the XDP program's time",
                args.queue
            ));
            mode_line = modes.join("; ");
            Source::AfXdp(Box::new(s))
        }
        CaptureSource::Afpacket => {
            let mut modes = Vec::new();
            let mut rings = Vec::new();
            for (id, name) in ifaces.iter().enumerate() {
                if !args.no_hwtstamp {
                    let ioctl = Ioctl::new().context("ioctl socket")?;
                    let g = HwTsGuard::enable(ioctl, name, &args.state_dir, args.force_hwtstamp)?;
                    modes.push(g.mode.describe(name));
                    guards.push(g);
                } else {
                    modes.push(TsMode::Software { reason: "--no-hwtstamp".into() }.describe(name));
                }
                let mut cfg = RingConfig::new(name);
                cfg.filter = args.filter.clone();
                cfg.snaplen = snaplen;
                cfg.set_ring_mb(args.ring_mb);
                cfg.interface_id = id as u32;
                rings.push(AfPacket::open(&cfg)?);
                modes.extend(offload_warning(name, true, true));
            }
            mode_line = modes.join("; ");
            // The merge's queues may hold as much as the rings: the wait (about 30 ms) is covered
            // at any rate the rings themselves keep up with.
            let cap = (rings.len() * args.ring_mb.max(1) as usize) << 20;
            let merge = RingMerge::new(rings.len(), RingConfig::new(&iface).retire_ms, cap);
            Source::Rings(rings, Box::new(merge))
        }
        CaptureSource::Pcap => {
            let p = PcapLive::open(&iface, args.filter.as_deref(), snaplen as i32, 0)?;
            mode_line =
                std::iter::once(format!("{iface}: libpcap, timestamp type {} (nanosecond precision)", p.tstamp_type))
                    .chain(offload_warning(&iface, true, true))
                    .collect::<Vec<_>>()
                    .join("; ");
            Source::Pcap(p)
        }
        CaptureSource::Stdin => {
            // Once the stream's header is read, a read waits at most 100 ms, as a live source's does:
            // the loop flushes the file on time (and sees a signal) while the stream is idle.
            // Before it, a read waits in slices of 100 ms too, to see a stop.
            let stdin = PolledStdin::new(Duration::from_millis(100), &STOP)
                .context("standard input")?
                .until(duration.map(|d| began + d));
            let armed = stdin.arm();
            let r = match CaptureReader::from_stdin(Box::new(stdin)) {
                // Stopped as asked, as after frames (exit status 0); no file: none is made before
                // the stream's header says what it holds, as for a stream that could not be read.
                Err(e) if matches!(e.kind, ReadErrorKind::StoppedBeforeHeader) => {
                    if !args.quiet {
                        // Said as the summary says it; a signal's stop before the header keeps its one line.
                        if !STOP.load(Ordering::Relaxed) {
                            let ms = began.elapsed().as_millis();
                            let why = Stop::Duration.words(args);
                            crate::note!("wirestamp: stopped after {}.{:03} s: {why}", ms / 1000, ms % 1000);
                        }
                        crate::note!("wirestamp: {}; no file written", e.kind);
                    }
                    return Ok(ExitCode::SUCCESS);
                }
                r => r.context("reading a pcap/pcapng stream on stdin")?,
            };
            armed.store(true, Ordering::Relaxed);
            mode_line = "stdin: timestamps as recorded by the stream's writer".into();
            Source::Stream(Box::new(r))
        }
    };
    if !args.quiet {
        crate::note!("wirestamp: {mode_line}");
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut files = Files::new(
        args.output.clone(),
        args.rotate_secs.is_some() || args.rotate_mb.is_some(),
        format!(
            "{CAPTURE_COMMENT}--source {} -i {iface}{} on host {}; {mode_line}",
            args.source.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default(),
            args.filter.as_deref().map(|f| format!(" -f '{f}'")).unwrap_or_default(),
            host.trim()
        ),
        args.overwrite,
    );
    // A stream's interfaces are named as it names them, learnt as they appear (a pcapng describes an
    // interface just before its first frame, after the stream was opened).
    let mut names: Vec<String> = match &source {
        Source::Stream(_) => Vec::new(),
        _ => ifaces.clone(),
    };
    let snaplen = if matches!(source, Source::Ebpf(_)) { FRAME_MAX } else { snaplen };
    let describe = |ts: TsSource| format!("{}; {mode_line}", ts_words(ts));
    // A live source's --duration counts from its opening; a relay's from its start, as its wait for the
    // header is stopped by the same deadline (a stream that never starts must not hold it off).
    let started = if matches!(source, Source::Stream(_)) { began } else { Instant::now() };
    let mut count: u64 = 0;
    // Live frames carry the clock's state; a stream's frames were stamped elsewhere.
    let live = !matches!(source, Source::Stream(_));
    let pmc = match &args.ptp4l {
        Some(p) => Some(Pmc::new(p).with_context(|| format!("ptp4l management socket {}", p.display()))?),
        None => None,
    };
    let mut watch = ClockWatch::new(pmc, args.max_offset_ns);
    let mut unsynced: u64 = 0;
    let mut unsynced_reason = String::new();
    let mut per_source: HashMap<&'static str, u64> = HashMap::new();
    // Every file of the start is claimed (made, or found and locked: nothing emptied) before any is
    // begun: a start refused at the CSV (no permission, a read-only directory, another capture made it
    // just then) leaves a killed capture's `.part` it would replace as it was, and removes the `.part`
    // made for it. The `.part` first: a start refused there makes no CSV.
    let first = files.claim()?;
    let tx_claim = match args.tx_events.as_deref().map(|p| claim_tx_csv(p, args.overwrite)).transpose() {
        Ok(c) => c,
        Err(e) => {
            first.release();
            return Err(e);
        }
    };
    if let Err(e) = files.begin(first) {
        if let Some(c) = tx_claim {
            c.release();
        }
        return Err(e);
    }
    let mut tx_csv = match tx_claim.zip(args.tx_events.as_deref()).map(|(c, p)| TxCsv::start(c, p)).transpose() {
        Ok(csv) => csv,
        Err(e) => {
            files.discard();
            return Err(e);
        }
    };
    // The TX events are flushed with the capture file, every second: a killed capture keeps both. A
    // CSV that cannot be written is said at once; the capture goes on (its frames are still written).
    let flush_due = |files: &mut Files, tx: &mut Option<TxCsv>| -> Result<()> {
        if files.flush_due()?
            && let Some(csv) = tx.as_mut()
            && !csv.flush()
        {
            crate::note!("wirestamp: {}", csv.failed_now());
        }
        Ok(())
    };
    let result = (|| -> Result<Stop> {
        let mut stopping: Option<Stop> = None;
        loop {
            if args.count.is_some_and(|c| count >= c) {
                return Ok(Stop::Count);
            }
            let asked = stopping.or_else(|| {
                if STOP.load(Ordering::Relaxed) {
                    Some(Stop::Signal)
                } else {
                    duration.filter(|d| started.elapsed() >= *d).map(|_| Stop::Duration)
                }
            });
            if let Some(why) = asked {
                // Several rings: what they show now is written first, in time order (the merge
                // holds frames back while a ring shows nothing).
                let flushing = match &mut source {
                    Source::Rings(rings, merge) if rings.len() > 1 => {
                        if stopping.is_some() {
                            merge.flushing()
                        } else {
                            merge.flush(rings)?
                        }
                    }
                    _ => false,
                };
                stopping = Some(why);
                if !flushing {
                    return Ok(why);
                }
            }
            if let (Source::Ebpf(s), Some(csv)) = (&mut source, tx_csv.as_mut())
                && !csv.write(s.take_tx_events())
            {
                crate::note!("wirestamp: {}", csv.failed_now());
            }
            if files.rotate_due(args.rotate_secs, args.rotate_mb) {
                files.close(&iface_stats(&sample(&mut source)), false)?;
                files.open()?;
            }
            // Live sources stamp in ns; a stream keeps its input's resolution (µs stays µs).
            let mut decimals = 9;
            let frame = match &mut source {
                Source::Rings(rings, _) if rings.len() == 1 => {
                    if !rings[0].ready() {
                        rings[0].release_consumed();
                        poll_all(rings, 100)?;
                    }
                    rings[0].next_frame(Duration::ZERO)?
                }
                // Every ring's blocks are back with the kernel (the merge copies what they show): a
                // wait does not spin. (While frames `flush` let through remain, it does not wait.)
                Source::Rings(rings, merge) => match merge.next(rings, Instant::now())? {
                    Step::Frame(f) => Some(f),
                    Step::Idle => {
                        poll_all(rings, 100)?;
                        None
                    }
                    Step::Wait(d) => {
                        poll_all(rings, d.as_millis().clamp(1, 100) as i32)?;
                        None
                    }
                },
                Source::Pcap(p) => {
                    p.wait_if_idle(Duration::from_millis(100))?;
                    p.next_frame()?
                }
                Source::Ebpf(s) => s.next_frame(Duration::from_millis(100))?,
                Source::AfXdp(s) => s.next_frame(Duration::from_millis(100))?,
                Source::Stream(r) => match r.next_frame_and_interface() {
                    // Idle (or a signal): nothing read.
                    Err(e) if e.would_block() => None,
                    // Its wait ended by the stop asked for (a signal: the flag its poll looks at):
                    // ended as asked, as at the loop's top.
                    Err(e) if matches!(e.kind, ReadErrorKind::Stopped) => return Ok(Stop::Signal),
                    read => match read? {
                        Some((f, i)) => {
                            if let Some(TsResolution::Dec(d)) = i.map(|i| i.ts_resolution) {
                                decimals = d.min(9);
                            }
                            // Named at the interface's first frame (its description came before it); an
                            // empty name is one not seen yet.
                            let at = f.interface as usize;
                            if at < MAX_STREAM_NAMES && names.get(at).is_none_or(String::is_empty) {
                                if names.len() <= at {
                                    names.resize(at + 1, String::new());
                                }
                                names[at] = i.and_then(|i| i.name.clone()).unwrap_or_else(|| format!("stdin:{at}"));
                            }
                            Some(f)
                        }
                        None => return Ok(Stop::EndOfStream),
                    },
                },
            };
            let Some(mut f) = frame else {
                flush_due(&mut files, &mut tx_csv)?;
                continue;
            };
            // A clock read every 16 frames: at any steady rate the file is flushed about every second
            // (below 10 frames/s the reads that find nothing do it).
            if count.is_multiple_of(16) {
                flush_due(&mut files, &mut tx_csv)?;
            }
            // --snaplen for the sources that do not cut frames themselves (afxdp, a stream): the interface
            // block says it, the frames keep to it.
            if f.data.len() > snaplen as usize {
                f.data = &f.data[..snaplen as usize];
            }
            if live {
                f.quality |= watch.quality();
                if f.quality.contains(ClockQuality::UNSYNCED) {
                    unsynced += 1;
                    if unsynced_reason.is_empty() {
                        unsynced_reason = watch.reason.clone();
                    }
                }
            }
            let name = names.get(f.interface as usize).map_or(iface.as_str(), |s| s.as_str());
            if f.link == LinkType::Erf {
                bail!("frame {count}: ERF records cannot be written to pcapng here");
            }
            // Counted as captured before it is written: a write that fails loses it, which the summary
            // says (see `Files::not_completed`).
            *per_source.entry(f.ts_source.name()).or_default() += 1;
            count += 1;
            files.write(&f, name, &describe, snaplen, decimals)?;
        }
    })();
    let ran = started.elapsed();
    // One sample of the counters for the last file's statistics blocks and the summary below.
    let at_exit = sample(&mut source);
    let closed = files.close(&iface_stats(&at_exit), true);
    let tx_done = match (&mut source, tx_csv.as_mut()) {
        (Source::Ebpf(s), Some(csv)) => {
            // The last writes' ACKs may still be in the ring.
            let polled = (|| -> Result<()> {
                while s.poll_tx(Duration::from_millis(50))? > 0 {}
                Ok(())
            })();
            csv.write(s.take_tx_events());
            csv.flush();
            polled
        }
        _ => Ok(()),
    };
    // A CSV whose write failed, during the run or just now: what it holds, and what to do.
    let tx_failed = tx_csv.as_ref().and_then(TxCsv::error).map_or(Ok(()), Err);
    let counters: Result<String, String> = match &at_exit {
        Sample::Rings(v) => v
            .iter()
            .zip(&ifaces)
            .map(|(r, name)| {
                r.as_ref().map_err(|e| e.to_string()).map(|s| {
                    let read = s.ts_hardware + s.ts_software + s.ts_none;
                    let queued = s.kernel_packets.saturating_sub(read + s.kernel_drops);
                    format!(
                        "kernel ({name}): {} passed the filter: {read} read, {} dropped (ring full), {queued} still queued \
                         at exit; {} ring freezes{}",
                        s.kernel_packets,
                        s.kernel_drops,
                        s.freeze_q,
                        match s.link_down {
                            0 => String::new(),
                            n => format!("; the link went down {n} times (nothing captured while down)"),
                        }
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|mut v| {
                // What the time-order merge of several rings did with what it read.
                if let Source::Rings(_, merge) = &source
                    && (merge.forced > 0 || merge.held() > 0)
                {
                    v.push(format!(
                        "merge: {} frames written without waiting for every interface (its queues were full: they \
                         may be out of time order by up to {} ms); {} read but not written (the count was reached)",
                        merge.forced,
                        merge.settle().as_millis(),
                        merge.held()
                    ));
                }
                v.join("\nwirestamp: ")
            }),
        Sample::Pcap(p) => p.as_ref().map_err(|e| e.to_string()).map(|s| {
            format!("libpcap: {} received, {} dropped (buffer), {} dropped by the interface", s.received, s.dropped, s.if_dropped)
        }),
        Sample::Relayed { records, warnings, .. } => Ok(std::iter::once(format!("stream: {records} records read"))
            .chain(warnings.iter().map(|w| format!("warning: stdin: {w}")))
            .collect::<Vec<_>>()
            .join("\nwirestamp: ")),
        Sample::AfXdp(s) => s.as_ref().map_err(|e| e.to_string()).map(|s| {
            let p = &s.prog;
            format!(
                "af_xdp ({iface} queue {}): {} frames seen by the program: {} redirected, {} passed (no socket on \
                 their queue); {} read, {} dropped by the kernel ({} RX ring full), fill ring empty {} times; {} \
                 without metadata, {} without a hardware stamp",
                args.queue,
                p.seen,
                p.redirected,
                p.no_socket,
                s.frames,
                s.rx_dropped,
                s.rx_ring_full,
                s.fill_ring_empty,
                s.no_meta + p.no_meta,
                p.no_hw_rx_stamp
            )
        }),
        Sample::Ebpf(v) => v
            .as_ref()
            .map_err(|e| e.to_string())
            .map(|v| {
                v.iter()
                    .zip(&ifaces)
                    .map(|(s, name)| {
                        let b = &s.bpf;
                        let mut in_ring = b.matched.saturating_sub(b.ringbuf_full + b.delivered + b.bad_records);
                        let xdp = s.xdp.map_or(String::new(), |x| {
                            in_ring += x.matched.saturating_sub(x.ringbuf_full + x.delivered + x.bad_records);
                            format!(
                                "\nwirestamp: xdp ({name}, inbound): {} matched of {} seen: {} read, {} lost (ring \
                                 full), {} without an RX hardware timestamp (hook time used); {} malformed, {} \
                                 unsupported, {} fragments, {} bad records",
                                x.matched,
                                x.seen,
                                x.delivered,
                                x.ringbuf_full,
                                x.no_hw_rx_stamp,
                                x.malformed,
                                x.unsupported,
                                x.fragments,
                                x.bad_records
                            )
                        });
                        let tc = if s.xdp.is_some() { "tc, outbound" } else { "tc" };
                        format!(
                            "bpf ({name}, {tc}): {} matched of {} seen: {} frames read in all, {} lost (ring full), {} \
                             dropped (user-space queue full), {} still queued at exit; {} malformed, {} unsupported, \
                             {} fragments, {} bad records, {} GSO frames (several wire segments each){xdp}",
                            b.matched,
                            b.seen,
                            s.frames,
                            b.ringbuf_full,
                            s.queue_drops,
                            s.queued + in_ring,
                            b.malformed,
                            b.unsupported,
                            b.fragments,
                            b.bad_records,
                            s.gso_records
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\nwirestamp: ")
            }),
    };
    for g in &mut guards {
        g.restore()?;
    }
    let mut by_source: Vec<_> = per_source.into_iter().collect();
    by_source.sort();
    if !args.quiet {
        if let Ok(why) = &result {
            let ms = ran.as_millis();
            crate::note!("wirestamp: stopped after {}.{:03} s: {}", ms / 1000, ms % 1000, why.words(args));
        }
        let srcs: Vec<String> = by_source.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let srcs = if srcs.is_empty() { String::new() } else { format!(" ({})", srcs.join(", ")) };
        match files.incomplete.is_empty() {
            true => crate::note!("wirestamp: {count} frames written{srcs}"),
            // Not "written": those not flushed before the failure are lost, and the file has no end.
            false => crate::note!("wirestamp: {count} frames captured{srcs}; {}", files.incomplete.join("; ")),
        }
        match &counters {
            Ok(c) => crate::note!("wirestamp: {c}"),
            Err(e) => crate::note!("wirestamp: counters unavailable: {e}"),
        }
        for (i, lost, queued) in &files.unblocked {
            crate::note!(
                "wirestamp: {}: {lost} lost and {queued} still queued at exit since its last statistics block are in \
                 no file's (the last file has none of its frames)",
                ifaces.get(*i).map_or("?", |s| s.as_str())
            );
        }
        if live {
            crate::note!(
                "wirestamp: {unsynced} of {count} frames captured while the clock was flagged{}",
                if unsynced_reason.is_empty() { String::new() } else { format!(": {unsynced_reason}") }
            );
        }
        for p in &files.written {
            crate::note!("wirestamp: wrote {}", p.display());
        }
    }
    if let (Source::Ebpf(s), false) = (&source, args.quiet) {
        match s.tx_stats() {
            Ok(Some(t)) => crate::note!(
                "wirestamp: sockops: {} connections timestamped, {}, {} lost (ring full), {} bad records; {} \
                 connections the kernel could not timestamp (before Linux 6.15)",
                t.enabled,
                tx_csv.as_ref().map_or_else(|| "0 events written".into(), TxCsv::words),
                t.ringbuf_full,
                t.bad_records,
                t.setsockopt_failed + t.no_kfunc
            ),
            Ok(None) => {}
            Err(e) => crate::note!("wirestamp: sockops counters unavailable: {e}"),
        }
    }
    let names = |v: &[PathBuf]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let skipped = (!files.skipped.is_empty()).then(|| {
        format!("names were taken when this capture came to them, skipped (said above): {}", names(&files.skipped))
    });
    let unfinished = (!files.unfinished.is_empty()).then(|| {
        format!(
            "files could not be completed or named while this capture ran (said above, each with where its frames \
             are): {}",
            names(&files.unfinished)
        )
    });
    let said: Vec<String> =
        [claim::kept_error(&files.kept, files.last_kept), unfinished, skipped].into_iter().flatten().collect();
    let kept = (!said.is_empty()).then(|| said.join("; "));
    let mut errors = [result.err(), closed.err(), tx_done.err(), tx_failed.err()].into_iter().flatten();
    let Some(first) = errors.next() else {
        if let Some(k) = kept {
            bail!(k);
        }
        return Ok(ExitCode::SUCCESS);
    };
    // The first error is the run's; the others are said all the same (a file that could not be
    // completed after the source failed: what it holds and what to do, which the summary points to).
    if let Some(k) = kept {
        crate::note!("wirestamp: error: {k}");
    }
    for e in errors {
        crate::note!("wirestamp: error: {}", crate::cli::describe(&e));
    }
    Err(first)
}

/// Claims the `--tx-events` CSV (see [`claim::create_tx`]).
fn claim_tx_csv(p: &Path, overwrite: bool) -> Result<claim::Claim> {
    claim::create_tx(p, |p| tx_replaceable(p, overwrite))
}

/// A flow as given on the command line.
fn flow_name(f: &FlowSpec) -> String {
    match f {
        FlowSpec::Feed(s) => s.to_string(),
        FlowSpec::Orders(s) => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_names() {
        assert_eq!(file_name(Path::new("/tmp/cap.pcapng"), true, 3), PathBuf::from("/tmp/cap.0003.pcapng"));
        assert_eq!(file_name(Path::new("cap"), true, 12), PathBuf::from("cap.0012"));
        assert_eq!(file_name(Path::new("cap.pcapng"), false, 12), PathBuf::from("cap.pcapng"));
    }

    /// A new directory for a test's files.
    fn test_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wirestamp-capture-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Writes `n` frames of 60 bytes of `interface` (named `eth{interface}`), timed by `ts_source`.
    fn write_frames(files: &mut Files, interface: u32, ts_source: TsSource, n: usize) {
        let data = [0u8; 60];
        for _ in 0..n {
            let f =
                Frame { interface, ts_source, ..Frame::record(&data, 1_796_049_000_000_000_000, LinkType::Ethernet) };
            files.write(&f, &format!("eth{interface}"), &|_| String::new(), 0, 9).unwrap();
        }
    }

    /// A file closed by a capture whose source gave no counters (libpcap's, AF_XDP's or the eBPF
    /// programs' unreadable) still ends with a statistics block per interface, without counters (their
    /// comment says why), for each of its interfaces with frames, once whatever its timestamp sources:
    /// a file without one is one capture never closed (analyze says its losses are unknown, as it says of
    /// these blocks').
    #[test]
    fn a_closed_file_has_a_statistics_block_per_interface_even_without_counters() {
        let dir = test_dir("nocounters");
        let path = dir.join("c.pcapng");
        let mut files = Files::new(path.clone(), false, format!("{CAPTURE_COMMENT}--source pcap -i eth0"), false);
        // Interface 0 with two timestamp sources (two blocks), interface 1 with one.
        for (interface, ts_source) in
            [(0, TsSource::KernelSoftware), (0, TsSource::KernelHardware), (1, TsSource::KernelSoftware)]
        {
            write_frames(&mut files, interface, ts_source, 1);
        }
        files.close(&Counters { per_iface: Vec::new(), relayed: false }, true).unwrap();
        let mut r = CaptureReader::open(&path).unwrap();
        while r.next_frame().unwrap().is_some() {}
        let got: Vec<(Option<&str>, bool, Option<RecordedStats>)> =
            r.interfaces().iter().map(|i| (i.name.as_deref(), i.by_wirestamp_capture, i.recorded)).collect();
        let none = Some(RecordedStats::default());
        assert_eq!(got, [(Some("eth0"), true, none), (Some("eth0"), true, None), (Some("eth1"), true, none)]);
        assert_eq!(r.stats().skipped.get("pcapng ISB"), Some(&2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The frames each interface wrote to each of two rotated files are the blocks' `isb_usrdeliv`, and
    /// what was still queued at a rotation is in the next file's `isb_filteraccept`: interfaces 0 and 2
    /// write frames (1 never does), 3 and 2 to the first file, 2 and 4 to the second. The expected
    /// values are counted by hand from those frames and the kernel counts given (`isb_counters`' rule:
    /// accepted = written + dropped, + what never left the queue in the last file).
    #[test]
    fn each_interfaces_frames_are_counted_in_its_files_blocks() {
        let dir = test_dir("perface");
        let base = dir.join("c.pcapng");
        let mut files = Files::new(base.clone(), true, format!("{CAPTURE_COMMENT}--source afpacket -i e0"), false);
        let write = |files: &mut Files, interface: u32, n: usize| {
            write_frames(files, interface, TsSource::KernelSoftware, n);
        };
        let kernel = |a, d| RecordedStats { filteraccept: Some(a), osdrop: Some(d), ..RecordedStats::default() };
        write(&mut files, 0, 3);
        write(&mut files, 2, 2);
        // Interface 0: 5 accepted, 1 dropped, 3 written: 1 still queued. Interface 2: 2, 0, 2.
        let first = [kernel(5, 1), kernel(0, 0), kernel(2, 0)];
        files.close(&Counters { per_iface: first.to_vec(), relayed: false }, false).unwrap();
        write(&mut files, 0, 2);
        write(&mut files, 2, 4);
        // Interface 0: 6 accepted in all, no more dropped, 5 written in all: none queued. Interface 2:
        // 9 accepted, 1 dropped, 6 written: 2 never written.
        let last = [kernel(6, 1), kernel(0, 0), kernel(9, 1)];
        files.close(&Counters { per_iface: last.to_vec(), relayed: false }, true).unwrap();
        let read = |name: &str| {
            let mut r = CaptureReader::open(&dir.join(name)).unwrap();
            let mut rows = Vec::new();
            while let Some(f) = r.next_frame().unwrap() {
                rows.push(f.interface as usize);
            }
            let mut frames = [0u64; 2];
            for row in rows {
                frames[usize::from(r.interfaces()[row].name.as_deref() == Some("eth2"))] += 1;
            }
            let blocks: Vec<_> = r
                .interfaces()
                .iter()
                .map(|i| {
                    let c = i.recorded.unwrap();
                    (i.name.clone().unwrap(), c.filteraccept, c.osdrop, c.usrdeliv)
                })
                .collect();
            (frames, blocks)
        };
        let s = |n: &str| n.to_string();
        assert_eq!(
            read("c.0000.pcapng"),
            ([3, 2], vec![(s("eth0"), Some(3 + 1), Some(1), Some(3)), (s("eth2"), Some(2), Some(0), Some(2))])
        );
        assert_eq!(
            read("c.0001.pcapng"),
            ([2, 4], vec![(s("eth0"), Some(2), Some(0), Some(2)), (s("eth2"), Some(4 + 1 + 2), Some(1), Some(4))])
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The statistics blocks of three files (the audit's first two, then an exit with frames lost and
    /// queued): each true of its file, and together the kernel's counts.
    #[test]
    fn each_file_counts_the_frames_settled_in_it() {
        let kernel = |a, d| RecordedStats { filteraccept: Some(a), osdrop: Some(d), ..RecordedStats::default() };
        let steps = [(kernel(1608, 0), 1547, false), (kernel(6658, 0), 5060, false), (kernel(6800, 10), 100, true)];
        let (mut then, mut all, mut sums) = (RecordedStats::default(), 0, (0, 0, 0));
        let mut got = Vec::new();
        for (now, file, last) in steps {
            all += file;
            let (c, comment) = isb_counters(&now, &then, Written { file, all }, last);
            got.push((c.filteraccept, c.osdrop, c.usrdeliv, comment.is_some()));
            sums = (sums.0 + c.filteraccept.unwrap(), sums.1 + c.osdrop.unwrap(), sums.2 + c.usrdeliv.unwrap());
            then = now;
        }
        assert_eq!(
            got,
            [
                (Some(1547), Some(0), Some(1547), true),
                (Some(5060), Some(0), Some(5060), true),
                (Some(100 + 10 + 83), Some(10), Some(100), true)
            ]
        );
        assert_eq!(sums, (6800, 10, 6707));
        let (_, comment) = isb_counters(&kernel(6800, 10), &kernel(6658, 0), Written { file: 100, all: 6707 }, true);
        assert!(comment.unwrap().contains("isb_osdrop + 83 frames that passed the filter and were never written"));
        // A source without an accepted count (libpcap, AF_XDP): delivered and dropped only.
        let pcap = RecordedStats { ifrecv: Some(50), osdrop: Some(2), ..RecordedStats::default() };
        let (c, comment) = isb_counters(&pcap, &RecordedStats::default(), Written { file: 48, all: 48 }, true);
        assert_eq!(
            (c.ifrecv, c.filteraccept, c.osdrop, c.usrdeliv, comment),
            (Some(50), None, Some(2), Some(48), None)
        );
    }

    /// The names a rotating capture to `base` writes (and their `.part`), which it checks before it
    /// starts: four digits or more, between the stem and the extension.
    #[test]
    fn numbered_names_are_recognised() {
        let base = Path::new("/tmp/cap.pcapng");
        for name in ["cap.0000.pcapng", "cap.0012.pcapng.part", "cap.12345.pcapng"] {
            assert!(is_numbered_name(base, name.as_ref()), "{name}");
        }
        for name in
            ["cap.pcapng", "cap.pcapng.part", "cap.012.pcapng", "cap.00a0.pcapng", "cap.0000.pcap", "x.0000.pcapng"]
        {
            assert!(!is_numbered_name(base, name.as_ref()), "{name}");
        }
        assert!(is_numbered_name(Path::new("cap"), "cap.0003".as_ref()));
        assert!(!is_numbered_name(Path::new("cap"), "cap.0003.pcapng".as_ref()));
    }
}
