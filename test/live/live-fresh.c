/* SPDX-License-Identifier: MIT */
/* The program run-live-fresh.py watches: threads that stop calling the allocator's slow paths
   right after a burst, each in its own way, so that only a publisher outside them can show
   what they hold:
     main      allocates MAIN_BLOCKS blocks of 2000 bytes (about 48 MB) in its first moments,
               then calls malloc(2000)/free ten times a second (fast paths only);
     sleeper   allocates SLEEP_BLOCKS blocks of 1000 bytes, then blocks in read() on a pipe;
     freer     allocates FREE_BLOCKS blocks of 100 bytes, then frees FREE_LATER of them, one
               every millisecond, without allocating, then blocks in read() too.
   It prints "tid NAME T" for each thread, "ready" once the bursts are done, "freed" once the
   freer has freed its share, and exits when stdin closes. Nothing here calls mi_collect or any
   other call that would publish. Blocks come from mi_malloc (sanitizer builds do not override
   malloc). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <mimalloc.h>

#define MAIN_BLOCKS   24000
#define SLEEP_BLOCKS  16000
#define FREE_BLOCKS   20000
#define FREE_LATER    15000

static int block_pipe[2];   /* never written: the threads wait in read() until exit */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int bursts_done;

static void burst_done(const char* name) {
  pthread_mutex_lock(&lock);
  printf("tid %s %ld\n", name, (long)syscall(SYS_gettid));
  fflush(stdout);
  bursts_done++;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
}

static void* sleeper(void* arg) {
  (void)arg;
  void** blocks = (void**)mi_malloc(SLEEP_BLOCKS * sizeof(void*));
  for (int i = 0; i < SLEEP_BLOCKS; i++) blocks[i] = mi_malloc(1000);
  burst_done("sleeper");
  char c;
  while (read(block_pipe[0], &c, 1) < 0) { }   /* blocked in a system call until exit */
  return blocks;
}

static void* freer(void* arg) {
  (void)arg;
  void** blocks = (void**)mi_malloc(FREE_BLOCKS * sizeof(void*));
  for (int i = 0; i < FREE_BLOCKS; i++) blocks[i] = mi_malloc(100);
  burst_done("freer");
  /* wait until the main thread said ready, so that the driver sees the figures move */
  pthread_mutex_lock(&lock);
  while (bursts_done < 3) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  const struct timespec ms = { 0, 1000000 };
  for (int i = 0; i < FREE_LATER; i++) {
    mi_free(blocks[i]);
    if (i % 50 == 0) nanosleep(&ms, NULL);
  }
  printf("freed\n");
  fflush(stdout);
  char c;
  while (read(block_pipe[0], &c, 1) < 0) { }
  return blocks;
}

int main(void) {
  if (pipe(block_pipe) != 0) return 1;
  void** blocks = (void**)mi_malloc(MAIN_BLOCKS * sizeof(void*));
  for (int i = 0; i < MAIN_BLOCKS; i++) blocks[i] = mi_malloc(2000);
  pthread_t t1, t2;
  pthread_create(&t1, NULL, &sleeper, NULL);
  pthread_create(&t2, NULL, &freer, NULL);
  pthread_mutex_lock(&lock);
  while (bursts_done < 2) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  burst_done("main");
  printf("ready\n");
  fflush(stdout);
  /* ten times a second, one block of the burst's size: served by the fast paths */
  const struct timespec tenth = { 0, 100000000 };
  for (;;) {
    struct timeval tv = { 0, 0 };
    fd_set in;
    FD_ZERO(&in);
    FD_SET(0, &in);
    if (select(1, &in, NULL, NULL, &tv) > 0) break;   /* stdin closed or written: exit */
    void* p = mi_malloc(2000);
    mi_free(p);
    nanosleep(&tenth, NULL);
  }
  return (blocks[0] != NULL ? 0 : 1);
}
