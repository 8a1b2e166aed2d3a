/* SPDX-License-Identifier: MIT */
/* thread-figures.h -- the allocator's thread, page and segment counts (mi_stats_get), for tests
   that check that threads which ended left nothing behind (test-thread-exit-win.cpp,
   test-thread-churn-win.c). Include after testing.h. */
#ifndef MI_THREAD_FIGURES_H
#define MI_THREAD_FIGURES_H

#include <mimalloc.h>
#include <mimalloc-stats.h>

typedef struct figures_s {
  long long threads, pages, segments;
} figures_t;

static inline figures_t figures(void) {
  mi_stats_t_decl(st);
  CHECK(mi_stats_get(&st));
  figures_t f = { (long long)st.threads.current, (long long)st.pages.current, (long long)st.segments.current };
  return f;
}

#endif
