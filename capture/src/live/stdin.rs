//! Standard input as a capture stream that says when it has been idle: `capture --source stdin`
//! flushes its file every second, which a read blocked on an idle pipe would hold off for as long as
//! the pipe stays idle (a relay then killed would leave an empty `.part`).
//!
//! And standard input as `-` reads it, or a FIFO ([`WaitingStream`]): as if it blocked, or saying first
//! that it has to wait ([`Waits::Tell`]), so that `frames -` and `analyze -` write out what they have.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Standard input, each read waiting at most `idle` for bytes once armed, then failing with
/// `WouldBlock`, which [`crate::CaptureReader`] passes on without losing its place
/// ([`crate::ReadError::would_block`]). A signal that interrupts the wait does the same, so that the
/// caller sees it at once; such a wait with the stop flag set fails with [`crate::Stopped`] (to the
/// reader, [`crate::ReadErrorKind::Stopped`]). Unarmed (while the reader opens the stream and reads
/// its header), a read fails with [`crate::Stopped`] once the stop flag is set or a deadline
/// ([`PolledStdin::until`]: `capture --duration` would otherwise wait for a header that never comes)
/// has passed, and with `WouldBlock` after `idle` without bytes, which the open waits out (the stop
/// looked at again) but for ERF, whose records are judged on what came: the open retries an
/// interrupted read (`EINTR`), so a read blocked there would hold a stop off until the stream's first
/// bytes, or its end.
pub struct PolledStdin {
    /// Standard input's descriptor, read unbuffered: bytes held in `io::Stdin`'s buffer would be
    /// there while poll() says none are.
    stdin: File,
    idle: Duration,
    armed: Arc<AtomicBool>,
    stop: &'static AtomicBool,
    /// Unarmed, a read fails with [`crate::Stopped`] from then on, as when `stop` is set.
    deadline: Option<Instant>,
}

impl PolledStdin {
    /// Standard input (a duplicate of its descriptor) waited on for at most `idle` once
    /// [`PolledStdin::arm`]'s flag is set; before, waited on until `stop` is set (a signal
    /// handler's flag).
    pub fn new(idle: Duration, stop: &'static AtomicBool) -> io::Result<PolledStdin> {
        let stdin = File::from(io::stdin().as_fd().try_clone_to_owned()?);
        Ok(PolledStdin { stdin, idle, armed: Arc::new(AtomicBool::new(false)), stop, deadline: None })
    }

    /// Stops the wait for the stream's header at `deadline` (`None`: only `stop` does).
    pub fn until(self, deadline: Option<Instant>) -> PolledStdin {
        PolledStdin { deadline, ..self }
    }

    /// The flag that arms the wait: set it once the reader is open.
    pub fn arm(&self) -> Arc<AtomicBool> {
        self.armed.clone()
    }

    /// Whether a byte (or the end, or an error) is ready within `wait`.
    fn ready(&self, wait: Duration) -> io::Result<bool> {
        readable(self.stdin.as_raw_fd(), i32::try_from(wait.as_millis()).unwrap_or(i32::MAX))
    }
}

/// Whether a byte (or the end, or an error) is ready on `fd` within `ms` (-1: no limit); a signal
/// that interrupts the wait is a `false`.
fn readable(fd: RawFd, ms: i32) -> io::Result<bool> {
    let mut fd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, which poll writes `revents` of.
    let rc = unsafe { libc::poll(&mut fd, 1, ms) };
    match rc {
        0 => Ok(false),
        rc if rc > 0 => Ok(true),
        _ => match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::Interrupted => Ok(false),
            e => Err(e),
        },
    }
}

/// Standard input as `-` reads it (`analyze -`, `frames -`), or a FIFO given by name: a read that
/// finds nothing on a descriptor made non-blocking (`O_NONBLOCK` belongs to the pipe's open file, which
/// a parent process may have set) waits in poll() for bytes and is tried again. While the stream is
/// opened (until the flag [`WaitingStream::new`] returns is set), a read that finds nothing for 100 ms
/// fails with `WouldBlock`, which the open waits out, but for ERF, which has no header: its records are
/// judged on what came (a live stream's need not fill 64 KiB).
///
/// Once open, the reader sees a stream that blocks, as a file's ([`Waits::Block`]), or one that says
/// it has to wait before it does ([`Waits::Tell`]): a read that would wait fails with `WouldBlock`
/// once, which the reader passes on without losing its place, so that its caller writes out what it
/// has (`frames -` its lines, `analyze -` its pairs) while the relay is idle; the next read waits.
///
/// Read unbuffered (a duplicate of the descriptor): bytes held in `io::Stdin`'s buffer would be there
/// while poll() says none are.
pub struct WaitingStream {
    file: File,
    opened: Arc<AtomicBool>,
    waits: Waits,
    /// A wait was told ([`Waits::Tell`]): the next read waits.
    told: bool,
}

/// What a read of a stream that has to wait for bytes (standard input, a FIFO) does once its reader
/// is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Waits {
    /// It waits, as a file's read would: the reader never says it has nothing yet.
    #[default]
    Block,
    /// It says so first: the reader's next frame is [`crate::ReadError::would_block`] once, the reader
    /// left where it was; called again, it waits for bytes. (A file never waits: read as with
    /// [`Waits::Block`].)
    Tell,
}

impl WaitingStream {
    /// Standard input (a duplicate of its descriptor), read while it is opened until the returned flag
    /// is set.
    pub fn stdin(waits: Waits) -> io::Result<(WaitingStream, Arc<AtomicBool>)> {
        Ok(WaitingStream::new(File::from(io::stdin().as_fd().try_clone_to_owned()?), waits))
    }

    /// `file` (a FIFO, a socket), read while it is opened until the returned flag is set.
    pub fn new(file: File, waits: Waits) -> (WaitingStream, Arc<AtomicBool>) {
        let opened = Arc::new(AtomicBool::new(false));
        (WaitingStream { file, opened: opened.clone(), waits, told: false }, opened)
    }
}

/// How long a read of `-` that finds nothing waits while the stream is opened.
const OPEN_PAUSE_MS: i32 = 100;

impl Read for WaitingStream {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let fd = self.file.as_raw_fd();
        if !self.opened.load(Ordering::Relaxed) {
            if !readable(fd, OPEN_PAUSE_MS)? {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        } else if self.waits == Waits::Tell {
            // One poll() per read, not per frame: a read takes what is there. A signal that interrupts
            // it is a wait told too: harmless, the caller comes back.
            if !std::mem::take(&mut self.told) && !readable(fd, 0)? {
                self.told = true;
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
        loop {
            match self.file.read(out) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    readable(fd, -1)?;
                }
                r => return r,
            }
        }
    }
}

impl Read for PolledStdin {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // A readable descriptor costs one poll() per read, not per frame: a read takes what is there.
        if self.armed.load(Ordering::Relaxed) {
            if !self.ready(self.idle)? {
                // A signal that interrupted the wait may have asked the stop: said at once.
                if self.stop.load(Ordering::Relaxed) {
                    return Err(io::Error::other(crate::Stopped));
                }
                return Err(io::ErrorKind::WouldBlock.into());
            }
        } else {
            // The stop is looked at before every read, not only after a quiet wait: bytes that keep
            // coming (not a capture, whose header never completes) would hold it off. A quiet wait
            // is a `WouldBlock`, which the open waits out (ERF's records are judged on what came).
            // (A wait ends at the deadline, not up to `idle` after it.)
            let left = self.deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if self.stop.load(Ordering::Relaxed) || left.is_some_and(|l| l.is_zero()) {
                return Err(io::Error::other(crate::Stopped));
            }
            if !self.ready(left.map_or(self.idle, |l| l.min(self.idle)))? {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
        self.stdin.read(out)
    }
}
