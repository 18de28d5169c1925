//! Which capability or kernel feature explains a failed load or attach: turns an errno (and the
//! verifier log) into a sentence an operator can act on.

use std::fs;

const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Effective capabilities of the calling thread (`CapEff` of /proc/thread-self/status), or None when
/// that file cannot be read.
fn effective_caps() -> Option<u64> {
    let status = fs::read_to_string("/proc/thread-self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim();
    u64::from_str_radix(hex, 16).ok()
}

/// Capabilities the tc programs need that this thread lacks, e.g. "CAP_BPF, CAP_NET_ADMIN".
pub(crate) fn missing_for_tc() -> Vec<&'static str> {
    let Some(caps) = effective_caps() else { return Vec::new() };
    let has = |bit: u32| caps & (1u64 << bit) != 0;
    let mut missing = Vec::new();
    if !has(CAP_BPF) && !has(CAP_SYS_ADMIN) {
        missing.push("CAP_BPF");
    }
    if !has(CAP_NET_ADMIN) && !has(CAP_SYS_ADMIN) {
        missing.push("CAP_NET_ADMIN");
    }
    if !has(CAP_PERFMON) && !has(CAP_SYS_ADMIN) {
        missing.push("CAP_PERFMON");
    }
    missing
}

/// A hint (starting with " (" or empty) for a load failure with `errno` and libbpf's log.
pub(crate) fn load_hint(errno: Option<i32>, log: &str) -> String {
    if let Some(func) = log.lines().find_map(|l| l.split("unknown func ").nth(1)) {
        return format!(
            " (the kernel lacks helper {}: wirestamp's tc programs need Linux 6.6+ (tcx, bpf_ktime_get_tai_ns))",
            func.trim()
        );
    }
    // libbpf: "extern (func ksym) 'bpf_sock_ops_enable_tx_tstamp': not found in kernel or module BTFs"
    if let Some(rest) = log.split("extern (func ksym) '").nth(1)
        && let Some(name) = rest.split('\'').next()
        && log.contains("not found in kernel")
    {
        return format!(
            " (the kernel lacks kfunc {name}: sockops TX timestamping needs Linux 6.15+, device-bound XDP \
             6.3+)"
        );
    }
    if log.contains("invalid bpf_context access") {
        return " (the kernel lacks an __sk_buff field the program reads (tstamp_type needs 5.18+, hwtstamp 5.16+): \
                 wirestamp's tc programs need Linux 6.6+)"
            .to_string();
    }
    if log.contains("BEGIN PROG LOAD LOG") {
        return " (the verifier rejected a program: its log below says where; a build of these programs \
                 that this kernel's verifier refuses is a wirestamp bug, please report it with the log)"
            .to_string();
    }
    if matches!(errno, Some(libc::EPERM) | Some(libc::EACCES)) {
        let missing = missing_for_tc();
        if !missing.is_empty() {
            return format!(" (missing capability {}: run as root or grant it)", missing.join(", "));
        }
        return " (permission denied although CAP_BPF/CAP_NET_ADMIN/CAP_PERFMON are present: check lockdown, \
                 kernel.unprivileged_bpf_disabled, or an LSM policy)"
            .to_string();
    }
    String::new()
}

/// A hint for a failed tcx attach.
pub(crate) fn attach_hint(errno: Option<i32>) -> String {
    match errno {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            let missing = missing_for_tc();
            if missing.is_empty() {
                String::new()
            } else {
                format!(" (missing capability {}: run as root or grant it)", missing.join(", "))
            }
        }
        Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => {
            " (the kernel lacks tcx links (BPF_TCX_INGRESS/EGRESS): Linux 6.6+ needed)".to_string()
        }
        Some(libc::ENODEV) => {
            " (no such interface in the calling thread's network namespace: attach from a thread inside it)".to_string()
        }
        _ => String::new(),
    }
}

/// A hint for a failed XDP attach.
pub(crate) fn xdp_attach_hint(errno: Option<i32>) -> String {
    match errno {
        Some(libc::EBUSY) => " (the interface already has an XDP program: another wirestamp capture, or another \
                               tool; `ip link show` names it)"
            .to_string(),
        Some(libc::EPERM) => attach_hint(errno),
        Some(libc::ERANGE) => " (the MTU is too large for this driver's XDP (veth: the peer's MTU over ~3.5 KB); \
                                lower it or use the tc capture)"
            .to_string(),
        _ => " (device-bound XDP needs driver (native) mode: a driver without XDP support cannot run it; \
               use the tc capture there)"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_the_missing_feature() {
        let log =
            "libbpf: prog 'x': BPF program load failed: -EINVAL\n0: R1=ctx()\nunknown func bpf_ktime_get_tai_ns#208\n";
        assert_eq!(
            load_hint(Some(libc::EINVAL), log),
            " (the kernel lacks helper bpf_ktime_get_tai_ns#208: wirestamp's tc programs need Linux 6.6+ (tcx, \
             bpf_ktime_get_tai_ns))"
        );
        let log = "libbpf: extern (func ksym) 'bpf_cast_to_kern_ctx': not found in kernel or module BTFs\n";
        assert!(load_hint(None, log).starts_with(" (the kernel lacks kfunc bpf_cast_to_kern_ctx: "));
        let log = "-- BEGIN PROG LOAD LOG --\nR4 invalid zero-sized read\n-- END PROG LOAD LOG --\n";
        assert!(load_hint(Some(libc::EPERM), log).starts_with(" (the verifier rejected a program"));
        assert_eq!(load_hint(None, "whatever"), "");
        assert!(attach_hint(Some(libc::EINVAL)).contains("Linux 6.6+"));
        assert!(attach_hint(Some(libc::ENODEV)).contains("network namespace"));
        assert!(xdp_attach_hint(Some(libc::EBUSY)).contains("already has an XDP program"));
    }
}
