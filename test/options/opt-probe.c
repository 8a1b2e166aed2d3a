/* SPDX-License-Identifier: MIT */
/* opt-probe.c -- reports option values and produces messages on request, for run-options.py.

   The driver runs this program with a chosen environment and checks stdout and stderr
   exactly; the program itself judges nothing. It executes its arguments as commands, in order:

     dump              one line per option 0..37: "opt <index> <get> <get_size> <is_enabled>"
     aliases           one line per legacy enumerator alias: "alias <name> <value>", then
                       "last <_mi_option_last>"
     print             mi_options_print()
     warn              one warning through the public API: mi_reserve_huge_os_pages(0, 0, &n)
                       (always "deprecated"), then "warned <n>" on stdout
     twarn             the same from a second thread (for the thread prefix on messages)
     err               one error: mi_malloc(PTRDIFF_MAX) (request too large), then "err <NULL|ptr>"
     register          mi_register_output(capture, &cookie): each call of capture writes
                       "cap <msg with \n escaped as \\n>" to stdout (one stdout line per call),
                       "cap-badarg" if arg is not &cookie
     unregister        mi_register_output(NULL, NULL)
     set <i> <v>       mi_option_set(i, v)
     mark              writes "MARK\n" to stderr (lets the driver see what came before/after)
     alloc             mi_free(mi_malloc(100)), then "alloc ok" (or "alloc NULL")

   Output goes through write(2) from static buffers, so that the probe itself needs no heap
   memory while it reports (several options concern where memory comes from). */
#define _GNU_SOURCE
#include <mimalloc.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void out_fd(int fd, const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

__attribute__((format(printf, 1, 2)))
static void say(const char* fmt, ...) {
  static char buf[1024];
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  if (n < 0) return;
  out_fd(1, buf, ((size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1));
}

static int cookie;

static void capture(const char* msg, void* arg) {
  static char buf[64 * 1024];
  if (arg != &cookie) { say("cap-badarg\n"); }
  size_t k = 0;
  const char* prefix = "cap ";
  memcpy(buf, prefix, 4);
  k = 4;
  for (const char* s = msg; *s != 0 && k + 3 < sizeof(buf); s++) {
    if (*s == '\n') { buf[k++] = '\\'; buf[k++] = 'n'; }
    else if (*s == '\\') { buf[k++] = '\\'; buf[k++] = '\\'; }
    else buf[k++] = *s;
  }
  buf[k++] = '\n';
  out_fd(1, buf, k);
}

static void do_warn(void) {
  size_t reserved = 12345;
  int err = mi_reserve_huge_os_pages(0, 0.0, &reserved);
  say("warned %d %zu\n", err, reserved);
}

static void* warn_thread(void* arg) {
  (void)arg;
  do_warn();
  return NULL;
}

static long num(const char* s) {
  char* end;
  long v = strtol(s, &end, 10);
  if (*s == 0 || *end != 0) { say("bad number '%s'\n", s); exit(2); }
  return v;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const char* cmd = argv[i];
    if (strcmp(cmd, "dump") == 0) {
      for (int o = 0; o < 38; o++) {
        mi_option_t opt = (mi_option_t)o;
        say("opt %d %ld %zu %d\n", o, mi_option_get(opt), mi_option_get_size(opt), (int)mi_option_is_enabled(opt));
      }
    }
    else if (strcmp(cmd, "aliases") == 0) {
      say("alias large_os_pages %d\n", (int)mi_option_large_os_pages);
      say("alias eager_region_commit %d\n", (int)mi_option_eager_region_commit);
      say("alias reset_decommits %d\n", (int)mi_option_reset_decommits);
      say("alias reset_delay %d\n", (int)mi_option_reset_delay);
      say("alias abandoned_page_reset %d\n", (int)mi_option_abandoned_page_reset);
      say("alias limit_os_alloc %d\n", (int)mi_option_limit_os_alloc);
      say("last %d\n", (int)_mi_option_last);
    }
    else if (strcmp(cmd, "print") == 0) {
      mi_options_print();
    }
    else if (strcmp(cmd, "warn") == 0) {
      do_warn();
    }
    else if (strcmp(cmd, "twarn") == 0) {
      pthread_t t;
      if (pthread_create(&t, NULL, &warn_thread, NULL) != 0) { say("pthread_create failed\n"); return 2; }
      pthread_join(t, NULL);
    }
    else if (strcmp(cmd, "err") == 0) {
      /* far beyond any possible allocation, yet not "negative" (valgrind flags those) */
      static volatile size_t huge = (size_t)PTRDIFF_MAX;
      void* p = mi_malloc(huge);
      say("err %s\n", (p == NULL ? "NULL" : "ptr"));
      mi_free(p);
    }
    else if (strcmp(cmd, "register") == 0) {
      mi_register_output(&capture, &cookie);
    }
    else if (strcmp(cmd, "unregister") == 0) {
      mi_register_output(NULL, NULL);
    }
    else if (strcmp(cmd, "set") == 0 && i + 2 < argc) {
      long o = num(argv[i + 1]), v = num(argv[i + 2]);
      mi_option_set((mi_option_t)o, v);
      i += 2;
    }
    else if (strcmp(cmd, "mark") == 0) {
      out_fd(2, "MARK\n", 5);
    }
    else if (strcmp(cmd, "alloc") == 0) {
      void* p = mi_malloc(100);
      say("alloc %s\n", (p != NULL ? "ok" : "NULL"));
      mi_free(p);
    }
    else {
      say("unknown command '%s'\n", cmd);
      return 2;
    }
  }
  say("done\n");
  return 0;
}
