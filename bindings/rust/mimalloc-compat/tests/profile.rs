//! The sampling heap profiler through the safe API and the sys crate, with `MiMalloc` as the
//! global allocator. A process of its own: once on, the profiler stays on, so the other test
//! binaries never see it. It exists in release builds on Linux only; in the `secure` and
//! `debug` builds (and elsewhere) both calls must return false.

use mimalloc_compat::{ffi, profile, MiMalloc};
use std::ffi::CString;
use std::path::{Path, PathBuf};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const DEBUG: bool = cfg!(feature = "debug") || (cfg!(feature = "debug_in_debug") && cfg!(debug_assertions));
const SECURE: bool = cfg!(feature = "secure");
const AVAILABLE: bool = cfg!(target_os = "linux") && !DEBUG && !SECURE;

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("mimalloc-compat-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn with_suffix(base: &Path, suffix: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn assert_written(base: &Path) {
    for suffix in profile::FILE_SUFFIXES {
        let file = with_suffix(base, suffix);
        let meta = std::fs::metadata(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(meta.len() > 0, "{} is empty", file.display());
    }
}

// One test function: the steps depend on each other (the profiler is switched on once).
#[test]
fn start_allocate_and_dump() {
    let dir = TempDir::new("profile");

    // before the start: nothing to dump
    assert!(!profile::dump(dir.0.join("early")), "a dump before the profiler is on");

    assert_eq!(profile::start(4096), AVAILABLE, "profile::start(4096)");
    // a second call keeps the profiler (and its rate) on
    assert_eq!(unsafe { ffi::mi_profile_start(0) }, AVAILABLE, "a second mi_profile_start");

    // a few MB through the global allocator: small, medium and large blocks, some kept
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let mut total = 0usize;
    for i in 0..4000usize {
        let size = [24, 200, 3000, 40_000][i % 4];
        let v = vec![i as u8; size];
        total += size;
        if i % 3 == 0 {
            kept.push(v);
        }
    }
    let s: String = (0..100_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let big = vec![7u64; 1 << 18]; // 2 MiB
    assert!(total > 4 << 20);

    // with threads allocating too
    let handles: Vec<_> = (0..4)
        .map(|t| std::thread::spawn(move || (0..2000).map(|i| vec![t as u8; 64 + i]).collect::<Vec<_>>()))
        .collect();
    let from_threads: Vec<Vec<Vec<u8>>> = handles.into_iter().map(|h| h.join().unwrap()).collect();

    let base = dir.0.join("prof");
    assert_eq!(profile::dump(&base), AVAILABLE, "profile::dump");
    if AVAILABLE {
        assert_written(&base);
    } else {
        for suffix in profile::FILE_SUFFIXES {
            assert!(!with_suffix(&base, suffix).exists());
        }
    }

    // the raw call, with "%p" for the process id
    let pattern = dir.0.join("raw-%p");
    let c = CString::new(pattern.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { ffi::mi_profile_dump(c.as_ptr()) }, AVAILABLE, "mi_profile_dump");
    if AVAILABLE {
        assert_written(&dir.0.join(format!("raw-{}", std::process::id())));
    }

    assert!(kept.iter().all(|v| v.iter().all(|&b| b == v[0])));
    assert_eq!(s.len(), 100_000);
    assert_eq!(big.iter().sum::<u64>(), 7 << 18);
    assert_eq!(from_threads.iter().map(Vec::len).sum::<usize>(), 8000);
}
