//! An idle AF_PACKET capture sleeps in poll(): after its last frame it must not spin. (A held, fully read
//! ring block made every poll() return at once: 3 s of CPU in 3 s of silence.) Needs root.

use std::process::{Command, Stdio};
use std::time::Duration;
use wirestamp_testdata::cpu_ticks;

#[test]
fn an_idle_afpacket_capture_does_not_spin() {
    let out = std::env::temp_dir().join(format!("wirestamp-idle-{}.pcapng", std::process::id()));
    let child = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["capture", "-i", "lo", "--source", "afpacket", "-f", "udp port 47999", "-w"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..3 {
        s.send_to(b"x", "127.0.0.1:47999").unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_ticks(child.id()) - before;
    // SAFETY: kill with a valid pid of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let res = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&out);
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    // A spinning loop spends all 2 s (200 ticks at 100 Hz); a sleeping one close to nothing.
    assert!(spent < 50, "{spent} ticks of CPU in 2 s of silence: the capture loop spins");
}
