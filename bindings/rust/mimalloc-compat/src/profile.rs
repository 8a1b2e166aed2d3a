//! The sampling heap profiler (`mi_profile_start`, `mi_profile_dump`): about one allocation
//! per `rate` bytes is recorded with its call stack, and a dump writes what is in use and what
//! was allocated per call site.
//!
//! The profiler exists in release builds on Linux only: in the `secure` and `debug` builds
//! (and on other systems) [`start`] and [`dump`] return false. Once on, it stays on for the
//! life of the process.
//!
//! ```
//! use mimalloc_compat::{profile, MiMalloc};
//!
//! #[global_allocator]
//! static GLOBAL: MiMalloc = MiMalloc;
//!
//! if profile::start(64 * 1024) {                        // false: not in this build
//!     let v: Vec<Vec<u8>> = (0..100).map(|_| vec![1u8; 10_000]).collect();
//!     let base = std::env::temp_dir().join(format!("doc-profile-{}", std::process::id()));
//!     assert!(profile::dump(&base));                     // base.pb, base.txt, base.*.folded
//!     for ext in profile::FILE_SUFFIXES {
//!         let mut file = base.clone().into_os_string();
//!         file.push(ext);
//!         std::fs::remove_file(file).unwrap();
//!     }
//!     drop(v);
//! }
//! ```
//!
//! Without a call, the environment switches it on at start-up: `MIMALLOC_PROFILE=path` (the
//! profile is written at exit), `MIMALLOC_PROFILE_RATE` (bytes), `MIMALLOC_PROFILE_MAX` (MiB
//! cap of the profiler's store, default 64), `MIMALLOC_PROFILE_DEPTH` (frames, default 64)
//! and `MIMALLOC_PROFILE_INTERVAL` (seconds between periodic dumps to `path.NNNN.*`).

use crate::ffi;
use std::ffi::CString;
use std::path::Path;

/// The suffixes that [`dump`] appends to its path: the pprof profile, the top call sites as
/// text, and the in-use and allocated flame graphs (folded stacks).
pub const FILE_SUFFIXES: [&str; 4] = [".pb", ".txt", ".inuse.folded", ".alloc.folded"];

/// Switches the profiler on (`mi_profile_start`): every thread samples about one allocation
/// per `rate` bytes allocated (0: 512 KiB) from its next allocation on. True if the profiler
/// is on; a second call keeps the rate of the first. False in builds without the profiler.
pub fn start(rate: usize) -> bool {
    unsafe { ffi::mi_profile_start(rate) }
}

/// Writes the profile now (`mi_profile_dump`) to four files: `path` with each of
/// [`FILE_SUFFIXES`] appended; `%p` in `path` is replaced by the process id. True if all four
/// were written; false if the profiler is off or not in this build, or if `path` is empty or
/// contains a NUL byte.
pub fn dump<P: AsRef<Path>>(path: P) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_ref().as_os_str().as_bytes();
    if bytes.is_empty() {
        return false;
    }
    match CString::new(bytes) {
        Ok(c) => unsafe { ffi::mi_profile_dump(c.as_ptr()) },
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The unit tests must not switch the profiler on (it would stay on for every other test
    // of this process): tests/profile.rs does that in a process of its own.
    #[test]
    fn dump_rejects_paths_the_c_library_cannot_take() {
        assert!(!dump(""));
        assert!(!dump("a\0b"));
    }
}
