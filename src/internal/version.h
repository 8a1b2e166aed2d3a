/* SPDX-License-Identifier: MIT */
/* This implementation's own version (semantic versioning; CHANGELOG.md), distinct from the
   mimalloc API version it is compatible with (MI_MALLOC_VERSION in mimalloc.h, returned by
   mi_version()). CMakeLists.txt reads the number from this line: keep its form. */
#pragma once
#define MI_IMPL_VERSION "0.1.0"
