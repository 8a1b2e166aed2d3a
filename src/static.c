/* The library is compiled as this one translation unit. That lets the compiler inline across
   files (the fast paths call into page.c and segment.c helpers), and lets override.c define
   malloc, free and operator new/delete as aliases of the mi_ functions: an alias must be in
   the same unit as its target, and an alias costs nothing where a wrapper costs a jump.
   Each included file stays one concept; none of them is compiled on its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alloc.c"
#include "aligned.c"
#include "arena.c"
#include "free.c"
#include "heap.c"
#include "init.c"
#include "new.c"
#include "options.c"
#include "os.c"
#include "page.c"
#include "posix.c"
#include "random.c"
#include "segment.c"
#include "stats.c"
#include "prim/unix.c"
#if MI_MALLOC_OVERRIDE
#include "override.c"
#endif
