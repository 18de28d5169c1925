//! NIC timestamping control: capabilities (ETHTOOL_GET_TS_INFO), the hardware configuration
//! (SIOCGHWTSTAMP / SIOCSHWTSTAMP), and a guard that enables TX ON / RX ALL and restores exactly the
//! previous configuration on drop, on SIGTERM (the caller stops its loop and drops the guard) and after a
//! crash (the previous configuration is written to a runtime state file before it is changed, and the
//! next run restores it).
//!
//! A hardware RX filter other than NONE or ALL is taken as set by ptp4l (which asks for a PTP filter);
//! it is never changed without `force`. Where the driver has no hardware timestamping (EOPNOTSUPP, as on
//! veth and virtio_net), the outcome is [`TsMode::Software`] with the reason, to be reported per interface.

use super::error::LiveError;
use super::sys::{self, HwTstampConfig};
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// HWTSTAMP_TX_ON.
pub const TX_ON: i32 = 1;
/// HWTSTAMP_FILTER_NONE.
pub const FILTER_NONE: i32 = 0;
/// HWTSTAMP_FILTER_ALL.
pub const FILTER_ALL: i32 = 1;

/// Default directory of the crash-recovery state files.
pub const DEFAULT_STATE_DIR: &str = "/run/wirestamp";

/// Timestamping capabilities of an interface (ETHTOOL_GET_TS_INFO).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsInfo {
    /// SOF_TIMESTAMPING_* capability bits.
    pub so_timestamping: u32,
    /// The PTP hardware clock (`/dev/ptpN`), if any.
    pub phc_index: Option<u32>,
    /// Bit set of supported HWTSTAMP_TX_* values.
    pub tx_types: u32,
    /// Bit set of supported HWTSTAMP_FILTER_* values.
    pub rx_filters: u32,
}

impl TsInfo {
    /// From the decoded ioctl reply.
    pub fn from_raw(r: sys::TsInfoRaw) -> TsInfo {
        TsInfo {
            so_timestamping: r.so_timestamping,
            phc_index: u32::try_from(r.phc_index).ok(),
            tx_types: r.tx_types,
            rx_filters: r.rx_filters,
        }
    }

    /// Capability names as `ethtool -T` prints them.
    pub fn capability_names(&self) -> Vec<&'static str> {
        sys::SOF_NAMES.iter().filter(|(b, _)| self.so_timestamping & b != 0).map(|(_, n)| *n).collect()
    }

    /// Supported TX types by name.
    pub fn tx_type_names(&self) -> Vec<String> {
        bit_names(self.tx_types, &sys::TX_TYPE_NAMES)
    }

    /// Supported RX filters by name.
    pub fn rx_filter_names(&self) -> Vec<String> {
        bit_names(self.rx_filters, &sys::RX_FILTER_NAMES)
    }

    /// True when the NIC can stamp received frames with its own clock.
    pub fn hardware_rx(&self) -> bool {
        self.so_timestamping & (sys::SOF_RX_HARDWARE | sys::SOF_RAW_HARDWARE)
            == (sys::SOF_RX_HARDWARE | sys::SOF_RAW_HARDWARE)
    }
}

fn bit_names(bits: u32, table: &[&str]) -> Vec<String> {
    (0..32).filter(|i| bits & (1 << i) != 0).map(|i| sys::name_or_number(table, i)).collect()
}

/// Reads an interface's timestamping capabilities.
pub fn ts_info(iface: &str) -> Result<TsInfo, LiveError> {
    let sock = sys::ioctl_socket().map_err(|e| LiveError::sys("socket", iface, e))?;
    let mut buf = sys::encode_ts_info_request();
    let mut ifr = sys::IfReq::new(iface).map_err(|e| LiveError::sys("ETHTOOL_GET_TS_INFO", iface, e))?;
    ifr.set_data_ptr(buf.as_mut_ptr());
    sys::ifreq_ioctl(&sock, sys::SIOCETHTOOL, &mut ifr).map_err(|e| LiveError::sys("ETHTOOL_GET_TS_INFO", iface, e))?;
    Ok(TsInfo::from_raw(sys::decode_ts_info(&buf)))
}

/// Reads and writes an interface's hardware timestamping configuration. [`Ioctl`] is the real one;
/// tests substitute a fake to exercise the policy.
pub trait HwTsDevice {
    /// SIOCGHWTSTAMP.
    fn get(&self, iface: &str) -> io::Result<HwTstampConfig>;
    /// SIOCSHWTSTAMP; returns what the driver actually applied.
    fn set(&self, iface: &str, cfg: HwTstampConfig) -> io::Result<HwTstampConfig>;
}

/// The SIOC\[GS\]HWTSTAMP ioctls, on a socket of the calling thread's network namespace.
pub struct Ioctl {
    sock: OwnedFd,
}

impl Ioctl {
    /// Opens the ioctl socket.
    pub fn new() -> io::Result<Ioctl> {
        Ok(Ioctl { sock: sys::ioctl_socket()? })
    }

    fn call(&self, iface: &str, req: libc::c_ulong, cfg: HwTstampConfig) -> io::Result<HwTstampConfig> {
        let mut buf = cfg.encode();
        let mut ifr = sys::IfReq::new(iface)?;
        ifr.set_data_ptr(buf.as_mut_ptr());
        sys::ifreq_ioctl(&self.sock, req, &mut ifr)?;
        Ok(HwTstampConfig::decode(&buf))
    }
}

impl HwTsDevice for Ioctl {
    fn get(&self, iface: &str) -> io::Result<HwTstampConfig> {
        self.call(iface, sys::SIOCGHWTSTAMP, HwTstampConfig { flags: 0, tx_type: 0, rx_filter: 0 })
    }
    fn set(&self, iface: &str, cfg: HwTstampConfig) -> io::Result<HwTstampConfig> {
        self.call(iface, sys::SIOCSHWTSTAMP, cfg)
    }
}

/// What timestamping an interface ended up with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TsMode {
    /// NIC hardware timestamps. `previous` is what was there before (restored on drop); `changed` is
    /// false when the configuration already was TX ON / RX ALL and was left alone.
    Hardware { previous: HwTstampConfig, applied: HwTstampConfig, changed: bool },
    /// Kernel software timestamps, with the reason hardware ones are not used.
    Software { reason: String },
}

impl TsMode {
    /// One line for reports and pcapng `if_description`.
    pub fn describe(&self, iface: &str) -> String {
        match self {
            TsMode::Hardware { previous, applied, changed: true } => {
                format!(
                    "{iface}: hardware timestamps ({}; restored to {} on exit)",
                    applied.describe(),
                    previous.describe()
                )
            }
            TsMode::Hardware { applied, .. } => {
                format!("{iface}: hardware timestamps ({}, already set)", applied.describe())
            }
            TsMode::Software { reason } => format!("{iface}: SOFTWARE timestamps (kernel CLOCK_REALTIME): {reason}"),
        }
    }
}

/// Holds an interface's hardware timestamping enabled; restores the previous configuration on drop.
pub struct HwTsGuard<D: HwTsDevice> {
    dev: D,
    iface: String,
    restore: Option<HwTstampConfig>,
    state_path: PathBuf,
    /// The outcome, to report.
    pub mode: TsMode,
}

/// The state file of `iface` in the calling thread's network namespace: interfaces of one name in two
/// namespaces (containers) are two devices, and one run's saved configuration must never be applied
/// to the other's. (The namespace's inode, as `ip netns identify` and `/proc/PID/ns/net` show it.)
fn state_path(dir: &Path, iface: &str) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    match fs::metadata("/proc/thread-self/ns/net") {
        Ok(m) => dir.join(format!("hwtstamp-{iface}-net{}.state", m.ino())),
        Err(_) => dir.join(format!("hwtstamp-{iface}.state")),
    }
}

fn is_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) | Some(libc::ENOTTY) | Some(libc::ERANGE))
}

/// A state file's content: the configuration to restore and the run that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedState {
    pub pid: i32,
    pub config: HwTstampConfig,
}

impl SavedState {
    fn encode(&self, iface: &str) -> String {
        format!(
            "iface={iface}\npid={}\nflags={}\ntx_type={}\nrx_filter={}\n",
            self.pid, self.config.flags, self.config.tx_type, self.config.rx_filter
        )
    }

    fn decode(text: &str) -> Option<SavedState> {
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                .and_then(|v| v.trim().parse().ok())
        };
        Some(SavedState {
            pid: field("pid")?,
            config: HwTstampConfig {
                flags: field("flags")?,
                tx_type: field("tx_type")?,
                rx_filter: field("rx_filter")?,
            },
        })
    }
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists; it sends nothing.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// Restores a configuration left by a run that did not exit cleanly. Returns what was restored.
pub fn recover<D: HwTsDevice>(dev: &D, iface: &str, state_dir: &Path) -> Result<Option<SavedState>, LiveError> {
    let path = state_path(state_dir, iface);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LiveError::State { path: path.display().to_string(), reason: e.to_string() }),
    };
    let saved = SavedState::decode(&text).ok_or_else(|| LiveError::State {
        path: path.display().to_string(),
        reason: "unreadable content; check the interface with `hwstamp_ctl -i IFACE` and delete the file".into(),
    })?;
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    if saved.pid != me && pid_alive(saved.pid) {
        return Err(LiveError::State {
            path: path.display().to_string(),
            reason: format!("wirestamp pid {} is controlling {iface}'s timestamping; stop it first", saved.pid),
        });
    }
    dev.set(iface, saved.config).map_err(|e| LiveError::sys("SIOCSHWTSTAMP (crash recovery)", iface, e))?;
    fs::remove_file(&path).map_err(|e| LiveError::State { path: path.display().to_string(), reason: e.to_string() })?;
    Ok(Some(saved))
}

impl<D: HwTsDevice> HwTsGuard<D> {
    /// Enables TX ON / RX ALL on `iface` (after recovering a crashed run's state), or falls back to
    /// software timestamps when the driver cannot. A PTP filter in place is a [`LiveError::FilterConflict`]
    /// unless `force`.
    pub fn enable(dev: D, iface: &str, state_dir: &Path, force: bool) -> Result<HwTsGuard<D>, LiveError> {
        let state_path = state_path(state_dir, iface);
        let mut guard = HwTsGuard {
            dev,
            iface: iface.to_string(),
            restore: None,
            state_path,
            mode: TsMode::Software { reason: String::new() },
        };
        let current = match guard.dev.get(iface) {
            Ok(c) => c,
            Err(e) if is_unsupported(&e) => {
                guard.mode = TsMode::Software { reason: format!("no hardware timestamping (SIOCGHWTSTAMP: {e})") };
                return Ok(guard);
            }
            Err(e) => return Err(LiveError::sys("SIOCGHWTSTAMP", iface, e)),
        };
        recover(&guard.dev, iface, state_dir)?;
        let current = guard.dev.get(iface).unwrap_or(current);
        if current.tx_type == TX_ON && current.rx_filter == FILTER_ALL {
            guard.mode = TsMode::Hardware { previous: current, applied: current, changed: false };
            return Ok(guard);
        }
        if current.rx_filter != FILTER_NONE && current.rx_filter != FILTER_ALL && !force {
            return Err(LiveError::FilterConflict { iface: iface.into(), current: current.describe() });
        }
        // SAFETY: getpid has no preconditions.
        let saved = SavedState { pid: unsafe { libc::getpid() }, config: current };
        let p = guard.state_path.display().to_string();
        fs::create_dir_all(state_dir).map_err(|e| LiveError::State { path: p.clone(), reason: e.to_string() })?;
        fs::write(&guard.state_path, saved.encode(iface))
            .map_err(|e| LiveError::State { path: p, reason: e.to_string() })?;
        let want = HwTstampConfig { flags: current.flags, tx_type: TX_ON, rx_filter: FILTER_ALL };
        match guard.dev.set(iface, want) {
            Ok(applied) => {
                guard.restore = Some(current);
                guard.mode = TsMode::Hardware { previous: current, applied, changed: true };
            }
            Err(e) => {
                let _ = fs::remove_file(&guard.state_path);
                if !is_unsupported(&e) {
                    return Err(LiveError::sys("SIOCSHWTSTAMP", iface, e));
                }
                guard.mode = TsMode::Software { reason: format!("driver refused TX ON / RX ALL (SIOCSHWTSTAMP: {e})") };
            }
        }
        Ok(guard)
    }

    /// Restores the previous configuration now (idempotent); errors are returned, not just logged.
    pub fn restore(&mut self) -> Result<(), LiveError> {
        if let Some(prev) = self.restore.take() {
            self.dev.set(&self.iface, prev).map_err(|e| LiveError::sys("SIOCSHWTSTAMP (restore)", &self.iface, e))?;
            let _ = fs::remove_file(&self.state_path);
        }
        Ok(())
    }
}

impl<D: HwTsDevice> Drop for HwTsGuard<D> {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            // The state file stays, so the next run restores it.
            // Not `eprintln!`, which panics (in a destructor) when standard error is closed.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "wirestamp: {e}; the next run will retry from {}",
                self.state_path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A NIC whose configuration is a cell; `set_fails` makes SIOCSHWTSTAMP return that errno.
    struct Fake {
        cfg: RefCell<HwTstampConfig>,
        sets: RefCell<Vec<HwTstampConfig>>,
        set_fails: Option<i32>,
    }

    impl HwTsDevice for &Fake {
        fn get(&self, _: &str) -> io::Result<HwTstampConfig> {
            Ok(*self.cfg.borrow())
        }
        fn set(&self, _: &str, c: HwTstampConfig) -> io::Result<HwTstampConfig> {
            if let Some(e) = self.set_fails {
                return Err(io::Error::from_raw_os_error(e));
            }
            self.sets.borrow_mut().push(c);
            *self.cfg.borrow_mut() = c;
            Ok(c)
        }
    }

    fn fake(tx: i32, rx: i32) -> Fake {
        Fake {
            cfg: RefCell::new(HwTstampConfig { flags: 0, tx_type: tx, rx_filter: rx }),
            sets: RefCell::default(),
            set_fails: None,
        }
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wirestamp-tstamp-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn enables_then_restores_exactly() {
        let dir = tmpdir("restore");
        let f = fake(0, 0);
        let g = HwTsGuard::enable(&f, "eth9", &dir, false).unwrap();
        assert_eq!(*f.cfg.borrow(), HwTstampConfig { flags: 0, tx_type: 1, rx_filter: 1 });
        let state = fs::read_to_string(state_path(&dir, "eth9")).unwrap();
        assert!(state.contains("tx_type=0\nrx_filter=0\n"), "{state}");
        drop(g);
        assert_eq!(*f.cfg.borrow(), HwTstampConfig { flags: 0, tx_type: 0, rx_filter: 0 });
        assert!(!state_path(&dir, "eth9").exists());
    }

    #[test]
    fn ptp4l_filter_is_a_conflict_unless_forced() {
        let dir = tmpdir("conflict");
        let f = fake(1, 12); // ptp4l: TX ON, RX PTP_V2_EVENT
        let e = HwTsGuard::enable(&f, "eth9", &dir, false).err().unwrap();
        assert!(e.to_string().contains("rx=ptpv2-event"), "{e}");
        assert!(f.sets.borrow().is_empty(), "nothing changed");
        let g = HwTsGuard::enable(&f, "eth9", &dir, true).unwrap();
        assert_eq!(f.cfg.borrow().rx_filter, 1);
        drop(g);
        assert_eq!(*f.cfg.borrow(), HwTstampConfig { flags: 0, tx_type: 1, rx_filter: 12 });
    }

    #[test]
    fn already_all_is_left_alone() {
        let dir = tmpdir("already");
        let f = fake(1, 1);
        let g = HwTsGuard::enable(&f, "eth9", &dir, false).unwrap();
        assert!(matches!(g.mode, TsMode::Hardware { changed: false, .. }));
        drop(g);
        assert!(f.sets.borrow().is_empty());
    }

    #[test]
    fn crash_state_is_restored_by_the_next_run() {
        let dir = tmpdir("crash");
        fs::create_dir_all(&dir).unwrap();
        // A previous run (pid 0x7ffffff0, not alive) enabled RX ALL over ptp4l's filter and died.
        fs::write(state_path(&dir, "eth9"), "iface=eth9\npid=2147483632\nflags=0\ntx_type=1\nrx_filter=12\n").unwrap();
        let f = fake(1, 1);
        let e = HwTsGuard::enable(&f, "eth9", &dir, false).err().unwrap();
        assert_eq!(f.sets.borrow()[0], HwTstampConfig { flags: 0, tx_type: 1, rx_filter: 12 }, "restored first");
        assert!(matches!(e, LiveError::FilterConflict { .. }), "then ptp4l's filter is seen: {e}");
        assert!(!state_path(&dir, "eth9").exists());
    }

    /// One interface name in two network namespaces (two containers' eth0) is two devices: their
    /// states are kept apart, so a run in one never restores its configuration onto the other.
    #[test]
    fn the_state_of_an_interface_is_its_namespaces() {
        let dir = tmpdir("netns");
        let here = state_path(&dir, "eth0");
        let there = std::thread::spawn(move || {
            // SAFETY: unshare only changes this thread's network namespace (tests run as root).
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "{}", io::Error::last_os_error());
            state_path(&tmpdir("netns"), "eth0")
        })
        .join()
        .unwrap();
        assert_ne!(here, there);
        assert_eq!(here, state_path(&dir, "eth0"));
    }

    #[test]
    fn refused_set_falls_back_to_software() {
        let dir = tmpdir("refused");
        let mut f = fake(0, 0);
        f.set_fails = Some(libc::ERANGE);
        let g = HwTsGuard::enable(&f, "eth9", &dir, false).unwrap();
        assert!(matches!(&g.mode, TsMode::Software { reason } if reason.contains("refused")));
        assert!(!state_path(&dir, "eth9").exists());
    }

    #[test]
    fn ts_info_names() {
        let i = TsInfo::from_raw(sys::TsInfoRaw { so_timestamping: 0x1a, phc_index: -1, tx_types: 0, rx_filters: 0 });
        assert_eq!(i.capability_names(), ["software-transmit", "software-receive", "software-system-clock"]);
        assert_eq!(i.phc_index, None);
        assert!(!i.hardware_rx());
        let i =
            TsInfo::from_raw(sys::TsInfoRaw { so_timestamping: 0x5f, phc_index: 2, tx_types: 3, rx_filters: 0x1003 });
        assert_eq!(i.phc_index, Some(2));
        assert_eq!(i.tx_type_names(), ["off", "on"]);
        assert_eq!(i.rx_filter_names(), ["none", "all", "ptpv2-event"]);
        assert!(i.hardware_rx());
    }
}
