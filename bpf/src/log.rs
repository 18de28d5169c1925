//! libbpf's messages go to `tracing` (target "libbpf"); while a load runs they are also kept, so a
//! rejected program's verifier log ends up in the error.

use std::cell::RefCell;
use std::sync::Once;

use libbpf_rs::PrintLevel;

thread_local! {
    // libbpf prints on the thread that loads, so a thread-local buffer sees exactly that load's log.
    static CAPTURE: RefCell<Option<String>> = const { RefCell::new(None) };
    // Set while a call whose failure is an expected answer runs (`quietly`).
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn print(level: PrintLevel, msg: String) {
    let level = if QUIET.with(std::cell::Cell::get) { PrintLevel::Debug } else { level };
    // Keep warnings and information (the verifier log is printed as a warning); debug chatter such as
    // CO-RE relocations only goes to tracing.
    if !matches!(level, PrintLevel::Debug) {
        CAPTURE.with(|c| {
            if let Some(buf) = c.borrow_mut().as_mut() {
                buf.push_str(&msg);
            }
        });
    }
    let msg = msg.trim_end();
    match level {
        PrintLevel::Warn => tracing::warn!(target: "libbpf", "{msg}"),
        PrintLevel::Info => tracing::info!(target: "libbpf", "{msg}"),
        PrintLevel::Debug => tracing::debug!(target: "libbpf", "{msg}"),
    }
}

/// Routes libbpf's print callback to `tracing`. Idempotent; every loader calls it.
pub fn install_libbpf_logger() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Debug, print)));
    });
}

/// Runs `f`, returning its result and what libbpf printed meanwhile on this thread.
pub(crate) fn capture<T>(f: impl FnOnce() -> T) -> (T, String) {
    install_libbpf_logger();
    CAPTURE.with(|c| *c.borrow_mut() = Some(String::new()));
    let out = f();
    let log = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (out, log)
}

/// Runs `f` with what libbpf prints meanwhile on this thread demoted to debug: for a call whose
/// failure is an answer (a query finding no clsact qdisc makes the kernel say "Parent Qdisc doesn't
/// exists", which libbpf prints as a warning).
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> T {
    install_libbpf_logger();
    QUIET.with(|q| q.set(true));
    let out = f();
    QUIET.with(|q| q.set(false));
    out
}
