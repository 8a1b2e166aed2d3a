/* SPDX-License-Identifier: MIT */
/* A thread's live state (src/live.c's pool) goes back when the thread ends: with MIMALLOC_LIVE=1,
   rounds of short threads (some publish, some never do) leave the count of states in use (the
   file header's thread_states, refreshed by every process document, forced by mi_collect) where
   it was; while a round's threads are alive it counts each of them. A fork child, whose other
   threads are gone, holds none of theirs once it starts a view of its own, and its own short
   threads return theirs too. Exit status 0 when all holds. */
#include <mimalloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS   20
#define THREADS  8
#define STATES_OFFSET 72   /* docs/live.md: the header's thread_states */

static const uint64_t* states;
static pthread_barrier_t barrier;

static int map_header(void) {
  char path[64];
  snprintf(path, sizeof(path), "/dev/shm/mimalloc-live.%ld", (long)getpid());
  const int fd = open(path, O_RDONLY);
  if (fd < 0) { fprintf(stderr, "live-threads: cannot open %s\n", path); return -1; }
  void* const p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED || memcmp(p, "mi-live", 8) != 0) { fprintf(stderr, "live-threads: %s is no live file\n", path); return -1; }
  states = (const uint64_t*)((const char*)p + STATES_OFFSET);
  return 0;
}

/* the count of now: a forced publication writes the process document and the header */
static uint64_t states_now(void) {
  mi_collect(false);
  return __atomic_load_n(states, __ATOMIC_ACQUIRE);
}

/* blocks of a few size classes, fresh pages (the slow path), and every other thread publishes */
static void* worker(void* arg) {
  const uintptr_t i = (uintptr_t)arg;
  void* blocks[512];
  for (int k = 0; k < 512; k++) blocks[k] = mi_malloc((size_t)(16 + (k % 7) * 48 + i));
  for (int k = 0; k < 512; k += 2) mi_free(blocks[k]);
  if (i % 2 == 0) mi_collect(false);   /* a slot, registered with the background thread */
  pthread_barrier_wait(&barrier);   /* all alive: the caller counts */
  pthread_barrier_wait(&barrier);
  for (int k = 1; k < 512; k += 2) mi_free(blocks[k]);
  return NULL;
}

/* `rounds` rounds of THREADS threads; while each round's are alive, at least base + THREADS */
static int run_rounds(int rounds, uint64_t base, const char* who) {
  for (int r = 0; r < rounds; r++) {
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS + 1);
    for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, &worker, (void*)(i + 1));
    pthread_barrier_wait(&barrier);
    const uint64_t alive = states_now();
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    if (alive < base + THREADS) {
      fprintf(stderr, "live-threads: %s round %d: %llu states with %d threads alive, base %llu\n",
              who, r, (unsigned long long)alive, THREADS, (unsigned long long)base);
      return 1;
    }
  }
  const uint64_t after = states_now();
  printf("live-threads: %s: %llu states before %d threads, %llu after\n",
         who, (unsigned long long)base, rounds * THREADS, (unsigned long long)after);
  fflush(stdout);
  if (after != base) { fprintf(stderr, "live-threads: %s: states leaked\n", who); return 1; }
  return 0;
}

int main(void) {
  if (!mi_option_is_enabled(mi_option_live) || map_header() != 0) {
    fprintf(stderr, "live-threads: run with MIMALLOC_LIVE=1\n");
    return 1;
  }
  (void)states_now();   /* the main thread's state, the background thread started */
  usleep(20 * 1000);
  const uint64_t base = states_now();
  if (run_rounds(ROUNDS, base, "process") != 0) return 1;

  /* fork while THREADS threads hold states: the child frees theirs */
  pthread_t t[THREADS];
  pthread_barrier_init(&barrier, NULL, THREADS + 1);
  for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, &worker, (void*)(i + 1));
  pthread_barrier_wait(&barrier);
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    mi_option_set(mi_option_live, 1);   /* a view (and file) of the child's own */
    if (map_header() != 0) _exit(1);
    (void)states_now();
    usleep(20 * 1000);
    const uint64_t child_base = states_now();
    if (child_base > base) {
      fprintf(stderr, "live-threads: child holds %llu states (the parent %llu before its threads)\n",
              (unsigned long long)child_base, (unsigned long long)base);
      _exit(1);
    }
#if defined(__SANITIZE_THREAD__)
    _exit(0);   /* ThreadSanitizer does not follow new threads of a multi-threaded fork's child */
#else
    _exit(run_rounds(2, child_base, "fork child"));
#endif
  }
  pthread_barrier_wait(&barrier);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&barrier);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "live-threads: the fork child failed (status %d)\n", status);
    return 1;
  }
  if (states_now() != base) { fprintf(stderr, "live-threads: states leaked after the fork\n"); return 1; }
  printf("live-threads: ok\n");
  return 0;
}
