//! `wirestamp doctor`: can this host measure? Each check is pass / warn / fail with the reason and the
//! fix; the exit status is 1 when any check fails.
//!
//! Sources: CPUID 0x80000007 EDX bit 8 (invariant TSC), sysfs clocksource, ETHTOOL_GET_TS_INFO and
//! SIOCGHWTSTAMP per interface, the ethtool GRO/LRO/TSO flags per interface, `/dev/ptpN` (read through
//! its dynamic POSIX clock), `adjtimex` (kernel
//! clock sync status), `/proc/*/comm` (ptp4l, phc2sys, chronyd, ntpd), `CapEff` in `/proc/self/status`,
//! `/sys/devices/system/cpu/isolated`, cpufreq governors; for sockops TX timestamps (`capture --source
//! ebpf --cgroup DIR --tx-events`): the cgroup v2 and bpffs mounts (`/proc/self/mountinfo`) and the
//! kernel release (`/proc/sys/kernel/osrelease`).

use crate::cli::DoctorArgs;
use anyhow::Result;
use serde::Serialize;
use std::fs;
use std::io::Write;
use std::process::ExitCode;
use wirestamp_capture::live::ebpf::{mounts, read_mountinfo};
use wirestamp_capture::live::{HwTsDevice, Ioctl, offloads, phc, pmc, ts_info};

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

/// One check: what was found, and what to do about it.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(name: impl Into<String>, status: Status, detail: impl Into<String>, fix: Option<&str>) -> Check {
    Check { name: name.into(), status, detail: detail.into(), fix: fix.map(str::to_string) }
}

/// Invariant TSC: CPUID leaf 0x80000007, EDX bit 8 (runs at a constant rate in all ACPI P/C/T states).
pub fn invariant_tsc() -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        #[allow(unused_unsafe)]
        // SAFETY: CPUID exists on every x86_64 CPU; leaf 0x80000000 gives the highest extended leaf, checked
        // before 0x80000007 is read.
        let (max, edx) = unsafe {
            let max = __cpuid(0x8000_0000).eax;
            (max, if max >= 0x8000_0007 { __cpuid(0x8000_0007).edx } else { 0 })
        };
        Some(max >= 0x8000_0007 && edx & (1 << 8) != 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

fn tsc_check() -> Check {
    match invariant_tsc() {
        Some(true) => check("tsc", Status::Pass, "invariant TSC (CPUID 0x80000007 EDX[8])", None),
        Some(false) => check(
            "tsc",
            Status::Warn,
            "TSC is not invariant: its rate may change with power states, so rdtsc stamps drift",
            Some("use a CPU (or hypervisor setting) that exposes invariant TSC; rely on clock_gettime instead"),
        ),
        None => check("tsc", Status::Warn, "not an x86_64 CPU: no TSC", None),
    }
}

fn clocksource_check() -> Check {
    let base = "/sys/devices/system/clocksource/clocksource0";
    let cur = fs::read_to_string(format!("{base}/current_clocksource")).unwrap_or_default();
    let avail = fs::read_to_string(format!("{base}/available_clocksource")).unwrap_or_default();
    match cur.trim() {
        "tsc" => check("clocksource", Status::Pass, "tsc", None),
        "" => check("clocksource", Status::Warn, "unknown (no sysfs clocksource)", None),
        other if avail.split_whitespace().any(|c| c == "tsc") => check(
            "clocksource",
            Status::Warn,
            format!("{other}: slower clock_gettime and coarser stamps than tsc"),
            Some("echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource"),
        ),
        other => check(
            "clocksource",
            Status::Warn,
            format!("{other} (tsc not available: {})", avail.trim()),
            Some("check the kernel log for 'tsc: Marking TSC unstable'"),
        ),
    }
}

fn nic_checks(iface: &str, out: &mut Vec<Check>) {
    let info = match ts_info(iface) {
        Ok(i) => i,
        Err(e) => {
            out.push(check(format!("nic:{iface}"), Status::Fail, e.to_string(), Some("check the name with `ip link`")));
            return;
        }
    };
    let caps = info.capability_names().join(", ");
    let cfg = Ioctl::new().map_err(|e| e.to_string()).and_then(|d| d.get(iface).map_err(|e| e.to_string()));
    let cfg = match cfg {
        Ok(c) => format!("current config {}", c.describe()),
        Err(e) => format!("no hardware timestamping configuration (SIOCGHWTSTAMP: {e})"),
    };
    if info.hardware_rx() {
        out.push(check(
            format!("nic:{iface}"),
            Status::Pass,
            format!(
                "hardware timestamping: {caps}; tx types {:?}; rx filters {:?}; {cfg}",
                info.tx_type_names(),
                info.rx_filter_names()
            ),
            None,
        ));
    } else {
        out.push(check(
            format!("nic:{iface}"),
            Status::Warn,
            format!("software timestamps only ({caps}); {cfg}"),
            Some("for wire-accurate host stamps use a NIC with hardware timestamping (`ethtool -T`), or a tap"),
        ));
    }
    out.push(phc_check(iface, info.phc_index));
    out.push(offload_check(iface));
}

/// GRO, LRO and TSO: what a host capture sees of the wire (AF_PACKET and libpcap see both directions).
fn offload_check(iface: &str) -> Check {
    let name = format!("offload:{iface}");
    match offloads(iface).map(|o| o.issue(true, true)) {
        Ok(Some(i)) => check(name, Status::Warn, &i.what, Some(&i.fix(iface))),
        Ok(None) => check(name, Status::Pass, "GRO, LRO and TSO off: a frame captured is a packet on the wire", None),
        Err(e) => check(name, Status::Warn, format!("offloads not readable (ethtool): {e}"), None),
    }
}

/// Reads a PHC through its dynamic POSIX clock and compares it with CLOCK_REALTIME read around it.
/// Returns (offset ns, uncertainty ns).
fn phc_offset(index: u32) -> std::io::Result<(i64, i64)> {
    use std::os::fd::AsRawFd;
    let f = fs::File::open(format!("/dev/ptp{index}"))?;
    // FD_TO_CLOCKID: ((~fd) << 3) | CLOCKFD (3).
    let clk = ((!f.as_raw_fd()) << 3) | 3;
    let now = |c: libc::clockid_t| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: valid timespec; an invalid clock id is an error return, not UB.
        let rc = unsafe { libc::clock_gettime(c, &mut ts) };
        if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(ts.tv_sec * 1_000_000_000 + ts.tv_nsec) }
    };
    let t0 = now(libc::CLOCK_REALTIME)?;
    let phc = now(clk)?;
    let t1 = now(libc::CLOCK_REALTIME)?;
    Ok((phc - (t0 + (t1 - t0) / 2), (t1 - t0) / 2))
}

fn phc_check(iface: &str, phc: Option<u32>) -> Check {
    let name = format!("phc:{iface}");
    match phc {
        None => check(
            name,
            Status::Warn,
            "no PTP hardware clock (phc_index -1): hardware stamps, if any, cannot be related to system time",
            Some("a NIC with a PHC, disciplined by ptp4l and phc2sys"),
        ),
        Some(i) => match phc_offset(i) {
            Ok((off, unc)) => {
                let status = if off.abs() > 1_000_000 { Status::Warn } else { Status::Pass };
                check(
                    name,
                    status,
                    format!("/dev/ptp{i}: PHC - CLOCK_REALTIME = {off} ns (± {unc} ns, read-around)"),
                    None,
                )
            }
            Err(e) => check(name, Status::Fail, format!("/dev/ptp{i}: {e}"), Some("check permissions on /dev/ptp*")),
        },
    }
}

fn running(names: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(comm) = fs::read_to_string(e.path().join("comm")) {
            let c = comm.trim();
            if names.contains(&c) && !found.iter().any(|f| f == c) {
                found.push(c.to_string());
            }
        }
    }
    found
}

/// Asks ptp4l (default management socket) for its port state, offset to the master and grandmaster.
fn ptp4l_check(running: &[String]) -> Check {
    let q = pmc::Pmc::new(std::path::Path::new(pmc::DEFAULT_UDS)).and_then(|mut p| {
        let port = p.port_data_set()?;
        let ts = p.time_status()?;
        let cur = p.current_data_set()?;
        Ok((port, ts, cur))
    });
    match q {
        Err(e) => check(
            "ptp",
            Status::Warn,
            format!("running: {}; state not readable: {e}", running.join(", ")),
            Some("ptp4l's uds_address must be /var/run/ptp4l for doctor to read it"),
        ),
        Ok((port, ts, cur)) => {
            let detail = format!(
                "{}: port {} {}, master offset {} ns, mean path delay {} ns, grandmaster {}{}",
                running.join(", "),
                port.port_identity,
                port.port_state,
                ts.master_offset_ns,
                cur.mean_path_delay_ns,
                ts.gm_identity,
                if ts.gm_present { "" } else { " (none present)" }
            );
            match port.port_state {
                "SLAVE" if ts.master_offset_ns.abs() <= 1_000 => check("ptp", Status::Pass, detail, None),
                "SLAVE" | "MASTER" | "UNCALIBRATED" => check(
                    "ptp",
                    Status::Warn,
                    detail,
                    Some("wait for the servo to lock; check the PTP network if it does not"),
                ),
                _ => check("ptp", Status::Fail, detail, Some("ptp4l's port is not synchronising: see its log")),
            }
        }
    }
}

fn sync_checks(out: &mut Vec<Check>) {
    let ptp = running(&["ptp4l", "phc2sys", "ts2phc"]);
    let other = running(&["chronyd", "ntpd", "systemd-timesyncd"]);
    // SAFETY: adjtimex with modes = 0 only reads; `tx` is a valid, zeroed timex.
    let (state, status) = unsafe {
        let mut tx: libc::timex = std::mem::zeroed();
        let s = libc::adjtimex(&mut tx);
        (s, tx.status)
    };
    let unsync = status & libc::STA_UNSYNC != 0;
    if ptp.is_empty() {
        out.push(check(
            "ptp",
            Status::Warn,
            format!(
                "ptp4l/phc2sys not running{}",
                if other.is_empty() { String::new() } else { format!(" ({} is)", other.join(", ")) }
            ),
            Some("run ptp4l on the PTP port and phc2sys to discipline CLOCK_REALTIME"),
        ));
    } else {
        out.push(ptp4l_check(&ptp));
    }
    let detail = format!("adjtimex state {state}, status {status:#x}{}", if unsync { " (STA_UNSYNC)" } else { "" });
    out.push(if unsync || state == libc::TIME_ERROR {
        check(
            "system_clock",
            Status::Warn,
            format!("kernel clock not synchronised: {detail}"),
            Some("synchronise it (ptp4l + phc2sys, or chrony)"),
        )
    } else {
        check("system_clock", Status::Pass, format!("synchronised: {detail}"), None)
    });
}

/// Capability bits wirestamp cares about, with what each is for and whether its absence is a failure.
const CAPS: [(u32, &str, &str, bool); 5] = [
    (13, "CAP_NET_RAW", "AF_PACKET and libpcap capture", true),
    (12, "CAP_NET_ADMIN", "switching NIC hardware timestamping", false),
    (39, "CAP_BPF", "BPF sources", false),
    (38, "CAP_PERFMON", "BPF tracing sources", false),
    (14, "CAP_IPC_LOCK", "locking capture rings in memory", false),
];

/// Parses the `CapEff:` line of /proc/self/status.
pub fn cap_eff(status: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
}

/// The capability checks for an effective set.
pub fn cap_checks(eff: u64) -> Vec<Check> {
    CAPS.iter()
        .map(|&(bit, name, why, needed)| {
            if eff & (1 << bit) != 0 {
                check(format!("cap:{name}"), Status::Pass, format!("present ({why})"), None)
            } else {
                check(
                    format!("cap:{name}"),
                    if needed { Status::Fail } else { Status::Warn },
                    format!("missing: needed for {why}"),
                    Some("run as root or `setcap cap_net_raw,cap_net_admin,cap_bpf,cap_perfmon,cap_ipc_lock+ep $(which wirestamp)`"),
                )
            }
        })
        .collect()
}

fn cpu_checks(out: &mut Vec<Check>) {
    let isolated = fs::read_to_string("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let cmdline = fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let nohz = cmdline.split_whitespace().find(|a| a.starts_with("nohz_full="));
    if isolated.trim().is_empty() {
        out.push(check(
            "cpu_isolation",
            Status::Warn,
            "no isolated CPUs: capture and the measured application share cores with everything else",
            Some("boot with isolcpus=/nohz_full=/rcu_nocbs= for the capture and trading cores"),
        ));
    } else {
        out.push(check(
            "cpu_isolation",
            Status::Pass,
            format!("isolated {}{}", isolated.trim(), nohz.map(|n| format!(", {n}")).unwrap_or_default()),
            None,
        ));
    }
    let mut governors: Vec<String> = Vec::new();
    for e in fs::read_dir("/sys/devices/system/cpu").into_iter().flatten().flatten() {
        if let Ok(g) = fs::read_to_string(e.path().join("cpufreq/scaling_governor")) {
            governors.push(g.trim().to_string());
        }
    }
    governors.sort();
    governors.dedup();
    out.push(if governors.is_empty() {
        check("governor", Status::Pass, "no cpufreq scaling exposed (fixed frequency or virtual machine)", None)
    } else if governors.iter().all(|g| g == "performance") {
        check("governor", Status::Pass, "performance", None)
    } else {
        check(
            "governor",
            Status::Warn,
            format!("governors {}", governors.join(", ")),
            Some("cpupower frequency-set -g performance"),
        )
    });
}

fn bpf_check() -> Check {
    if fs::metadata("/sys/kernel/btf/vmlinux").is_ok() {
        check("bpf", Status::Pass, "kernel BTF present (/sys/kernel/btf/vmlinux)", None)
    } else {
        check(
            "bpf",
            Status::Warn,
            "no kernel BTF: BPF sources cannot load",
            Some("a kernel built with CONFIG_DEBUG_INFO_BTF=y"),
        )
    }
}

/// The Linux release that gives BPF sockops programs TX timestamps (`SK_BPF_CB_TX_TIMESTAMPING`,
/// `bpf_sock_ops_enable_tx_tstamp`): what `capture --cgroup ... --tx-events` uses.
pub const SOCKOPS_TX_KERNEL: (u32, u32) = (6, 15);

/// (major, minor) of a kernel release string (`6.18.44-fc-v657`).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The mount points of file system type `fstype` in a mountinfo text, in its order, as said.
fn mounts_of(info: &[u8], fstype: &str) -> Vec<String> {
    mounts(info).filter(|(_, t)| t == fstype).map(|(dir, _)| dir.display().to_string()).collect()
}

/// What sockops TX timestamps are for, in the checks' words.
const SOCKOPS_FOR: &str = "--cgroup --tx-events (sockops TX timestamps)";

/// The cgroup v2 mount of a mountinfo text (its first, as `--cgroup` takes it), which `--cgroup` needs.
fn cgroup2_check(info: &[u8]) -> Check {
    match mounts_of(info, "cgroup2").first() {
        Some(m) => {
            let hybrid = if m == "/sys/fs/cgroup" {
                ""
            } else {
                " (a hybrid host: /sys/fs/cgroup is not cgroup v2, and --cgroup refuses it)"
            };
            check(
                "cgroup2",
                Status::Pass,
                format!(
                    "cgroup v2 mounted at {m}{hybrid}: {SOCKOPS_FOR} takes the trading app's cgroup directory under it"
                ),
                None,
            )
        }
        None => check(
            "cgroup2",
            Status::Warn,
            format!(
                "no cgroup v2 mount (no cgroup2 file system mounted (see /proc/self/mountinfo)): {SOCKOPS_FOR} \
                 cannot attach; the other sources do not need it"
            ),
            Some("mount -t cgroup2 none /sys/fs/cgroup/unified, and run the trading app in a cgroup under it"),
        ),
    }
}

/// The bpffs mounts of a mountinfo text: said, not needed.
fn bpffs_check(info: &[u8]) -> Check {
    let detail = match mounts_of(info, "bpf").as_slice() {
        [] => "not mounted: not needed (wirestamp pins no BPF object; its programs go when it exits)".to_string(),
        m => format!("mounted at {}; not needed (wirestamp pins no BPF object)", m.join(", ")),
    };
    check("bpffs", Status::Pass, detail, None)
}

/// The cgroup2 and bpffs checks of a mountinfo text, or of why it could not be read (said, not taken
/// for a text without mounts).
fn mount_checks(info: &std::io::Result<Vec<u8>>) -> (Check, Check) {
    match info {
        Ok(info) => (cgroup2_check(info), bpffs_check(info)),
        Err(e) => (
            check(
                "cgroup2",
                Status::Warn,
                format!("{e}: whether cgroup v2 is mounted is not known; {SOCKOPS_FOR} needs it"),
                None,
            ),
            check("bpffs", Status::Pass, format!("{e}: whether it is mounted is not known; not needed"), None),
        ),
    }
}

/// What `capture --source ebpf --cgroup DIR --tx-events FILE` needs: a cgroup v2 mount to find the
/// trading app's directory in, a kernel with sockops TX timestamping; and bpffs, which it does not need.
fn sockops_checks(out: &mut Vec<Check>) {
    let (cgroup2, bpffs) = mount_checks(&read_mountinfo());
    out.push(cgroup2);
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let release = release.trim();
    let (need_major, need_minor) = SOCKOPS_TX_KERNEL;
    out.push(match kernel_version(release) {
        Some(v) if v >= SOCKOPS_TX_KERNEL => check(
            "sockops_tx",
            Status::Pass,
            format!(
                "Linux {release}: has sockops TX timestamping ({need_major}.{need_minor}+), which --cgroup \
                 --tx-events uses"
            ),
            None,
        ),
        Some(_) => check(
            "sockops_tx",
            Status::Warn,
            format!(
                "Linux {release}: before {need_major}.{need_minor}, the kernel cannot timestamp the writes: {SOCKOPS_FOR} \
                 attaches but writes no SCHED/SND/ACK events (counted at exit as connections it could not \
                 timestamp); the other capture sources are unaffected"
            ),
            Some("Linux 6.15 or later for --tx-events"),
        ),
        None => check(
            "sockops_tx",
            Status::Warn,
            format!("kernel release {release:?} not understood (/proc/sys/kernel/osrelease): {SOCKOPS_FOR} needs Linux 6.15+"),
            None,
        ),
    });
    out.push(bpffs);
}

/// Every interface except loopback, from /proc/self/net/dev (this process's network namespace).
fn default_interfaces() -> Vec<String> {
    let dev = fs::read_to_string("/proc/self/net/dev").unwrap_or_default();
    dev.lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(|s| s.trim().to_string()))
        .filter(|n| n != "lo")
        .collect()
}

pub fn run(args: &DoctorArgs) -> Result<ExitCode> {
    let mut checks = vec![tsc_check(), clocksource_check()];
    let ifaces = if args.interfaces.is_empty() { default_interfaces() } else { args.interfaces.clone() };
    for i in &ifaces {
        nic_checks(i, &mut checks);
    }
    let phcs = phc::devices();
    if phcs.is_empty() {
        checks.push(check(
            "phc",
            Status::Warn,
            "no PTP hardware clock on this host (/dev/ptp* absent)",
            Some("hardware timestamps need a NIC with a PHC; on a VM, a ptp_kvm or vmclock device"),
        ));
    }
    sync_checks(&mut checks);
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    match cap_eff(&status) {
        Some(eff) => checks.extend(cap_checks(eff)),
        None => checks.push(check("capabilities", Status::Warn, "CapEff not readable from /proc/self/status", None)),
    }
    checks.push(bpf_check());
    sockops_checks(&mut checks);
    cpu_checks(&mut checks);
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    let (pass, warn, fail) = (count(Status::Pass), count(Status::Warn), count(Status::Fail));
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = serde_json::json!({ "checks": checks, "summary": { "pass": pass, "warn": warn, "fail": fail } });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        for c in &checks {
            let s = match c.status {
                Status::Pass => "PASS",
                Status::Warn => "WARN",
                Status::Fail => "FAIL",
            };
            writeln!(out, "{s}  {:<22} {}", c.name, c.detail)?;
            if let Some(f) = &c.fix {
                writeln!(out, "      {:<22} fix: {f}", "")?;
            }
        }
        writeln!(out, "{pass} pass, {warn} warn, {fail} fail")?;
    }
    Ok(if fail > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_from_capeff() {
        // kernel.md: this machine's root has CapEff 000001fffeffffff (CAP_SYS_RESOURCE, bit 24, clear).
        let eff = cap_eff("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\n").unwrap();
        assert_eq!(eff, 0x1ff_feff_ffff);
        assert!(cap_checks(eff).iter().all(|c| c.status == Status::Pass));
        // Only CAP_NET_ADMIN (bit 12): NET_RAW missing is a failure, the others warnings.
        let c = cap_checks(1 << 12);
        let st: Vec<_> = c.iter().map(|c| (c.name.as_str(), c.status)).collect();
        assert_eq!(
            st,
            [
                ("cap:CAP_NET_RAW", Status::Fail),
                ("cap:CAP_NET_ADMIN", Status::Pass),
                ("cap:CAP_BPF", Status::Warn),
                ("cap:CAP_PERFMON", Status::Warn),
                ("cap:CAP_IPC_LOCK", Status::Warn)
            ]
        );
    }

    #[test]
    fn kernel_releases() {
        assert_eq!(kernel_version("6.18.44-fc-v657"), Some((6, 18)));
        assert_eq!(kernel_version("6.15.0\n"), Some((6, 15)));
        assert_eq!(kernel_version("5.10.0-28-amd64"), Some((5, 10)));
        assert_eq!(kernel_version("linux"), None);
        assert!(kernel_version("6.9.1").unwrap() < SOCKOPS_TX_KERNEL);
    }

    /// The mount checks of three hosts' mountinfo, written here: hybrid (cgroup v1 controllers under a
    /// tmpfs at /sys/fs/cgroup, v2 at /sys/fs/cgroup/unified; this machine's layout) with bpffs at
    /// /sys/fs/bpf, unified (v2 at /sys/fs/cgroup, no bpffs), and one without cgroup2.
    #[test]
    fn mount_checks_of_hybrid_unified_and_v1_hosts() {
        let hybrid = b"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                      32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                      41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                      50 23 0:40 / /sys/fs/bpf rw,relatime shared:9 - bpf bpf rw\n";
        let unified = b"29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        let v1 = b"32 23 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
        let seen = |c: Check| (c.name, c.status, c.detail, c.fix);
        let s = String::from;
        assert_eq!(
            seen(cgroup2_check(hybrid)),
            (
                s("cgroup2"),
                Status::Pass,
                s("cgroup v2 mounted at /sys/fs/cgroup/unified (a hybrid host: /sys/fs/cgroup is not cgroup v2, and \
                   --cgroup refuses it): --cgroup --tx-events (sockops TX timestamps) takes the trading app's cgroup \
                   directory under it"),
                None
            )
        );
        assert_eq!(
            seen(cgroup2_check(unified)),
            (
                s("cgroup2"),
                Status::Pass,
                s("cgroup v2 mounted at /sys/fs/cgroup: --cgroup --tx-events (sockops TX timestamps) takes the \
                   trading app's cgroup directory under it"),
                None
            )
        );
        assert_eq!(
            seen(cgroup2_check(v1)),
            (
                s("cgroup2"),
                Status::Warn,
                s("no cgroup v2 mount (no cgroup2 file system mounted (see /proc/self/mountinfo)): --cgroup \
                   --tx-events (sockops TX timestamps) cannot attach; the other sources do not need it"),
                Some(s("mount -t cgroup2 none /sys/fs/cgroup/unified, and run the trading app in a cgroup under it"))
            )
        );
        assert_eq!(
            seen(bpffs_check(hybrid)),
            (s("bpffs"), Status::Pass, s("mounted at /sys/fs/bpf; not needed (wirestamp pins no BPF object)"), None)
        );
        assert_eq!(
            seen(bpffs_check(unified)).2,
            "not mounted: not needed (wirestamp pins no BPF object; its programs go when it exits)"
        );
    }

    /// A mount point that is not UTF-8 (Latin-1 `caf\xe9`) among a hybrid host's lines: the mounts
    /// after it are found as without it. (The text read as a string failed whole: "no cgroup v2
    /// mount".) And a mountinfo that could not be read is said as such, its cause kept.
    #[test]
    fn mount_checks_read_past_a_mount_point_that_is_not_utf8_and_say_why_none_were_read() {
        let info = b"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                     60 23 8:1 / /media/caf\xe9 rw,relatime - vfat /dev/sdb1 rw\n\
                     41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                     50 23 0:40 / /sys/fs/bpf rw,relatime shared:9 - bpf bpf rw\n";
        let seen = |c: Check| (c.name, c.status, c.detail);
        let s = String::from;
        let (cgroup2, bpffs) = mount_checks(&Ok(info.to_vec()));
        assert_eq!(
            seen(cgroup2),
            (
                s("cgroup2"),
                Status::Pass,
                s("cgroup v2 mounted at /sys/fs/cgroup/unified (a hybrid host: /sys/fs/cgroup is not cgroup v2, and \
                   --cgroup refuses it): --cgroup --tx-events (sockops TX timestamps) takes the trading app's cgroup \
                   directory under it")
            )
        );
        assert_eq!(seen(bpffs).2, "mounted at /sys/fs/bpf; not needed (wirestamp pins no BPF object)");
        let denied = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "cannot read /proc/self/mountinfo: Permission denied (os error 13)",
        );
        let (cgroup2, bpffs) = mount_checks(&Err(denied));
        assert_eq!(
            seen(cgroup2),
            (
                s("cgroup2"),
                Status::Warn,
                s("cannot read /proc/self/mountinfo: Permission denied (os error 13): whether cgroup v2 is mounted \
                   is not known; --cgroup --tx-events (sockops TX timestamps) needs it")
            )
        );
        assert_eq!(
            seen(bpffs),
            (
                s("bpffs"),
                Status::Pass,
                s("cannot read /proc/self/mountinfo: Permission denied (os error 13): whether it is mounted is not \
                   known; not needed")
            )
        );
    }

    #[test]
    fn invariant_tsc_agrees_with_the_kernel() {
        // The kernel sets `nonstop_tsc` from the same CPUID bit.
        let flags = fs::read_to_string("/proc/cpuinfo").unwrap();
        let kernel =
            flags.lines().find(|l| l.starts_with("flags")).unwrap().split_whitespace().any(|f| f == "nonstop_tsc");
        assert_eq!(invariant_tsc(), Some(kernel));
    }
}
