//! First-class heaps.

use crate::ffi;
use core::alloc::Layout;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// A first-class heap (`mi_heap_t`): allocate in it, then free its blocks one by one or all
/// at once with [`Heap::destroy`].
///
/// A heap belongs to the thread that made it: only that thread may allocate from it, collect,
/// visit, delete or destroy it, so `Heap` is neither `Send` nor `Sync`. Its blocks are
/// ordinary blocks of the allocator: they can be freed with `mi_free` (or by the global
/// allocator, if it is [`MiMalloc`](crate::MiMalloc)) on any thread.
///
/// Dropping a `Heap` deletes it ([`Heap::delete`]): blocks still allocated in it stay valid
/// and move to the thread's default heap.
///
/// ```
/// use mimalloc_compat::Heap;
///
/// let heap = Heap::new();
/// let p = heap.malloc(100);
/// assert!(!p.is_null() && heap.contains(p));
/// unsafe { p.write_bytes(7, 100) };
/// heap.destroy(); // frees `p` and everything else allocated in the heap
/// ```
///
/// A heap cannot be sent to or shared with another thread:
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// needs_send(mimalloc_compat::Heap::new());
/// ```
///
/// ```compile_fail
/// fn needs_sync<T: Sync>(_: &T) {}
/// needs_sync(&mimalloc_compat::Heap::new());
/// ```
#[derive(Debug)]
pub struct Heap {
    ptr: NonNull<ffi::mi_heap_t>,
    // thread-local: neither Send nor Sync
    _thread_local: PhantomData<*mut ffi::mi_heap_t>,
}

/// One area of equally sized blocks of a heap, as passed to the visitor of
/// [`Heap::visit_blocks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapArea {
    /// start of the area
    pub blocks: *mut u8,
    /// bytes reserved for the area
    pub reserved: usize,
    /// bytes committed
    pub committed: usize,
    /// number of blocks in use
    pub used: usize,
    /// usable bytes of each block
    pub block_size: usize,
    /// bytes of each block including padding and metadata
    pub full_block_size: usize,
    /// tag of the heap
    pub heap_tag: i32,
}

impl From<&ffi::mi_heap_area_t> for HeapArea {
    fn from(a: &ffi::mi_heap_area_t) -> Self {
        HeapArea {
            blocks: a.blocks.cast(),
            reserved: a.reserved,
            committed: a.committed,
            used: a.used,
            block_size: a.block_size,
            full_block_size: a.full_block_size,
            heap_tag: a.heap_tag,
        }
    }
}

impl Default for Heap {
    fn default() -> Self {
        Self::new()
    }
}

impl Heap {
    /// A new heap for the calling thread.
    ///
    /// # Panics
    /// When the allocator is out of memory (see [`Heap::try_new`]).
    pub fn new() -> Heap {
        Self::try_new().expect("mi_heap_new: out of memory")
    }

    /// A new heap for the calling thread, or `None` when out of memory.
    pub fn try_new() -> Option<Heap> {
        Self::from_raw(unsafe { ffi::mi_heap_new() })
    }

    /// A new heap with a tag (reported in [`HeapArea::heap_tag`]), a destroy policy
    /// (`allow_destroy` false lets the allocator reclaim its pages into other heaps, and
    /// forbids [`Heap::destroy`]) and an arena (0 = any).
    pub fn new_ex(heap_tag: i32, allow_destroy: bool, arena_id: ffi::mi_arena_id_t) -> Option<Heap> {
        Self::from_raw(unsafe { ffi::mi_heap_new_ex(heap_tag, allow_destroy, arena_id) })
    }

    fn from_raw(ptr: *mut ffi::mi_heap_t) -> Option<Heap> {
        NonNull::new(ptr).map(|ptr| Heap { ptr, _thread_local: PhantomData })
    }

    /// The raw `mi_heap_t*`, for the functions of [`ffi`](crate::ffi).
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

    /// [`Heap::realloc`] keeping an alignment.
    ///
    /// # Safety
    /// As for [`Heap::realloc`].
    pub unsafe fn realloc_aligned(&self, p: *mut u8, newsize: usize, alignment: usize) -> *mut u8 {
        ffi::mi_heap_realloc_aligned(self.as_ptr(), p.cast(), newsize, alignment).cast()
    }

    /// Whether `p` is in a block of this heap (any pointer may be passed).
    pub fn contains(&self, p: *const u8) -> bool {
        unsafe { ffi::mi_heap_contains_block(self.as_ptr(), p.cast()) }
    }

    /// Whether `p` lies in one of this heap's pages (a linear scan; any pointer may be
    /// passed).
    pub fn check_owned(&self, p: *const u8) -> bool {
        unsafe { ffi::mi_heap_check_owned(self.as_ptr(), p.cast()) }
    }

    /// Processes delayed frees and returns empty pages; `force` also purges.
    pub fn collect(&self, force: bool) {
        unsafe { ffi::mi_heap_collect(self.as_ptr(), force) }
    }

    /// Walks the heap's areas and, if `visit_blocks`, each live block. The visitor gets the
    /// area and, for a block, `Some((pointer, usable size))`; it returns false to stop.
    /// Returns true when the walk was completed. The visitor must not allocate from or free
    /// into this heap, and must not panic (a panic cannot unwind through the C library and
    /// aborts).
    pub fn visit_blocks<F>(&self, visit_blocks: bool, mut visitor: F) -> bool
    where
        F: FnMut(&HeapArea, Option<(NonNull<u8>, usize)>) -> bool,
    {
        unsafe extern "C" fn trampoline<F>(
            _heap: *const ffi::mi_heap_t,
            area: *const ffi::mi_heap_area_t,
            block: *mut c_void,
            block_size: usize,
            arg: *mut c_void,
        ) -> bool
        where
            F: FnMut(&HeapArea, Option<(NonNull<u8>, usize)>) -> bool,
        {
            let visitor = &mut *(arg as *mut F);
            let area = HeapArea::from(&*area);
            visitor(&area, NonNull::new(block.cast::<u8>()).map(|b| (b, block_size)))
        }
        unsafe {
            ffi::mi_heap_visit_blocks(
                self.as_ptr(),
                visit_blocks,
                Some(trampoline::<F>),
                &mut visitor as *mut F as *mut c_void,
            )
        }
    }

    /// Deletes the heap; blocks still allocated in it stay valid (they move to the thread's
    /// default heap). The same as dropping it.
    pub fn delete(self) {
        drop(self)
    }

    /// Destroys the heap and frees every block still allocated in it at once.
    ///
    /// Taking `self` by value, this cannot be called while anything borrows the heap (such as
    /// a collection using `&Heap` as its allocator); raw pointers to its blocks dangle
    /// afterwards.
    pub fn destroy(self) {
        let ptr = self.as_ptr();
        core::mem::forget(self);
        unsafe { ffi::mi_heap_destroy(ptr) }
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        unsafe { ffi::mi_heap_delete(self.as_ptr()) }
    }
}

#[cfg(feature = "allocator-api2")]
mod api2 {
    use super::Heap;
    use allocator_api2::alloc::{AllocError, Allocator};
    use core::alloc::Layout;
    use core::ptr::NonNull;

    /// Allocation in a heap through the `allocator_api2` interface: use `&heap` as the
    /// allocator of `allocator_api2::vec::Vec`, `Box` and the like (`&Heap` is an
    /// `Allocator` through `allocator_api2`'s impl for references).
    unsafe impl Allocator for Heap {
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

        unsafe fn grow(
            &self,
            ptr: NonNull<u8>,
            old_layout: Layout,
            new_layout: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            self.resize(ptr, old_layout, new_layout)
        }

        unsafe fn shrink(
            &self,
            ptr: NonNull<u8>,
            old_layout: Layout,
            new_layout: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            self.resize(ptr, old_layout, new_layout)
        }
    }

    impl Heap {
        unsafe fn resize(
            &self,
            ptr: NonNull<u8>,
            old_layout: Layout,
            new_layout: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_functions() {
        let heap = Heap::new();
        let p = heap.malloc(40);
        let z = heap.zalloc(40);
        let c = heap.calloc(10, 4);
        let a = heap.malloc_aligned(40, 256);
        let za = heap.zalloc_aligned(40, 256);
        for q in [p, z, c, a, za] {
            assert!(!q.is_null());
            assert!(heap.contains(q));
            assert!(heap.check_owned(q));
            assert!(crate::is_in_heap_region(q));
        }
        assert_eq!(a as usize % 256, 0);
        assert_eq!(za as usize % 256, 0);
        for q in [z, c, za] {
            assert!((0..40).all(|i| unsafe { *q.add(i) } == 0));
        }
        assert!(heap.calloc(usize::MAX, 2).is_null(), "overflow");
        assert!(heap.malloc_aligned(8, 3).is_null(), "not a power of two");
        unsafe {
            p.write_bytes(9, 40);
            let p2 = heap.realloc(p, 10_000);
            assert!(!p2.is_null() && heap.contains(p2));
            assert!((0..40).all(|i| *p2.add(i) == 9));
            let p3 = heap.realloc_aligned(p2, 20_000, 4096);
            assert_eq!(p3 as usize % 4096, 0);
            for q in [p3, z, c, a, za] {
                crate::free(q);
            }
        }
        let l = Layout::from_size_align(24, 16).unwrap();
        let b = heap.alloc(l).unwrap();
        let bz = heap.alloc_zeroed(l).unwrap();
        assert_eq!(b.as_ptr() as usize % 16, 0);
        assert!((0..24).all(|i| unsafe { *bz.as_ptr().add(i) } == 0));
        heap.collect(true);
        heap.destroy();
    }

    #[test]
    fn contains_is_false_for_other_memory() {
        let heap = Heap::new();
        let other = Heap::new();
        let p = other.malloc(16);
        let local = 0u32;
        assert!(!heap.contains(p));
        assert!(!heap.check_owned(p));
        assert!(!heap.contains(&local as *const u32 as *const u8));
        assert!(!heap.check_owned(&local as *const u32 as *const u8));
        assert!(!heap.contains(core::ptr::null()));
        other.destroy();
    }

    #[test]
    fn delete_keeps_blocks_alive_destroy_frees_them() {
        let heap = Heap::new();
        let p = heap.malloc(1000);
        unsafe { p.write_bytes(0x5A, 1000) };
        heap.delete();
        // the block survived the heap, and is still ours
        assert!(crate::is_in_heap_region(p));
        assert!((0..1000).all(|i| unsafe { *p.add(i) } == 0x5A));
        unsafe { crate::free(p) };

        let heap = Heap::new();
        for _ in 0..1000 {
            assert!(!heap.malloc(64).is_null());
        }
        let mut live = 0;
        heap.visit_blocks(true, |_, b| {
            live += b.is_some() as usize;
            true
        });
        assert_eq!(live, 1000);
        heap.destroy();
    }

    #[test]
    fn visit_blocks_reports_areas_and_blocks() {
        let heap = Heap::new_ex(7, true, 0).unwrap();
        let blocks: Vec<*mut u8> = (0..100).map(|_| heap.malloc(200)).collect();
        let mut areas = 0;
        let mut found = Vec::new();
        let completed = heap.visit_blocks(true, |area, block| {
            assert_eq!(area.heap_tag, 7);
            match block {
                None => areas += 1,
                Some((p, size)) => {
                    assert!(size >= 200 && area.block_size >= 200);
                    found.push(p.as_ptr())
                }
            }
            true
        });
        assert!(completed);
        assert!(areas >= 1);
        found.sort();
        let mut expected = blocks.clone();
        expected.sort();
        assert_eq!(found, expected);
        // stopping early
        let mut calls = 0;
        assert!(!heap.visit_blocks(true, |_, _| {
            calls += 1;
            false
        }));
        assert_eq!(calls, 1);
        // areas only
        let mut used = 0;
        heap.visit_blocks(false, |area, block| {
            assert!(block.is_none());
            used += area.used;
            true
        });
        assert_eq!(used, 100);
        heap.destroy();
    }

    #[test]
    fn blocks_can_be_freed_on_another_thread() {
        let heap = Heap::new();
        let addrs: Vec<usize> = (0..100).map(|i| heap.malloc(32 + i) as usize).collect();
        std::thread::spawn(move || {
            for a in addrs {
                unsafe { crate::free(a as *mut u8) };
            }
        })
        .join()
        .unwrap();
        heap.collect(true);
        let mut live = 0;
        heap.visit_blocks(true, |_, b| {
            live += b.is_some() as usize;
            true
        });
        assert_eq!(live, 0);
    }

    #[cfg(feature = "allocator-api2")]
    #[test]
    fn allocator_api2_in_a_heap() {
        use allocator_api2::vec::Vec as AVec;
        let heap = Heap::new();
        {
            let mut v = AVec::new_in(&heap);
            for i in 0..50_000u64 {
                v.push(i);
            }
            assert!(heap.contains(v.as_ptr().cast()));
            v.truncate(10);
            v.shrink_to_fit();
            assert!(heap.contains(v.as_ptr().cast()));
            assert_eq!(&v[..], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
            let b = allocator_api2::boxed::Box::new_in([1u128; 4], &heap);
            assert!(heap.contains((&*b as *const [u128; 4]).cast()));
            assert_eq!(b.as_ptr() as usize % core::mem::align_of::<u128>(), 0);
        }
        heap.destroy();
    }
}
