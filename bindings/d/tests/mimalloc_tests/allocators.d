// SPDX-License-Identifier: MIT
/// The std.experimental.allocator allocators, and the variant of the C library linked.
module mimalloc_tests.allocators;

import std.experimental.allocator;
import std.experimental.allocator.building_blocks.free_list : FreeList;
import std.experimental.allocator.common : platformAlignment, stateSize;
import std.typecons : Ternary;
import core.thread : Thread;

import mimalloc;
import mimalloc_tests.headercheck : mimalloc_d_probe_variant;

private bool aligned(const void* p, size_t a) { return (cast(size_t) p & (a - 1)) == 0; }

unittest // Mimallocator: the Mallocator interface
{
    alias A = Mimallocator;
    static assert(A.alignment == platformAlignment);
    static assert(stateSize!A == 0);
    static assert(is(typeof(A.instance) == shared A));
    // every block honours `alignment`, also the tiny ones
    foreach (n; 1 .. 300)
    {
        auto b = A.instance.allocate(n);
        assert(b.length == n && aligned(b.ptr, A.alignment));
        assert(A.instance.owns(b) == Ternary.yes);
        assert(mi_usable_size(b.ptr) >= n);
        assert(A.instance.goodAllocSize(n) >= n);
        assert(A.instance.deallocate(b));
    }
    assert(A.instance.allocate(0) is null);
    int local;
    assert(A.instance.owns((&local)[0 .. 1]) == Ternary.no);

    auto b = A.instance.allocate(100);
    (cast(ubyte[]) b)[] = 3;
    assert(A.instance.reallocate(b, 100_000) && b.length == 100_000);
    assert((cast(ubyte[]) b)[99] == 3);
    assert(A.instance.reallocate(b, 10) && b.length == 10);
    assert(!A.instance.reallocate(b, size_t.max / 2) && b.length == 10); // unchanged
    assert(A.instance.expand(b, 0));
    // expand: in place or not at all
    auto before = b.ptr;
    if (A.instance.expand(b, 4))
        assert(b.ptr is before && b.length == 14);
    assert(A.instance.reallocate(b, 0) && b is null);

    auto z = A.instance.allocateZeroed(1000);
    foreach (x; cast(ubyte[]) z)
        assert(x == 0);
    A.instance.deallocate(z);

    auto al = A.instance.alignedAllocate(1000, 4096);
    assert(al.length == 1000 && aligned(al.ptr, 4096));
    assert(A.instance.alignedReallocate(al, 50_000, 4096) && aligned(al.ptr, 4096) && al.length == 50_000);
    assert(A.instance.alignedAllocate(10, 3) is null); // not a power of two
    A.instance.deallocate(al);
}

unittest // make, dispose, makeArray, expandArray, shrinkArray
{
    static struct S { int a = 1; double b = 2; }
    auto s = Mimallocator.instance.make!S;
    assert(s.a == 1 && s.b == 2 && mi_is_in_heap_region(s));
    Mimallocator.instance.dispose(s);

    static class C { int x; this(int x) { this.x = x; } }
    auto c = Mimallocator.instance.make!C(42);
    assert(c.x == 42 && mi_is_in_heap_region(cast(void*) c));
    Mimallocator.instance.dispose(c);

    auto arr = Mimallocator.instance.makeArray!int(1000, 7);
    assert(arr.length == 1000 && arr[999] == 7 && mi_is_in_heap_region(arr.ptr));
    assert(Mimallocator.instance.expandArray(arr, 1000, 9) && arr.length == 2000 && arr[1999] == 9);
    assert(Mimallocator.instance.shrinkArray(arr, 1500) && arr.length == 500);
    Mimallocator.instance.dispose(arr);
}

unittest // allocatorObject, theAllocator, processAllocator, a building block on top
{
    auto obj = allocatorObject(Mimallocator.instance);
    auto b = obj.allocate(64);
    assert(b.length == 64 && mi_is_in_heap_region(b.ptr));
    assert(obj.owns(b) == Ternary.yes);
    assert(obj.deallocate(b));

    auto saved = theAllocator;
    theAllocator = obj;
    scope (exit) theAllocator = saved;
    auto xs = theAllocator.makeArray!long(10);
    assert(mi_is_in_heap_region(xs.ptr));
    theAllocator.dispose(xs);

    auto shared_ = sharedAllocatorObject(Mimallocator.instance);
    auto sb = shared_.allocate(32);
    assert(mi_is_in_heap_region(sb.ptr));
    shared_.deallocate(sb);

    FreeList!(Mimallocator, 0, 64) fl;
    auto f = fl.allocate(48);
    assert(f.length == 48 && mi_is_in_heap_region(f.ptr));
    fl.deallocate(f);

    // blocks allocated on one thread, freed on another
    auto blocks = new void[][](100);
    foreach (ref x; blocks)
        x = Mimallocator.instance.allocate(200);
    auto t = new Thread({
        foreach (x; blocks)
            Mimallocator.instance.deallocate(x);
    });
    t.start();
    t.join();
}

unittest // MiHeapAllocator
{
    auto h = MiHeapAllocator.create();
    assert(h.heap !is null);
    assert(h.empty == Ternary.yes);
    int*[] ints;
    foreach (i; 0 .. 100)
    {
        auto p = h.make!int(i);
        assert(mi_heap_contains_block(h.heap, p));
        ints ~= p;
    }
    assert(h.empty == Ternary.no);
    assert(h.owns(ints[0][0 .. 1]) == Ternary.yes);
    auto other = Mimallocator.instance.allocate(16);
    assert(h.owns(other) == Ternary.no);
    Mimallocator.instance.deallocate(other);
    h.dispose(ints[0]);

    void[] b = h.allocate(10);
    assert(aligned(b.ptr, h.alignment));
    assert(h.reallocate(b, 100_000) && mi_heap_contains_block(h.heap, b.ptr));
    auto al = h.alignedAllocate(100, 1024);
    assert(aligned(al.ptr, 1024) && mi_heap_contains_block(h.heap, al.ptr));
    assert(h.alignedReallocate(al, 5000, 1024) && aligned(al.ptr, 1024));
    auto z = h.allocateZeroed(64);
    foreach (x; cast(ubyte[]) z)
        assert(x == 0);
    assert(h.goodAllocSize(10) >= 16);

    auto old = h.heap;
    assert(h.deallocateAll()); // everything at once, a fresh heap
    assert(h.heap !is null && h.empty == Ternary.yes);

    // usable through the polymorphic interface (by pointer: the heap is not copyable)
    auto obj = allocatorObject(&h);
    auto arr = obj.makeArray!int(10, 1);
    assert(mi_heap_contains_block(h.heap, arr.ptr));
    obj.dispose(arr);

    // blocks that outlive the allocator stay valid (the heap is deleted, not destroyed)
    int* survivor;
    {
        auto h2 = MiHeapAllocator(3);
        survivor = h2.make!int(77);
    }
    assert(*survivor == 77 && mi_is_in_heap_region(survivor));
    mi_free(survivor);
}

unittest // the variant of the C library is the one the configuration asked for
{
    import core.stdc.stdlib : malloc, free;
    import std.string : fromStringz;

    const v = mimalloc_d_probe_variant().fromStringz;
    version (MimallocOverride)
        enum expected = "override";
    else version (MimallocSecure)
        enum expected = "secure";
    else version (MimallocDebug)
        enum expected = "debug";
    else
        enum expected = "release";
    assert(v == expected, "linked the " ~ v ~ " library, expected " ~ expected);

    // malloc is ours exactly in the override configuration (and druntime's with it)
    auto p = malloc(100);
    scope (exit) free(p);
    version (MimallocOverride)
        assert(mi_is_in_heap_region(p), "malloc is not served by the allocator");
    else
        assert(!mi_is_in_heap_region(p), "malloc is served by the allocator without override");

    version (MimallocDebug)
    {
        // debug builds report exactly the requested size
        auto q = mi_malloc(13);
        assert(mi_usable_size(q) == 13);
        mi_free(q);
    }
}
