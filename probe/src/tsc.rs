//! Time-stamp counter reads and the invariant-TSC check (x86-64 only).
//!
//! * `rdtsc()`: bare `rdtsc`; cheapest (about 19 ticks of throughput here) but the CPU may execute it
//!   before earlier instructions finish or after later ones start.
//! * `rdtsc_fenced()`: `lfence; rdtsc; lfence`; the read waits for earlier instructions and later ones
//!   wait for it (about 43 ticks).
//! * `invariant_tsc()`: CPUID leaf 0x8000_0007 EDX bit 8: the TSC runs at a constant rate in every
//!   P-, C- and T-state, which is what makes ticks convertible to nanoseconds at all.

#[cfg(not(target_arch = "x86_64"))]
compile_error!("wirestamp-probe reads the x86-64 time-stamp counter; other architectures are not supported");

use core::arch::x86_64::{__cpuid, __cpuid_count, _mm_lfence, _rdtsc};

/// Bare `rdtsc`.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86-64 CPU and has no memory effects.
    unsafe { _rdtsc() }
}

/// `lfence; rdtsc; lfence`.
#[inline(always)]
pub fn rdtsc_fenced() -> u64 {
    // SAFETY: lfence (SSE2, baseline on x86-64) and rdtsc have no memory effects beyond ordering.
    unsafe {
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
}

/// `lfence; rdtsc; lfence` that takes `dep` as an (unused) input: whatever computes `dep` is done before
/// the first fence, so after the read only the stores that use it remain.
#[inline(always)]
pub fn rdtsc_fenced_after<T>(dep: *const T) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: lfence/rdtsc only; no memory is accessed (the asm is not marked nomem so that the compiler
    // keeps earlier loads before it and later stores after it).
    unsafe {
        core::arch::asm!("lfence", "rdtsc", "lfence", in("rcx") dep, out("eax") lo, out("edx") hi,
            options(nostack, preserves_flags));
    }
    (hi as u64) << 32 | lo as u64
}

/// `rdtscp; lfence`: rdtscp waits for earlier instructions, the lfence keeps later ones from starting
/// before the read (the other fenced form; also returns IA32_TSC_AUX, discarded).
#[inline(always)]
pub fn rdtscp_lfence() -> u64 {
    let mut aux = 0u32;
    // SAFETY: rdtscp (checked by the caller's platform: every x86-64 CPU of the last 15 years) and lfence
    // have no memory effects.
    unsafe {
        let t = core::arch::x86_64::__rdtscp(&mut aux);
        _mm_lfence();
        t
    }
}

/// The TSC read the stamp functions use: fenced with the `fenced` feature, bare otherwise.
#[inline(always)]
pub fn read() -> u64 {
    if cfg!(feature = "fenced") { rdtsc_fenced() } else { rdtsc() }
}

/// Whether the CPU declares an invariant TSC (CPUID.80000007H:EDX\[8\]).
pub fn invariant_tsc() -> bool {
    let max_ext = __cpuid(0x8000_0000).eax;
    if max_ext < 0x8000_0007 {
        return false;
    }
    let edx = __cpuid(0x8000_0007).edx;
    edx & (1 << 8) != 0
}

/// TSC frequency from CPUID leaf 0x15 (crystal ratio) or, failing that, 0x16 (base MHz), in kHz.
pub fn cpuid_tsc_khz() -> Option<u64> {
    let max_leaf = __cpuid(0).eax;
    if max_leaf >= 0x15 {
        let l = __cpuid_count(0x15, 0);
        if l.eax != 0 && l.ebx != 0 && l.ecx != 0 {
            return Some(l.ecx as u64 * l.ebx as u64 / l.eax as u64 / 1000);
        }
    }
    if max_leaf >= 0x16 {
        let l = __cpuid_count(0x16, 0);
        if l.eax & 0xffff != 0 {
            return Some((l.eax & 0xffff) as u64 * 1000);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_advances() {
        let a = rdtsc();
        let b = rdtsc_fenced();
        let c = read();
        assert!(a < b && b < c, "{a} {b} {c}");
    }
}
