/* SPDX-License-Identifier: MIT */
/* scenario.h: what the programs of bench/scenarios/ share (bench.h gives the random numbers, the
 * clock and the RESULT line's allocator fields): the process's resident set read from
 * /proc/self/statm at the moment a program names, and a sleep. */
#ifndef SCENARIO_H
#define SCENARIO_H

#include "../bench.h"
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#define SC_MIB (1024.0 * 1024.0)

/* The resident set now, in MiB (statm's second field, in pages); -1 if it cannot be read. */
static inline double sc_rss_mib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = -1;
  if (f == NULL) return -1.0;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1.0 : (double)resident * (double)sysconf(_SC_PAGESIZE) / SC_MIB;
}

static inline void sc_sleep_ms(unsigned long ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static inline void *sc_xmalloc(size_t n, const char *prog) {
  void *p = malloc(n);
  if (p == NULL) {
    fprintf(stderr, "%s: out of memory (%zu bytes)\n", prog, n);
    exit(1);
  }
  return p;
}

#endif /* SCENARIO_H */
