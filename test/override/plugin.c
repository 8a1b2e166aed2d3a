/* SPDX-License-Identifier: MIT */
/* plugin.c -- libov-plugin.so, dlopen'ed by dlopen-alloc.c. A plain library (no link to
   libmimalloc): its malloc is whatever the process has, which must be ours. Its constructor
   allocates a table that its destructor frees; its functions allocate, reallocate and free
   stamped blocks (ov.h) for the program's threads. */
#define _GNU_SOURCE
#include "ov.h"

#define TABLE_LEN 100

static void** table;
static char* name_copy;
static _Atomic(int)* dtor_count;   /* the program's counter: this library's memory is gone after dlclose */

__attribute__((constructor)) static void plugin_ctor(void) {
  table = (void**)calloc(TABLE_LEN, sizeof(void*));
  if (table != NULL) {
    for (size_t i = 0; i < TABLE_LEN; i++) table[i] = ov_make(16 + i * 100, 77 + i);
  }
  name_copy = strdup("libov-plugin constructor");
}

__attribute__((destructor)) static void plugin_dtor(void) {
  if (table != NULL) {
    for (size_t i = 0; i < TABLE_LEN; i++) free(table[i]);
    free(table);
  }
  free(name_copy);
  if (dtor_count != NULL) atomic_fetch_add(dtor_count, 1);
}

void plugin_set_dtor_counter(_Atomic(int)* counter) { dtor_count = counter; }

/* the constructor's blocks: number intact, and each passed to `each` (the program checks they are its heap's) */
size_t plugin_table_check(void (*each)(void* p)) {
  size_t ok = 0;
  if (table == NULL || name_copy == NULL || strcmp(name_copy, "libov-plugin constructor") != 0) return 0;
  each(table); each(name_copy);
  for (size_t i = 0; i < TABLE_LEN; i++) {
    if (table[i] != NULL && ov_verify(table[i]) && ov_size(table[i]) == 16 + i * 100) ok++;
    each(table[i]);
  }
  return ok;
}

void* plugin_alloc(size_t size, uint64_t seed) { return ov_make(size, seed); }

void plugin_free(void* p) { free(p); }

/* grow or shrink, keeping (and checking) the contents; NULL if they were damaged */
void* plugin_realloc(void* p, size_t size, uint64_t seed) {
  if (p == NULL) return ov_make(size, seed);
  if (!ov_verify(p)) return NULL;
  if (size < OV_HDR) size = OV_HDR;
  const size_t old = ov_size(p);
  const uint64_t oldseed = ((uint64_t*)p)[1];
  void* q = realloc(p, size);
  if (q == NULL) return NULL;
  if (!ov_verify_prefix(q, (old < size ? old : size), oldseed)) return NULL;
  ov_stamp(q, size, seed);
  return q;
}

char* plugin_strdup(const char* s) { return strdup(s); }
