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
