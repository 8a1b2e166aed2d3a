//! mimalloc v3's API (the `v3` feature): heaps that any thread allocates in, the main heap
//! of all threads, theaps, and options in v3's numbering. The raw declarations are
//! [`ffi::v3`](crate::ffi::v3); the rest of this crate stays v2's.
//!
//! ```
//! use mimalloc_compat::v3::SharedHeap;
//!
//! let heap = SharedHeap::new();
//! let blocks: Vec<usize> = std::thread::scope(|s| {
//!     let workers: Vec<_> = (0..4).map(|_| s.spawn(|| heap.malloc(64) as usize)).collect();
//!     workers.into_iter().map(|w| w.join().unwrap()).collect()
//! });
//! assert!(blocks.iter().all(|&p| p != 0));
//! heap.destroy(); // frees the blocks every thread allocated in it
//! ```

use crate::ffi;
use crate::ffi::v3 as ffi3;
use core::alloc::Layout;
use core::ffi::{c_int, c_void};
use core::marker::PhantomData;
use core::ptr::NonNull;

/// A heap any thread may allocate in (v3's `mi_heap_new`): each thread allocates in its own
/// part of it (its [`Theap`]), and any thread frees its blocks. `Send` and `Sync`.
///
/// Dropping it deletes it ([`SharedHeap::delete`]); [`SharedHeap::destroy`] frees every block
/// still allocated in it. Both take the heap by value, so no thread can still be allocating
/// in it through a borrow. [`SharedHeap::main`] is the main heap, which is never deleted.
#[derive(Debug)]
pub struct SharedHeap {
    ptr: NonNull<ffi::mi_heap_t>,
    owned: bool,
}

// SAFETY: the library lets any thread allocate in a shared heap and in the main heap; the
// delete and destroy that must not race with allocation take `self` by value.
unsafe impl Send for SharedHeap {}
unsafe impl Sync for SharedHeap {}

impl Default for SharedHeap {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedHeap {
    /// A new heap.
    ///
    /// # Panics
    /// When the allocator is out of memory (see [`SharedHeap::try_new`]).
    pub fn new() -> SharedHeap {
        Self::try_new().expect("mi_heap_new: out of memory")
    }

    /// A new heap, or `None` when out of memory.
    pub fn try_new() -> Option<SharedHeap> {
        NonNull::new(unsafe { ffi3::mi_heap_new() }).map(|ptr| SharedHeap { ptr, owned: true })
    }

    /// A new heap that allocates only in the given (exclusive) arena; it cannot be destroyed
    /// ([`SharedHeap::destroy`] deletes it, with a warning). `None` for an unknown arena or
    /// when out of memory.
    // the id is a number in a pointer, never dereferenced (an unknown one gives `None`)
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn in_arena(arena_id: ffi3::mi_arena_id_t) -> Option<SharedHeap> {
        NonNull::new(unsafe { ffi3::mi_heap_new_in_arena(arena_id) }).map(|ptr| SharedHeap { ptr, owned: true })
    }

    /// The main heap (`mi_heap_main`): one heap for all threads, in which each thread
    /// allocates in its backing heap, as `mi_malloc` does. Dropping, deleting or destroying
    /// this handle does nothing.
    pub fn main() -> SharedHeap {
        let ptr = NonNull::new(unsafe { ffi3::mi_heap_main() }).expect("mi_heap_main returned null");
        SharedHeap { ptr, owned: false }
    }

    /// Whether this is the main heap.
    pub fn is_main(&self) -> bool {
        !self.owned
    }

    /// The raw `mi_heap_t*`, for the functions of [`ffi`] and [`ffi::v3`].
    pub fn as_ptr(&self) -> *mut ffi::mi_heap_t {
        self.ptr.as_ptr()
    }

    /// `size` uninitialised bytes (null when out of memory).
    pub fn malloc(&self, size: usize) -> *mut u8 {
        unsafe { ffi::mi_heap_malloc(self.as_ptr(), size).cast() }
    }

    /// `size` zeroed bytes (null when out of memory).
    pub fn zalloc(&self, size: usize) -> *mut u8 {
        unsafe { ffi::mi_heap_zalloc(self.as_ptr(), size).cast() }
    }

    /// `count * size` zeroed bytes (null on overflow or when out of memory).
    pub fn calloc(&self, count: usize, size: usize) -> *mut u8 {
        unsafe { ffi::mi_heap_calloc(self.as_ptr(), count, size).cast() }
    }

    /// `size` uninitialised bytes aligned to `alignment`, a power of two (else null).
    pub fn malloc_aligned(&self, size: usize, alignment: usize) -> *mut u8 {
        unsafe { ffi::mi_heap_malloc_aligned(self.as_ptr(), size, alignment).cast() }
    }

    /// `size` zeroed bytes aligned to `alignment`, a power of two (else null).
    pub fn zalloc_aligned(&self, size: usize, alignment: usize) -> *mut u8 {
        unsafe { ffi::mi_heap_zalloc_aligned(self.as_ptr(), size, alignment).cast() }
    }

    /// A block for `layout`, or `None` when out of memory.
    pub fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        NonNull::new(self.malloc_aligned(layout.size(), layout.align()))
    }

    /// A zeroed block for `layout`, or `None` when out of memory.
    pub fn alloc_zeroed(&self, layout: Layout) -> Option<NonNull<u8>> {
        NonNull::new(self.zalloc_aligned(layout.size(), layout.align()))
    }

    /// Resizes `p` to `newsize` bytes, moving it into this heap if it must move (null `p`
    /// allocates). On failure returns null and `p` stays valid.
    ///
    /// # Safety
    /// `p` must be null or a live block of this allocator, not used after a non-null return.
    pub unsafe fn realloc(&self, p: *mut u8, newsize: usize) -> *mut u8 {
        ffi::mi_heap_realloc(self.as_ptr(), p.cast(), newsize).cast()
    }

    /// [`SharedHeap::realloc`] keeping an alignment.
    ///
    /// # Safety
    /// As for [`SharedHeap::realloc`].
    pub unsafe fn realloc_aligned(&self, p: *mut u8, newsize: usize, alignment: usize) -> *mut u8 {
        ffi::mi_heap_realloc_aligned(self.as_ptr(), p.cast(), newsize, alignment).cast()
    }

    /// Whether `p` is a block of this heap that the calling thread allocated (v3's
    /// `mi_heap_contains`; for the main heap: a block of the thread's default heap). Any
    /// pointer may be passed.
    pub fn contains(&self, p: *const u8) -> bool {
        unsafe { ffi3::mi_heap_contains(self.as_ptr(), p.cast()) }
    }

    /// The NUMA node whose memory the heap's new pages prefer (`None`: no preference), taken
    /// modulo the nodes in use (`mi_heap_set_numa_affinity`). For the main heap: every
    /// thread's backing heap. A preference: when that node's memory cannot serve, any does.
    pub fn set_numa_affinity(&self, node: Option<usize>) {
        let node = node.map_or(-1, |n| (n % (c_int::MAX as usize)) as c_int);
        unsafe { ffi3::mi_heap_set_numa_affinity(self.as_ptr(), node) }
    }

    /// Processes delayed frees and returns empty pages of the calling thread's part; `force`
    /// also purges.
    pub fn collect(&self, force: bool) {
        unsafe { ffi::mi_heap_collect(self.as_ptr(), force) }
    }

    /// The calling thread's part of the heap, made on first use (`None` when out of memory).
    pub fn theap(&self) -> Option<Theap<'_>> {
        Theap::from_raw(unsafe { ffi3::mi_heap_theap(self.as_ptr()) })
    }

    /// Deletes the heap; blocks still allocated in it stay valid. The same as dropping it.
    pub fn delete(self) {
        drop(self)
    }

    /// Destroys the heap and frees every block still allocated in it, by any thread (another
    /// thread's part is freed at that thread's next allocation slow path, collect or exit).
    /// Raw pointers to its blocks dangle afterwards. Does nothing for the main heap.
    pub fn destroy(self) {
        let (ptr, owned) = (self.as_ptr(), self.owned);
        core::mem::forget(self);
        if owned {
            unsafe { ffi::mi_heap_destroy(ptr) }
        }
    }
}

impl Drop for SharedHeap {
    fn drop(&mut self) {
        if self.owned {
            unsafe { ffi::mi_heap_delete(self.as_ptr()) }
        }
    }
}

#[cfg(feature = "allocator-api2")]
mod api2 {
    use super::SharedHeap;
    use allocator_api2::alloc::{AllocError, Allocator};
    use core::alloc::Layout;
    use core::ptr::NonNull;

    /// Allocation in a shared heap through the `allocator_api2` interface: `&heap` is the
    /// allocator of collections that any thread may grow (`&SharedHeap` is `Send` and an
    /// `Allocator` through `allocator_api2`'s impl for references).
    unsafe impl Allocator for SharedHeap {
        fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            self.alloc(layout)
                .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
                .ok_or(AllocError)
        }

        fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            self.alloc_zeroed(layout)
                .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
                .ok_or(AllocError)
        }

        unsafe fn deallocate(&self, ptr: NonNull<u8>, _layout: Layout) {
            crate::ffi::mi_free(ptr.as_ptr().cast())
        }

        unsafe fn grow(&self, ptr: NonNull<u8>, old_layout: Layout, new_layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            self.resize(ptr, old_layout, new_layout)
        }

        unsafe fn shrink(&self, ptr: NonNull<u8>, old_layout: Layout, new_layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            self.resize(ptr, old_layout, new_layout)
        }
    }

    impl SharedHeap {
        unsafe fn resize(&self, ptr: NonNull<u8>, old_layout: Layout, new_layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            if new_layout.align() != old_layout.align() {
                // a changed alignment: allocate, copy, free
                let new = self.alloc(new_layout).ok_or(AllocError)?;
                let n = old_layout.size().min(new_layout.size());
                core::ptr::copy_nonoverlapping(ptr.as_ptr(), new.as_ptr(), n);
                crate::ffi::mi_free(ptr.as_ptr().cast());
                return Ok(NonNull::slice_from_raw_parts(new, new_layout.size()));
            }
            let p = self.realloc_aligned(ptr.as_ptr(), new_layout.size(), new_layout.align());
            NonNull::new(p)
                .map(|p| NonNull::slice_from_raw_parts(p, new_layout.size()))
                .ok_or(AllocError)
        }
    }
}

/// Calls `visitor` with the main heap, then with each heap from [`SharedHeap::new`] (or
/// [`SharedHeap::in_arena`]) that the calling thread's subprocess made and did not delete,
/// until it returns false; returns false if it did (`mi_subproc_visit_heaps`). The visitor
/// gets the raw heap (compare it with [`SharedHeap::as_ptr`]); it runs under a lock, so it
/// must not make, drop, delete or destroy a heap, and must not panic (a panic cannot unwind
/// through the C library and aborts).
pub fn visit_heaps<F>(mut visitor: F) -> bool
where
    F: FnMut(*mut ffi::mi_heap_t) -> bool,
{
    unsafe extern "C" fn trampoline<F>(heap: *mut ffi::mi_heap_t, arg: *mut c_void) -> bool
    where
        F: FnMut(*mut ffi::mi_heap_t) -> bool,
    {
        (*(arg as *mut F))(heap)
    }
    unsafe {
        ffi3::mi_subproc_visit_heaps(ffi3::mi_subproc_current(), Some(trampoline::<F>), &mut visitor as *mut F as *mut c_void)
    }
}

/// Whether `p` lies in a page of this allocator that is in use, of any heap of any thread
/// or abandoned (v3's `mi_check_owned`, `mi_any_heap_contains`). Any pointer may be passed.
pub fn check_owned(p: *const u8) -> bool {
    unsafe { ffi3::mi_check_owned(p.cast()) }
}

/// One thread's part of a heap (`mi_theap_t`): only that thread allocates in it, so it is
/// neither `Send` nor `Sync`, and it cannot outlive its heap.
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// let heap = mimalloc_compat::v3::SharedHeap::new();
/// needs_send(heap.theap().unwrap());
/// ```
#[derive(Debug)]
pub struct Theap<'a> {
    ptr: NonNull<ffi3::mi_theap_t>,
    _heap: PhantomData<(&'a SharedHeap, *mut ffi3::mi_theap_t)>,
}

impl Theap<'static> {
    /// The calling thread's default theap (where `mi_malloc` allocates).
    pub fn default_theap() -> Theap<'static> {
        Theap::from_raw(unsafe { ffi3::mi_theap_get_default() }).expect("mi_theap_get_default returned null")
    }
}

impl<'a> Theap<'a> {
    fn from_raw(ptr: *mut ffi3::mi_theap_t) -> Option<Theap<'a>> {
        NonNull::new(ptr).map(|ptr| Theap { ptr, _heap: PhantomData })
    }

    /// The raw `mi_theap_t*`, for the functions of [`ffi::v3`].
    pub fn as_ptr(&self) -> *mut ffi3::mi_theap_t {
        self.ptr.as_ptr()
    }

    /// `size` uninitialised bytes (null when out of memory).
    pub fn malloc(&self, size: usize) -> *mut u8 {
        unsafe { ffi3::mi_theap_malloc(self.as_ptr(), size).cast() }
    }

    /// `size` zeroed bytes (null when out of memory).
    pub fn zalloc(&self, size: usize) -> *mut u8 {
        unsafe { ffi3::mi_theap_zalloc(self.as_ptr(), size).cast() }
    }

    /// `count * size` zeroed bytes (null on overflow or when out of memory).
    pub fn calloc(&self, count: usize, size: usize) -> *mut u8 {
        unsafe { ffi3::mi_theap_calloc(self.as_ptr(), count, size).cast() }
    }

    /// `size` uninitialised bytes, by the small-block fast path when `size` is at most
    /// [`ffi::MI_SMALL_SIZE_MAX`] (else as [`Theap::malloc`]).
    pub fn malloc_small(&self, size: usize) -> *mut u8 {
        if size > ffi::MI_SMALL_SIZE_MAX {
            return self.malloc(size);
        }
        unsafe { ffi3::mi_theap_malloc_small(self.as_ptr(), size).cast() }
    }

    /// `size` zeroed bytes, by the small-block fast path when `size` is at most
    /// [`ffi::MI_SMALL_SIZE_MAX`] (else as [`Theap::zalloc`]).
    pub fn zalloc_small(&self, size: usize) -> *mut u8 {
        if size > ffi::MI_SMALL_SIZE_MAX {
            return self.zalloc(size);
        }
        unsafe { ffi3::mi_theap_zalloc_small(self.as_ptr(), size).cast() }
    }

    /// `size` uninitialised bytes aligned to `alignment`, a power of two (else null).
    pub fn malloc_aligned(&self, size: usize, alignment: usize) -> *mut u8 {
        unsafe { ffi3::mi_theap_malloc_aligned(self.as_ptr(), size, alignment).cast() }
    }

    /// Resizes `p` as [`SharedHeap::realloc`], allocating in this theap if it must move.
    ///
    /// # Safety
    /// `p` must be null or a live block of this allocator, not used after a non-null return.
    pub unsafe fn realloc(&self, p: *mut u8, newsize: usize) -> *mut u8 {
        ffi3::mi_theap_realloc(self.as_ptr(), p.cast(), newsize).cast()
    }

    /// Processes delayed frees and returns empty pages; `force` also purges.
    pub fn collect(&self, force: bool) {
        unsafe { ffi3::mi_theap_collect(self.as_ptr(), force) }
    }

    /// The number of live blocks in this theap and their total usable size (a walk of its
    /// blocks, `mi_theap_visit_blocks`).
    pub fn live_blocks(&self) -> (usize, usize) {
        unsafe extern "C" fn count(
            _heap: *const ffi::mi_heap_t,
            _area: *const ffi3::mi_heap_area_t,
            block: *mut c_void,
            block_size: usize,
            arg: *mut c_void,
        ) -> bool {
            let total = &mut *(arg as *mut (usize, usize));
            if !block.is_null() {
                total.0 += 1;
                total.1 += block_size;
            }
            true
        }
        let mut total = (0usize, 0usize);
        unsafe {
            ffi3::mi_theap_visit_blocks(self.as_ptr(), true, Some(count), &mut total as *mut (usize, usize) as *mut c_void);
        }
        total
    }
}

/// An option's value, by v3's number (`mimalloc_compat::ffi::v3::mi_option_*`); an option
/// only v3 has reads back what the program set (it changes nothing here), an unknown number
/// reads 0.
pub fn option_get(option: ffi3::mi_option_t) -> i64 {
    unsafe { ffi3::mi_option_get(option) as i64 }
}

/// Sets an option by v3's number (the environment no longer overrides it); an unknown number
/// is ignored.
pub fn option_set(option: ffi3::mi_option_t, value: i64) {
    unsafe { ffi3::mi_option_set(option, value as core::ffi::c_long) }
}

/// Whether an option (by v3's number) is non-zero.
pub fn option_is_enabled(option: ffi3::mi_option_t) -> bool {
    unsafe { ffi3::mi_option_is_enabled(option) }
}
