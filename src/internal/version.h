/* SPDX-License-Identifier: MIT */
/* This implementation's own version (semantic versioning; CHANGELOG.md), distinct from the
   mimalloc API version it is compatible with (MI_MALLOC_VERSION in mimalloc.h, returned by
   mi_version()). CMakeLists.txt reads the number from this line: keep its form. */
#pragma once
#define MI_IMPL_VERSION "0.1.0"

/* "version 0.1.0 (independent implementation of the mimalloc 2.4.1 API" for messages (the
   caller closes the parenthesis); needs mimalloc.h's MI_MALLOC_VERSION. */
#define MI_VERSION_TEXT_FMT   "version %s (independent implementation of the mimalloc %d.%d.%d API"
#define MI_VERSION_TEXT_ARGS  MI_IMPL_VERSION, MI_MALLOC_VERSION / 10000, (MI_MALLOC_VERSION / 100) % 100, MI_MALLOC_VERSION % 100
