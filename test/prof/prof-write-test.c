/* SPDX-License-Identifier: MIT */
/* The profiler's writers (src/prof-write.c) on a made-up profile whose stacks are real return
   addresses of this program: site_sixty, site_thirty and site_ten each call record(), which
   keeps its return address (inside the site function), the site's own return address (inside
   run_sites) and run_sites' (inside main). The sites hold 60, 30 and 10 MiB in use and 70,
   300 and 150 MiB allocated in total, so the in-use order is sixty, thirty, ten and the
   allocated order thirty, ten, sixty.

   usage: prof-write-test DIR   writes into DIR:
     small.txt, small-exit.txt     the text list (the second as written at exit)
     small-inuse.folded, small-alloc.folded
     small.pb                      profile.proto
     big.pb, big.folded, big.txt   4000 sites over many addresses (some outside every mapping)
   and checks the writers' results itself: each returns true, and false on a descriptor that
   cannot be written. test/prof/check-prof-write.py checks the files' contents (and runs pprof). */
#include "internal/prof.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))   /* no site_sixty.constprop.0 */
#endif

#define MiB (1024.0 * 1024.0)

static mi_prof_site_t sites[3];
volatile int sink;   /* work after each call: no call is a tail call */

NOINLINE void record(int i, void* site_return) {
  sites[i].pcs[0] = (uintptr_t)__builtin_return_address(0);   /* in the site function */
  sites[i].pcs[1] = (uintptr_t)site_return;                      /* in run_sites */
  sink++;
}

NOINLINE void site_sixty(void)  { record(0, __builtin_return_address(0)); sink++; }
NOINLINE void site_thirty(void) { record(1, __builtin_return_address(0)); sink++; }
NOINLINE void site_ten(void)    { record(2, __builtin_return_address(0)); sink++; }

NOINLINE void run_sites(void) {
  site_sixty();
  site_thirty();
  site_ten();
  for (int i = 0; i < 3; i++) {
    sites[i].pcs[2] = (uintptr_t)__builtin_return_address(0);   /* in main */
    sites[i].depth = 3;
  }
  sink++;
}

static int failures = 0;

static void check(int ok, const char* what) {
  if (!ok) { fprintf(stderr, "FAIL: %s\n", what); failures++; }
}

static int create(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) { perror(path); exit(2); }
  return fd;
}

typedef enum { W_PPROF, W_TEXT, W_INUSE, W_ALLOC } writer_t;

static void write_file(const char* dir, const char* name, writer_t w, const mi_prof_profile_t* prof) {
  const int fd = create(dir, name);
  bool ok = false;
  switch (w) {
    case W_PPROF: ok = _mi_prof_write_pprof(fd, prof); break;
    case W_TEXT:  ok = _mi_prof_write_text(fd, prof); break;
    case W_INUSE: ok = _mi_prof_write_folded(fd, prof, true); break;
    case W_ALLOC: ok = _mi_prof_write_folded(fd, prof, false); break;
  }
  char what[256];
  snprintf(what, sizeof(what), "writing %s returned false", name);
  check(ok, what);
  close(fd);
}

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: prof-write-test DIR\n"); return 2; }
  const char* dir = argv[1];
  run_sites();
  const double inuse[3] = { 60, 30, 10 }, alloc[3] = { 70, 300, 150 };
  for (int i = 0; i < 3; i++) {
    /* a fraction below one half: the writers round to the whole byte */
    sites[i].inuse_bytes = inuse[i] * MiB + 0.25;
    sites[i].inuse_objects = inuse[i] + 0.4;
    sites[i].alloc_bytes = alloc[i] * MiB - 0.25;
    sites[i].alloc_objects = alloc[i] * 2 - 0.4;
    sites[i].hash = (uint64_t)i + 1;
  }
  mi_prof_profile_t prof = { sites, 3, 512 * 1024, 1700000000LL * 1000000000LL, 5000000000LL, 1234, 7, false };
  write_file(dir, "small.txt", W_TEXT, &prof);
  write_file(dir, "small-inuse.folded", W_INUSE, &prof);
  write_file(dir, "small-alloc.folded", W_ALLOC, &prof);
  write_file(dir, "small.pb", W_PPROF, &prof);
  prof.at_exit = true;
  write_file(dir, "small-exit.txt", W_TEXT, &prof);
  prof.at_exit = false;

  /* many sites: stacks of up to 64 frames over 3 real return addresses, code of the library
     and of libc, and addresses in no mapping; the tables grow and the output is flushed in
     chunks */
  const size_t nbig = 4000;
  mi_prof_site_t* big = (mi_prof_site_t*)calloc(nbig, sizeof(mi_prof_site_t));
  if (big == NULL) return 2;
  const uintptr_t code[6] = { sites[0].pcs[0], sites[1].pcs[0], sites[2].pcs[0], (uintptr_t)&_mi_prof_write_text + 1,
                              (uintptr_t)&write + 1, (uintptr_t)0x10000 + 1 };
  for (size_t i = 0; i < nbig; i++) {
    big[i].depth = (uint32_t)(1 + i % MI_PROF_DEPTH_MAX);
    for (size_t k = 0; k < big[i].depth; k++) big[i].pcs[k] = code[(i + k) % 6] + (i * 7 + k) % 64;
    big[i].inuse_bytes = (double)(i % 3 == 0 ? 0 : 1000 + i);
    big[i].inuse_objects = (double)(i % 3 == 0 ? 0 : 1);
    big[i].alloc_bytes = (double)(2000 + i);
    big[i].alloc_objects = 2;
  }
  mi_prof_profile_t bigprof = { big, nbig, 4096, 1700000000LL * 1000000000LL, 1000, 5000, 0, false };
  write_file(dir, "big.pb", W_PPROF, &bigprof);
  write_file(dir, "big-inuse.folded", W_INUSE, &bigprof);
  write_file(dir, "big.txt", W_TEXT, &bigprof);

  /* a descriptor that cannot be written: every writer says so */
  const int bad = open("/dev/null", O_RDONLY | O_CLOEXEC);
  check(!_mi_prof_write_pprof(bad, &prof), "pprof to a read-only descriptor returned true");
  check(!_mi_prof_write_text(bad, &prof), "text to a read-only descriptor returned true");
  check(!_mi_prof_write_folded(bad, &prof, true), "folded to a read-only descriptor returned true");
  close(bad);
  free(big);
  if (failures > 0) return 1;
  printf("prof-write-test: wrote the profiles to %s\n", dir);
  return 0;
}
