/* SPDX-License-Identifier: MIT */
/* Layer 8 (docs/design.md, "Layers"): what the entry points and the override export to the
   layer above. The public API itself is mimalloc.h; v3 mode's types are v3.h, Windows' CRT
   names crt-windows.h. */
#pragma once
#include "alloc.h"

/* override.c: the program's calls to the counted versions (prof-entry.c) of malloc, calloc and
   operator new, for the profiler started with the process (prof-samples.c); how many call slots */
size_t     _mi_override_rebind_counted(void);
#if MI_PROF_ENTRIES
/* The counted entry points (prof-entry.c: malloc, calloc; new.c: operator new), same contracts as
   mi_malloc, mi_calloc, mi_new and mi_new_nothrow; hidden, in the one unit, so calls inline */
void*      _mi_prof_entry_malloc(size_t size) mi_attr_noexcept;
void*      _mi_prof_entry_calloc(size_t count, size_t size) mi_attr_noexcept;
void*      _mi_new_counted(size_t size);
void*      _mi_new_counted_nothrow(size_t size) mi_attr_noexcept;
#endif
