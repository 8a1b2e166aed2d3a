/* SPDX-License-Identifier: MIT */
/* mimalloc-redirect.dll (Windows, mingw-w64): the library's DLL that, once loaded, sends the C
   runtime allocation calls of every module of the process to this allocator
   (docs/platforms.md, "Redirecting DLL on Windows"). Include mimalloc.h first. */
#ifndef MIMALLOC_REDIRECT_H
#define MIMALLOC_REDIRECT_H
#include "mimalloc.h"
#ifdef __cplusplus
extern "C" {
#endif

/* Number of import slots of the process currently redirected to this allocator (0: none). */
mi_decl_export size_t mi_redirect_imports(void);
/* Number of C runtime entry points (msvcrt.dll, ucrtbase.dll) that jump to this allocator, so
   the runtimes' calls inside themselves are ours too (0: none patched). */
mi_decl_export size_t mi_redirect_entries(void);

#ifdef __cplusplus
}
#endif
#endif
