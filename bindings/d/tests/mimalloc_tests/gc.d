// SPDX-License-Identifier: MIT
/**
The D GC does not scan memory from this allocator: a GC object referenced only from such
memory survives a collection when the memory is registered (GC.addRange or
MiGCScannedAllocator), and is collected when it is not.

The object is made, and its only reference stored, on a thread that then ends, so no stack
or register of a live thread holds a stale copy of the reference; the collection is then
exact about it and the "not registered" case is deterministic too. A destructor flag tells
whether the object was collected (the GC runs finalizers of objects it frees during
GC.collect).
*/
module mimalloc_tests.gc;

import core.atomic : atomicLoad, atomicStore;
import core.memory : GC;
import core.thread : Thread;
import std.experimental.allocator : make, dispose;

import mimalloc;

shared bool[16] finalized; // finalized[id]: the Tracked object `id` was finalized

class Tracked
{
    int id;
    this(int id) { this.id = id; }
    ~this() { atomicStore(finalized[id], true); }
}

/// Stores the only reference to a new Tracked(id) into `slot` (our memory), on a thread
/// that has ended when this returns.
void storeOnOtherThread(Tracked* slot, int id)
{
    auto t = new Thread({ *slot = new Tracked(id); });
    t.start();
    t.join();
}

void collectHard()
{
    foreach (_; 0 .. 3)
        GC.collect();
}

unittest // registered with GC.addRange: the object survives
{
    auto slot = cast(Tracked*) mi_zalloc((Tracked*).sizeof * 4);
    GC.addRange(slot, (Tracked*).sizeof * 4);
    storeOnOtherThread(&slot[2], 1);
    collectHard();
    assert(!atomicLoad(finalized[1]), "object referenced from a registered range was collected");
    assert(slot[2].id == 1);
    GC.removeRange(slot);
    *slot = null;
    mi_free(slot);
}

unittest // MiGCScannedAllocator: make/dispose of a struct holding GC references
{
    static struct Node
    {
        Tracked obj;
        int[] gcArray;
    }
    auto node = MiGCScannedAllocator.instance.make!Node;
    assert(mi_is_in_heap_region(node));
    storeOnOtherThread(&node.obj, 2);
    collectHard();
    assert(!atomicLoad(finalized[2]), "object referenced from a MiGCScannedAllocator block was collected");
    assert(node.obj.id == 2);

    // reallocate moves the block and keeps it registered
    void[] b = MiGCScannedAllocator.instance.allocate(Node.sizeof);
    *cast(Node*) b.ptr = *node;
    node.obj = null;
    MiGCScannedAllocator.instance.dispose(node);
    assert(MiGCScannedAllocator.instance.reallocate(b, 10_000));
    collectHard();
    assert(!atomicLoad(finalized[2]), "object referenced from a reallocated block was collected");
    assert((cast(Node*) b.ptr).obj.id == 2);
    MiGCScannedAllocator.instance.deallocate(b);
}

unittest // not registered: the object is collected (the failure mode the note warns about)
{
    auto slot = cast(Tracked*) mi_zalloc((Tracked*).sizeof);
    storeOnOtherThread(slot, 3);
    collectHard();
    assert(atomicLoad(finalized[3]),
           "object referenced only from unregistered allocator memory was not collected");
    // *slot now dangles: never dereference it
    mi_free(slot);
}
