//! Gives the system back the memory the allocator keeps after the program freed it.
//!
//! glibc's allocator returns freed memory only from the top of each arena: after the whole
//! trace's logical form and its loop nests are freed, the small blocks they were made of stay
//! resident (about 550 MB for a trace of 5 million calls), and the trace read again for a cut
//! cannot use them, since vectors that large are mapped apart. `build` calls [`release`] where
//! it has just freed a stage, before the next one grows.

/// Returns the free pages of every arena of glibc's allocator to the system (`malloc_trim(0)`;
/// what is still allocated stays where it is). Returns whether anything was given back.
/// Elsewhere (musl, other systems) it does nothing and returns false.
///
/// # Complexity
/// O(free chunks), tens of milliseconds after a stage of millions of allocations.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn release() -> bool {
    // SAFETY: `malloc_trim` takes no pointer and touches only the allocator's own free lists,
    // which it locks while it runs; no Rust value is read or moved.
    unsafe { nix::libc::malloc_trim(0) == 1 }
}

/// Returns freed memory to the system: nothing to do off glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release() -> bool {
    false
}
