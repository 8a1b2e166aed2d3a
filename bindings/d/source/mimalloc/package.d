// SPDX-License-Identifier: MIT
/**
The allocator of this repository for D programs.

$(UL
  $(LI `mimalloc.capi`: extern(C) declarations of the whole C API (`mimalloc.h`,
       `mimalloc-stats.h`).)
  $(LI `mimalloc.allocator`: `Mimallocator` and `MiHeapAllocator` for
       `std.experimental.allocator`, and `MiGCScannedAllocator` / `addGCRange` helpers for
       memory that holds pointers to GC objects.)
  $(LI `mimalloc.profile`: the sampling heap profiler, `profileStart` and `profileDump`.)
)
`mimalloc.v3` (not imported here: import it on its own) is mimalloc v3's API, as the C
header declares it in its `MI_V3_API` mode.
*/
module mimalloc;

public import mimalloc.capi;
public import mimalloc.allocator;
public import mimalloc.profile;
