/* SPDX-License-Identifier: MIT */
/* Atomic bitmaps over arena blocks (bitmap.c). A bitmap is an array of `field_count` words of
   MI_BITMAP_FIELD_BITS bits; a range is (index of its first bit, count) and may span words.
   Every operation is lock-free: single-word changes are one atomic RMW, a claim across words
   claims word by word with CAS and rolls back what it took when a later word is taken.
   A range is only ever owned by one claimer: whoever set its bits in a claim operation. */
#pragma once
#include "types.h"

#define MI_BITMAP_FIELD_BITS  (8*MI_INTPTR_SIZE)
typedef _Atomic(size_t) mi_bitmap_field_t;

/* Find `count` consecutive clear bits, starting the search at field `start_field` (wrapping
   around), set them atomically and return the first bit index in *bitmap_idx. */
bool _mi_bitmap_try_find_claim(mi_bitmap_field_t* bitmap, size_t field_count, size_t start_field,
                               size_t count, size_t* bitmap_idx);

/* Set the bits of a range; returns true when all of them were clear before. *any_set (may be
   NULL) tells whether any was already set. Not a claim: use it for bitmaps without owners. */
bool _mi_bitmap_set(mi_bitmap_field_t* bitmap, size_t idx, size_t count, bool* any_set);

/* Clear the bits of a range; returns true when all of them were set before. */
bool _mi_bitmap_clear(mi_bitmap_field_t* bitmap, size_t idx, size_t count);

/* Clear the bits of a range; returns how many of them were set before. */
size_t _mi_bitmap_clear_count(mi_bitmap_field_t* bitmap, size_t idx, size_t count);

/* Are all (or any) bits of the range set? A snapshot, word by word. */
bool _mi_bitmap_is_all_set(mi_bitmap_field_t* bitmap, size_t idx, size_t count);
bool _mi_bitmap_is_any_set(mi_bitmap_field_t* bitmap, size_t idx, size_t count);

/* Claim exactly the range [idx, idx+count) if all its bits are clear (CAS per word, with
   rollback); false if any is set. */
bool _mi_bitmap_try_claim(mi_bitmap_field_t* bitmap, size_t idx, size_t count);
