/* SPDX-License-Identifier: MIT */
/* The umbrella of the layer headers (docs/design.md, "Layers"): every internal declaration.
   No file of src/ includes it: each includes the headers of its own layer and below, so its
   includes show what it depends on (test/layers.py checks them). Kept for tests and tools. */
#pragma once
#include "base.h"         /* 1: options, output, statistics' counters, thread id */
#include "os.h"           /* 2: OS memory, random numbers (bitmap.h: bitmaps) */
#include "arena.h"        /* 3: arenas, their purge, the segment map */
#include "segment.h"      /* 4: segments, abandonment, the purger */
#include "page.h"         /* 4: pages, checks, trackers */
#include "heap.h"         /* 5: heaps of a thread, process and threads */
#include "sheap.h"        /* 6: shared heaps, the public heap functions */
#include "alloc.h"        /* 7: allocation and free */
#include "api.h"          /* 8: what the entry points export */
#include "observers.h"    /* 9: observers */
#include "prof-hook.h"    /* 9: the profiler */
#include "observe.h"      /* any: the observers' hooks */
