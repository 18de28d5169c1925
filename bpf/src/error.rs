//! Errors of loading, attaching and reading the BPF programs.

use std::io;

/// Everything that can fail in this crate. Load and attach errors keep the kernel's verifier log and
/// name the missing capability or kernel feature when one is the likely cause.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// A configured flow cannot be expressed (bad VLAN id, no side selected, duplicate endpoint).
    #[error("flow {id}: {reason}")]
    Flow {
        /// The caller's flow id.
        id: u32,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// The options are out of range.
    #[error("options: {0}")]
    Options(String),
    /// libbpf could not open the embedded BPF object (a build problem, not a kernel one).
    #[error("opening the BPF object failed: {source}")]
    Open {
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
    /// The kernel refused to load a program or create a map.
    #[error("loading the BPF programs failed: {source}{hint}{}", log_suffix(verifier_log))]
    Load {
        /// libbpf's error (the errno of BPF_PROG_LOAD or BPF_MAP_CREATE).
        source: libbpf_rs::Error,
        /// What libbpf printed while loading: the verifier log when a program was rejected.
        verifier_log: String,
        /// Missing capability or kernel feature, when one explains the failure ("" otherwise).
        hint: String,
    },
    /// The kernel refused to attach a program.
    #[error("attaching {program} to ifindex {ifindex} ({hook}) failed: {source}{hint}")]
    Attach {
        /// Program name.
        program: &'static str,
        /// Interface.
        ifindex: u32,
        /// Hook, e.g. "tcx ingress".
        hook: &'static str,
        /// errno of the attach.
        source: io::Error,
        /// Missing capability or kernel feature, when one explains the failure ("" otherwise).
        hint: String,
    },
    /// wirestamp's program is already attached to this hook: another capture runs on the interface.
    #[error(
        "ifindex {ifindex} already has wirestamp's {program} attached ({hook}, BPF prog id {prog_id}): another \
         wirestamp capture is running on this interface; stop it (or detach prog {prog_id}) first"
    )]
    AlreadyAttached {
        /// Interface.
        ifindex: u32,
        /// Name of the program found there.
        program: String,
        /// Hook, e.g. "tcx ingress".
        hook: &'static str,
        /// The kernel's id of the attached program (`bpftool prog show id N`).
        prog_id: u32,
    },
    /// The cgroup directory cannot be opened or queried.
    #[error("cgroup {}: {source}", path.display())]
    Cgroup {
        /// The cgroup v2 directory.
        path: std::path::PathBuf,
        /// errno.
        source: io::Error,
    },
    /// The kernel refused to attach the sockops program to the cgroup.
    #[error("attaching ws_sockops to cgroup {} failed: {source}{hint}", path.display())]
    AttachCgroup {
        /// The cgroup v2 directory.
        path: std::path::PathBuf,
        /// libbpf's error.
        source: libbpf_rs::Error,
        /// Missing capability, when one explains the failure ("" otherwise).
        hint: String,
    },
    /// wirestamp's sockops program is already attached to this cgroup.
    #[error(
        "cgroup {} already has wirestamp's {program} attached (BPF prog id {prog_id}): another wirestamp instance \
         is timestamping this cgroup; stop it (or detach prog {prog_id}) first",
        path.display()
    )]
    AlreadyAttachedCgroup {
        /// The cgroup v2 directory.
        path: std::path::PathBuf,
        /// Name of the program found there.
        program: String,
        /// The kernel's id of the attached program.
        prog_id: u32,
    },
    /// A map operation failed.
    #[error("BPF map {map}: {source}")]
    Map {
        /// Map name.
        map: &'static str,
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
    /// Querying the programs attached to an interface failed.
    #[error("querying the tcx programs on ifindex {ifindex} ({hook}): {source}{hint}")]
    Query {
        /// Interface.
        ifindex: u32,
        /// Hook.
        hook: &'static str,
        /// errno.
        source: io::Error,
        /// Missing capability or kernel feature, or a namespace mix-up ("" otherwise).
        hint: String,
    },
    /// Creating or polling the ring buffer failed.
    #[error("ring buffer {what}: {source}")]
    Ring {
        /// "create" or "poll".
        what: &'static str,
        /// errno.
        source: io::Error,
    },
    /// BPF_PROG_TEST_RUN failed.
    #[error("BPF_PROG_TEST_RUN of {program}: {source}")]
    TestRun {
        /// Program name.
        program: &'static str,
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
}

impl BpfError {
    /// A failed load, with libbpf's log and, when one explains it, the missing capability or feature.
    pub(crate) fn load(source: libbpf_rs::Error, verifier_log: String) -> Self {
        let errno = (source.kind() == libbpf_rs::ErrorKind::PermissionDenied).then_some(libc::EPERM);
        BpfError::Load { hint: crate::caps::load_hint(errno, &verifier_log), verifier_log, source }
    }
}

/// A skeleton's `.rodata`, where the loaders set the programs' constants before loading; its absence
/// is a build problem.
pub(crate) fn rodata<T>(data: Option<&mut T>) -> Result<&mut T> {
    data.ok_or_else(|| BpfError::Options("the BPF object has no .rodata (build problem)".into()))
}

fn log_suffix(log: &str) -> String {
    if log.trim().is_empty() { String::new() } else { format!("\nlibbpf/verifier log:\n{}", log.trim_end()) }
}

/// Result alias of this crate.
pub type Result<T, E = BpfError> = std::result::Result<T, E>;
