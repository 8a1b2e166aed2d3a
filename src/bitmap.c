/* SPDX-License-Identifier: MIT */
/* Atomic bitmaps over arena blocks (contracts in internal/bitmap.h). */
#include "internal/base.h"
#include "internal/bitmap.h"

/* The bits of the range [idx, idx+count) that fall into field `f`, as a mask (0 if none). */
static size_t mi_bitmap_mask_in(size_t f, size_t idx, size_t count) {
  const size_t fstart = f * MI_BITMAP_FIELD_BITS;
  const size_t fend = fstart + MI_BITMAP_FIELD_BITS;
  const size_t lo = (idx > fstart ? idx : fstart);
  const size_t hi = (idx + count < fend ? idx + count : fend);
  if (hi <= lo) return 0;
  const size_t n = hi - lo;
  const size_t ones = (n >= MI_BITMAP_FIELD_BITS ? ~(size_t)0 : (((size_t)1 << n) - 1));
  return ones << (lo - fstart);
}

#define mi_bitmap_for_fields(f, idx, count) \
  for (size_t f = (idx) / MI_BITMAP_FIELD_BITS; f <= ((idx) + (count) - 1) / MI_BITMAP_FIELD_BITS; f++)

bool _mi_bitmap_set(mi_bitmap_field_t* bitmap, size_t idx, size_t count, bool* any_set) {
  bool all_clear = true;
  bool some_set = false;
  mi_bitmap_for_fields(f, idx, count) {
    const size_t mask = mi_bitmap_mask_in(f, idx, count);
    const size_t prev = mi_atomic_or_acq_rel(&bitmap[f], mask);
    if ((prev & mask) != 0) { all_clear = false; some_set = true; }
  }
  if (any_set != NULL) *any_set = some_set;
  return all_clear;
}

bool _mi_bitmap_clear(mi_bitmap_field_t* bitmap, size_t idx, size_t count) {
  bool all_set = true;
  mi_bitmap_for_fields(f, idx, count) {
    const size_t mask = mi_bitmap_mask_in(f, idx, count);
    const size_t prev = mi_atomic_and_acq_rel(&bitmap[f], ~mask);
    if ((prev & mask) != mask) all_set = false;
  }
  return all_set;
}

size_t _mi_bitmap_clear_count(mi_bitmap_field_t* bitmap, size_t idx, size_t count) {
  size_t cleared = 0;
  mi_bitmap_for_fields(f, idx, count) {
    const size_t mask = mi_bitmap_mask_in(f, idx, count);
    const size_t prev = mi_atomic_and_acq_rel(&bitmap[f], ~mask);
    cleared += mi_popcount((uint64_t)(prev & mask));
  }
  return cleared;
}

bool _mi_bitmap_is_all_set(mi_bitmap_field_t* bitmap, size_t idx, size_t count) {
  mi_bitmap_for_fields(f, idx, count) {
    const size_t mask = mi_bitmap_mask_in(f, idx, count);
    if ((mi_atomic_load_relaxed(&bitmap[f]) & mask) != mask) return false;
  }
  return true;
}

bool _mi_bitmap_is_any_set(mi_bitmap_field_t* bitmap, size_t idx, size_t count) {
  mi_bitmap_for_fields(f, idx, count) {
    const size_t mask = mi_bitmap_mask_in(f, idx, count);
    if ((mi_atomic_load_relaxed(&bitmap[f]) & mask) != 0) return true;
  }
  return false;
}

bool _mi_bitmap_try_claim(mi_bitmap_field_t* bitmap, size_t idx, size_t count) {
  const size_t first = idx / MI_BITMAP_FIELD_BITS;
  mi_bitmap_for_fields(f, idx, count) {
    const size_t mask = mi_bitmap_mask_in(f, idx, count);
    size_t expected = mi_atomic_load_relaxed(&bitmap[f]);
    bool ok = true;
    do {
      if ((expected & mask) != 0) { ok = false; break; }
    } while (!mi_atomic_cas_weak_acq_rel(&bitmap[f], &expected, expected | mask));
    if (!ok) {
      /* give back the words claimed so far */
      for (size_t g = first; g < f; g++) {
        mi_atomic_and_acq_rel(&bitmap[g], ~mi_bitmap_mask_in(g, idx, count));
      }
      return false;
    }
  }
  return true;
}

/* Start bit of the first run of `count` clear bits inside `x`, or MI_BITMAP_FIELD_BITS. */
static size_t mi_field_find_run(size_t x, size_t count) {
  if (count > MI_BITMAP_FIELD_BITS) return MI_BITMAP_FIELD_BITS;
  const size_t ones = (count == MI_BITMAP_FIELD_BITS ? ~(size_t)0 : (((size_t)1 << count) - 1));
  size_t bit = 0;
  while (bit + count <= MI_BITMAP_FIELD_BITS) {
    const size_t m = ones << bit;
    if ((x & m) == 0) return bit;
    /* skip past the highest set bit inside the window */
    const size_t hit = x & m;
    bit = (MI_BITMAP_FIELD_BITS - 1 - (size_t)__builtin_clzll((unsigned long long)hit)) + 1;
  }
  return MI_BITMAP_FIELD_BITS;
}

bool _mi_bitmap_try_find_claim(mi_bitmap_field_t* bitmap, size_t field_count, size_t start_field,
                               size_t count, size_t* bitmap_idx) {
  if (count == 0 || field_count == 0) return false;
  if (start_field >= field_count) start_field = 0;
  for (size_t visited = 0; visited < field_count; visited++) {
    size_t f = start_field + visited;
    if (f >= field_count) f -= field_count;
    const size_t x = mi_atomic_load_relaxed(&bitmap[f]);
    /* a run inside this word */
    const size_t bit = mi_field_find_run(x, count);
    if (bit < MI_BITMAP_FIELD_BITS) {
      const size_t idx = f * MI_BITMAP_FIELD_BITS + bit;
      if (_mi_bitmap_try_claim(bitmap, idx, count)) { *bitmap_idx = idx; return true; }
      visited--;   /* raced: look at this word again (progress: someone else claimed) */
      continue;
    }
    /* a run that starts with the clear top bits of this word and continues in the next ones */
    const size_t free_top = (x == 0 ? MI_BITMAP_FIELD_BITS : (size_t)__builtin_clzll((unsigned long long)x));
    if (free_top == 0) continue;
    const size_t idx = (f + 1) * MI_BITMAP_FIELD_BITS - free_top;
    if (idx + count > field_count * MI_BITMAP_FIELD_BITS) continue;
    if (_mi_bitmap_is_any_set(bitmap, idx, count)) continue;
    if (_mi_bitmap_try_claim(bitmap, idx, count)) { *bitmap_idx = idx; return true; }
  }
  return false;
}
