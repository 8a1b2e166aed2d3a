/* SPDX-License-Identifier: MIT */
/* Layer 8 (docs/design.md, "Layers"): what the entry points and the override export to the
   layer above. The public API itself is mimalloc.h; v3 mode's types are v3.h, Windows' CRT
   names crt-windows.h. */
#pragma once
#include "alloc.h"

/* override.c: the program's calls to the counted versions (prof-entry.c) of malloc, calloc and
   operator new, for the profiler started with the process (prof-samples.c); how many call slots */
size_t     _mi_override_rebind_counted(void);
