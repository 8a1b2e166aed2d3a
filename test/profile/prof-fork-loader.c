/* SPDX-License-Identifier: MIT */
/* prof-fork-loader.c -- fork while other threads take samples (the profiler on, MIMALLOC_PROFILE_RATE
   small): every sample counts the loaded objects with dl_iterate_phdr (prof-stack.c), which
   holds glibc's loader lock while it runs, and glibc's fork does not take that lock. A child
   forked while a sampling thread was inside inherited the lock held and hung at its own first
   sample (test-sheap's fork test, 1 run in 12 at a rate of 64 bytes). Here two threads do
   nothing but sampled allocations while main forks PF_FORKS times; each child makes sampled
   allocations and exits. A child that has not exited 10 s after the fork (60 s under qemu-user)
   is hung: its stacks are
   printed (hang-dump.h), it is killed, and the check fails; a fork that does not return 30 s after
   that (the parent stuck in the fork handlers) prints the parent's stacks and fails the test.
   Usage: prof-fork-loader [forks]   (run with MIMALLOC_PROFILE set and a rate of 64 bytes) */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mimalloc.h"
#include "../testing.h"
#include "../hang-dump.h"

/* The time a child gets, from the fork to its exit; the parent's watchdog gives a fork 30 s
   more. Under qemu-user a child starts slowly (its code is translated again): the first fork's
   child once took more than 10 s in CI. */
#if defined(MI_TEST_EMULATED) && MI_TEST_EMULATED
#define PF_CHILD_MS  60000
#else
#define PF_CHILD_MS  10000
#endif
#define PF_FORK_S    (PF_CHILD_MS / 1000 + 30)

static atomic_bool stop;
static atomic_int  forks_done;   /* children waited for (the watchdog's measure of progress) */

static void* sampler(void* arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void* p = mi_malloc(64);   /* (rate 64: most of them sampled) */
    mi_free(p);
  }
  return NULL;
}

/* The parent stuck: no child waited for in PF_FORK_S seconds */
static void* watchdog(void* arg) {
  (void)arg;
  int last = -1, still = 0;
  while (!atomic_load(&stop)) {
    const struct timespec second = { 1, 0 };
    nanosleep(&second, NULL);
    const int done = atomic_load(&forks_done);
    still = (done == last ? still + 1 : 0);
    last = done;
    if (still >= PF_FORK_S) {
      char why[96];
      snprintf(why, sizeof(why), "fork %d has not returned in %d s", done, PF_FORK_S);
      test_hang_dump(getpid(), why);
      _exit(1);
    }
  }
  return NULL;
}

/* Waits for the child up to PF_CHILD_MS; a hung one is shown, killed and reaped. True if it exited 0. */
static bool child_wait(pid_t pid, int i) {
  int status = 0;
  for (int ms = 0; ; ms += 10) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    CHECK(r >= 0);
    if (r != 0) break;
    if (ms >= PF_CHILD_MS) {
      char why[96];
      snprintf(why, sizeof(why), "the child of fork %d has not exited in %d s", i, PF_CHILD_MS / 1000);
      test_hang_dump(pid, why);
      kill(pid, SIGKILL);
      CHECK_EQ(waitpid(pid, &status, 0), pid);
      break;
    }
    const struct timespec tick = { 0, 10 * 1000 * 1000 };
    nanosleep(&tick, NULL);
  }
  const bool ok = (WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_MSG(ok, "fork %d: the child %s %d", i, WIFSIGNALED(status) ? "died of signal" : "exited with", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  return ok;
}

int main(int argc, char** argv) {
  const int forks = (argc > 1 ? atoi(argv[1]) : 300);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_create(&t[i], NULL, &sampler, NULL), 0);
  pthread_t dog;
  CHECK_EQ(pthread_create(&dog, NULL, &watchdog, NULL), 0);
  int hung = 0;
  for (int i = 0; i < forks; i++) {
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0) break;
    if (pid == 0) {
      for (int k = 0; k < 100; k++) mi_free(mi_malloc(64));
      _exit(0);
    }
    if (!child_wait(pid, i)) hung++;
    atomic_fetch_add(&forks_done, 1);
    if (hung >= 3) break;   /* (each costs PF_CHILD_MS) */
  }
  atomic_store(&stop, true);
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
  CHECK_EQ(pthread_join(dog, NULL), 0);
  return test_summary("prof-fork-loader", "%d forks while two threads sample, %d children hung", forks, hung);
}
