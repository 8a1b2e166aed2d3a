/* SPDX-License-Identifier: MIT */
/* Consumer of an installed mimalloc: allocates through the API and malloc, and reports the
   version and which libmimalloc file (if any) is mapped, for run-consumers.sh to check.
   Usage: consumer [1]   -- with 1, malloc must be served by mimalloc (override on). */
#include <mimalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"

int main(int argc, char** argv) {
  const int expect_override = (argc > 1 && strcmp(argv[1], "1") == 0);

  void* p = mi_malloc(100);
  if (p == NULL || !mi_is_in_heap_region(p)) { fprintf(stderr, "mi_malloc failed\n"); return 1; }
  mi_free(p);

  /* the header and the library must be the same release (a system mimalloc.h would differ) */
  if (mi_version() != MI_MALLOC_VERSION) {
    fprintf(stderr, "library version %d, header version %d\n", mi_version(), MI_MALLOC_VERSION);
    return 1;
  }

  void* q = malloc(16);
  const int ours = mi_is_in_heap_region(q);
  free(q);
  if (expect_override && !ours) { fprintf(stderr, "malloc is not served by mimalloc\n"); return 1; }

  printf("mimalloc version: %d\n", mi_version());
  printf("malloc served by mimalloc: %s\n", ours ? "yes" : "no");
  print_mapped_library();
  return 0;
}
