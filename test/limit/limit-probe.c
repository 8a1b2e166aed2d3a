/* SPDX-License-Identifier: MIT */
/* limit-probe.c -- reports the memory limit on request, for run-limit.py (which judges).
   It executes its arguments as commands, in order:

     get              "limit <mi_memory_limit()>"
     set <bytes>      mi_memory_limit_set(bytes)
     opt <value>      mi_option_set(mi_option_memory_limit, value)
     print            mi_options_print() (its "memory limit:" line names the limit's source)
     stats            mi_stats_print_out(NULL, NULL) (stderr)
     write <path> <s> replace the file's contents with s (a container's limit changes)
     sleep <ms>       sleep
     alloc <MiB>      allocate and touch that many MiB in 64 KiB blocks, kept
     free             free them all
     release <MiB>    free that many MiB of them (the last allocated)
     remote           another thread frees them all (they stay this thread's pages)
     churn <ms>       allocate and free blocks of many sizes for that long (slow paths)
     committed        "committed <bytes>" (mi_process_info's current commit)
     fill <KiB>       allocate and touch blocks of that size (kept) until one is NULL or
                      4 GiB are held: "fill <blocks> errno <e>" (e: errno after the NULL, 0 if none)
     big <MiB>        allocate, touch and free one block of that size: "big ok" or "big NULL errno <e>"
     mtfill <n> <KiB> n threads at once allocate and touch blocks of that size until one is NULL,
                      and free theirs once all did (so the blocks counted were held at once):
                      "mtfill <blocks> enomem <threads that saw ENOMEM> peak <peak committed bytes>"
*/
#define _GNU_SOURCE
#include <mimalloc.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void* blocks[1 << 16];
static size_t nblocks;

static void* free_all(void* arg) {
  (void)arg;
  while (nblocks > 0) mi_free(blocks[--nblocks]);
  return NULL;
}

typedef struct { size_t size; size_t count; int err; } mtfill_t;
static _Atomic(int) mtfill_done;      /* threads that saw NULL: none frees before all did */
static _Atomic(int) mtfill_threads;   /* threads started (lowered when one fails to start) */
static void* mtfill_thread(void* arg) {
  mtfill_t* const t = (mtfill_t*)arg;
  void** held = (void**)mi_malloc(sizeof(void*) * 8192);
  if (held == NULL) {
    /* a thread that starts late may find the limit taken before its first malloc: it saw NULL
       too, and holds nothing (without the count the others would wait for it forever) */
    t->err = errno;
    atomic_fetch_add(&mtfill_done, 1);
    return NULL;
  }
  while (t->count < 8192) {
    errno = 0;
    char* p = (char*)mi_malloc(t->size);
    if (p == NULL) { t->err = errno; break; }
    memset(p, 1, t->size);
    held[t->count++] = p;
  }
  atomic_fetch_add(&mtfill_done, 1);
  while (atomic_load(&mtfill_done) < atomic_load(&mtfill_threads)) sched_yield();   /* all hold what they got */
  for (size_t k = 0; k < t->count; k++) mi_free(held[k]);
  mi_free(held);
  return NULL;
}

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const char* cmd = argv[i];
    if (strcmp(cmd, "get") == 0) {
      printf("limit %zu\n", mi_memory_limit());
    }
    else if (strcmp(cmd, "set") == 0 && i + 1 < argc) {
      mi_memory_limit_set((size_t)strtoull(argv[++i], NULL, 10));
    }
    else if (strcmp(cmd, "opt") == 0 && i + 1 < argc) {
      mi_option_set(mi_option_memory_limit, strtol(argv[++i], NULL, 10));
    }
    else if (strcmp(cmd, "print") == 0) {
      fflush(stdout);
      mi_options_print();
    }
    else if (strcmp(cmd, "stats") == 0) {
      fflush(stdout);
      mi_stats_print_out(NULL, NULL);
    }
    else if (strcmp(cmd, "write") == 0 && i + 2 < argc) {
      FILE* f = fopen(argv[i + 1], "w");
      if (f == NULL) { printf("cannot write %s\n", argv[i + 1]); return 2; }
      fputs(argv[i + 2], f);
      fclose(f);
      i += 2;
    }
    else if (strcmp(cmd, "sleep") == 0 && i + 1 < argc) {
      const long ms = strtol(argv[++i], NULL, 10);
      struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
      nanosleep(&t, NULL);
    }
    else if (strcmp(cmd, "alloc") == 0 && i + 1 < argc) {
      const size_t n = (size_t)strtoull(argv[++i], NULL, 10) * 16;   /* 64 KiB blocks */
      for (size_t k = 0; k < n && nblocks < sizeof(blocks) / sizeof(blocks[0]); k++) {
        char* p = (char*)mi_malloc(64 * 1024);
        if (p == NULL) { printf("alloc NULL\n"); return 2; }
        memset(p, 1, 64 * 1024);
        blocks[nblocks++] = p;
      }
    }
    else if (strcmp(cmd, "release") == 0 && i + 1 < argc) {
      size_t n = (size_t)strtoull(argv[++i], NULL, 10) * 16;
      while (n-- > 0 && nblocks > 0) mi_free(blocks[--nblocks]);
    }
    else if (strcmp(cmd, "remote") == 0) {
      pthread_t t;
      if (pthread_create(&t, NULL, &free_all, NULL) != 0) { printf("no thread\n"); return 2; }
      pthread_join(t, NULL);
    }
    else if (strcmp(cmd, "churn") == 0 && i + 1 < argc) {
      const long end = now_ms() + strtol(argv[++i], NULL, 10);
      void* ring[256] = { NULL };
      for (size_t k = 0; now_ms() < end; k++) {
        const size_t slot = k % 256;
        mi_free(ring[slot]);
        ring[slot] = mi_malloc(16 + (k * 7919) % 4000);   /* (every size class up to 4 KiB) */
      }
      for (size_t k = 0; k < 256; k++) mi_free(ring[k]);
    }
    else if (strcmp(cmd, "free") == 0) {
      while (nblocks > 0) mi_free(blocks[--nblocks]);
    }
    else if (strcmp(cmd, "fill") == 0 && i + 1 < argc) {
      const size_t size = (size_t)strtoull(argv[++i], NULL, 10) * 1024;
      size_t count = 0;
      int err = 0;
      for (size_t held = 0; held < ((size_t)4 << 30) && nblocks < sizeof(blocks) / sizeof(blocks[0]); held += size) {
        errno = 0;
        char* p = (char*)mi_malloc(size);
        if (p == NULL) { err = errno; break; }
        memset(p, 1, size);
        blocks[nblocks++] = p;
        count++;
      }
      printf("fill %zu errno %d\n", count, err);
    }
    else if (strcmp(cmd, "big") == 0 && i + 1 < argc) {
      const size_t size = (size_t)strtoull(argv[++i], NULL, 10) << 20;
      errno = 0;
      char* p = (char*)mi_malloc(size);
      if (p == NULL) printf("big NULL errno %d\n", errno);
      else { memset(p, 1, size); mi_free(p); printf("big ok\n"); }
    }
    else if (strcmp(cmd, "mtfill") == 0 && i + 2 < argc) {
      const int n = atoi(argv[++i]);
      const size_t size = (size_t)strtoull(argv[++i], NULL, 10) * 1024;
      pthread_t th[16];
      mtfill_t tf[16];
      int started = 0;
      atomic_store(&mtfill_done, 0);
      atomic_store(&mtfill_threads, (n < 16 ? n : 16));
      for (int k = 0; k < n && k < 16; k++) {
        tf[started].size = size; tf[started].count = 0; tf[started].err = 0;
        if (pthread_create(&th[started], NULL, &mtfill_thread, &tf[started]) == 0) started++;
        else atomic_fetch_sub(&mtfill_threads, 1);   /* (the others do not wait for it) */
      }
      size_t blocks_total = 0;
      int enomem = 0;
      for (int k = 0; k < started; k++) {
        pthread_join(th[k], NULL);
        blocks_total += tf[k].count;
        if (tf[k].err == ENOMEM) enomem++;
      }
      size_t peak = 0;
      mi_process_info(NULL, NULL, NULL, NULL, NULL, NULL, &peak, NULL);
      printf("mtfill %zu enomem %d peak %zu\n", blocks_total, enomem, peak);
    }
    else if (strcmp(cmd, "committed") == 0) {
      size_t commit = 0;
      mi_process_info(NULL, NULL, NULL, NULL, NULL, &commit, NULL, NULL);
      printf("committed %zu\n", commit);
    }
    else {
      printf("unknown command %s\n", cmd);
      return 2;
    }
    fflush(stdout);
  }
  return 0;
}
