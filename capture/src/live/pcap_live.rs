//! libpcap live capture (the `pcap` crate): nanosecond precision and the best timestamp type the
//! device offers (adapter, adapter_unsynced, host_hiprec, host), for capture ports fed by a tap.
//!
//! libpcap tells which types a device supports (`pcap_list_tstamp_types`) but not which one an open
//! handle uses, so the type is chosen from that list before opening and reported. Host types do not say
//! whether the kernel had a software stamp or took the time at copy, so their frames are
//! [`TsSource::KernelNone`]; adapter types are [`TsSource::KernelHardware`].

use super::error::LiveError;
use std::ffi::{CStr, CString};
use std::os::fd::AsRawFd;
use wirestamp_core::{ClockQuality, Direction, Frame, LinkType, TsSource};

// libpcap functions the `pcap` crate does not wrap (same library, already linked by it).
unsafe extern "C" {
    fn pcap_create(source: *const libc::c_char, errbuf: *mut libc::c_char) -> *mut libc::c_void;
    fn pcap_list_tstamp_types(p: *mut libc::c_void, types: *mut *mut libc::c_int) -> libc::c_int;
    fn pcap_free_tstamp_types(types: *mut libc::c_int);
    fn pcap_close(p: *mut libc::c_void);
}

/// PCAP_TSTAMP_* values in order of preference, with libpcap's names.
const PREFERENCE: [(i32, &str, pcap::TimestampType); 4] = [
    (3, "adapter", pcap::TimestampType::Adapter),
    (4, "adapter_unsynced", pcap::TimestampType::AdapterUnsynced),
    (2, "host_hiprec", pcap::TimestampType::HostHighPrec),
    (0, "host", pcap::TimestampType::Host),
];

/// The timestamp types libpcap lists for `iface` (empty: only the default, host).
pub fn tstamp_types(iface: &str) -> Result<Vec<i32>, LiveError> {
    let name = CString::new(iface).map_err(|_| LiveError::NoSuchInterface { iface: iface.into() })?;
    let mut errbuf = [0 as libc::c_char; 256];
    // SAFETY: valid NUL-terminated name and a PCAP_ERRBUF_SIZE (256) buffer.
    let p = unsafe { pcap_create(name.as_ptr(), errbuf.as_mut_ptr()) };
    if p.is_null() {
        // SAFETY: libpcap NUL-terminates errbuf on failure.
        let msg = unsafe { CStr::from_ptr(errbuf.as_ptr()) }.to_string_lossy().into_owned();
        return Err(LiveError::Sys { what: "pcap_create", iface: iface.into(), source: std::io::Error::other(msg) });
    }
    let mut list: *mut libc::c_int = std::ptr::null_mut();
    // SAFETY: `p` is a live pcap_t; on success `list` points at `n` ints that we free below.
    let n = unsafe { pcap_list_tstamp_types(p, &mut list) };
    let types = if n > 0 && !list.is_null() {
        // SAFETY: libpcap returned `n` ints at `list`.
        let v = unsafe { std::slice::from_raw_parts(list, n as usize) }.to_vec();
        // SAFETY: `list` came from pcap_list_tstamp_types.
        unsafe { pcap_free_tstamp_types(list) };
        v
    } else {
        Vec::new()
    };
    // SAFETY: `p` came from pcap_create and is not used afterwards.
    unsafe { pcap_close(p) };
    Ok(types)
}

/// A libpcap live capture.
pub struct PcapLive {
    cap: pcap::Capture<pcap::Active>,
    link: LinkType,
    ts_source: TsSource,
    interface_id: u32,
    idle: bool,
    /// The interface's name, for errors.
    iface: String,
    /// libpcap's name of the timestamp type in use.
    pub tstamp_type: &'static str,
}

/// libpcap's counters (`pcap_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcapStats {
    pub received: u64,
    pub dropped: u64,
    pub if_dropped: u64,
}

impl PcapLive {
    /// Opens `iface` with nanosecond precision, immediate mode and the best timestamp type.
    pub fn open(iface: &str, filter: Option<&str>, snaplen: i32, interface_id: u32) -> Result<PcapLive, LiveError> {
        let types = tstamp_types(iface)?;
        let &(_, tstamp_type, ty) = PREFERENCE.iter().find(|(v, _, _)| types.contains(v)).unwrap_or(&PREFERENCE[3]);
        let map = |e: pcap::Error| {
            let s = e.to_string();
            if s.contains("No such device") {
                LiveError::NoSuchInterface { iface: iface.into() }
            } else if s.contains("not up") {
                LiveError::InterfaceDown { iface: iface.into() }
            } else if s.contains("ermission") {
                LiveError::Permission { what: "pcap_activate", iface: iface.into() }
            } else {
                LiveError::Sys { what: "libpcap", iface: iface.into(), source: std::io::Error::other(s) }
            }
        };
        let mut cap = pcap::Capture::from_device(iface)
            .map_err(map)?
            .precision(pcap::Precision::Nano)
            .tstamp_type(ty)
            .immediate_mode(true)
            .snaplen(snaplen)
            .timeout(100)
            .open()
            .map_err(map)?
            // Non-blocking: on a TPACKET_V3 ring libpcap's poll() otherwise blocks until traffic arrives,
            // whatever the timeout, and retries on EINTR, so SIGTERM would wait for the next frame.
            .setnonblock()
            .map_err(map)?;
        if let Some(f) = filter {
            cap.filter(f, true).map_err(|e| LiveError::BadFilter { filter: f.into(), reason: e.to_string() })?;
        }
        let link = LinkType::from_u16(cap.get_datalink().0 as u16);
        let ts_source = if ty as i32 >= 3 { TsSource::KernelHardware } else { TsSource::KernelNone };
        Ok(PcapLive { cap, link, ts_source, interface_id, idle: false, iface: iface.into(), tstamp_type })
    }

    /// Waits up to `timeout` for the capture's descriptor to become readable, if the last
    /// [`next_frame`](Self::next_frame) found nothing. Returns early on a signal.
    pub fn wait_if_idle(&mut self, timeout: std::time::Duration) -> Result<(), LiveError> {
        if !self.idle {
            return Ok(());
        }
        let mut pfd = libc::pollfd { fd: self.cap.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis().min(i32::MAX as u128) as i32) };
        if rc < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(LiveError::Sys {
                what: "poll",
                iface: self.iface.clone(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// The next frame, or `None` when none is ready now (call [`wait_if_idle`](Self::wait_if_idle) next).
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, LiveError> {
        let (ts_source, link, interface) = (self.ts_source, self.link, self.interface_id);
        self.idle = false;
        match self.cap.next_packet() {
            Ok(p) => {
                let ts = p.header.ts;
                Ok(Some(Frame {
                    data: p.data,
                    wire_len: p.header.len,
                    // Precision::Nano: libpcap puts nanoseconds in tv_usec.
                    ts_ns: ts.tv_sec * 1_000_000_000 + ts.tv_usec,
                    ts_source,
                    link,
                    interface,
                    direction: Direction::Unknown,
                    fcs_len: None,
                    quality: ClockQuality::default(),
                }))
            }
            Err(pcap::Error::TimeoutExpired) => {
                self.idle = true;
                Ok(None)
            }
            Err(e) => Err(other("pcap_next_ex", &self.iface, e)),
        }
    }

    /// libpcap's counters.
    pub fn stats(&mut self) -> Result<PcapStats, LiveError> {
        let s = self.cap.stats().map_err(|e| other("pcap_stats", &self.iface, e))?;
        Ok(PcapStats { received: s.received.into(), dropped: s.dropped.into(), if_dropped: s.if_dropped.into() })
    }

    /// Link type of the frames.
    pub fn link(&self) -> LinkType {
        self.link
    }

    /// Timestamp provenance of the frames.
    pub fn ts_source(&self) -> TsSource {
        self.ts_source
    }
}

/// A libpcap error on `iface`; the interface gone (deleted, or renamed) is said as the other sources say it.
fn other(what: &'static str, iface: &str, e: pcap::Error) -> LiveError {
    let text = e.to_string();
    if text.contains("interface disappeared") || text.contains("No such device") {
        return LiveError::InterfaceGone { iface: iface.into() };
    }
    LiveError::Sys { what, iface: iface.into(), source: std::io::Error::other(text) }
}
