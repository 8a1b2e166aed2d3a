// SPDX-License-Identifier: MIT
// Example: allocate with Mimallocator through std.experimental.allocator and show that
// the allocator of this repository served the memory.
import core.memory : GC;
import std.experimental.allocator : make, makeArray, dispose, theAllocator, allocatorObject;
import std.stdio : writeln, writefln, stdout;
import std.string : fromStringz;
import std.typecons : Ternary;

import mimalloc;

struct Point { double x, y; }

extern (C) void toStdout(const(char)* msg, void*) nothrow
{
    try
        stdout.write(msg.fromStringz);
    catch (Exception)
    {
    }
}

void main()
{
    writefln("allocator API version %s (mi_version)", mi_version());

    // through the global instance
    auto numbers = Mimallocator.instance.makeArray!long(1000, 42);
    auto point = Mimallocator.instance.make!Point(1.5, 2.5);
    writefln("makeArray!long(1000): %s, mi_is_in_heap_region = %s, mi_usable_size = %s",
             cast(void*) numbers.ptr, mi_is_in_heap_region(numbers.ptr), mi_usable_size(numbers.ptr));
    writefln("make!Point: %s, mi_is_in_heap_region = %s", cast(void*) point, mi_is_in_heap_region(point));
    int onStack;
    writefln("a stack variable: mi_is_in_heap_region = %s", mi_is_in_heap_region(&onStack));

    // as the thread's default allocator
    theAllocator = allocatorObject(Mimallocator.instance);
    auto text = theAllocator.makeArray!char(64, 'x');
    writefln("theAllocator.makeArray!char(64): mi_is_in_heap_region = %s", mi_is_in_heap_region(text.ptr));

    // a heap of its own, freed at once
    {
        auto heap = MiHeapAllocator.create();
        foreach (i; 0 .. 10_000)
            cast(void) heap.make!Point(i, i);
        writefln("MiHeapAllocator: 10000 points in heap %s, empty: %s", cast(void*) heap.heap, heap.empty == Ternary.yes);
        heap.deallocateAll();
        writefln("after deallocateAll: empty: %s", heap.empty == Ternary.yes);
    }

    // a block that holds a GC reference, scanned by the GC
    static struct Holder { int[] gcArray; }
    auto holder = MiGCScannedAllocator.instance.make!Holder;
    holder.gcArray = new int[](100);
    GC.collect();
    writefln("MiGCScannedAllocator: GC array still alive after GC.collect: length %s", holder.gcArray.length);
    MiGCScannedAllocator.instance.dispose(holder);

    theAllocator.dispose(text);
    Mimallocator.instance.dispose(point);
    Mimallocator.instance.dispose(numbers);

    auto stats = mi_stats_t_init();
    if (mi_stats_get(&stats))
        writefln("mi_stats_get: %s bytes reserved, %s committed, %s segments in use",
                 stats.reserved.current, stats.committed.current, stats.segments.current);
    writeln("statistics (mi_stats_print_out):");
    stdout.flush();
    mi_stats_print_out(&toStdout, null);
}
