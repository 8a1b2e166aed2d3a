/* SPDX-License-Identifier: MIT */
/* opt-api.c -- the rules of the option functions (include/mimalloc.h, section 7).

   Self-checking; run by run-options.py with a scenario name and a fixed environment:

     basic   clean environment: enable/disable/set_enabled/set_enabled_default/is_enabled,
             get_clamp, get_size, out-of-range options, guarded_min/max cross-adjustment,
             set_default before and after an explicit set, the enum aliases
     env     MIMALLOC_PURGE_DELAY=5 MIMALLOC_USE_NUMA_NODES=2 MIMALLOC_MAX_SEGMENT_RECLAIM=bogus
             MIMALLOC_ABANDONED_PAGE_PURGE=1 MIMALLOC_GENERIC_COLLECT=500:
             mi_option_set after the environment was read wins; set_default is ignored for
             options the environment gave a value, applies to one whose value was invalid
     early   MIMALLOC_EAGER_COMMIT_DELAY=3 MIMALLOC_ARENA_PURGE_MULT=6 MIMALLOC_PURGE_DELAY=5
             MIMALLOC_ABANDONED_RECLAIM_ON_FREE=0 MIMALLOC_DISALLOW_ARENA_ALLOC=1:
             the same calls made from .preinit_array, i.e. before the library's constructor
             read the environment: mi_option_set still wins over the environment, while
             mi_option_set_default / set_enabled_default must not hide an environment value

   Every expectation is an exact value. */
#define _GNU_SOURCE
#include <mimalloc.h>

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "testing.h"

#define NOPT 38

/* ---- the early scenario: runs before any constructor (also the shared library's) ---- */
static int  early_ran;
static long early_purge_delay_seen = -12345;

static void early_calls(int argc, char** argv, char** envp) {
  (void)envp;
  if (argc < 2 || strcmp(argv[1], "early") != 0) return;
  early_ran = 1;
  mi_option_set(mi_option_eager_commit_delay, 7);                   /* env 3: set wins */
  mi_option_set_default(mi_option_arena_purge_mult, 4);             /* env 6: env wins */
  mi_option_set_default(mi_option_os_tag, 150);                     /* no env: applies */
  mi_option_set_enabled_default(mi_option_abandoned_reclaim_on_free, true);  /* env 0 wins */
  mi_option_set_enabled_default(mi_option_disallow_arena_alloc, false);      /* env 1 wins */
  mi_option_set_enabled_default(mi_option_visit_abandoned, true);   /* no env: applies */
  early_purge_delay_seen = mi_option_get(mi_option_purge_delay);    /* env 5, or 10 if unreadable */
  mi_option_set(mi_option_purge_delay, 20);                         /* then set: wins */
}
__attribute__((section(".preinit_array"), used))
static void (*const early_entry)(int, char**, char**) = &early_calls;

static void scenario_early(void) {
  CHECK_MSG(early_ran, "the .preinit_array function did not run");
  /* the environment may not be readable yet at .preinit_array time (glibc sets environ in
     libc's own initialiser): then the default is returned and the read is retried later */
  CHECK_MSG(early_purge_delay_seen == 5 || early_purge_delay_seen == 10, "seen %ld", early_purge_delay_seen);
  CHECK_EQ(mi_option_get(mi_option_eager_commit_delay), 7);
  CHECK_EQ(mi_option_get(mi_option_arena_purge_mult), 6);
  CHECK_EQ(mi_option_get(mi_option_os_tag), 150);
  CHECK_EQ(mi_option_get(mi_option_abandoned_reclaim_on_free), 0);
  CHECK_EQ(mi_option_get(mi_option_disallow_arena_alloc), 1);
  CHECK_EQ(mi_option_get(mi_option_visit_abandoned), 1);
  CHECK_EQ(mi_option_get(mi_option_purge_delay), 20);
  /* untouched options keep their defaults */
  CHECK_EQ(mi_option_get(mi_option_eager_commit), 1);
  CHECK_EQ(mi_option_get(mi_option_max_warnings), 32);
  /* after start-up, set_default still cannot override what the environment gave */
  mi_option_set_default(mi_option_arena_purge_mult, 8);
  CHECK_EQ(mi_option_get(mi_option_arena_purge_mult), 6);
  /* ...nor an explicit setting */
  mi_option_set_default(mi_option_eager_commit_delay, 8);
  CHECK_EQ(mi_option_get(mi_option_eager_commit_delay), 7);
  /* a value given only by set_default may be replaced by a later set_default */
  mi_option_set_default(mi_option_os_tag, 160);
  CHECK_EQ(mi_option_get(mi_option_os_tag), 160);
}

static void scenario_env(void) {
  CHECK_EQ(mi_option_get(mi_option_purge_delay), 5);
  CHECK_EQ(mi_option_get(mi_option_reset_delay), 5);
  mi_option_set(mi_option_purge_delay, 20);                     /* set after the read wins */
  CHECK_EQ(mi_option_get(mi_option_purge_delay), 20);
  mi_option_set_default(mi_option_purge_delay, 30);             /* explicit now: ignored */
  CHECK_EQ(mi_option_get(mi_option_purge_delay), 20);

  CHECK_EQ(mi_option_get(mi_option_use_numa_nodes), 2);
  mi_option_set_default(mi_option_use_numa_nodes, 7);           /* env value: ignored */
  CHECK_EQ(mi_option_get(mi_option_use_numa_nodes), 2);
  mi_option_set_enabled_default(mi_option_abandoned_page_purge, false);   /* env 1: ignored */
  CHECK_EQ(mi_option_get(mi_option_abandoned_page_purge), 1);
  CHECK(mi_option_is_enabled(mi_option_abandoned_page_purge));
  mi_option_set_default(mi_option_generic_collect, 9);          /* env 500: ignored */
  CHECK_EQ(mi_option_get(mi_option_generic_collect), 500);

  CHECK_EQ(mi_option_get(mi_option_max_segment_reclaim), 10);   /* invalid env: default kept */
  mi_option_set_default(mi_option_max_segment_reclaim, 44);     /* no valid env value: applies */
  CHECK_EQ(mi_option_get(mi_option_max_segment_reclaim), 44);

  mi_option_set_default(mi_option_os_tag, 120);                 /* no env at all: applies */
  CHECK_EQ(mi_option_get(mi_option_os_tag), 120);
  mi_option_set(mi_option_use_numa_nodes, 3);                   /* set beats the env value */
  CHECK_EQ(mi_option_get(mi_option_use_numa_nodes), 3);
}

static void snapshot(long* v) {
  for (int i = 0; i < NOPT; i++) v[i] = mi_option_get((mi_option_t)i);
}

static void scenario_basic(void) {
  /* the enumerators and aliases */
  CHECK_EQ((int)_mi_option_last, NOPT);
  CHECK_EQ((int)mi_option_show_errors, 0);
  CHECK_EQ((int)mi_option_purge_delay, 15);
  CHECK_EQ((int)mi_option_arena_reserve, 23);
  CHECK_EQ((int)mi_option_allow_thp, 37);
  CHECK_EQ((int)mi_option_large_os_pages, (int)mi_option_allow_large_os_pages);
  CHECK_EQ((int)mi_option_eager_region_commit, (int)mi_option_arena_eager_commit);
  CHECK_EQ((int)mi_option_reset_decommits, (int)mi_option_purge_decommits);
  CHECK_EQ((int)mi_option_reset_delay, (int)mi_option_purge_delay);
  CHECK_EQ((int)mi_option_abandoned_page_reset, (int)mi_option_abandoned_page_purge);
  CHECK_EQ((int)mi_option_limit_os_alloc, (int)mi_option_disallow_os_alloc);

  /* enable / disable / set_enabled / is_enabled */
  CHECK(!mi_option_is_enabled(mi_option_abandoned_page_purge));
  mi_option_enable(mi_option_abandoned_page_purge);
  CHECK_EQ(mi_option_get(mi_option_abandoned_page_purge), 1);
  CHECK(mi_option_is_enabled(mi_option_abandoned_page_reset));
  mi_option_disable(mi_option_abandoned_page_purge);
  CHECK_EQ(mi_option_get(mi_option_abandoned_page_purge), 0);
  CHECK(!mi_option_is_enabled(mi_option_abandoned_page_purge));
  mi_option_set_enabled(mi_option_abandoned_page_purge, true);
  CHECK_EQ(mi_option_get(mi_option_abandoned_page_purge), 1);
  mi_option_set_enabled(mi_option_abandoned_page_purge, false);
  CHECK_EQ(mi_option_get(mi_option_abandoned_page_purge), 0);
  /* is_enabled is "value != 0", including negative values */
  CHECK(mi_option_is_enabled(mi_option_reserve_huge_os_pages_at));   /* default -1 */
  mi_option_set(mi_option_max_errors, 5);
  CHECK(mi_option_is_enabled(mi_option_max_errors));
  mi_option_set(mi_option_max_errors, -3);
  CHECK(mi_option_is_enabled(mi_option_max_errors));
  mi_option_set(mi_option_max_errors, 0);
  CHECK(!mi_option_is_enabled(mi_option_max_errors));

  /* set and set_default clamp to the option's range (README, Options) */
  mi_option_set(mi_option_purge_delay, -5);
  CHECK_EQ(mi_option_get(mi_option_purge_delay), -1);
  mi_option_set(mi_option_purge_delay, LONG_MAX);
  CHECK_EQ(mi_option_get(mi_option_purge_delay), 24L * 60 * 60 * 1000);
  mi_option_set(mi_option_eager_commit_delay, -3);
  CHECK_EQ(mi_option_get(mi_option_eager_commit_delay), 0);
  mi_option_set(mi_option_show_stats, 42);
  CHECK_EQ(mi_option_get(mi_option_show_stats), 1);
  mi_option_set(mi_option_show_stats, 0);
  mi_option_set(mi_option_arena_purge_mult, LONG_MIN);
  CHECK_EQ(mi_option_get(mi_option_arena_purge_mult), 0);
  mi_option_set(mi_option_arena_purge_mult, 10);
  mi_option_set(mi_option_max_warnings, LONG_MIN);                  /* any negative: unlimited */
  CHECK_EQ(mi_option_get(mi_option_max_warnings), LONG_MIN);
  mi_option_set(mi_option_max_warnings, 32);
  CHECK_EQ(mi_option_get(mi_option_retry_on_oom), 400);
  mi_option_set_default(mi_option_retry_on_oom, 99999);
  CHECK_EQ(mi_option_get(mi_option_retry_on_oom), 2000);

  /* set_enabled_default: applies to an option not yet set, never after an explicit set */
  mi_option_set_enabled_default(mi_option_guarded_precise, true);
  CHECK_EQ(mi_option_get(mi_option_guarded_precise), 1);
  mi_option_set_enabled_default(mi_option_guarded_precise, false);   /* still only a default */
  CHECK_EQ(mi_option_get(mi_option_guarded_precise), 0);
  mi_option_disable(mi_option_abandoned_page_purge);
  mi_option_set_enabled_default(mi_option_abandoned_page_purge, true);   /* explicit: ignored */
  CHECK_EQ(mi_option_get(mi_option_abandoned_page_purge), 0);
  mi_option_enable(mi_option_visit_abandoned);
  mi_option_set_enabled_default(mi_option_visit_abandoned, false);
  CHECK_EQ(mi_option_get(mi_option_visit_abandoned), 1);

  /* set_default: applies while the option has no explicit value */
  CHECK_EQ(mi_option_get(mi_option_max_segment_reclaim), 10);
  mi_option_set_default(mi_option_max_segment_reclaim, 40);
  CHECK_EQ(mi_option_get(mi_option_max_segment_reclaim), 40);
  mi_option_set_default(mi_option_max_segment_reclaim, 41);
  CHECK_EQ(mi_option_get(mi_option_max_segment_reclaim), 41);
  mi_option_set(mi_option_max_segment_reclaim, 50);
  mi_option_set_default(mi_option_max_segment_reclaim, 60);           /* explicit: ignored */
  CHECK_EQ(mi_option_get(mi_option_max_segment_reclaim), 50);
  mi_option_set(mi_option_max_segment_reclaim, 55);                   /* set again: works */
  CHECK_EQ(mi_option_get(mi_option_max_segment_reclaim), 55);

  /* get_clamp */
  mi_option_set(mi_option_generic_collect, 500);
  CHECK_EQ(mi_option_get_clamp(mi_option_generic_collect, 1, 1000000), 500);
  CHECK_EQ(mi_option_get_clamp(mi_option_generic_collect, 600, 1000), 600);
  CHECK_EQ(mi_option_get_clamp(mi_option_generic_collect, 1, 100), 100);
  CHECK_EQ(mi_option_get_clamp(mi_option_generic_collect, 500, 500), 500);
  mi_option_set(mi_option_max_errors, -7);
  CHECK_EQ(mi_option_get_clamp(mi_option_max_errors, -5, 5), -5);
  CHECK_EQ(mi_option_get_clamp(mi_option_max_errors, -10, 5), -7);
  CHECK_EQ(mi_option_get(mi_option_max_errors), -7);   /* get_clamp does not store */
  mi_option_set(mi_option_generic_collect, -7);          /* below its range 1..1000000 */
  CHECK_EQ(mi_option_get(mi_option_generic_collect), 1);

  /* get_size: negative -> 0, plain value for ordinary options, bytes for the KiB options */
  mi_option_set(mi_option_purge_delay, -1);
  CHECK_EQ(mi_option_get(mi_option_purge_delay), -1);
  CHECK_EQ(mi_option_get_size(mi_option_purge_delay), 0);
  mi_option_set(mi_option_purge_delay, 10);
  CHECK_EQ(mi_option_get_size(mi_option_purge_delay), 10);            /* not 10240 (2.1.6) */
  mi_option_set(mi_option_max_errors, 123456);
  CHECK_EQ(mi_option_get_size(mi_option_max_errors), 123456);
  mi_option_set(mi_option_guarded_max, LONG_MAX);
  CHECK_EQ((long long)mi_option_get_size(mi_option_guarded_max), (long long)LONG_MAX);   /* not a KiB option */
  mi_option_set(mi_option_arena_reserve, 3);
  CHECK_EQ(mi_option_get(mi_option_arena_reserve), 3);
  CHECK_EQ(mi_option_get_size(mi_option_arena_reserve), 3072);
  mi_option_set(mi_option_reserve_os_memory, 1024L * 1024 * 1024);   /* 1 TiB in KiB */
  CHECK_EQ(mi_option_get_size(mi_option_reserve_os_memory), (size_t)1 << 40);
  mi_option_set(mi_option_reserve_os_memory, -5);
  CHECK_EQ(mi_option_get_size(mi_option_reserve_os_memory), 0);
  mi_option_set(mi_option_reserve_os_memory, 0);
  CHECK_EQ(mi_option_get_size(mi_option_reserve_os_memory), 0);
  /* sizes are clamped to half the 47-bit address space (64 TiB): no overflow in bytes */
  mi_option_set(mi_option_arena_reserve, LONG_MAX);
  size_t sat1 = mi_option_get_size(mi_option_arena_reserve);
  mi_option_set(mi_option_arena_reserve, LONG_MAX / 3);
  size_t sat2 = mi_option_get_size(mi_option_arena_reserve);
  CHECK_EQ(sat1, sat2);
  CHECK_EQ(sat1, (size_t)1 << 46);
  CHECK_EQ(mi_option_get(mi_option_arena_reserve), 1L << 36);        /* in KiB */
  mi_option_set(mi_option_reserve_os_memory, -5);
  CHECK_EQ(mi_option_get(mi_option_reserve_os_memory), 0);

  /* guarded_min / guarded_max keep min <= max */
  mi_option_set(mi_option_guarded_max, 4096);
  mi_option_set(mi_option_guarded_min, 16);
  CHECK_EQ(mi_option_get(mi_option_guarded_min), 16);
  CHECK_EQ(mi_option_get(mi_option_guarded_max), 4096);
  mi_option_set(mi_option_guarded_min, 8192);                          /* above max: raises max */
  CHECK_EQ(mi_option_get(mi_option_guarded_min), 8192);
  CHECK_EQ(mi_option_get(mi_option_guarded_max), 8192);
  mi_option_set(mi_option_guarded_max, 100);                           /* below min: lowers min */
  CHECK_EQ(mi_option_get(mi_option_guarded_max), 100);
  CHECK_EQ(mi_option_get(mi_option_guarded_min), 100);
  mi_option_set(mi_option_guarded_min, 50);                            /* inside: max unchanged */
  CHECK_EQ(mi_option_get(mi_option_guarded_max), 100);
  mi_option_set(mi_option_guarded_max, 200);                           /* inside: min unchanged */
  CHECK_EQ(mi_option_get(mi_option_guarded_min), 50);

  /* the aliases name the same slots */
  mi_option_set(mi_option_reset_delay, 77);
  CHECK_EQ(mi_option_get(mi_option_purge_delay), 77);
  mi_option_set(mi_option_limit_os_alloc, 0);
  CHECK_EQ(mi_option_get(mi_option_disallow_os_alloc), 0);
  mi_option_set(mi_option_large_os_pages, 0);
  CHECK_EQ(mi_option_get(mi_option_allow_large_os_pages), 0);
  mi_option_set(mi_option_eager_region_commit, 1);
  CHECK_EQ(mi_option_get(mi_option_arena_eager_commit), 1);
  mi_option_set(mi_option_reset_decommits, 0);
  CHECK_EQ(mi_option_get(mi_option_purge_decommits), 0);

  /* out-of-range options: 0 everywhere, and setting them changes nothing */
  long before[NOPT], after[NOPT];
  snapshot(before);
  const int bad[] = { -1, -2, NOPT, NOPT + 1, 99, 999, MI_OPTION_EXT_FIRST + 5, 1006, INT_MAX, INT_MIN };
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    mi_option_t o = (mi_option_t)bad[k];
    mi_option_set(o, 123);
    mi_option_set_default(o, 456);
    mi_option_enable(o);
    mi_option_disable(o);
    mi_option_set_enabled(o, true);
    mi_option_set_enabled_default(o, true);
    CHECK_MSG(mi_option_get(o) == 0, "option %d", bad[k]);
    CHECK_MSG(mi_option_get_size(o) == 0, "option %d", bad[k]);
    CHECK_MSG(!mi_option_is_enabled(o), "option %d", bad[k]);
    CHECK_MSG(mi_option_get_clamp(o, 5, 10) == 5, "option %d", bad[k]);
    CHECK_MSG(mi_option_get_clamp(o, -10, -5) == -5, "option %d", bad[k]);
  }
  snapshot(after);
  for (int i = 0; i < NOPT; i++) CHECK_MSG(before[i] == after[i], "option %d changed from %ld to %ld", i, before[i], after[i]);

  /* this implementation's own options, numbered from MI_OPTION_EXT_FIRST: defaults and ranges
     (mi_option_live is not set here: setting it starts publishing, test/live covers that) */
  CHECK_EQ((int)mi_option_live, MI_OPTION_EXT_FIRST);
  CHECK_EQ(mi_option_get(mi_option_live), 0);
  CHECK_EQ(mi_option_get(mi_option_live_interval), 1000);
  mi_option_set(mi_option_live_interval, 5);
  CHECK_EQ(mi_option_get(mi_option_live_interval), 10);
  mi_option_set(mi_option_live_interval, 100000);
  CHECK_EQ(mi_option_get(mi_option_live_interval), 60000);
  mi_option_set(mi_option_live_interval, 250);
  CHECK_EQ(mi_option_get(mi_option_live_interval), 250);
  mi_option_set(mi_option_live_interval, 1000);
  CHECK_EQ((int)mi_option_purge_thread, MI_OPTION_EXT_FIRST + 2);
  CHECK_EQ(mi_option_get(mi_option_purge_thread), 1);
  mi_option_set(mi_option_purge_thread, 7);
  CHECK_EQ(mi_option_get(mi_option_purge_thread), 1);
  mi_option_set(mi_option_purge_thread, -3);
  CHECK_EQ(mi_option_get(mi_option_purge_thread), 0);
  mi_option_set(mi_option_purge_thread, 1);
  /* the memory limit: KiB, or -percent of the cgroup's limit (-100 .. KiB max; test/limit) */
  CHECK_EQ((int)mi_option_memory_limit, MI_OPTION_EXT_FIRST + 3);
  CHECK_EQ((int)mi_option_memory_limit_hard, MI_OPTION_EXT_FIRST + 4);
  CHECK_EQ(mi_option_get(mi_option_memory_limit), -100);
  CHECK_EQ(mi_option_get(mi_option_memory_limit_hard), 0);
  mi_option_set(mi_option_memory_limit, -150);
  CHECK_EQ(mi_option_get(mi_option_memory_limit), -100);
  mi_option_set(mi_option_memory_limit, 2048);
  CHECK_EQ(mi_option_get_size(mi_option_memory_limit), 2 * 1024 * 1024);
  CHECK_EQ(mi_memory_limit(), 2 * 1024 * 1024);
  mi_option_set(mi_option_memory_limit, -100);
}

int main(int argc, char** argv) {
  const char* scenario = (argc > 1 ? argv[1] : "");
  if (strcmp(scenario, "basic") == 0) scenario_basic();
  else if (strcmp(scenario, "env") == 0) scenario_env();
  else if (strcmp(scenario, "early") == 0) scenario_early();
  else { fprintf(stderr, "usage: %s basic|env|early\n", argv[0]); return 2; }
  return test_summary("options-api", "scenario %s", scenario);
}
