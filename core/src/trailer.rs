//! Tap timestamp trailers and headers (formats.md §4): decoded, validated, and located so the caller can
//! remove them from the frame.
//!
//! A tap or switch on the wire stamps each frame with its own clock. The stamp travels in one of three ways,
//! each in its own submodule with its layout diagram and sources:
//!
//! | kind | where | module |
//! |---|---|---|
//! | Arista 7130 / Metamako | 16-byte trailer (+ TLVs, + new FCS) | [`metamako`] |
//! | cPacket | same 12-byte core, no TLVs | [`cpacket`] |
//! | Exablaze/Cisco Fusion HPT | 16-byte trailer, 2^-40 s fraction | [`hpt`] |
//! | Exablaze/Cisco Fusion 32-bit counter | replaces or precedes the FCS, + keyframes | [`fusion`] |
//! | Arista 7150 31-bit tick | replaces or precedes the FCS, + keyframes | [`arista7150`] |
//! | Arista 7280 | 0xD28B header after the MAC addresses | [`arista7280`] |
//!
//! Counter formats share the keyframe engine in [`counter`].
//!
//! # Detection
//! [`TrailerMode::Auto`] is conservative, after Wireshark's heuristics: a fixed trailer (Metamako, HPT) is
//! accepted only when its seconds lie within 30 days (Metamako) / 1 week (HPT) of the record time and
//! after 2000-01-01 ([`MIN_TRAILER_SEC`]) and its nanoseconds are below 10^9, tried without then with a
//! trailing FCS (only the one the container declares when `Frame::fcs_len` is known); the trailer must fit
//! after `IpInfo::end` on IP frames (after the declared length of ARP and PTP messages); a
//! counter (Fusion, 7150) is tried only once a keyframe of its kind has been seen in this file, and only
//! accepted when the time it gives since the keyframe agrees with the record clock within
//! [`counter::AGREE_NS`]. In `Auto` a cPacket footer is reported as Metamako (same core; only `Forced`
//! reports `cpacket`). Snap-truncated frames (captured < wire length) never yield a trailer, nor do frames
//! of links other than Ethernet and Linux cooked captures ([`carries_trailers`]).
//!
//! # Forced formats
//! [`TrailerMode::Forced`] tries only that kind. Validation rule: the **first frame that is not a keyframe**
//! must carry a valid trailer, else [`TrailerDecoder::decode`] returns [`TrailerError`] with the reason.
//! For counter kinds, frames before the first keyframe are [`Decoded::None`] (counted in
//! `before_keyframe`) as long as a keyframe shows up within [`FORCED_KEYFRAME_WAIT_NS`] of record time
//! (keyframes come at 1-2 Hz; every real capture starts between two); later, or after
//! [`FORCED_KEYFRAME_WAIT_FRAMES`] frames when the container has no timestamps, it is an error with reason
//! "no keyframe yet". Call [`TrailerDecoder::finish`] at the end of the input: it reports a forced kind
//! that never validated (e.g. a file too short to reach the waits above). After validation, a frame
//! without a valid trailer is [`Decoded::None`] and counted.

pub mod arista7150;
pub mod arista7280;
pub mod counter;
pub mod cpacket;
pub mod fusion;
pub mod hpt;
pub mod metamako;

use crate::dissect::Dissection;
use crate::frame::{Frame, LinkType};
use crate::time::ClockQuality;
use serde::Serialize;

/// A timestamp trailer/header format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrailerKind {
    /// Arista 7130 / Metamako MetaWatch trailer.
    Metamako,
    /// cPacket footer.
    Cpacket,
    /// Cisco/Exablaze Fusion HPT trailer (40-bit fraction).
    ExablazeHpt,
    /// Cisco/Exablaze Fusion 32-bit counter with keyframes.
    ExablazeFusion,
    /// Arista 7150 31-bit tick with keyframes.
    Arista7150,
    /// Arista 7280 0xD28B header (64- or 48-bit).
    Arista7280,
}

impl TrailerKind {
    /// Every kind, in a stable order.
    pub const ALL: [TrailerKind; 6] = [
        TrailerKind::Metamako,
        TrailerKind::Cpacket,
        TrailerKind::ExablazeHpt,
        TrailerKind::ExablazeFusion,
        TrailerKind::Arista7150,
        TrailerKind::Arista7280,
    ];

    /// Short stable name, as used by `--trailer` and in output.
    pub fn name(self) -> &'static str {
        match self {
            TrailerKind::Metamako => "metamako",
            TrailerKind::Cpacket => "cpacket",
            TrailerKind::ExablazeHpt => "exablaze_hpt",
            TrailerKind::ExablazeFusion => "exablaze_fusion",
            TrailerKind::Arista7150 => "arista7150",
            TrailerKind::Arista7280 => "arista7280",
        }
    }

    /// True for the wrapping-counter kinds that need keyframes.
    pub fn is_counter(self) -> bool {
        matches!(self, TrailerKind::ExablazeFusion | TrailerKind::Arista7150)
    }
}

/// A decoded tap timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrailerStamp {
    /// The format it came from.
    pub kind: TrailerKind,
    /// Device time, integer ns since the epoch, in the device's timescale (see `tai`).
    pub time_ns: i64,
    /// Fraction of a nanosecond in units of 2^-32 ns (0 when the format has none).
    pub sub_ns: u32,
    /// Device (tap, switch) id, when the format carries one.
    pub device: Option<u32>,
    /// Port id, when the format carries one.
    pub port: Option<u32>,
    /// Quality flags.
    pub quality: ClockQuality,
    /// Bytes at the end of the captured data that are trailer (with the original FCS it keeps and any
    /// FCS after it): `data[..len - trailer_len]` is the frame without them. 0 for the 7280 header.
    pub trailer_len: usize,
    /// Counter formats: device time since the keyframe used (negative when stamped before it).
    pub keyframe_age_ns: Option<i64>,
    /// The device says its clock is TAI (Arista 7280 timescale 0); otherwise UTC.
    pub tai: bool,
}

/// Which formats to look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrailerMode {
    /// Conservative automatic detection (the default).
    #[default]
    Auto,
    /// Never decode trailers.
    Off,
    /// Only this kind; the first frames must validate (see the module docs).
    Forced(TrailerKind),
}

impl TrailerMode {
    /// The mode as `--trailer` names it: `auto`, `none`, or the forced kind's name.
    pub fn name(self) -> &'static str {
        match self {
            TrailerMode::Auto => "auto",
            TrailerMode::Off => "none",
            TrailerMode::Forced(k) => k.name(),
        }
    }
}

/// `--trailer` value that is not a known mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown trailer mode {0:?}: expected auto, none, metamako, cpacket, exablaze_hpt, exablaze_fusion, arista7150 or arista7280"
)]
pub struct ParseTrailerModeError(pub String);

impl std::str::FromStr for TrailerMode {
    type Err = ParseTrailerModeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(TrailerMode::Auto),
            "none" => Ok(TrailerMode::Off),
            _ => TrailerKind::ALL
                .into_iter()
                .find(|k| k.name() == s)
                .map(TrailerMode::Forced)
                .ok_or_else(|| ParseTrailerModeError(s.to_owned())),
        }
    }
}

/// What [`TrailerDecoder::decode`] found in one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// No trailer.
    None,
    /// A timestamp.
    Stamp(TrailerStamp),
    /// The frame was a keyframe consumed by the decoder. It carries no stamp in a trailer, but the time
    /// it left its device, on the device's clock (ns since the epoch; UTC sample plus the time to
    /// leaving), which times it on the tap's clock as its stamps are.
    Keyframe(TrailerKind, i64),
}

impl Decoded {
    /// The frame's time on its tap's clock, and the tap's kind: a stamp's, or a keyframe's leaving.
    pub fn tap_time(&self) -> Option<(TrailerKind, i64)> {
        match *self {
            Decoded::Stamp(s) => Some((s.kind, s.time_ns)),
            Decoded::Keyframe(kind, left_ns) => Some((kind, left_ns)),
            Decoded::None => None,
        }
    }
}

/// A forced format did not validate: why. The caller adds the file and frame index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--trailer {}: {reason}", kind.name())]
pub struct TrailerError {
    /// The forced kind.
    pub kind: TrailerKind,
    /// What was wrong, and what to try.
    pub reason: String,
}

/// A count per [`TrailerKind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    /// Metamako.
    pub metamako: u64,
    /// cPacket.
    pub cpacket: u64,
    /// Exablaze HPT.
    pub exablaze_hpt: u64,
    /// Exablaze Fusion counter.
    pub exablaze_fusion: u64,
    /// Arista 7150.
    pub arista7150: u64,
    /// Arista 7280.
    pub arista7280: u64,
}

impl KindCounts {
    fn slot(&mut self, k: TrailerKind) -> &mut u64 {
        match k {
            TrailerKind::Metamako => &mut self.metamako,
            TrailerKind::Cpacket => &mut self.cpacket,
            TrailerKind::ExablazeHpt => &mut self.exablaze_hpt,
            TrailerKind::ExablazeFusion => &mut self.exablaze_fusion,
            TrailerKind::Arista7150 => &mut self.arista7150,
            TrailerKind::Arista7280 => &mut self.arista7280,
        }
    }
    /// The count for `k`.
    pub fn get(&self, k: TrailerKind) -> u64 {
        match k {
            TrailerKind::Metamako => self.metamako,
            TrailerKind::Cpacket => self.cpacket,
            TrailerKind::ExablazeHpt => self.exablaze_hpt,
            TrailerKind::ExablazeFusion => self.exablaze_fusion,
            TrailerKind::Arista7150 => self.arista7150,
            TrailerKind::Arista7280 => self.arista7280,
        }
    }
    /// Sum over all kinds.
    pub fn total(&self) -> u64 {
        TrailerKind::ALL.iter().map(|&k| self.get(k)).sum()
    }
}

/// Counters kept by a [`TrailerDecoder`] over one input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TrailerStats {
    /// Frames passed to `decode`.
    pub frames: u64,
    /// Frames stamped, per kind.
    pub stamped: KindCounts,
    /// Keyframes consumed, per kind.
    pub keyframes: KindCounts,
    /// Frames that looked like keyframes but failed validation (bad magic/version, impossible skew or
    /// frequency, UTC far from the record time).
    pub keyframes_rejected: u64,
    /// v1 keyframes whose measured tick frequency was off nominal by more than 2 % (nominal used);
    /// filled in by [`TrailerDecoder::stats`].
    pub freq_rejected: u64,
    /// Frames returned as [`Decoded::None`].
    pub no_trailer: u64,
    /// Counter candidates (after a keyframe) that did not agree with the record clock or cannot carry a
    /// counter (LLDP, no room), and 7280 headers with an unknown version or impossible fields.
    pub rejected: u64,
    /// Forced counter kinds: frames before the first keyframe.
    pub before_keyframe: u64,
    /// Counter frames whose newest keyframe was older than [`counter::REJECT_AGE_NS`] (not stamped).
    pub keyframe_too_old: u64,
    /// Frames captured shorter than on the wire: a trailer at the end cannot be read.
    pub truncated: u64,
    /// Stamps flagged [`ClockQuality::STALE_KEYFRAME`].
    pub stale: u64,
    /// Stamps flagged [`ClockQuality::UNSYNCED`] (sync losses reported by keyframes).
    pub unsynced: u64,
    /// Stamps flagged [`ClockQuality::DEGRADED`].
    pub degraded: u64,
    /// Stamps flagged [`ClockQuality::EXTENDED`].
    pub extended: u64,
}

/// Forced counter kinds: how long (record time from the first frame) to wait for the first keyframe.
pub const FORCED_KEYFRAME_WAIT_NS: i64 = 10_000_000_000;
/// Forced counter kinds without record timestamps: how many frames to wait for the first keyframe.
pub const FORCED_KEYFRAME_WAIT_FRAMES: u64 = 100_000;

/// Why a candidate trailer was not accepted (static, cheap on the hot path).
pub(crate) type Miss = &'static str;

/// Decodes tap trailers for one input file, keeping keyframe state per device.
#[derive(Debug, Clone)]
pub struct TrailerDecoder {
    mode: TrailerMode,
    validated: bool,
    first_ts: Option<i64>,
    counters: counter::CounterState,
    stats: TrailerStats,
}

impl TrailerDecoder {
    /// A decoder for one input.
    pub fn new(mode: TrailerMode) -> Self {
        TrailerDecoder {
            mode,
            validated: false,
            first_ts: None,
            counters: counter::CounterState::default(),
            stats: TrailerStats::default(),
        }
    }

    /// The mode it was built with.
    pub fn mode(&self) -> TrailerMode {
        self.mode
    }

    /// Counters so far (`freq_rejected` read from the keyframe state, which keeps it).
    pub fn stats(&self) -> TrailerStats {
        TrailerStats { freq_rejected: self.counters.freq_rejected, ..self.stats.clone() }
    }

    /// Decodes the trailer/header of `frame` (whose dissection is `d`).
    ///
    /// Errors only in [`TrailerMode::Forced`], while the forced kind has not yet validated.
    // Inline: the common frame is settled by a few tests in the caller, with no call and no result
    // passed through memory (reading back that result stalled store forwarding: ~5 ns per frame).
    #[inline]
    pub fn decode(&mut self, frame: &Frame<'_>, d: &Dissection) -> Result<Decoded, TrailerError> {
        self.count_frame(frame);
        if self.plainly_none(frame, d) {
            self.count_none();
            return Ok(Decoded::None);
        }
        self.decode_slow(frame, d)
    }

    /// Whether [`TrailerDecoder::decode`] finds nothing, and counts only `no_trailer`, in any frame
    /// captured whole whose IP datagram (not a keyframe's protocol, no tap header) ends fewer than
    /// 16 (`MIN_APPENDED`) bytes before the frame's end: in auto mode while no counter device is known,
    /// and when off. Such a frame may skip the decoder and be
    /// counted by [`TrailerDecoder::count_plain`] (the analyzer's fast path).
    #[inline(always)]
    pub fn takes_plain(&self) -> bool {
        match self.mode {
            TrailerMode::Auto => self.counters.is_empty(),
            TrailerMode::Off => true,
            TrailerMode::Forced(_) => false,
        }
    }

    /// Counts a frame [`TrailerDecoder::takes_plain`] let skip the decoder, as `decode` would have.
    #[inline(always)]
    pub fn count_plain(&mut self, frame: &Frame<'_>) {
        self.count_frame(frame);
        self.count_none();
    }

    /// Counts a frame looked at, and keeps the first record time.
    #[inline(always)]
    fn count_frame(&mut self, frame: &Frame<'_>) {
        self.stats.frames += 1;
        if self.first_ts.is_none() && frame.has_ts() {
            self.first_ts = Some(frame.ts_ns);
        }
    }

    /// The stamp [`TrailerDecoder::decode`] finds in a frame of the fast path's UDP shape
    /// (`crate::analyze::udp_shape`, its IP datagram ending at `end`) that an Arista 7130 / Metamako
    /// trailer follows, in auto mode while no counter device is known (`takes_plain`). `None` when
    /// `decode` would find anything else, or nothing: the frame then goes through `decode`. Changes
    /// nothing; [`TrailerDecoder::count_plain_stamp`] counts the frame once it is taken.
    #[inline]
    pub fn plain_stamp(&self, frame: &Frame<'_>, end: usize) -> Option<TrailerStamp> {
        // `decode`'s path for such a frame: no tap header, not a keyframe (UDP), captured whole (the
        // shape's), no counter device, then the search, Metamako first.
        if !matches!(self.mode, TrailerMode::Auto) || !self.counters.is_empty() || !carries_trailers(frame.link) {
            return None;
        }
        if frame.data.len() < end + MIN_APPENDED {
            return None;
        }
        metamako::find(frame, &Bounds { min_start: end, fcs_len: frame.fcs_len }).ok()
    }

    /// Counts a frame whose stamp [`TrailerDecoder::plain_stamp`] found, as `decode` would have.
    #[inline]
    pub fn count_plain_stamp(&mut self, frame: &Frame<'_>, s: &TrailerStamp) {
        self.count_frame(frame);
        self.count_stamp(s);
    }

    /// Counts a frame's stamp (kind and quality flags).
    #[inline]
    fn count_stamp(&mut self, s: &TrailerStamp) {
        *self.stats.stamped.slot(s.kind) += 1;
        let q = s.quality;
        self.stats.stale += q.contains(ClockQuality::STALE_KEYFRAME) as u64;
        self.stats.unsynced += q.contains(ClockQuality::UNSYNCED) as u64;
        self.stats.degraded += q.contains(ClockQuality::DEGRADED) as u64;
        self.stats.extended += q.contains(ClockQuality::EXTENDED) as u64;
    }

    /// Counts a frame found to hold no trailer.
    #[inline(always)]
    fn count_none(&mut self) {
        self.stats.no_trailer += 1;
    }

    #[inline(never)]
    fn decode_slow(&mut self, frame: &Frame<'_>, d: &Dissection) -> Result<Decoded, TrailerError> {
        let out = self.decode_inner(frame, d)?;
        match out {
            Decoded::None => self.stats.no_trailer += 1,
            Decoded::Keyframe(..) => {}
            Decoded::Stamp(s) => self.count_stamp(&s),
        }
        Ok(out)
    }

    fn decode_inner(&mut self, frame: &Frame<'_>, d: &Dissection) -> Result<Decoded, TrailerError> {
        Ok(match self.mode {
            TrailerMode::Off => Decoded::None,
            // Taps stamp Ethernet frames; other links (PPP, raw IP, loopback...) keep no trailer of theirs.
            TrailerMode::Forced(kind) if !carries_trailers(frame.link) && !self.validated => {
                return Err(TrailerError {
                    kind,
                    reason: format!(
                        "link type {} cannot carry tap trailers (Ethernet and Linux cooked captures only)",
                        frame.link.to_u16()
                    ),
                });
            }
            _ if !carries_trailers(frame.link) => Decoded::None,
            TrailerMode::Auto => self.decode_auto(frame, d),
            TrailerMode::Forced(kind) => self.decode_forced(kind, frame, d)?,
        })
    }

    /// The common frame in auto mode, decided in a few tests with the same outcome as the full path:
    /// an IP datagram (not a keyframe's protocol) filling the frame to within 16 bytes, no tap
    /// header, no counter device known, captured whole. `decode_auto` would find nothing and count
    /// nothing but `no_trailer`.
    #[inline]
    fn plainly_none(&self, frame: &Frame<'_>, d: &Dissection) -> bool {
        let TrailerMode::Auto = self.mode else { return false };
        let Some(ip) = d.ip else { return false };
        carries_trailers(frame.link)
            && d.tap_header.is_none()
            && ip.proto != arista7150::KEYFRAME_PROTO
            && d.ethertype != fusion::ETHERTYPE_KEYFRAME
            && self.counters.is_empty()
            && (frame.wire_len == 0 || frame.data.len() >= frame.wire_len as usize)
            && frame.data.len() < ip.end.max(d.l3_offset) + MIN_APPENDED
    }

    /// Call once after the last frame: reports a forced kind that never validated.
    pub fn finish(&self) -> Result<(), TrailerError> {
        match self.mode {
            TrailerMode::Forced(kind) if !self.validated => {
                let reason = if kind.is_counter() && self.stats.keyframes.get(kind) == 0 {
                    format!("no {} keyframe in the input (keyframes map the counter to time)", kind.name())
                } else {
                    "no frame carried a valid trailer".to_owned()
                };
                Err(TrailerError { kind, reason })
            }
            _ => Ok(()),
        }
    }

    /// Frames captured shorter than their wire length have lost their trailer.
    fn whole(&mut self, frame: &Frame<'_>) -> bool {
        let whole = frame.wire_len == 0 || frame.data.len() >= frame.wire_len as usize;
        if !whole {
            self.stats.truncated += 1;
        }
        whole
    }

    fn decode_auto(&mut self, frame: &Frame<'_>, d: &Dissection) -> Decoded {
        if d.tap_header.is_some() {
            return match arista7280::decode(frame, d) {
                Ok(s) => Decoded::Stamp(s),
                Err(_) => {
                    self.stats.rejected += 1;
                    Decoded::None
                }
            };
        }
        match self.counters.try_keyframe(frame, d, None) {
            counter::KeyframeSeen::Accepted(kind, left_ns) => {
                *self.stats.keyframes.slot(kind) += 1;
                return Decoded::Keyframe(kind, left_ns);
            }
            counter::KeyframeSeen::Rejected => self.stats.keyframes_rejected += 1,
            counter::KeyframeSeen::No => {}
        }
        if !self.whole(frame) {
            return Decoded::None;
        }
        if !self.counters.is_empty() {
            match self.counters.decode(frame, d, None) {
                Ok(s) => return Decoded::Stamp(s),
                Err(counter::CounterMiss::TooOld) => self.stats.keyframe_too_old += 1,
                Err(_) => self.stats.rejected += 1,
            }
        }
        let bounds = Bounds::of(frame, d);
        // Both need 16 bytes after the packet (Metamako: 12 + the original FCS's 4; HPT: 16), so the
        // common frame without a trailer stops here.
        if frame.data.len() < bounds.min_start + MIN_APPENDED {
            return Decoded::None;
        }
        if let Ok(s) = metamako::find(frame, &bounds) {
            return Decoded::Stamp(s);
        }
        if let Ok(s) = hpt::find(frame, &bounds) {
            return Decoded::Stamp(s);
        }
        Decoded::None
    }

    fn decode_forced(&mut self, kind: TrailerKind, frame: &Frame<'_>, d: &Dissection) -> Result<Decoded, TrailerError> {
        let attempt: Result<TrailerStamp, String> = match kind {
            TrailerKind::Arista7280 => arista7280::decode(frame, d).map_err(str::to_owned),
            TrailerKind::ExablazeFusion | TrailerKind::Arista7150 => {
                match self.counters.try_keyframe(frame, d, Some(kind)) {
                    counter::KeyframeSeen::Accepted(k, left_ns) => {
                        *self.stats.keyframes.slot(k) += 1;
                        return Ok(Decoded::Keyframe(k, left_ns));
                    }
                    counter::KeyframeSeen::Rejected => self.stats.keyframes_rejected += 1,
                    counter::KeyframeSeen::No => {}
                }
                if self.counters.is_empty() {
                    self.stats.before_keyframe += 1;
                    let waited_ns = match (self.first_ts, frame.has_ts()) {
                        (Some(t0), true) => frame.ts_ns.saturating_sub(t0),
                        _ => 0,
                    };
                    if waited_ns > FORCED_KEYFRAME_WAIT_NS || self.stats.before_keyframe > FORCED_KEYFRAME_WAIT_FRAMES {
                        return Err(TrailerError {
                            kind,
                            reason: format!(
                                "no keyframe yet: none in the first {} frames ({} ms of record time; a forced \
                                 counter kind waits {} s or {} frames for one); is the device sending keyframes to \
                                 this capture point (IPv4 protocol 253 or EtherType 0x88B5)?",
                                self.stats.before_keyframe,
                                waited_ns / 1_000_000,
                                FORCED_KEYFRAME_WAIT_NS / 1_000_000_000,
                                FORCED_KEYFRAME_WAIT_FRAMES
                            ),
                        });
                    }
                    return Ok(Decoded::None);
                }
                if !self.whole(frame) {
                    Err("frame captured shorter than on the wire: its trailer was cut off".to_owned())
                } else {
                    match self.counters.decode(frame, d, Some(kind)) {
                        Ok(s) => Ok(s),
                        // The device never stamps these: not a reason to refuse the format.
                        Err(counter::CounterMiss::NotStamped) => {
                            self.stats.rejected += 1;
                            return Ok(Decoded::None);
                        }
                        Err(m) => {
                            if m == counter::CounterMiss::TooOld {
                                self.stats.keyframe_too_old += 1;
                            } else {
                                self.stats.rejected += 1;
                            }
                            Err(m.reason().to_owned())
                        }
                    }
                }
            }
            TrailerKind::Metamako | TrailerKind::Cpacket | TrailerKind::ExablazeHpt => {
                if !self.whole(frame) {
                    Err("frame captured shorter than on the wire: its trailer was cut off".to_owned())
                } else {
                    let bounds = Bounds::of(frame, d);
                    match kind {
                        TrailerKind::Metamako => metamako::find(frame, &bounds),
                        TrailerKind::Cpacket => cpacket::find(frame, &bounds),
                        _ => hpt::find(frame, &bounds),
                    }
                    .map_err(str::to_owned)
                }
            }
        };
        match attempt {
            Ok(s) => {
                self.validated = true;
                Ok(Decoded::Stamp(s))
            }
            Err(reason) if !self.validated => Err(TrailerError { kind, reason }),
            Err(_) => Ok(Decoded::None),
        }
    }
}

/// Link types whose frames can end in a tap trailer (or start with a 0xD28B header).
#[inline]
pub fn carries_trailers(link: LinkType) -> bool {
    matches!(link, LinkType::Ethernet | LinkType::LinuxSll | LinkType::LinuxSll2)
}

/// Where a trailer may start: never inside the headers, the IP datagram, or an ARP or PTP message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// First byte a trailer (including its original FCS) may occupy.
    pub min_start: usize,
    /// The container's statement about a trailing FCS.
    pub fcs_len: Option<u8>,
}

impl Bounds {
    pub(crate) fn of(frame: &Frame<'_>, d: &Dissection) -> Bounds {
        let b = frame.data;
        let l3 = d.l3_offset;
        let declared = match (d.ip, d.ethertype) {
            (Some(ip), _) => Some(ip.end),
            // ARP: 8 + 2 * (hardware + protocol address lengths).
            (None, 0x0806) => b.get(l3 + 4..l3 + 6).map(|x| l3 + 8 + 2 * (x[0] as usize + x[1] as usize)),
            // PTP over Ethernet: messageLength. Its timestamps would otherwise pass for a trailer.
            (None, 0x88F7) => rd::u16(b, l3 + 2).map(|n| l3 + n as usize),
            _ => None,
        };
        Bounds { min_start: declared.map_or(l3, |e| e.max(l3)), fcs_len: frame.fcs_len }
    }

    /// Lengths of trailing FCS to try, in order (Wireshark: without, then with).
    pub(crate) fn fcs_options(&self) -> &'static [usize] {
        match self.fcs_len {
            Some(0) => &[0],
            Some(4) => &[4],
            _ => &[0, 4],
        }
    }
}

/// Fewest bytes an appended trailer found by search (Metamako, HPT) occupies after the packet. Closer
/// to the frame's end only a counter device's 4-byte stamp fits (Arista 7150, Exablaze Fusion), which
/// is only looked for once a keyframe has made the device known.
pub(crate) const MIN_APPENDED: usize = 16;
const _: () = assert!(MIN_APPENDED <= hpt::LEN && MIN_APPENDED <= 12 + 4);

/// Earliest trailer time accepted, 2000-01-01T00:00:00Z. Wireshark only asks for more than 3600 s; a
/// later floor keeps zeroed or fuzzed bytes in captures whose clock sits near 1970 from passing for a
/// trailer (tcpdump's `lldp-infinite-loop-2.pcap`, `brcm-tag.pcap`).
pub const MIN_TRAILER_SEC: i64 = 946_684_800;

/// Seconds after [`MIN_TRAILER_SEC`] and within `window_s` of the record time (false when the container
/// has no timestamp).
pub(crate) fn near_record(frame: &Frame<'_>, sec: i64, window_s: i64) -> bool {
    sec >= MIN_TRAILER_SEC && frame.has_ts() && (sec - frame.ts_ns.div_euclid(1_000_000_000)).abs() <= window_s
}

/// Bounds-checked big-endian readers: trailers are read from untrusted ends of frames.
pub(crate) mod rd {
    /// `n` bytes at `at`, if inside `b`.
    #[inline]
    pub fn bytes<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
        b.get(at..at.checked_add(N)?)?.try_into().ok()
    }
    /// Big-endian u16.
    #[inline]
    pub fn u16(b: &[u8], at: usize) -> Option<u16> {
        bytes::<2>(b, at).map(u16::from_be_bytes)
    }
    /// Big-endian u32.
    #[inline]
    pub fn u32(b: &[u8], at: usize) -> Option<u32> {
        bytes::<4>(b, at).map(u32::from_be_bytes)
    }
    /// Big-endian u64.
    #[inline]
    pub fn u64(b: &[u8], at: usize) -> Option<u64> {
        bytes::<8>(b, at).map(u64::from_be_bytes)
    }
}

/// IEEE 802.3 CRC-32 (reflected 0xEDB88320), as in the Ethernet FCS.
pub fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, slot) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            }
            *slot = c;
        }
        t
    });
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc = table[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

/// True when the last 4 bytes of `data` are a valid Ethernet FCS over the bytes before them.
pub(crate) fn fcs_valid(data: &[u8]) -> bool {
    data.len() >= 18 && {
        let n = data.len() - 4;
        rd::bytes::<4>(data, n).map(u32::from_le_bytes) == Some(crc32(&data[..n]))
    }
}

#[cfg(test)]
mod tests;
