//! The C ABI (`include/wirestamp_probe.h`, generated from this file by [`c_header`]; a test fails if the
//! checked-in header differs, and `WIRESTAMP_BLESS=1 cargo test -p wirestamp-probe --test c_abi` rewrites
//! it). Link `libwirestamp_probe.a` plus `-lpthread -ldl -lm`.
//!
//! Every function is safe to call from any thread; stamps never block and never fail (before `wsp_attach`
//! or while disabled they do nothing). Functions returning `int32_t` return 0 on success and a negative
//! error code otherwise; `wsp_last_error` gives the message.

use std::cell::RefCell;
use std::ffi::{CStr, c_char};

use crate::layout::{END_STAGE, LAYOUT_VERSION};
use crate::shm::CreateOptions;
use crate::writer::{self, AttachOptions};
use crate::{Geometry, ProbeError};

/// C spelling of a Rust type in a prototype.
trait CType {
    const C: &'static str;
}
macro_rules! ctype {
    ($($t:ty => $c:literal),*) => { $(impl CType for $t { const C: &'static str = $c; })* };
}
ctype!(() => "void", u8 => "uint8_t", u16 => "uint16_t", u32 => "uint32_t", u64 => "uint64_t", i32 => "int32_t",
    usize => "size_t", *const c_char => "const char *", *mut c_char => "char *");

/// One C prototype: name, doc lines, (argument, C type) pairs, C return type.
pub struct Proto {
    pub name: &'static str,
    pub docs: &'static [&'static str],
    pub args: &'static [(&'static str, &'static str)],
    pub ret: &'static str,
}

macro_rules! c_api {
    ($( $(#[doc = $doc:literal])* [$($q:tt)*] fn $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty $body:block )*) => {
        $(
            $(#[doc = $doc])*
            #[unsafe(no_mangle)]
            pub $($q)* extern "C" fn $name($($arg: $ty),*) -> $ret $body
        )*
        /// Every C function, in header order.
        pub const PROTOTYPES: &[Proto] = &[$(Proto {
            name: stringify!($name),
            docs: &[$($doc),*],
            args: &[$((stringify!($arg), <$ty as CType>::C)),*],
            ret: <$ret as CType>::C,
        }),*];
    };
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn fail(e: ProbeError) -> i32 {
    let code = match e {
        ProbeError::BadName { .. } | ProbeError::NameTooLong(_) | ProbeError::Geometry(_) => -1,
        ProbeError::NotFound { .. } => -2,
        ProbeError::PermissionDenied { .. } => -3,
        ProbeError::BadMagic { .. } | ProbeError::Corrupt { .. } | ProbeError::NotInitialized { .. } => -4,
        ProbeError::VersionMismatch { .. } => -5,
        ProbeError::AlreadyAttached(_) | ProbeError::NotAttached => -6,
        ProbeError::NameTableFull | ProbeError::NoFreeSlot { .. } => -7,
        ProbeError::Io { .. } => -8,
    };
    LAST_ERROR.with(|l| *l.borrow_mut() = e.to_string());
    code
}

fn result(r: crate::Result<()>) -> i32 {
    r.map_or_else(fail, |()| 0)
}

/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn str_arg<'a>(p: *const c_char, what: &'static str) -> Result<&'a str, ProbeError> {
    if p.is_null() {
        return Err(ProbeError::BadName { name: String::new(), why: what });
    }
    // SAFETY: (caller) p is NUL-terminated.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| ProbeError::BadName { name: s.to_string_lossy().into_owned(), why: "not UTF-8" })
}

c_api! {
    /// Attaches this process to the session `/dev/shm/<session>` and enables stamping. If create is
    /// non-zero and the session does not exist, creates it (mode 0600) with max_threads rings of
    /// ring_capacity records (0: defaults 32 and 65536). Returns 0 or a negative WSP_E_* code.
    /// # Safety
    /// session is a NUL-terminated string.
    [unsafe] fn wsp_attach(session: *const c_char, create: i32, max_threads: u32, ring_capacity: u32) -> i32 {
        // SAFETY: (caller) session is NUL-terminated.
        let name = match unsafe { str_arg(session, "null session name") } {
            Ok(n) => n,
            Err(e) => return fail(e),
        };
        let d = Geometry::default();
        let geometry = Geometry {
            max_threads: if max_threads == 0 { d.max_threads } else { max_threads },
            ring_capacity: if ring_capacity == 0 { d.ring_capacity } else { ring_capacity },
        };
        let create = (create != 0).then_some(CreateOptions { geometry, ..Default::default() });
        result(writer::attach(name, &AttachOptions { create }))
    }

    /// Stops stamping and releases the calling thread's ring (call after stamping threads stopped).
    [] fn wsp_detach() -> () {
        writer::detach()
    }

    /// Enables (non-zero) or disables (0) stamping at run time.
    [] fn wsp_set_enabled(on: i32) -> () {
        writer::set_enabled(on != 0)
    }

    /// 1 if stamps are being recorded, else 0.
    [] fn wsp_enabled() -> i32 {
        writer::enabled() as i32
    }

    /// Claims a ring for the calling thread now rather than on its first stamp.
    [] fn wsp_register_thread() -> i32 {
        result(writer::register_thread())
    }

    /// Publishes the name of a point (at most 48 bytes of UTF-8).
    /// # Safety
    /// name is a NUL-terminated string.
    [unsafe] fn wsp_name_point(point: u16, name: *const c_char) -> i32 {
        // SAFETY: (caller) name is NUL-terminated.
        match unsafe { str_arg(name, "null name") } {
            Ok(n) => result(writer::name_point(point, n)),
            Err(e) => fail(e),
        }
    }

    /// Publishes the name of a stage of a point (the interval ending at that stage is reported under it).
    /// # Safety
    /// name is a NUL-terminated string.
    [unsafe] fn wsp_name_stage(point: u16, stage: u8, name: *const c_char) -> i32 {
        // SAFETY: (caller) name is NUL-terminated.
        match unsafe { str_arg(name, "null name") } {
            Ok(n) => result(writer::name_stage(point, stage, n)),
            Err(e) => fail(e),
        }
    }

    /// Opens the span (point, key).
    [] fn wsp_begin(point: u16, key: u64) -> () {
        writer::begin(point, key)
    }

    /// Marks the end of stage (1..254) in the span (point, key).
    [] fn wsp_step(point: u16, stage: u8, key: u64) -> () {
        writer::step(point, stage, key)
    }

    /// Closes the span (point, key).
    [] fn wsp_end(point: u16, key: u64) -> () {
        writer::end(point, key)
    }

    /// Records a value sample (queue depth, batch size); no timestamp.
    [] fn wsp_value(point: u16, value: u64) -> () {
        writer::value(point, value)
    }

    /// Declares that the order order_key was triggered by the tick tick_key.
    [] fn wsp_link(tick_key: u64, order_key: u64) -> () {
        writer::link(tick_key, order_key)
    }

    /// Copies the calling thread's last error message (NUL-terminated, truncated to len) into buf and
    /// returns its full length.
    /// # Safety
    /// buf is null or has room for len bytes.
    [unsafe] fn wsp_last_error(buf: *mut c_char, len: usize) -> usize {
        LAST_ERROR.with(|l| {
            let msg = l.borrow();
            if !buf.is_null() && len > 0 {
                let n = msg.len().min(len - 1);
                // SAFETY: (caller) buf has room for len bytes; n + 1 <= len.
                unsafe {
                    std::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast(), n);
                    *buf.add(n) = 0;
                }
            }
            msg.len()
        })
    }
}

/// The C header text for [`PROTOTYPES`] and the layout constants.
pub fn c_header() -> String {
    let mut h = String::from(
        "/* wirestamp_probe.h: C ABI of wirestamp-probe. GENERATED from probe/src/ffi.rs by c_header();\n \
         * do not edit (WIRESTAMP_BLESS=1 cargo test -p wirestamp-probe --test c_abi regenerates it).\n \
         * Link with libwirestamp_probe.a -lpthread -ldl -lm. */\n\
         #ifndef WIRESTAMP_PROBE_H\n#define WIRESTAMP_PROBE_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n\
         #ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
    );
    h += &format!("#define WSP_LAYOUT_VERSION {LAYOUT_VERSION}\n");
    h += &format!("#define WSP_END_STAGE {END_STAGE}\n");
    for (name, code) in [
        ("INVALID", -1),
        ("NOT_FOUND", -2),
        ("PERMISSION", -3),
        ("CORRUPT", -4),
        ("VERSION", -5),
        ("ATTACH_STATE", -6),
        ("FULL", -7),
        ("IO", -8),
    ] {
        h += &format!("#define WSP_E_{name} ({code})\n");
    }
    for p in PROTOTYPES {
        h += "\n";
        for d in p.docs {
            h += &format!("/*{d} */\n");
        }
        let args = if p.args.is_empty() {
            "void".to_string()
        } else {
            p.args
                .iter()
                .map(|(n, t)| if t.ends_with('*') { format!("{t}{n}") } else { format!("{t} {n}") })
                .collect::<Vec<_>>()
                .join(", ")
        };
        h += &format!("{} {}({args});\n", p.ret, p.name);
    }
    h += "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* WIRESTAMP_PROBE_H */\n";
    h
}
