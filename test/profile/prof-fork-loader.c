/* SPDX-License-Identifier: MIT */
/* prof-fork-loader.c -- fork while other threads take samples (the profiler on, MIMALLOC_PROFILE_RATE
   small): every sample counts the loaded objects with dl_iterate_phdr (prof-stack.c), which
   holds glibc's loader lock while it runs, and glibc's fork does not take that lock. A child
   forked while a sampling thread was inside inherited the lock held and hung at its own first
   sample (test-sheap's fork test, 1 run in 12 at a rate of 64 bytes). Here two threads do
   nothing but sampled allocations while main forks PF_FORKS times; each child makes sampled
   allocations and exits, under an alarm: a child that hangs dies of SIGALRM and fails the check.
   Usage: prof-fork-loader [forks]   (run with MIMALLOC_PROFILE set and a rate of 64 bytes) */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mimalloc.h"
#include "../testing.h"

static atomic_bool stop;

static void* sampler(void* arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void* p = mi_malloc(64);   /* (rate 64: most of them sampled) */
    mi_free(p);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const int forks = (argc > 1 ? atoi(argv[1]) : 300);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_create(&t[i], NULL, &sampler, NULL), 0);
  int hung = 0;
  for (int i = 0; i < forks; i++) {
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0) break;
    if (pid == 0) {
      alarm(10);   /* a child stuck on the inherited lock dies of SIGALRM */
      for (int k = 0; k < 100; k++) mi_free(mi_malloc(64));
      _exit(0);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    const bool ok = (WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!ok) hung++;
    CHECK_MSG(ok, "fork %d: the child %s %d", i, WIFSIGNALED(status) ? "died of signal" : "exited with", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    if (hung >= 3) break;   /* (each costs the alarm's 10 s) */
  }
  atomic_store(&stop, true);
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
  return test_summary("prof-fork-loader", "%d forks while two threads sample, %d children hung", forks, hung);
}
