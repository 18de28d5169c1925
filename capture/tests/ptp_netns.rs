//! ptp4l's management datasets read by `live::pmc`, against real ptp4l instances in software-timestamping
//! mode on a veth pair between two namespaces (kernel.md 11c; needs root and linuxptp), with linuxptp's
//! own `pmc` as the oracle for the stable fields.

mod netns;

use netns::{NsWorker, VethPair};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wirestamp_capture::live::clock::ClockWatch;
use wirestamp_capture::live::pmc::Pmc;
use wirestamp_core::ClockQuality;

/// Kills the ptp4l it holds (by its own pid) when the test ends, however it ends.
struct Ptp4l(Child, PathBuf);

impl Drop for Ptp4l {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_file(&self.1);
    }
}

fn ptp4l(w: &NsWorker, iface: &str, uds: PathBuf) -> Ptp4l {
    let (iface, u) = (iface.to_string(), uds.clone());
    let child = w.run(move || {
        Command::new("ptp4l")
            .args(["-i", &iface, "-S", "--free_running=1", "-q"])
            .arg(format!("--uds_address={}", u.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ptp4l (linuxptp) not installed: scripts/setup.sh")
    });
    Ptp4l(child, uds)
}

/// `pmc -u -b 0 -s UDS 'GET ID'` output, field -> value.
fn pmc_tool(uds: &std::path::Path, what: &str) -> Vec<(String, String)> {
    let out = Command::new("pmc").args(["-u", "-b", "0", "-s"]).arg(uds).arg(format!("GET {what}")).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("\t\t"))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.to_string()))
        })
        .collect()
}

fn field(v: &[(String, String)], k: &str) -> String {
    v.iter().find(|(f, _)| f == k).map(|(_, x)| x.clone()).unwrap_or_default()
}

#[test]
fn slave_port_offset_path_delay_and_grandmaster_from_ptp4l() {
    let pair = VethPair::new();
    let dir = std::env::temp_dir();
    let pid = std::process::id();
    let (ua, ub) = (dir.join(format!("wirestamp-ptp4l-a.{pid}")), dir.join(format!("wirestamp-ptp4l-b.{pid}")));
    let _a = ptp4l(&pair.a, "va", ua.clone());
    let _b = ptp4l(&pair.b, "vb", ub.clone());
    // One side wins the best-master election; the other leaves MASTER for UNCALIBRATED (RS_SLAVE). With
    // free_running the servo never locks, so that port stays UNCALIBRATED instead of going on to SLAVE.
    let t = Instant::now();
    let (slave_uds, master_uds) = loop {
        assert!(t.elapsed() < Duration::from_secs(30), "no slave port after 30 s");
        std::thread::sleep(Duration::from_millis(500));
        let state = |u: &PathBuf| Pmc::new(u).and_then(|mut p| p.port_data_set()).map(|d| d.port_state);
        match (state(&ua), state(&ub)) {
            (Ok("UNCALIBRATED" | "SLAVE"), Ok("MASTER")) => break (ua.clone(), ub.clone()),
            (Ok("MASTER"), Ok("UNCALIBRATED" | "SLAVE")) => break (ub.clone(), ua.clone()),
            _ => {}
        }
    };
    // gmPresent becomes true once the slave has processed a sync from the master.
    let mut p = Pmc::new(&slave_uds).unwrap();
    let t = Instant::now();
    let ts = loop {
        let ts = p.time_status().unwrap();
        if ts.gm_present && ts.master_offset_ns != 0 {
            break ts;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "gmPresent never true: {ts:?}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let port = p.port_data_set().unwrap();
    let cur = p.current_data_set().unwrap();
    let master = Pmc::new(&master_uds).unwrap().port_data_set().unwrap();
    assert_eq!(master.port_state, "MASTER");
    // The grandmaster is the master's clock: its identity is the master port's clock identity.
    assert_eq!(ts.gm_identity, master.port_identity.split('-').next().unwrap());
    assert_eq!(cur.steps_removed, 1);
    // Both ends share CLOCK_REALTIME (free_running): offsets and delays are small, as kernel.md 11c saw.
    assert!(ts.master_offset_ns.abs() < 1_000_000, "{ts:?}");
    assert!(cur.mean_path_delay_ns > 0 && cur.mean_path_delay_ns < 1_000_000, "{cur:?}");
    // linuxptp's pmc agrees on the fields that do not change between two queries.
    let tool_ts = pmc_tool(&slave_uds, "TIME_STATUS_NP");
    assert_eq!(field(&tool_ts, "gmIdentity"), ts.gm_identity);
    assert_eq!(field(&tool_ts, "gmPresent"), "true");
    let tool_port = pmc_tool(&slave_uds, "PORT_DATA_SET");
    assert_eq!(field(&tool_port, "portIdentity"), port.port_identity);
    assert_eq!(field(&tool_port, "portState"), port.port_state);
    assert!(["UNCALIBRATED", "SLAVE"].contains(&port.port_state), "{port:?}");
    assert_eq!(field(&pmc_tool(&slave_uds, "CURRENT_DATA_SET"), "stepsRemoved"), "1");

    // Clock quality as data: frames are flagged while ptp4l's offset is beyond the configured bound.
    // The offset here is a few hundred ns and moves; a bound of 0 is exceeded by any non-zero sample.
    let flagged = (0..10).any(|_| {
        let mut w = ClockWatch::new(Some(Pmc::new(&slave_uds).unwrap()), Some(0));
        let q = w.quality();
        std::thread::sleep(Duration::from_millis(200));
        q.contains(ClockQuality::UNSYNCED)
            && w.reason.contains("ptp4l master offset")
            && w.reason.contains("beyond 0 ns")
    });
    assert!(flagged, "a 0 ns bound never flagged the clock");
    let mut w = ClockWatch::new(Some(Pmc::new(&slave_uds).unwrap()), Some(1_000_000_000));
    let _ = w.quality();
    assert!(!w.reason.contains("ptp4l"), "within a 1 s bound ptp4l's offset is not a reason: {}", w.reason);
}

#[test]
fn no_ptp4l_is_a_clear_error() {
    let e = Pmc::new(&std::env::temp_dir().join("wirestamp-no-such-ptp4l")).unwrap().time_status().unwrap_err();
    assert!(e.to_string().contains("wirestamp-no-such-ptp4l"), "{e}");
}
