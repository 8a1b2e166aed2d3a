/* SPDX-License-Identifier: MIT */
/* mem-tls-module.c -- a module with a large thread-local variable, loaded with dlopen by
   mem-idle's `join` mode: glibc gives each thread that touches it a block of dynamic TLS from
   malloc (through us) and frees it inside pthread_join, under the lock pthread_create takes. */
#include <stddef.h>

#define MT_TLS_SIZE  (1024 * 1024)

static __thread char mt_tls_big[MT_TLS_SIZE];

/* Touch every 4 KiB page of this thread's block (so it is resident) and return its size. */
size_t mt_tls_touch(void);
size_t mt_tls_touch(void) {
  for (size_t i = 0; i < MT_TLS_SIZE; i += 4096) mt_tls_big[i] = 1;
  return MT_TLS_SIZE;
}
