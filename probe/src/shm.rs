//! Creating, opening, validating and mapping session segments (POSIX shm, `/dev/shm/<name>`).

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crate::error::{ProbeError, Result};
use crate::layout::*;

/// How a segment is created.
#[derive(Debug, Clone, Copy)]
pub struct CreateOptions {
    pub geometry: Geometry,
    /// File mode; 0o600 by default, 0o660 makes sense with `group`.
    pub mode: u32,
    /// Group to give the segment (so another user in that group can attach), if any.
    pub group: Option<u32>,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions { geometry: Geometry::default(), mode: 0o600, group: None }
    }
}

/// `/dev/shm/<name>`.
pub fn segment_path(name: &str) -> PathBuf {
    PathBuf::from(format!("/dev/shm/{name}"))
}

fn check_name(name: &str) -> Result<CString> {
    let bad = |why| Err(ProbeError::BadName { name: name.to_string(), why });
    if name.is_empty() || name.len() > 200 {
        return bad("length must be 1-200");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) || name.starts_with('.') {
        return bad("characters outside [A-Za-z0-9._-] or a leading dot");
    }
    Ok(CString::new(format!("/{name}")).expect("checked: no NUL"))
}

fn io(what: &'static str, name: &str) -> ProbeError {
    ProbeError::Io { what, path: segment_path(name), source: std::io::Error::last_os_error() }
}

/// A shared mapping of a whole segment. Unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    pub(crate) base: *mut u8,
    pub(crate) len: usize,
    pub(crate) name: String,
    /// Geometry as validated at open (or written at create): never re-read from the shared header, so
    /// garbage written there later cannot move a ring outside the mapping.
    pub(crate) geometry: Geometry,
}

// SAFETY: the mapping is plain shared memory accessed only through atomics.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: base/len describe a mapping this value owns.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

impl Mapping {
    /// The session name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The segment header.
    pub fn header(&self) -> &SegmentHeader {
        // SAFETY: every mapping is at least HEADER_BLOCK bytes (checked at open), page-aligned.
        unsafe { &*(self.base as *const SegmentHeader) }
    }

    /// Geometry recorded in the header when it was validated.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Ring header `i` (caller checks `i < max_threads`).
    pub(crate) fn ring(&self, i: u32) -> &RingHeader {
        let g = self.geometry();
        assert!(i < g.max_threads);
        let off = RINGS_OFFSET + i as usize * g.ring_stride() as usize;
        // SAFETY: the validated geometry places ring i inside the mapping, 64-aligned.
        unsafe { &*(self.base.add(off) as *const RingHeader) }
    }

    /// Records of ring `i`.
    pub(crate) fn records(&self, i: u32) -> *mut Record {
        let g = self.geometry();
        assert!(i < g.max_threads);
        let off = RINGS_OFFSET + i as usize * g.ring_stride() as usize + RING_HEADER_SIZE;
        // SAFETY: inside the mapping (validated geometry).
        unsafe { self.base.add(off) as *mut Record }
    }

    /// Name entry `i` (caller checks `i < MAX_NAMES`).
    pub(crate) fn name_entry(&self, i: usize) -> &NameEntry {
        assert!(i < MAX_NAMES);
        // SAFETY: the name table lies inside the header area of every valid mapping.
        unsafe { &*(self.base.add(NAMES_OFFSET + i * NAME_ENTRY_SIZE) as *const NameEntry) }
    }
}

fn map_fd(fd: libc::c_int, len: usize, name: &str) -> Result<Mapping> {
    // SAFETY: mapping a file we opened read-write, shared, at a kernel-chosen address.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(io("mapping", name));
    }
    Ok(Mapping { base: p.cast(), len, name: name.to_string(), geometry: Geometry { max_threads: 0, ring_capacity: 0 } })
}

struct Fd(libc::c_int);
impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closing a descriptor this value owns.
        unsafe { libc::close(self.0) };
    }
}

/// Creates a new session segment (fails if it exists).
pub fn create(name: &str, opts: &CreateOptions) -> Result<Mapping> {
    let c = check_name(name)?;
    opts.geometry.check().map_err(ProbeError::Geometry)?;
    let size = opts.geometry.segment_size();
    // SAFETY: c is a valid NUL-terminated string.
    let fd = unsafe { libc::shm_open(c.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600) };
    if fd < 0 {
        return Err(io("creating", name));
    }
    let fd = Fd(fd);
    let undo = |e: ProbeError| {
        // SAFETY: removing the half-made segment we just created.
        unsafe { libc::shm_unlink(c.as_ptr()) };
        e
    };
    if let Some(gid) = opts.group {
        // SAFETY: fchown on our own descriptor; uid -1 leaves the owner.
        if unsafe { libc::fchown(fd.0, u32::MAX, gid) } != 0 {
            return Err(undo(io("setting the group of", name)));
        }
    }
    // fchmod after creation: shm_open's mode is filtered by the umask.
    // SAFETY: fchmod on our own descriptor.
    if unsafe { libc::fchmod(fd.0, opts.mode as libc::mode_t) } != 0 {
        return Err(undo(io("setting the mode of", name)));
    }
    // SAFETY: ftruncate on our own descriptor; tmpfs leaves the file sparse.
    if unsafe { libc::ftruncate(fd.0, size as libc::off_t) } != 0 {
        return Err(undo(io("sizing", name)));
    }
    let mut m = map_fd(fd.0, size as usize, name).map_err(undo)?;
    m.geometry = opts.geometry;
    let h = m.header();
    let g = opts.geometry;
    h.version.store(LAYOUT_VERSION, Relaxed);
    h.header_size.store(size_of::<SegmentHeader>() as u32, Relaxed);
    h.segment_size.store(size, Relaxed);
    h.max_threads.store(g.max_threads, Relaxed);
    h.ring_capacity.store(g.ring_capacity, Relaxed);
    h.record_size.store(RECORD_SIZE as u32, Relaxed);
    h.ring_header_size.store(RING_HEADER_SIZE as u32, Relaxed);
    h.names_offset.store(NAMES_OFFSET as u64, Relaxed);
    h.max_names.store(MAX_NAMES as u32, Relaxed);
    h.name_entry_size.store(NAME_ENTRY_SIZE as u32, Relaxed);
    h.rings_offset.store(RINGS_OFFSET as u64, Relaxed);
    h.ring_stride.store(g.ring_stride(), Relaxed);
    // SAFETY: getpid has no preconditions.
    h.creator_pid.store(unsafe { libc::getpid() } as u32, Relaxed);
    h.created_realtime_ns.store(realtime_ns(), Relaxed);
    // The magic last: whoever sees it sees a complete header.
    h.magic.store(MAGIC, Release);
    Ok(m)
}

/// Opens and validates an existing session segment.
pub fn open(name: &str) -> Result<Mapping> {
    let c = check_name(name)?;
    let path = segment_path(name);
    // SAFETY: c is a valid NUL-terminated string.
    let fd = unsafe { libc::shm_open(c.as_ptr(), libc::O_RDWR, 0) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        return Err(match err.raw_os_error() {
            Some(libc::ENOENT) => ProbeError::NotFound { path },
            Some(libc::EACCES) | Some(libc::EPERM) => permission_error(path),
            _ => ProbeError::Io { what: "opening", path, source: err },
        });
    }
    let fd = Fd(fd);
    // The creator may still be sizing or filling the header: wait up to 1 s for the magic.
    let mut waited_ms = 0u64;
    loop {
        // SAFETY: fstat on our own descriptor into a zeroed struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd.0, &mut st) } != 0 {
            return Err(io("inspecting", name));
        }
        let size = st.st_size as u64;
        if size >= RINGS_OFFSET as u64 {
            let mut m = map_fd(fd.0, size.min(MAX_SEGMENT_SIZE) as usize, name)?;
            let magic = m.header().magic.load(Acquire);
            if magic == MAGIC {
                m.geometry = validate(&m, size)?;
                return Ok(m);
            }
            if magic != 0 {
                return Err(ProbeError::BadMagic { path, found: magic, expected: MAGIC });
            }
        }
        if waited_ms >= 1000 {
            if size < RINGS_OFFSET as u64 && size > 0 {
                return Err(ProbeError::Corrupt {
                    path,
                    field: "file size",
                    offset: 0,
                    found: size,
                    expected: format!(">= {RINGS_OFFSET} bytes"),
                });
            }
            return Err(ProbeError::NotInitialized { path, waited_ms });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        waited_ms += 10;
    }
}

fn permission_error(path: PathBuf) -> ProbeError {
    let (mode, uid, gid) = match std::fs::metadata(&path) {
        Ok(md) => {
            use std::os::unix::fs::MetadataExt;
            (md.mode() & 0o7777, md.uid(), md.gid())
        }
        Err(_) => (0, u32::MAX, u32::MAX),
    };
    // SAFETY: geteuid/getegid have no preconditions.
    let (my_uid, my_gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    ProbeError::PermissionDenied { path, mode, uid, gid, my_uid, my_gid }
}

/// Checks every header field against the layout this build defines; returns the geometry.
fn validate(m: &Mapping, file_size: u64) -> Result<Geometry> {
    let h = m.header();
    let path = segment_path(&m.name);
    let version = h.version.load(Relaxed);
    if version != LAYOUT_VERSION {
        return Err(ProbeError::VersionMismatch { path, found: version, expected: LAYOUT_VERSION });
    }
    let bad = |field: &'static str, offset: usize, found: u64, expected: String| {
        Err(ProbeError::Corrupt { path: path.clone(), field, offset, found, expected })
    };
    let checks: [(&'static str, usize, u64, u64); 8] = [
        ("header_size", 12, h.header_size.load(Relaxed) as u64, size_of::<SegmentHeader>() as u64),
        ("record_size", 32, h.record_size.load(Relaxed) as u64, RECORD_SIZE as u64),
        ("ring_header_size", 36, h.ring_header_size.load(Relaxed) as u64, RING_HEADER_SIZE as u64),
        ("names_offset", 40, h.names_offset.load(Relaxed), NAMES_OFFSET as u64),
        ("max_names", 48, h.max_names.load(Relaxed) as u64, MAX_NAMES as u64),
        ("name_entry_size", 52, h.name_entry_size.load(Relaxed) as u64, NAME_ENTRY_SIZE as u64),
        ("rings_offset", 56, h.rings_offset.load(Relaxed), RINGS_OFFSET as u64),
        ("segment_size", 16, h.segment_size.load(Relaxed), file_size),
    ];
    for (field, offset, found, expected) in checks {
        if found != expected {
            return bad(field, offset, found, expected.to_string());
        }
    }
    let g = Geometry { max_threads: h.max_threads.load(Relaxed), ring_capacity: h.ring_capacity.load(Relaxed) };
    if let Err(why) = g.check() {
        return bad("max_threads/ring_capacity", 24, g.max_threads as u64 | (g.ring_capacity as u64) << 32, why);
    }
    let stride = h.ring_stride.load(Relaxed);
    if stride != g.ring_stride() {
        return bad("ring_stride", 64, stride, g.ring_stride().to_string());
    }
    if g.segment_size() != file_size {
        return bad("segment_size (from geometry)", 16, g.segment_size(), format!("the file size {file_size}"));
    }
    Ok(g)
}

/// Removes a session segment (the mapping of anyone attached stays valid until they unmap).
pub fn unlink(name: &str) -> Result<()> {
    let c = check_name(name)?;
    // SAFETY: c is a valid NUL-terminated string.
    if unsafe { libc::shm_unlink(c.as_ptr()) } != 0 {
        return Err(io("removing", name));
    }
    Ok(())
}

/// CLOCK_REALTIME in ns since the Unix epoch.
pub fn realtime_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into our timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// The text of a READY name entry (its bytes as UTF-8, lossily).
fn read_entry_text(e: &NameEntry) -> String {
    let len = (e.len.load(Relaxed) as usize).min(NAME_MAX_LEN);
    let mut bytes = [0u8; 48];
    for (w, chunk) in e.text.iter().zip(bytes.chunks_mut(8)) {
        chunk.copy_from_slice(&w.load(Relaxed).to_le_bytes());
    }
    String::from_utf8_lossy(&bytes[..len.min(48)]).into_owned()
}

/// Reads the published point and stage names: `(point, None, name)` for points, `(point, Some(stage), name)`
/// for stages; later entries for the same id override earlier ones.
pub fn read_names(m: &Mapping) -> Vec<(u16, Option<u8>, String)> {
    let mut out = Vec::new();
    for i in 0..MAX_NAMES {
        let e = m.name_entry(i);
        if e.state.load(Acquire) != name_state::READY {
            continue;
        }
        let id = e.id.load(Relaxed);
        let name = read_entry_text(e);
        let point = id as u16;
        match (id >> 24) as u8 {
            name_kind::POINT => out.push((point, None, name)),
            name_kind::STAGE => out.push((point, Some((id >> 16) as u8), name)),
            _ => {}
        }
    }
    out
}

/// Publishes a name in the segment's name table (not a hot-path operation: one CAS per call).
pub fn publish_name(m: &Mapping, point: u16, stage: Option<u8>, name: &str) -> Result<()> {
    if name.len() > NAME_MAX_LEN {
        return Err(ProbeError::NameTooLong(name.to_string()));
    }
    let id = match stage {
        None => point as u32 | (name_kind::POINT as u32) << 24,
        Some(s) => point as u32 | (s as u32) << 16 | (name_kind::STAGE as u32) << 24,
    };
    // An app restarted on the same segment publishes its names again: the latest entry of the id
    // already says it, and a new one would fill the table after a hundred restarts or so.
    let mut latest = None;
    for i in 0..MAX_NAMES {
        let e = m.name_entry(i);
        if e.state.load(Acquire) == name_state::READY && e.id.load(Relaxed) == id {
            latest = Some(i);
        }
    }
    if latest.is_some_and(|i| read_entry_text(m.name_entry(i)) == name) {
        return Ok(());
    }
    for i in 0..MAX_NAMES {
        let e = m.name_entry(i);
        if e.state.compare_exchange(name_state::EMPTY, name_state::WRITING, Acquire, Relaxed).is_ok() {
            e.id.store(id, Relaxed);
            e.len.store(name.len() as u32, Relaxed);
            let mut bytes = [0u8; 48];
            bytes[..name.len()].copy_from_slice(name.as_bytes());
            for (w, chunk) in e.text.iter().zip(bytes.chunks(8)) {
                w.store(u64::from_le_bytes(chunk.try_into().expect("8-byte chunk")), Relaxed);
            }
            e.state.store(name_state::READY, Release);
            return Ok(());
        }
    }
    Err(ProbeError::NameTableFull)
}
