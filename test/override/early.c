/* SPDX-License-Identifier: MIT */
/* early.c -- libov-early.so: its constructor allocates before libmimalloc's constructor runs.

   The library has no DT_NEEDED on libmimalloc (see ov-early.h), and the executables list it
   after libmimalloc, so the loader initialises it first; preinit.c verifies that order with
   LD_DEBUG=libs. */
#define _GNU_SOURCE
#include "ov-early.h"

ov_early_t ov_early_state;

__attribute__((constructor)) static void ov_early_ctor(void) {
  ov_early_exercise(&ov_early_state, 101);
}
