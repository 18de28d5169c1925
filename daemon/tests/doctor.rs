//! `wirestamp doctor` on this machine's kind of host (kernel.md): veth in a network namespace with
//! software timestamping only and no PHC, root with every capability wirestamp needs, and an
//! unprivileged user without them.

#[path = "../../capture/tests/netns/mod.rs"]
mod netns;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_wirestamp");

fn status_of<'a>(doc: &'a Value, name: &str) -> (&'a str, &'a str) {
    let c = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {doc}"));
    (c["status"].as_str().unwrap(), c["detail"].as_str().unwrap())
}

#[test]
fn veth_is_software_only_without_phc_and_root_has_the_capabilities() {
    let ns = netns::VethPair::new();
    let out = ns.a.command(BIN, &["doctor", "-i", "va", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    // kernel.md 3a/3b: software-transmit, software-receive, software-system-clock; EOPNOTSUPP; no PHC.
    let (st, detail) = status_of(&doc, "nic:va");
    assert_eq!(st, "warn");
    assert!(
        detail.starts_with("software timestamps only (software-transmit, software-receive, software-system-clock)"),
        "{detail}"
    );
    assert!(detail.contains("os error 95"), "{detail}");
    let (st, detail) = status_of(&doc, "phc:va");
    assert_eq!(st, "warn");
    assert!(detail.contains("no PTP hardware clock"), "{detail}");
    let (st, detail) = status_of(&doc, "phc");
    assert_eq!(st, "warn");
    assert!(detail.contains("/dev/ptp* absent"), "{detail}");
    for cap in ["CAP_NET_RAW", "CAP_NET_ADMIN", "CAP_BPF", "CAP_PERFMON", "CAP_IPC_LOCK"] {
        assert_eq!(status_of(&doc, &format!("cap:{cap}")).0, "pass", "{cap}");
    }
    // kernel.md 12: clocksource tsc; the clock is STA_UNSYNC (no NTP/PTP here).
    assert_eq!(status_of(&doc, "clocksource"), ("pass", "tsc"));
    assert_eq!(status_of(&doc, "system_clock").0, "warn");
    let fails = doc["summary"]["fail"].as_u64().unwrap();
    assert_eq!(fails, 0, "{doc}");
    assert!(out.status.success());
}

/// GRO, LRO and TSO, turned on and off with ethtool: veth has TSO on and GRO off by default.
#[test]
fn offloads_that_merge_frames_are_a_warning_with_the_fix() {
    let ns = netns::VethPair::new();
    let doctor =
        || -> Value { serde_json::from_slice(&ns.a.command(BIN, &["doctor", "-i", "va", "--json"]).stdout).unwrap() };
    let ethtool = |args: &[&str]| assert!(ns.a.command("ethtool", args).status.success(), "ethtool {args:?}");
    let fix = |doc: &Value| {
        doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "offload:va").unwrap()["fix"].clone()
    };
    let doc = doctor();
    assert_eq!(
        status_of(&doc, "offload:va"),
        (
            "warn",
            "TSO on: sent TCP may be captured as one frame the NIC then cuts into several segments (one stamp for \
             them all)"
        )
    );
    assert_eq!(fix(&doc), "ethtool -K va tso off");
    ethtool(&["-K", "va", "tso", "off", "gro", "on"]);
    let doc = doctor();
    assert_eq!(
        status_of(&doc, "offload:va"),
        (
            "warn",
            "GRO on: received TCP segments may be captured merged into one frame, stamped once (a response's time \
             may be an earlier segment's)"
        )
    );
    assert_eq!(fix(&doc), "ethtool -K va gro off");
    ethtool(&["-K", "va", "gro", "off"]);
    assert_eq!(
        status_of(&doctor(), "offload:va"),
        ("pass", "GRO, LRO and TSO off: a frame captured is a packet on the wire")
    );
}

#[test]
fn a_failed_check_exits_non_zero() {
    let out = std::process::Command::new(BIN).args(["doctor", "-i", "nosuch0"]).output().unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("FAIL  nic:nosuch0"), "{text}");
    // Without capabilities (user nobody), CAP_NET_RAW is a failure.
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", BIN, "doctor", "-i", "lo"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("FAIL  cap:CAP_NET_RAW"), "{text}");
    assert!(text.contains("WARN  cap:CAP_NET_ADMIN"), "{text}");
}

/// The first mount point of file system type `fstype` in /proc/self/mountinfo, read here independently
/// of the code under test (field 5; the type follows the ` - ` separator).
fn mount_of(fstype: &str) -> Option<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let dash = f.iter().position(|x| *x == "-")?;
        (f.get(dash + 1) == Some(&fstype)).then(|| f[4].to_string())
    })
}

fn doctor_json(cmd: &mut std::process::Command) -> Value {
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// What `capture --source ebpf --cgroup DIR --tx-events` needs, against this host as /proc and uname
/// tell it: the cgroup v2 mount (hybrid here: /sys/fs/cgroup/unified), Linux 6.15+ for sockops TX
/// timestamps, and bpffs (not needed). Then, in a mount namespace of its own with cgroup2 unmounted
/// and bpffs mounted: a warning with the fix, and where bpffs is.
#[test]
fn sockops_tx_needs_cgroup2_and_linux_6_15_and_not_bpffs() {
    let doc = doctor_json(std::process::Command::new(BIN).args(["doctor", "-i", "lo", "--json"]));
    let fix = |doc: &Value, name: &str| {
        doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["fix"].as_str().map(String::from)
    };
    let cg = mount_of("cgroup2");
    let (st, detail) = status_of(&doc, "cgroup2");
    match &cg {
        // (The wording of a hybrid host and a unified one: doctor's unit test, on mountinfo texts.)
        Some(m) => {
            assert_eq!(st, "pass", "{detail}");
            assert!(detail.starts_with(&format!("cgroup v2 mounted at {m}")), "{detail}");
        }
        None => assert_eq!(st, "warn", "{detail}"),
    }
    let uname = std::process::Command::new("uname").arg("-r").output().unwrap();
    let release = String::from_utf8(uname.stdout).unwrap().trim().to_string();
    let mut v = release.split(|c: char| !c.is_ascii_digit()).map(|p| p.parse::<u32>().unwrap());
    let (major, minor) = (v.next().unwrap(), v.next().unwrap());
    let (st, detail) = status_of(&doc, "sockops_tx");
    assert!(detail.starts_with(&format!("Linux {release}: ")), "{detail}");
    if (major, minor) >= (6, 15) {
        assert_eq!(st, "pass", "{detail}");
        assert_eq!(fix(&doc, "sockops_tx"), None);
    } else {
        assert_eq!(st, "warn", "{detail}");
        assert_eq!(fix(&doc, "sockops_tx").as_deref(), Some("Linux 6.15 or later for --tx-events"));
    }
    let (st, detail) = status_of(&doc, "bpffs");
    assert_eq!(st, "pass");
    // (systemd mounts bpffs at /sys/fs/bpf on most hosts; this one may have none.)
    let bpf_before = mount_of("bpf");
    match &bpf_before {
        Some(m) => assert!(detail.starts_with(&format!("mounted at {m}")), "{detail}"),
        None => assert!(detail.starts_with("not mounted: not needed"), "{detail}"),
    }
    // A mount namespace of its own (private: nothing reaches the host): cgroup2 gone, bpffs mounted.
    let mut script = String::from("set -e; ");
    if let Some(m) = &cg {
        script.push_str(&format!("umount -l '{m}'; "));
    }
    script.push_str(&format!("mount -t bpf bpf /sys/fs/bpf; exec {BIN} doctor -i lo --json"));
    let doc = doctor_json(std::process::Command::new("unshare").args([
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        &script,
    ]));
    let (st, detail) = status_of(&doc, "cgroup2");
    assert_eq!(st, "warn", "{detail}");
    assert!(detail.starts_with("no cgroup v2 mount ("), "{detail}");
    assert_eq!(
        fix(&doc, "cgroup2").as_deref(),
        Some("mount -t cgroup2 none /sys/fs/cgroup/unified, and run the trading app in a cgroup under it")
    );
    assert_eq!(status_of(&doc, "bpffs"), ("pass", "mounted at /sys/fs/bpf; not needed (wirestamp pins no BPF object)"));
    assert_eq!(mount_of("bpf"), bpf_before, "the host's mounts are untouched");
}
