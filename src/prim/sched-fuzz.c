/* SPDX-License-Identifier: MIT */
/* The schedule fuzzer: test builds only (CMake -DMI_SCHED_FUZZ=ON defines MI_SCHED_FUZZ=1, and
   only then does src/static.c include this file; docs/testing.md, "Schedule fuzzing"). The
   failures of a concurrent allocator show when a thread is preempted at a bad moment of a slow
   path, which an idle machine rarely does. At the points of src/internal/sched.h a thread
   yields or sleeps on request, as the scheduler of a busy machine would make it do. It stands
   for the OS's scheduler, so it sits in the OS layer and calls only the primitives (and the
   library's formatter): test/layers.py checks that.

   MIMALLOC_TEST_SCHED, a comma-separated list, read once without allocating (on the first point
   reached once the environment is readable; the points before that do nothing, uncounted):
     seed:S      the generators' seed (default 1); 0: off, as without the variable
     p:F         the probability that something happens at a point (a decimal fraction; default
                 0.05; p:0 only counts)
     sleep:US    the longest sleep in microseconds (default 1000): a sleep lasts 1..US; sleep:0
                 makes every event a yield
     yield:F     the share of the events that are yields rather than sleeps (default 0.5)
     points:A+B  events only at these points (their names in sched.h); the others are counted
     count       at exit, print to stderr "mimalloc-sched: count POINT CALLS EVENTS ..." (every
                 point: its name, the calls counted, the yields and sleeps made)
     trace       print a line to stderr at each event, before it:
                 "mimalloc-sched: thread T call N POINT yield" or "... POINT sleep US"
   Example: MIMALLOC_TEST_SCHED=seed:3,p:0.05,sleep:2000,count

   Replay: each thread draws from a generator of its own, seeded with S and the thread's
   ordinal T (the order in which the threads first reached an active point); the Nth call a
   thread makes of an active point gets the same decision in every run with that seed. What
   is not replayed: the interleaving the OS makes, which thread gets which ordinal when several
   start together, and which points a thread reaches (purges go by the clock). A
   single-threaded program that reaches its points in the same order (MIMALLOC_PURGE_DELAY=-1)
   makes the same trace in every run. */
#include "prim.h"
#include "../internal/base.h"

_Static_assert(MI_SCHED_COUNT <= 32, "the points' set is a 32-bit mask");

static const char* mi_sched_names[MI_SCHED_COUNT] = {
#define MI_SCHED_NAME(id, name)  name,
  MI_SCHED_POINTS(MI_SCHED_NAME)
#undef MI_SCHED_NAME
};

/* Settings: written once, before mi_sched_state becomes MI_SCHED_READ (release); read after it
   was seen so (acquire). */
typedef enum mi_sched_state_e { MI_SCHED_UNREAD, MI_SCHED_READING, MI_SCHED_READ } mi_sched_state_t;
static _Atomic(int)     mi_sched_state;
static uint64_t         mi_sched_seed = 1;
static uint64_t         mi_sched_prob = ((uint64_t)5 << 32) / 100;   /* an event: probability mi_sched_prob / 2^32 */
static uint64_t         mi_sched_yield_share = (uint64_t)1 << 31;    /* of the events, yields: share / 2^32 */
static size_t           mi_sched_sleep_max = 1000;   /* microseconds */
static uint32_t         mi_sched_points = ~(uint32_t)0;   /* bit w: events at point w */
static bool             mi_sched_count, mi_sched_trace;

static _Atomic(size_t)  mi_sched_calls[MI_SCHED_COUNT];
static _Atomic(size_t)  mi_sched_events[MI_SCHED_COUNT];
static _Atomic(size_t)  mi_sched_threads;       /* threads that reached an active point */

/* Per thread, without allocating: thread-local storage (also in the purger's thread, which
   has no heap, and during thread exit, whose hook runs while the thread's TLS is still there).
   A new thread starts zeroed: ordinal 0 is "not yet". (mingw-w64's gcc has emulated TLS only,
   whose first access on a thread allocates through the C runtime, as sheap.c's mi_sheaps_held
   does: untested on Windows, where test/sched is not built.) */
typedef struct mi_sched_thread_s {
  uint64_t random;    /* splitmix64 state of the thread's stream */
  size_t   ordinal;   /* 1 + the threads that reached an active point before it; 0: none yet */
  size_t   calls;     /* its calls of active points so far (the trace's N) */
} mi_sched_thread_t;
static mi_decl_thread mi_sched_thread_t mi_sched_thread;

/* ------------------------------------------------------------------------------------------
   MIMALLOC_TEST_SCHED
------------------------------------------------------------------------------------------ */
static bool mi_sched_word(const char* s, size_t n, const char* word) {
  size_t i = 0;
  for (; i < n && word[i] != 0; i++) if (s[i] != word[i]) return false;
  return (i == n && word[i] == 0);
}

static uint64_t mi_sched_number(const char** s) {
  uint64_t n = 0;
  while (**s >= '0' && **s <= '9') { n = 10*n + (uint64_t)(**s - '0'); (*s)++; }
  return n;
}

/* "0.05" -> 0.05 * 2^32 (up to 9 digits after the point); 1 or more: 2^32 (always) */
static uint64_t mi_sched_fraction(const char* s) {
  const uint64_t whole = mi_sched_number(&s);
  if (whole >= 1) return ((uint64_t)1 << 32);
  uint64_t num = 0, den = 1;
  if (*s == '.') {
    s++;
    while (*s >= '0' && *s <= '9' && den < 1000000000) { num = 10*num + (uint64_t)(*s - '0'); den *= 10; s++; }
  }
  return (num << 32) / den;
}

static void mi_sched_unknown(const char* what, const char* s, size_t n) {
  char entry[64];
  if (n >= sizeof(entry)) n = sizeof(entry) - 1;
  for (size_t i = 0; i < n; i++) entry[i] = s[i];
  entry[n] = 0;
  char msg[160];
  _mi_snprintf(msg, sizeof(msg), "mimalloc-sched: unknown %s in MIMALLOC_TEST_SCHED: %s\n", what, entry);
  _mi_prim_out_stderr(msg);
}

/* "A+B+C" (up to the next ','): the set of points */
static void mi_sched_parse_points(const char* s) {
  mi_sched_points = 0;
  while (*s != 0 && *s != ',') {
    size_t n = 0;
    while (s[n] != 0 && s[n] != ',' && s[n] != '+') n++;
    bool known = false;
    for (int w = 0; w < MI_SCHED_COUNT; w++) {
      if (mi_sched_word(s, n, mi_sched_names[w])) { mi_sched_points |= (uint32_t)1 << w; known = true; }
    }
    if (!known) mi_sched_unknown("point", s, n);
    s += n;
    if (*s == '+') s++;
  }
}

static void mi_sched_parse(const char* spec) {
  const char* s = spec;
  while (*s != 0) {
    size_t n = 0;
    while (s[n] != 0 && s[n] != ',' && s[n] != ':') n++;
    const char* v = (s[n] == ':' ? s + n + 1 : s + n);
    const char* t = v;
    if (mi_sched_word(s, n, "seed")) mi_sched_seed = mi_sched_number(&t);
    else if (mi_sched_word(s, n, "p")) mi_sched_prob = mi_sched_fraction(v);
    else if (mi_sched_word(s, n, "sleep")) mi_sched_sleep_max = (size_t)mi_sched_number(&t);
    else if (mi_sched_word(s, n, "yield")) mi_sched_yield_share = mi_sched_fraction(v);
    else if (mi_sched_word(s, n, "points")) mi_sched_parse_points(v);
    else if (mi_sched_word(s, n, "count")) mi_sched_count = true;
    else if (mi_sched_word(s, n, "trace")) mi_sched_trace = true;
    else mi_sched_unknown("entry", s, n);
    while (*s != 0 && *s != ',') s++;
    if (*s == ',') s++;
  }
}

/* Once, by the first thread here once the environment is readable; the others wait for it. */
static void mi_sched_read(void) {
  if (!_mi_prim_env_ready()) return;
  int expected = MI_SCHED_UNREAD;
  if (!mi_atomic_cas_strong_acq_rel(&mi_sched_state, &expected, MI_SCHED_READING)) {
    while (mi_atomic_load_acquire(&mi_sched_state) == MI_SCHED_READING) { _mi_prim_thread_yield(); }
    return;
  }
  char buf[256];
  if (_mi_prim_getenv("MIMALLOC_TEST_SCHED", buf, sizeof(buf))) mi_sched_parse(buf);
  else mi_sched_seed = 0;   /* no list: off */
  mi_atomic_store_release(&mi_sched_state, MI_SCHED_READ);
}

/* ------------------------------------------------------------------------------------------
   The points
------------------------------------------------------------------------------------------ */
/* splitmix64: the thread's stream is a function of the seed and its ordinal alone */
static uint64_t mi_sched_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * (uint64_t)0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * (uint64_t)0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static uint64_t mi_sched_next(mi_sched_thread_t* t) {
  t->random += (uint64_t)0x9E3779B97F4A7C15ULL;
  return mi_sched_mix(t->random);
}

void _mi_sched_point(mi_sched_where_t where) {
  if (mi_atomic_load_acquire(&mi_sched_state) != MI_SCHED_READ) {
    mi_sched_read();
    if (mi_atomic_load_acquire(&mi_sched_state) != MI_SCHED_READ) return;
  }
  if (mi_sched_seed == 0) return;
  mi_atomic_add_relaxed(&mi_sched_calls[where], 1);
  if ((mi_sched_points & ((uint32_t)1 << where)) == 0) return;
  mi_sched_thread_t* const t = &mi_sched_thread;
  if (t->ordinal == 0) {
    t->ordinal = mi_atomic_add_relaxed(&mi_sched_threads, 1) + 1;
    t->random = mi_sched_mix(mi_sched_seed) ^ mi_sched_mix((uint64_t)t->ordinal * (uint64_t)0xD1B54A32D192ED03ULL);
  }
  t->calls++;
  /* one draw per call, a second one for an event: the decisions depend on the call's number */
  if ((mi_sched_next(t) >> 32) >= mi_sched_prob) return;
  const uint64_t r = mi_sched_next(t);
  const bool yield = (mi_sched_sleep_max == 0 || (r >> 32) < mi_sched_yield_share);
  const size_t usecs = (yield ? 0 : 1 + (size_t)((r & 0xFFFFFFFF) % mi_sched_sleep_max));
  mi_atomic_add_relaxed(&mi_sched_events[where], 1);
  if (mi_sched_trace) {
    char msg[128];
    if (yield) _mi_snprintf(msg, sizeof(msg), "mimalloc-sched: thread %zu call %zu %s yield\n", t->ordinal, t->calls, mi_sched_names[where]);
    else _mi_snprintf(msg, sizeof(msg), "mimalloc-sched: thread %zu call %zu %s sleep %zu\n", t->ordinal, t->calls, mi_sched_names[where], usecs);
    _mi_prim_out_stderr(msg);
  }
  if (yield) _mi_prim_thread_yield();
  else _mi_prim_thread_sleep(usecs);
}

/* at exit (count): every point's calls and events, in sched.h's order */
__attribute__((destructor(101))) static void mi_sched_print_counts(void) {
  if (mi_atomic_load_acquire(&mi_sched_state) != MI_SCHED_READ || mi_sched_seed == 0 || !mi_sched_count) return;
  char msg[1024];
  size_t len = (size_t)_mi_snprintf(msg, sizeof(msg), "mimalloc-sched: count");
  for (int w = 0; w < MI_SCHED_COUNT && len < sizeof(msg); w++) {
    len += (size_t)_mi_snprintf(msg + len, sizeof(msg) - len, " %s %zu %zu", mi_sched_names[w],
                                mi_atomic_load_relaxed(&mi_sched_calls[w]), mi_atomic_load_relaxed(&mi_sched_events[w]));
  }
  if (len < sizeof(msg) - 1) { msg[len] = '\n'; msg[len+1] = 0; }
  _mi_prim_out_stderr(msg);
}
