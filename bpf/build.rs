//! Compiles `src/bpf/*.bpf.c` with clang into BPF objects and generates their libbpf-rs skeletons into
//! `OUT_DIR` (never committed). libbpf-cargo only runs plain `clang`, and Debian installs `clang-19`, so the
//! compiler is found here: `$BPF_CLANG` if set, else the first of `clang`, `clang-21` … `clang-16` on PATH.
//! `src/bpf/vmlinux.h` is committed (see `gen-vmlinux.sh`): the build needs neither bpftool nor
//! `/sys/kernel/btf`.

use std::env;
use std::ffi::OsStr;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

/// (source, skeleton file name)
const PROGRAMS: &[(&str, &str)] = &[
    ("src/bpf/tc.bpf.c", "tc.skel.rs"),
    ("src/bpf/sockops.bpf.c", "sockops.skel.rs"),
    ("src/bpf/xdp.bpf.c", "xdp.skel.rs"),
    ("src/bpf/xsk.bpf.c", "xsk.skel.rs"),
];
const HEADERS: &[&str] = &["src/bpf/events.h", "src/bpf/capture.h", "src/bpf/vmlinux.h"];

fn find_clang() -> PathBuf {
    if let Some(c) = env::var_os("BPF_CLANG") {
        return PathBuf::from(c);
    }
    let path = env::var_os("PATH").unwrap_or_default();
    for name in ["clang", "clang-21", "clang-20", "clang-19", "clang-18", "clang-17", "clang-16"] {
        for dir in env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!("no clang found on PATH: run scripts/setup.sh (apt-get install clang-19), or set BPF_CLANG=/path/to/clang");
}

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let include = manifest.join("src/bpf");
    let clang = find_clang();
    println!("cargo:rerun-if-env-changed=BPF_CLANG");
    for h in HEADERS {
        println!("cargo:rerun-if-changed={h}");
    }
    for (src, skel) in PROGRAMS {
        println!("cargo:rerun-if-changed={src}");
        if let Err(e) = SkeletonBuilder::new()
            .source(src)
            .clang(&clang)
            .clang_args([OsStr::new("-I"), include.as_os_str(), OsStr::new("-Wall")])
            .build_and_generate(out_dir.join(skel))
        {
            panic!("building {src} with {} failed: {e:#}", clang.display());
        }
    }
}
