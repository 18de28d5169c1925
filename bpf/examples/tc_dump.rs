//! Prints the packets of configured flows as the tc programs see them, until SIGINT/SIGTERM (then the
//! capture is dropped: programs detached, maps freed). Root needed.
//!
//!     cargo run -p wirestamp-bpf --example tc_dump -- <interface> <flow>...
//!     flow = udp:<group-or-addr>:<port> | tcp:<gateway-addr>:<port>
//!     e.g.   tc_dump eth1 udp:239.1.1.1:30001 tcp:10.0.0.2:9000

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wirestamp_bpf::{FlowSpec, TcCapture, TcOptions, tai_offset_ns};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn parse_flow(id: u32, s: &str) -> Result<FlowSpec, String> {
    let (proto, rest) = s.split_once(':').ok_or_else(|| format!("{s}: expected udp:ADDR:PORT or tcp:ADDR:PORT"))?;
    let addr: SocketAddr = rest.parse().map_err(|e| format!("{s}: {e}"))?;
    match proto {
        "udp" => Ok(FlowSpec::udp_feed(id, addr.ip(), addr.port())),
        "tcp" => Ok(FlowSpec::tcp_session(id, addr.ip(), addr.port())),
        _ => Err(format!("{s}: protocol must be udp or tcp")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((iface, flow_args)) = args.split_first() else {
        eprintln!("usage: tc_dump <interface> udp:ADDR:PORT|tcp:ADDR:PORT ...");
        return ExitCode::from(2);
    };
    let flows: Result<Vec<_>, _> = flow_args.iter().enumerate().map(|(i, s)| parse_flow(i as u32 + 1, s)).collect();
    let flows = match flows {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let name = std::ffi::CString::new(iface.as_str()).unwrap_or_default();
    // SAFETY: a NUL-terminated string.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        eprintln!("no interface {iface} in this network namespace");
        return ExitCode::from(2);
    }
    let mut cap = match TcCapture::attach(ifindex, &flows, &TcOptions::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installing a handler that only stores to an atomic.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
    let tai = tai_offset_ns().unwrap_or(0);
    eprintln!(
        "capturing on {iface} ({}), {} flows; SIGINT/SIGTERM to stop",
        cap.attach_kind().unwrap_or("?"),
        flows.len()
    );
    while !STOP.load(Ordering::Relaxed) {
        let polled = cap.poll(Duration::from_millis(200), |r| {
            println!(
                "{} {:?} flow {} {} -> {} proto {} seq {} flags {:#04x} len {} ts {:?} payload {:02x?}",
                r.epoch_ns(tai),
                r.direction(),
                r.flow_id(),
                r.src(),
                r.dst(),
                r.proto(),
                r.tcp_seq(),
                r.tcp_flags(),
                r.l4_payload_len(),
                r.ts_source(),
                &r.payload()[..r.payload().len().min(16)],
            );
        });
        if let Err(e) = polled {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    match cap.stats() {
        Ok(s) => eprintln!("{s:?}"),
        Err(e) => eprintln!("{e}"),
    }
    drop(cap);
    eprintln!("detached");
    ExitCode::SUCCESS
}
