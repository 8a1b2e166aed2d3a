/* SPDX-License-Identifier: MIT */
/* next.c -- libov-next.so, loaded after libmimalloc: dlsym(RTLD_NEXT) from here skips the
   override and finds the C library's own functions, glibc's or musl's (from the executable it
   would find ours). */
#define _GNU_SOURCE
#include <dlfcn.h>

void* ov_next_sym(const char* name) {
  /* not a tail call: RTLD_NEXT is relative to the caller of dlsym, which must be this library */
  void* volatile f = dlsym(RTLD_NEXT, name);
  return f;
}
