/* SPDX-License-Identifier: MIT */
/* The library is compiled as this one translation unit. That lets the compiler inline across
   files (the fast paths call into page.c and segment.c helpers), and lets override.c define
   malloc, free and operator new/delete as aliases of the mi_ functions: an alias must be in
   the same unit as its target, and an alias costs nothing where a wrapper costs a jump.
   Each included file stays one concept; none of them is compiled on its own, except
   override-windows.c, which is not part of the library (Windows' static override, the object
   mimalloc-override.o that a program links beside it; see there). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

/* The first and the last function of the unit: debug builds (compiled in source order, see
   CMakeLists.txt) tell the library's code from the program's by these two addresses. */
void _mi_static_text_begin(void);
void _mi_static_text_begin(void) { }

#include "alloc.c"
#include "prof-entry.c"
#include "abandon.c"
#include "aligned.c"
#include "arena.c"
#include "arena-purge.c"
#include "bitmap.c"
#include "debug.c"
#include "free.c"
#include "heap.c"
#include "heap-api.c"
#include "heap-idle.c"
#include "init.c"
#include "static-alloc.c"
#include "leaks.c"
#include "limit.c"
#include "live.c"
#include "new.c"
#include "observe.c"
#include "options.c"
#include "os.c"
#include "page.c"
#include "posix.c"
#include "prof.c"
#include "prof-samples.c"
#include "prof-stack.c"
#include "prof-write.c"
#include "purger.c"
#include "random.c"
#include "remote.c"
#include "secure.c"
#include "guarded.c"
#include "segment.c"
#include "segment-purge.c"
#include "segment-map.c"
#include "sheap.c"
#include "stats.c"
#include "stats-print.c"
#include "track.c"
#include "validate.c"
#include "v3.c"
#include "stats-v3.c"
#if MI_FAIL_INJECT
#include "prim/failinject.c"   /* test builds: the platform's file behind failure injection */
#elif defined(_WIN32)
#include "prim/windows.c"
#else
#include "prim/unix.c"
#endif
#if MI_SCHED_FUZZ
#include "prim/sched-fuzz.c"   /* test builds: yields and sleeps at the points of internal/sched.h */
#endif
#if MI_MALLOC_OVERRIDE
#include "override.c"
#endif

void _mi_static_text_end(void);
void _mi_static_text_end(void) { }
