//! A global allocator and a safe API for this repository's allocator, an independent
//! implementation of the mimalloc v2 interface.
//!
//! A drop-in for the `mimalloc` crate: the type is [`MiMalloc`], with the same behaviour
//! (`alloc` uses `mi_malloc_aligned`, `alloc_zeroed` `mi_zalloc_aligned`, `realloc`
//! `mi_realloc_aligned`, `dealloc` `mi_free`) and the same inherent methods, so that switching
//! is a one-line change in `Cargo.toml`:
//!
//! ```toml
//! mimalloc = { package = "mimalloc-compat", path = "../mimalloc/bindings/rust/mimalloc-compat" }
//! ```
//!
//! ```
//! use mimalloc_compat::MiMalloc;   // `use mimalloc::MiMalloc;` after the switch above
//!
//! #[global_allocator]
//! static GLOBAL: MiMalloc = MiMalloc;
//!
//! let v: Vec<u64> = (0..1000).collect();
//! assert!(mimalloc_compat::is_in_heap_region(v.as_ptr().cast()));
//! assert_eq!(GLOBAL.version(), 20401);
//! ```
//!
//! Beyond the global allocator: first-class [`Heap`]s, [`MiOption`]s, statistics
//! ([`stats`]), the sampling heap profiler ([`profile`]), and the raw bindings as [`ffi`].
//! The `v3` feature adds the module `v3`: mimalloc v3's heaps that any thread allocates in,
//! its main heap and theaps, and its option numbers.
#![warn(missing_docs)]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

pub use mimalloc_compat_sys as ffi;

mod heap;
pub mod options;
pub mod profile;
pub mod stats;
#[cfg(feature = "v3")]
pub mod v3;

pub use heap::{Heap, HeapArea};
pub use options::MiOption;
pub use stats::{ProcessInfo, StatsJson};

/// The examples of the package README run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The allocator as a [`GlobalAlloc`]: `#[global_allocator] static GLOBAL: MiMalloc = MiMalloc;`
///
/// Every block comes from the calling thread's default heap; a block may be freed by any
/// thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct MiMalloc;

unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ffi::mi_malloc_aligned(layout.size(), layout.align()).cast()
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ffi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        ffi::mi_free(ptr.cast())
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ffi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
    }
}

impl MiMalloc {
    /// The version of the linked library (`MI_MALLOC_VERSION`: 20401 is the v2.4.1 interface).
    pub fn version(&self) -> u32 {
        version()
    }

    /// The usable size of the block at `ptr`: at least the size it was allocated with.
    ///
    /// # Safety
    /// `ptr` must be null or point to a live block of this allocator.
    pub unsafe fn usable_size(&self, ptr: *const u8) -> usize {
        usable_size(ptr)
    }

    /// All statistics as a JSON object (`mi_stats_get_json`), in a block of this allocator.
    pub fn stats_json() -> Result<StatsJson, &'static str> {
        StatsJson::get()
    }
}

/// The version of the linked library (`mi_version`), e.g. 20401.
pub fn version() -> u32 {
    unsafe { ffi::mi_version() as u32 }
}

/// The usable size of the block at `ptr` (0 for null).
///
/// # Safety
/// `ptr` must be null or point to a live block of this allocator.
pub unsafe fn usable_size(ptr: *const u8) -> usize {
    ffi::mi_usable_size(ptr.cast())
}

/// The usable size that an allocation of `size` bytes would receive.
pub fn good_size(size: usize) -> usize {
    unsafe { ffi::mi_good_size(size) }
}

/// Whether `ptr` points into memory managed by this allocator (constant time; any pointer
/// may be passed).
pub fn is_in_heap_region(ptr: *const u8) -> bool {
    unsafe { ffi::mi_is_in_heap_region(ptr.cast()) }
}

/// Whether `ptr` lies in a page of the calling thread's default heap (a linear scan; any
/// pointer may be passed).
pub fn check_owned(ptr: *const u8) -> bool {
    unsafe { ffi::mi_check_owned(ptr.cast()) }
}

/// Collects the calling thread's default heap: processes delayed frees and returns empty
/// pages; `force` also purges memory that is not in use right away.
pub fn collect(force: bool) {
    unsafe { ffi::mi_collect(force) }
}

/// Frees a block of this allocator, from any thread.
///
/// # Safety
/// `ptr` must be null or a live block of this allocator that is not used afterwards.
pub unsafe fn free(ptr: *mut u8) {
    ffi::mi_free(ptr.cast::<c_void>())
}

#[cfg(feature = "allocator-api2")]
mod api2 {
    use super::MiMalloc;
    use allocator_api2::alloc::{AllocError, Allocator};
    use core::alloc::Layout;
    use core::ptr::NonNull;

    /// The default heap of the calling thread as an `allocator_api2` allocator.
    unsafe impl Allocator for MiMalloc {
        fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            let p = unsafe { crate::ffi::mi_malloc_aligned(layout.size(), layout.align()) };
            NonNull::new(p.cast::<u8>())
                .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
                .ok_or(AllocError)
        }

        fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            let p = unsafe { crate::ffi::mi_zalloc_aligned(layout.size(), layout.align()) };
            NonNull::new(p.cast::<u8>())
                .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
                .ok_or(AllocError)
        }

        unsafe fn deallocate(&self, ptr: NonNull<u8>, _layout: Layout) {
            crate::ffi::mi_free(ptr.as_ptr().cast())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_alloc_methods_respect_size_and_alignment() {
        let a = MiMalloc;
        for &align in &[1usize, 8, 16, 64, 4096, 1 << 20] {
            for &size in &[0usize, 1, 24, 1000, 100_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    assert!(a.usable_size(p) >= size);
                    p.write_bytes(0xAB, size);
                    let q = a.realloc(p, layout, size * 2 + 8);
                    assert!(!q.is_null());
                    assert_eq!(q as usize % align, 0);
                    assert!((0..size).all(|i| *q.add(i) == 0xAB), "realloc keeps the contents");
                    a.dealloc(q, Layout::from_size_align(size * 2 + 8, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert!(!z.is_null() && z as usize % align == 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }

    #[test]
    fn version_matches_the_header() {
        assert_eq!(MiMalloc.version(), ffi::MI_MALLOC_VERSION as u32);
        assert_eq!(version(), 20401);
    }

    #[test]
    fn usable_and_good_size() {
        assert!(good_size(10) >= 10);
        unsafe {
            let p = ffi::mi_malloc(10).cast::<u8>();
            let u = usable_size(p);
            assert!(u >= 10);
            assert_eq!(MiMalloc.usable_size(p), u);
            free(p);
            assert_eq!(usable_size(core::ptr::null()), 0);
        }
    }

    #[test]
    fn region_and_ownership_checks() {
        let on_stack = 5u64;
        assert!(!is_in_heap_region(&on_stack as *const u64 as *const u8));
        assert!(!is_in_heap_region(core::ptr::null()));
        unsafe {
            let p = ffi::mi_malloc(64).cast::<u8>();
            assert!(is_in_heap_region(p));
            assert!(check_owned(p));
            assert!(!check_owned(&on_stack as *const u64 as *const u8));
            free(p);
        }
        collect(false);
        collect(true);
    }

    #[test]
    fn stats_json_is_json() {
        let json = MiMalloc::stats_json().unwrap();
        let s = json.to_str().unwrap();
        assert!(s.trim_start().starts_with('{') && s.trim_end().ends_with('}'), "{s}");
    }

    #[cfg(feature = "allocator-api2")]
    #[test]
    fn allocator_api2_default_heap() {
        let mut v = allocator_api2::vec::Vec::new_in(MiMalloc);
        v.extend(0..10_000u32);
        assert!(is_in_heap_region(v.as_ptr().cast()));
        assert_eq!(v.iter().map(|&x| x as u64).sum::<u64>(), 49_995_000);
    }
}
