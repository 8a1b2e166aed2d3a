/* SPDX-License-Identifier: MIT */
/* Process-wide pseudo-random numbers for cookies and keys: splitmix64 over an atomic state
   seeded from the OS. Not for cryptography; secure builds derive per-page keys from it. */
#include "internal/os.h"
#include "prim/prim.h"

static _Atomic(uint64_t) mi_random_state;

uintptr_t _mi_random_shuffle(uintptr_t x) {
  uint64_t z = (uint64_t)x;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (uintptr_t)(z ^ (z >> 31));
}

uintptr_t _mi_random_next(void) {
  if (mi_unlikely(mi_atomic_load_relaxed(&mi_random_state) == 0)) {
    uint64_t seed = 0;
    if (!_mi_prim_random_buf(&seed, sizeof(seed)) || seed == 0) {
      seed = (uint64_t)_mi_prim_clock_now() ^ (uint64_t)(uintptr_t)&seed;
    }
    uint64_t expected = 0;
    mi_atomic_cas_strong_acq_rel(&mi_random_state, &expected, seed | 1);
  }
  uint64_t x = mi_atomic_add_relaxed(&mi_random_state, 0x9e3779b97f4a7c15ULL);
  return _mi_random_shuffle((uintptr_t)x);
}
