// SPDX-License-Identifier: MIT
/**
Allocators for `std.experimental.allocator` on top of the C library.

$(UL
  $(LI `Mimallocator`: the process-wide allocator, used like Phobos' `Mallocator`
       (`Mimallocator.instance`), thread-safe.)
  $(LI `MiHeapAllocator`: a first-class heap of its own (`mi_heap_new`), for one thread;
       everything allocated in it can be released at once with `deallocateAll`.)
  $(LI `MiGCScannedAllocator`: like `Mimallocator`, but every block is registered with the
       D garbage collector (`GC.addRange`) while it is allocated, so it may hold the only
       references to GC-allocated objects.)
)

$(B The GC does not scan memory from this allocator.) A GC-allocated object (`new`, array
appends, closures, ...) whose only reference is stored in a block from `Mimallocator` or
`MiHeapAllocator` is collected, and the reference dangles. Either register the block while
it holds such references (`GC.addRange(p, size)` after allocating, `GC.removeRange(p)`
before freeing), or allocate it with `MiGCScannedAllocator`, which does both.
*/
module mimalloc.allocator;

import core.memory : GC;
import core.stdc.string : memcpy;
import std.experimental.allocator.common : platformAlignment;
import std.typecons : Ternary;

import mimalloc.capi;

/// Blocks of at least this many bytes are aligned to `platformAlignment` (16 on x86-64)
/// by the C library; smaller ones only to 8. The allocators below ask for at least this
/// much, so that every block they return honours their `alignment`.
private enum size_t minBlock = platformAlignment;

private size_t atLeastMin(size_t n) @safe @nogc nothrow pure
{
    return n < minBlock ? minBlock : n;
}

/// The alignment to ask the C library for: `a`, at least `minBlock`; 0 when `a` is not a
/// power of two (the callers then fail without calling the C library).
private size_t alignArg(uint a) @safe @nogc nothrow pure
{
    if (a == 0 || (a & (a - 1)) != 0)
        return 0;
    return a < minBlock ? minBlock : a;
}

/// mi_free as a `pure` function, as Phobos' `pureFree` is for `free` (Phobos' allocator
/// objects call `deallocate` from `pure` code). Freeing changes no state visible to D code
/// other than the block itself, and mi_free leaves errno alone.
private void pureMiFree(void* p) @trusted @nogc nothrow pure
{
    alias PureFree = extern (C) void function(void*) @nogc nothrow pure;
    (cast(PureFree) &mi_free)(p);
}

/**
The process-wide allocator (the thread's default heap of the C library), a drop-in for
Phobos' `Mallocator`: `Mimallocator.instance` works with `make`, `dispose`, `makeArray`,
`allocatorObject`, `sharedAllocatorObject` and the building blocks of
`std.experimental.allocator`. Thread-safe; a block may be freed by any thread.
*/
struct Mimallocator
{
    /// Every block is aligned at least to this (16 on x86-64).
    enum uint alignment = platformAlignment;

@trusted @nogc nothrow:

    /// A block of exactly `bytes` bytes (null for 0 or when out of memory).
    void[] allocate(size_t bytes) shared const
    {
        if (bytes == 0)
            return null;
        auto p = mi_malloc(atLeastMin(bytes));
        return p is null ? null : p[0 .. bytes];
    }

    /// A block of `bytes` bytes aligned to `a` (a power of two; null otherwise).
    void[] alignedAllocate(size_t bytes, uint a) shared const
    {
        if (bytes == 0)
            return null;
        if (alignArg(a) == 0)
            return null;
        auto p = mi_malloc_aligned(atLeastMin(bytes), alignArg(a));
        return p is null ? null : p[0 .. bytes];
    }

    /// A zero-filled block of `bytes` bytes.
    void[] allocateZeroed(size_t bytes) shared const
    {
        if (bytes == 0)
            return null;
        auto p = mi_zalloc(atLeastMin(bytes));
        return p is null ? null : p[0 .. bytes];
    }

    /// Frees `b` (a block of this allocator or of any other `mi_` function; null is fine).
    bool deallocate(void[] b) shared const pure
    {
        pureMiFree(b.ptr);
        return true;
    }

    /// Resizes `b` to `s` bytes, moving it if needed; `s == 0` frees it. On failure `b`
    /// is unchanged and false is returned.
    bool reallocate(ref void[] b, size_t s) shared const
    {
        if (s == 0)
        {
            mi_free(b.ptr);
            b = null;
            return true;
        }
        auto p = mi_realloc(b.ptr, atLeastMin(s));
        if (p is null)
            return false;
        b = p[0 .. s];
        return true;
    }

    /// Resizes `b` to `s` bytes keeping the alignment `a`.
    bool alignedReallocate(ref void[] b, size_t s, uint a) shared const
    {
        if (s == 0)
        {
            mi_free(b.ptr);
            b = null;
            return true;
        }
        if (alignArg(a) == 0)
            return false;
        auto p = mi_realloc_aligned(b.ptr, atLeastMin(s), alignArg(a));
        if (p is null)
            return false;
        b = p[0 .. s];
        return true;
    }

    /// Grows `b` by `delta` bytes in place (never moves it); false if the block has no
    /// room for that.
    bool expand(ref void[] b, size_t delta) shared const
    {
        if (delta == 0)
            return true;
        if (b is null)
            return false;
        const s = b.length + delta;
        if (s < b.length)
            return false; // overflow
        if (mi_expand(b.ptr, s) is null)
            return false;
        b = b.ptr[0 .. s];
        return true;
    }

    /// The size a request of `n` bytes really gets (`mi_good_size`).
    size_t goodAllocSize(size_t n) shared const
    {
        return n == 0 ? 0 : mi_good_size(atLeastMin(n));
    }

    /// `Ternary.yes` if `b` lies in memory managed by the allocator (any heap, any
    /// thread), `Ternary.no` otherwise; constant time (`mi_is_in_heap_region`).
    Ternary owns(const void[] b) shared const
    {
        return Ternary(b.ptr !is null && mi_is_in_heap_region(b.ptr));
    }

    /// The global instance, as `Mallocator.instance`.
    static shared Mimallocator instance;
}

/**
A first-class heap (`mi_heap_new`) as an allocator. Heaps belong to the thread that created
them: allocate, `deallocateAll` and destroy it on that thread only (blocks may be freed by
`deallocate` from any thread). Not copyable; pass it by reference or pointer
(`allocatorObject(&heap)`).

When the allocator is destroyed, the heap is deleted: blocks still allocated stay valid and
move to the thread's default heap. `deallocateAll` frees every block at once.
*/
struct MiHeapAllocator
{
    /// Every block is aligned at least to this (16 on x86-64).
    enum uint alignment = platformAlignment;

    private mi_heap_t* heap_;
    private int tag_;
    private mi_arena_id_t arena_;

    @disable this(this);

    /// A new heap for the calling thread (`mi_heap_new_ex(tag, true, arena)`); check
    /// `heap !is null` for out of memory.
    this(int tag, mi_arena_id_t arena = 0) @trusted @nogc nothrow
    {
        tag_ = tag;
        arena_ = arena;
        heap_ = mi_heap_new_ex(tag, true, arena);
    }

    /// ditto, with tag 0 and no particular arena.
    static MiHeapAllocator create() @trusted @nogc nothrow
    {
        return MiHeapAllocator(0);
    }

    ~this() @trusted @nogc nothrow
    {
        if (heap_ !is null)
            mi_heap_delete(heap_);
        heap_ = null;
    }

    /// The C heap (for the `mi_heap_*` functions).
    inout(mi_heap_t)* heap() inout @safe @nogc nothrow pure
    {
        return heap_;
    }

@trusted @nogc nothrow:

    ///
    void[] allocate(size_t bytes)
    {
        if (bytes == 0 || heap_ is null)
            return null;
        auto p = mi_heap_malloc(heap_, atLeastMin(bytes));
        return p is null ? null : p[0 .. bytes];
    }

    ///
    void[] alignedAllocate(size_t bytes, uint a)
    {
        if (bytes == 0 || heap_ is null)
            return null;
        if (alignArg(a) == 0)
            return null;
        auto p = mi_heap_malloc_aligned(heap_, atLeastMin(bytes), alignArg(a));
        return p is null ? null : p[0 .. bytes];
    }

    ///
    void[] allocateZeroed(size_t bytes)
    {
        if (bytes == 0 || heap_ is null)
            return null;
        auto p = mi_heap_zalloc(heap_, atLeastMin(bytes));
        return p is null ? null : p[0 .. bytes];
    }

    /// Frees `b` (from any thread).
    bool deallocate(void[] b) pure
    {
        pureMiFree(b.ptr);
        return true;
    }

    /// Resizes `b`; a moved block is allocated in this heap.
    bool reallocate(ref void[] b, size_t s)
    {
        if (s == 0)
        {
            mi_free(b.ptr);
            b = null;
            return true;
        }
        if (heap_ is null)
            return false;
        auto p = mi_heap_realloc(heap_, b.ptr, atLeastMin(s));
        if (p is null)
            return false;
        b = p[0 .. s];
        return true;
    }

    ///
    bool alignedReallocate(ref void[] b, size_t s, uint a)
    {
        if (s == 0)
        {
            mi_free(b.ptr);
            b = null;
            return true;
        }
        if (heap_ is null)
            return false;
        if (alignArg(a) == 0)
            return false;
        auto p = mi_heap_realloc_aligned(heap_, b.ptr, atLeastMin(s), alignArg(a));
        if (p is null)
            return false;
        b = p[0 .. s];
        return true;
    }

    /// Grows `b` in place (`mi_expand`).
    bool expand(ref void[] b, size_t delta)
    {
        return Mimallocator.instance.expand(b, delta);
    }

    ///
    size_t goodAllocSize(size_t n)
    {
        return Mimallocator.instance.goodAllocSize(n);
    }

    /// Whether `b` lies in one of this heap's pages (`mi_heap_check_owned`: a walk over
    /// the heap's pages, not constant time).
    Ternary owns(const void[] b)
    {
        return Ternary(heap_ !is null && b.ptr !is null && mi_heap_check_owned(heap_, b.ptr));
    }

    /// Frees every block of the heap at once (`mi_heap_destroy`) and starts a new heap
    /// with the same tag and arena.
    bool deallocateAll()
    {
        if (heap_ is null)
            return false;
        mi_heap_destroy(heap_);
        heap_ = mi_heap_new_ex(tag_, true, arena_);
        return heap_ !is null;
    }

    /// `Ternary.yes` if no block of this heap is allocated.
    Ternary empty()
    {
        if (heap_ is null)
            return Ternary.yes;
        size_t used = 0;
        mi_heap_visit_blocks(heap_, false, &countUsed, &used);
        return Ternary(used == 0);
    }

    private static extern (C) bool countUsed(const(mi_heap_t)*, const(mi_heap_area_t)* area,
                                             void*, size_t, void* arg) nothrow
    {
        *cast(size_t*) arg += area.used;
        return true;
    }
}

/**
Like `Mimallocator`, for blocks that hold references to GC-allocated memory: every block is
zero-filled and registered with the D garbage collector (`GC.addRange`) from allocation to
deallocation, so the GC scans it and keeps the objects it refers to alive. Blocks must be
freed through this allocator (`deallocate`, `dispose`), which also unregisters them.

Costs over `Mimallocator`: the zero fill, the GC's range registration (a lock and a list
insertion/removal per block) and a longer mark phase; use it only for blocks that hold GC
references. `reallocate` always moves the block (new block registered before the old one is
unregistered, so a collection running in between sees the references in one of them).
*/
struct MiGCScannedAllocator
{
    /// Every block is aligned at least to this (16 on x86-64).
    enum uint alignment = platformAlignment;

@trusted nothrow:

    ///
    void[] allocate(size_t bytes) shared const
    {
        if (bytes == 0)
            return null;
        auto p = mi_zalloc(atLeastMin(bytes));
        if (p is null)
            return null;
        GC.addRange(p, bytes);
        return p[0 .. bytes];
    }

    ///
    void[] alignedAllocate(size_t bytes, uint a) shared const
    {
        if (bytes == 0)
            return null;
        if (alignArg(a) == 0)
            return null;
        auto p = mi_zalloc_aligned(atLeastMin(bytes), alignArg(a));
        if (p is null)
            return null;
        GC.addRange(p, bytes);
        return p[0 .. bytes];
    }

    ///
    bool deallocate(void[] b) shared const
    {
        if (b.ptr is null)
            return true;
        GC.removeRange(b.ptr);
        mi_free(b.ptr);
        return true;
    }

    ///
    bool reallocate(ref void[] b, size_t s) shared const
    {
        if (s == 0)
        {
            deallocate(b);
            b = null;
            return true;
        }
        auto n = allocate(s);
        if (n is null)
            return false;
        memcpy(n.ptr, b.ptr, b.length < s ? b.length : s);
        deallocate(b);
        b = n;
        return true;
    }

    ///
    size_t goodAllocSize(size_t n) shared const
    {
        return Mimallocator.instance.goodAllocSize(n);
    }

    ///
    Ternary owns(const void[] b) shared const
    {
        return Mimallocator.instance.owns(b);
    }

    /// The global instance.
    static shared MiGCScannedAllocator instance;
}
