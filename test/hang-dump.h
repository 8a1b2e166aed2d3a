/* SPDX-License-Identifier: MIT */
/* hang-dump.h -- what a hung process is doing, for a test's output: every thread's stack with
   gdb when it is installed (CI installs it), else each thread's state, kernel wait channel and
   system call from /proc. Started with posix_spawn, which runs no fork handlers: it works while
   the process itself is stuck inside fork(). Linux only; a no-op elsewhere. */
#ifndef MI_TEST_HANG_DUMP_H
#define MI_TEST_HANG_DUMP_H
#include <stdio.h>
#include <sys/types.h>
#if defined(__linux__)
#include <dirent.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
extern char** environ;

static void test_hang_proc_line_(const char* path, const char* label) {
  char buf[512];
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  while (n > 0 && strchr(buf, '\n') != NULL) *strchr(buf, '\n') = ' ';
  fprintf(stderr, "    %s: %s\n", label, buf);
}

/* Prints what `pid` (any process of ours: this one, or a child) is doing, under `why`. */
static __attribute__((unused)) void test_hang_dump(pid_t pid, const char* why) {
  fprintf(stderr, "=== hang: %s: process %d\n", why, (int)pid);
  fflush(stderr);
  char spid[32];
  snprintf(spid, sizeof(spid), "%d", (int)pid);
  char* argv[] = { (char*)"gdb", (char*)"-batch", (char*)"-nx", (char*)"-p", spid,
                   (char*)"-ex", (char*)"thread apply all bt 30", NULL };
  pid_t gdb = 0;
  if (posix_spawnp(&gdb, "gdb", NULL, NULL, argv, environ) == 0) {
    int status = 0;
    if (waitpid(gdb, &status, 0) == gdb && WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  }
  fprintf(stderr, "  (no gdb: the threads' states from /proc)\n");
  char dir[64];
  snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
  DIR* d = opendir(dir);
  if (d == NULL) return;
  for (struct dirent* e = readdir(d); e != NULL; e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char path[400];
    fprintf(stderr, "  thread %s\n", e->d_name);
    snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);    test_hang_proc_line_(path, "stat");
    snprintf(path, sizeof(path), "%s/%s/wchan", dir, e->d_name);   test_hang_proc_line_(path, "wchan");
    snprintf(path, sizeof(path), "%s/%s/syscall", dir, e->d_name); test_hang_proc_line_(path, "syscall");
  }
  closedir(d);
}
#else
static __attribute__((unused)) void test_hang_dump(pid_t pid, const char* why) { (void)pid; fprintf(stderr, "=== hang: %s\n", why); }
#endif
#endif
