/* SPDX-License-Identifier: MIT */
// new-delete-header-defs.cpp -- the one translation unit of test-static-new-delete-header that
// includes <mimalloc-new-delete.h>, so the program defines all 20 operators new/delete itself.
#include <mimalloc-new-delete.h>
