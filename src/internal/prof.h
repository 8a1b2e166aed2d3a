/* SPDX-License-Identifier: MIT */
/* The sampling heap profiler's shared types: what the sample store (prof-samples.c) hands to
   the writers (prof-write.c). Nothing here is used when the profiler is off. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Frames kept per stack (MIMALLOC_PROFILE_DEPTH may lower it). */
#define MI_PROF_DEPTH_MAX  64

/* One call site: a distinct stack and what the samples taken there stand for. The values are
   estimates, already scaled: a sample of a block of s bytes at rate R adds 1/p objects and s/p
   bytes, p = 1 - exp(-s/R) (its probability of being sampled), so their expectation is the
   true count. */
typedef struct mi_prof_site_s {
  double     alloc_objects;   /* allocated since the profiler started */
  double     alloc_bytes;
  double     inuse_objects;   /* allocated and not freed now */
  double     inuse_bytes;
  uint64_t   hash;            /* of pcs[0 .. depth) */
  uint32_t   depth;           /* frames in pcs, 1 .. MI_PROF_DEPTH_MAX */
  uint32_t   reserved_;
  uintptr_t  pcs[MI_PROF_DEPTH_MAX];   /* return addresses, innermost first: pcs[0] is in the
                                          function that called the allocator (our own frames
                                          are skipped); an unknown frame ends the stack */
} mi_prof_site_t;

/* A consistent copy of the store at one moment, for the writers. */
typedef struct mi_prof_profile_s {
  const mi_prof_site_t* sites;      /* count sites, in no particular order */
  size_t     count;
  size_t     rate;                  /* R: bytes between samples on average */
  int64_t    time_nanos;            /* wall clock (CLOCK_REALTIME) of the copy */
  int64_t    duration_nanos;        /* since the profiler started */
  uint64_t   samples;               /* samples taken */
  uint64_t   samples_dropped;       /* samples not recorded: the store was full (its cap) */
  bool       at_exit;               /* written at process exit: the in-use values are the
                                       blocks never freed (the leak profile) */
} mi_prof_profile_t;

/* prof-write.c. Each writes `prof` to the open file `fd` and returns true if every byte was
   written. They take scratch memory from the OS (_mi_os_alloc) and give it back, never call
   malloc or stdio, and read /proc/self/maps and the mapped ELF files with open/read/mmap. */
bool _mi_prof_write_pprof(int fd, const mi_prof_profile_t* prof);    /* profile.proto, not gzipped */
bool _mi_prof_write_text(int fd, const mi_prof_profile_t* prof);     /* top sites, with function names */
bool _mi_prof_write_folded(int fd, const mi_prof_profile_t* prof, bool inuse);   /* collapsed
                                    stacks, root first: "f1;f2;f3 bytes"; in-use or allocated bytes */
