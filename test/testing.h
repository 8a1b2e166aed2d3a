/* SPDX-License-Identifier: MIT */
/* testing.h -- a tiny check-and-count harness shared by every test program.

   CHECK(cond)                 the condition must hold
   CHECK_MSG(cond, fmt, ...)   the same, with a printf-style note printed on failure
   CHECK_EQ(a, b)              integer equality (compared as 64-bit values)
   CHECK_NE(a, b)              integer inequality
   CHECK_GE(a, b), CHECK_LE    unsigned comparisons (sizes, counts)
   CHECK_PTR_EQ(a, b)          pointer identity
   CHECK_ALIGNED(p, align)     p is a multiple of align (align a power of two)

   Every failure prints "file:line: CHECK failed: <expression>" and the values involved, and
   is counted; test_summary() prints one line (PASS/FAIL, name, number of checks, a note) and
   returns the exit code for main(). A program that made no checks at all fails.

   The counters are updated atomically, so checks may be made from any thread. Only the first
   TEST_MAX_REPORTS failures are printed in full (all are counted).

   Define TEST_ABORT_ON_FAILURE before including to abort() at the first failure (used by the
   fuzzing build of test-model.c). Works in C11 and C++17 (gcc and clang). */
#ifndef MI_TESTING_H
#define MI_TESTING_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Windows (mingw-w64): the few POSIX calls the tests make */
#if defined(_WIN32)
#include <limits.h>
static inline int test_setenv_(const char* name, const char* value) { return _putenv_s(name, value); }
#define setenv(name, value, overwrite)  test_setenv_((name), (value))
#define unsetenv(name)                  test_setenv_((name), "")
#define realpath(fname, resolved)       _fullpath((resolved), (fname), PATH_MAX)
#define sysconf(name)                   (4096L)   /* only _SC_PAGESIZE: 4 KiB on Windows */
#ifndef _SC_PAGESIZE
#define _SC_PAGESIZE 0
#endif
#endif

#ifndef TEST_MAX_REPORTS
#define TEST_MAX_REPORTS 40
#endif

/* Running under a sanitizer?  (gcc defines __SANITIZE_*, clang answers __has_feature.) */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

/* Built for emulation (cross builds whose tests run under qemu-user: test/CMakeLists.txt
   defines MI_TEST_EMULATED)? qemu-user (7.2, Debian 12) ignores madvise, so memory the
   allocator purges stays resident: the RSS figures say nothing about the allocator there. */
#if defined(MI_TEST_EMULATED) && MI_TEST_EMULATED
#define TEST_RSS_UNRELIABLE 1
#else
#define TEST_RSS_UNRELIABLE TEST_SANITIZED
#endif

static long test_checks_;
static long test_failures_;

#if defined(__GNUC__)
#define TEST_UNUSED_ __attribute__((unused))
#if defined(__MINGW32__)
#define TEST_PRINTF_(f, a) __attribute__((format(gnu_printf, f, a)))   /* C99 formats (__USE_MINGW_ANSI_STDIO) */
#else
#define TEST_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#endif
#else
#define TEST_UNUSED_
#define TEST_PRINTF_(f, a)
#endif

static TEST_UNUSED_ void test_count_(void) { __atomic_fetch_add(&test_checks_, 1, __ATOMIC_RELAXED); }

static TEST_UNUSED_ TEST_PRINTF_(4, 5) void test_fail_(const char* file, int line, const char* expr, const char* fmt, ...) {
  long n = __atomic_add_fetch(&test_failures_, 1, __ATOMIC_RELAXED);
  if (n > TEST_MAX_REPORTS) return;
  fprintf(stderr, "%s:%d: CHECK failed: %s", file, line, expr);
  if (fmt != NULL) {
    va_list args;
    va_start(args, fmt);
    fputs("  -- ", stderr);
    vfprintf(stderr, fmt, args);
    va_end(args);
  }
  fputc('\n', stderr);
  if (n == TEST_MAX_REPORTS) fprintf(stderr, "(further failures are counted but not printed)\n");
  fflush(stderr);
#ifdef TEST_ABORT_ON_FAILURE
  abort();
#endif
}

#define CHECK(cond) \
  do { test_count_(); if (!(cond)) test_fail_(__FILE__, __LINE__, #cond, NULL); } while (0)

#define CHECK_MSG(cond, ...) \
  do { test_count_(); if (!(cond)) test_fail_(__FILE__, __LINE__, #cond, __VA_ARGS__); } while (0)

#define TEST_CMP_SIGNED_(a, op, b) \
  do { \
    long long ta_ = (long long)(a), tb_ = (long long)(b); \
    test_count_(); \
    if (!(ta_ op tb_)) \
      test_fail_(__FILE__, __LINE__, #a " " #op " " #b, "left = %lld (0x%llx), right = %lld (0x%llx)", \
                 ta_, (unsigned long long)ta_, tb_, (unsigned long long)tb_); \
  } while (0)

#define TEST_CMP_UNSIGNED_(a, op, b) \
  do { \
    unsigned long long ta_ = (unsigned long long)(a), tb_ = (unsigned long long)(b); \
    test_count_(); \
    if (!(ta_ op tb_)) \
      test_fail_(__FILE__, __LINE__, #a " " #op " " #b, "left = %llu (0x%llx), right = %llu (0x%llx)", \
                 ta_, ta_, tb_, tb_); \
  } while (0)

#define CHECK_EQ(a, b) TEST_CMP_SIGNED_(a, ==, b)
#define CHECK_NE(a, b) TEST_CMP_SIGNED_(a, !=, b)
#define CHECK_GE(a, b) TEST_CMP_UNSIGNED_(a, >=, b)
#define CHECK_LE(a, b) TEST_CMP_UNSIGNED_(a, <=, b)

#define CHECK_PTR_EQ(a, b) \
  do { \
    const void* pa_ = (const void*)(a); const void* pb_ = (const void*)(b); \
    test_count_(); \
    if (pa_ != pb_) test_fail_(__FILE__, __LINE__, #a " == " #b, "left = %p, right = %p", pa_, pb_); \
  } while (0)

#define CHECK_ALIGNED(p, align) \
  do { \
    uintptr_t pp_ = (uintptr_t)(p); uintptr_t al_ = (uintptr_t)(align); \
    test_count_(); \
    if (al_ == 0 || (pp_ & (al_ - 1)) != 0) \
      test_fail_(__FILE__, __LINE__, #p " aligned to " #align, "p = %p, alignment = %llu, p %% alignment = %llu", \
                 (void*)pp_, (unsigned long long)al_, al_ ? (unsigned long long)(pp_ % al_) : 0ULL); \
  } while (0)

static TEST_UNUSED_ long test_failure_count(void) { return __atomic_load_n(&test_failures_, __ATOMIC_RELAXED); }
static TEST_UNUSED_ long test_check_count(void) { return __atomic_load_n(&test_checks_, __ATOMIC_RELAXED); }

/* Run first by test_summary (rss-guard.h: stops the watchdog and reports what it saw). */
static void (*test_at_summary_)(void) TEST_UNUSED_;

/* Prints the one-line summary and returns the exit status for main(). */
static TEST_UNUSED_ TEST_PRINTF_(2, 3) int test_summary(const char* name, const char* fmt, ...) {
  if (test_at_summary_ != NULL) { void (*at)(void) = test_at_summary_; test_at_summary_ = NULL; at(); }
  long checks = test_check_count(), fails = test_failure_count();
  char note[512] = "";
  if (fmt != NULL) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(note, sizeof(note), fmt, args);
    va_end(args);
  }
  if (checks == 0) {
    printf("FAIL %s: the test made no checks at all (%s)\n", name, note);
    return 1;
  }
  if (fails > 0) {
    printf("FAIL %s: %ld of %ld checks failed (%s)\n", name, fails, checks, note);
  }
  else {
    printf("PASS %s: %ld checks passed (%s)\n", name, checks, note);
  }
  fflush(stdout);
  return fails > 0 ? 1 : 0;
}

/* Deterministic pseudo-random numbers: splitmix64 (one 64-bit state word per generator). */
typedef struct test_rng_s { uint64_t state; } test_rng_t;

static TEST_UNUSED_ uint64_t test_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static TEST_UNUSED_ uint64_t test_rand(test_rng_t* r) {
  r->state += 0x9E3779B97F4A7C15ULL;
  return test_mix64(r->state);
}
/* uniform-ish in [0, n); n > 0 */
static TEST_UNUSED_ uint64_t test_rand_below(test_rng_t* r, uint64_t n) { return test_rand(r) % n; }
/* uniform-ish in [lo, hi] */
static TEST_UNUSED_ uint64_t test_rand_range(test_rng_t* r, uint64_t lo, uint64_t hi) {
  return lo + test_rand(r) % (hi - lo + 1);
}

/* Integer command-line argument number i (1-based), or dflt when absent. */
static TEST_UNUSED_ long test_arg(int argc, char** argv, int i, long dflt) {
  if (i < argc && argv[i] != NULL && argv[i][0] != 0) return strtol(argv[i], NULL, 0);
  return dflt;
}

#endif
