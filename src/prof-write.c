/* SPDX-License-Identifier: MIT */
/* TEMPORARY stub of the profiler's writers (replaced by the real prof-write.c) */
#include "internal/internal.h"
#include "internal/prof.h"
#if MI_PROF_AVAILABLE
#include <unistd.h>
static bool mi_prof_stub_write(int fd, const mi_prof_profile_t* prof, int which) {
  char line[64 * 20 + 64];
  for (size_t i = 0; i < prof->count; i++) {
    const mi_prof_site_t* s = &prof->sites[i];
    size_t n = 0;
    for (uint32_t d = s->depth; d > 0; d--) n += (size_t)_mi_snprintf(line + n, sizeof(line) - n, "%s0x%zx", (d == s->depth ? "" : ";"), (size_t)s->pcs[d-1]);
    const double v = (which == 0 ? s->inuse_bytes : s->alloc_bytes);
    n += (size_t)_mi_snprintf(line + n, sizeof(line) - n, " %lld\n", (long long)(v + 0.5));
    if (write(fd, line, n) != (ssize_t)n) return false;
  }
  return true;
}
bool _mi_prof_write_pprof(int fd, const mi_prof_profile_t* prof) { return mi_prof_stub_write(fd, prof, 0); }
bool _mi_prof_write_text(int fd, const mi_prof_profile_t* prof) { return mi_prof_stub_write(fd, prof, 0); }
bool _mi_prof_write_folded(int fd, const mi_prof_profile_t* prof, bool inuse) { return mi_prof_stub_write(fd, prof, inuse ? 0 : 1); }
#endif
