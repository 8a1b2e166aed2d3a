/* SPDX-License-Identifier: MIT */
/* The segment map: which 4 MiB chunks of the address space hold our segments (a byte per
   chunk where a segment starts, a bit per chunk it covers), and the allocation of a segment's
   memory from the arenas within the range the map covers. */
#include "internal/arena.h"
#include "prim/prim.h"

/* ------------------------------------------------------------------------------------------
   Segment maps:
   - _mi_segment_map_start (arena.h): a byte per chunk where one of our segments starts,
     holding its page_shift; free and usable_size check it, so pointers that are not ours,
     including the inside of a huge block beyond its first chunk, are never dereferenced.
     Zero-initialised data (32 MiB of address space on x86-64), touched only where we have
     segments; the last chunk is never a segment's (NULL - 1 looks there);
   - the covered map: a bit per chunk covered by one of our segments (mi_is_in_heap_region,
     the leak report), in parts of one OS page each (MI_COVERED_PART_CHUNKS chunks, 128 GiB of
     addresses) that come from the OS the first time a segment lies in their range and are
     kept: the process starts without any, and a few cover any heap.
   Entries are set before a segment hands out blocks and cleared before it is released.
------------------------------------------------------------------------------------------ */
mi_decl_cold_bss _Atomic(uint8_t) _mi_segment_map_start[MI_SEGMENT_MAP_CHUNKS];

#define MI_COVERED_PART_SIZE   ((size_t)4096)
#define MI_COVERED_PART_CHUNKS (MI_COVERED_PART_SIZE * 8)
#define MI_COVERED_PARTS       (MI_SEGMENT_MAP_CHUNKS / MI_COVERED_PART_CHUNKS)
static mi_decl_cold_bss _Atomic(uintptr_t*) mi_segment_map_covered[MI_COVERED_PARTS];

bool _mi_segment_map_can_hold(const void* start, size_t size) {
  return ((uintptr_t)start + size - 1) >> MI_SEGMENT_SHIFT < MI_SEGMENT_MAP_CHUNKS - 1;
}

/* The first part installed is static data (a heap rarely spans more than one part): the first
   allocation of a process makes one system call less. */
static mi_decl_cold_bss uintptr_t mi_segment_map_covered_first[MI_COVERED_PART_SIZE / sizeof(uintptr_t)];
static _Atomic(int) mi_segment_map_covered_first_taken;

static uintptr_t* mi_segment_map_part_alloc(void) {
  int expected = 0;   /* (no load first: a first read and then a write of a zero page fault twice) */
  if (mi_atomic_cas_strong_acq_rel(&mi_segment_map_covered_first_taken, &expected, 1)) {
    return mi_segment_map_covered_first;   /* still zero: never installed before */
  }
  return (uintptr_t*)_mi_os_alloc_static(MI_COVERED_PART_SIZE);   /* zeroed */
}

/* Make sure the covered map has the parts for [start, start + size) (which it can hold). */
bool _mi_segment_map_prepare(const void* start, size_t size) {
  const uintptr_t first = ((uintptr_t)start >> MI_SEGMENT_SHIFT) / MI_COVERED_PART_CHUNKS;
  const uintptr_t last = (((uintptr_t)start + size - 1) >> MI_SEGMENT_SHIFT) / MI_COVERED_PART_CHUNKS;
  for (uintptr_t part = first; part <= last; part++) {
    if (mi_atomic_load_acquire(&mi_segment_map_covered[part]) != NULL) continue;
    uintptr_t* bits = mi_segment_map_part_alloc();
    if (bits == NULL) return false;
    uintptr_t* expected = NULL;
    if (!mi_atomic_cas_strong_acq_rel(&mi_segment_map_covered[part], &expected, bits)) {
      /* another thread installed one */
      if (bits == mi_segment_map_covered_first) mi_atomic_store_release(&mi_segment_map_covered_first_taken, 0);
      else _mi_prim_free(bits, MI_COVERED_PART_SIZE);
    }
  }
  return true;
}

static _Atomic(uintptr_t)* mi_segment_map_covered_word(uintptr_t chunk) {
  uintptr_t* bits = mi_atomic_load_acquire(&mi_segment_map_covered[chunk / MI_COVERED_PART_CHUNKS]);
  if (bits == NULL) return NULL;
  return (_Atomic(uintptr_t)*)&bits[(chunk % MI_COVERED_PART_CHUNKS) / MI_INTPTR_BITS];
}

void _mi_segment_map_set(const mi_segment_t* segment, bool on) {
  mi_assert_internal(_mi_segment_map_can_hold(segment, segment->segment_size));
  const uintptr_t start = (uintptr_t)segment >> MI_SEGMENT_SHIFT;
  const uintptr_t end   = ((uintptr_t)segment + segment->segment_size - 1) >> MI_SEGMENT_SHIFT;
  mi_atomic_store_release(&_mi_segment_map_start[start], (uint8_t)(on ? segment->page_shift : 0));
  for (uintptr_t chunk = start; chunk <= end; chunk++) {
    const uintptr_t bit = (uintptr_t)1 << (chunk % MI_INTPTR_BITS);
    _Atomic(uintptr_t)* word = mi_segment_map_covered_word(chunk);
    mi_assert_internal(word != NULL);   /* _mi_segment_map_prepare */
    if (word == NULL) continue;
    if (on) mi_atomic_or_acq_rel(word, bit);
    else    mi_atomic_and_acq_rel(word, ~bit);
  }
}

bool _mi_segment_map_covers(const void* p) {
  const uintptr_t chunk = (uintptr_t)p >> MI_SEGMENT_SHIFT;
  if (chunk >= MI_SEGMENT_MAP_CHUNKS) return false;
  _Atomic(uintptr_t)* word = mi_segment_map_covered_word(chunk);
  if (word == NULL) return false;
  return ((mi_atomic_load_relaxed(word) >> (chunk % MI_INTPTR_BITS)) & 1) != 0;
}

/* The segment of ours that p lies in, or NULL; unlike _mi_ptr_segment_checked also for a
   pointer inside a huge segment beyond its first chunk: the chunks it covers are walked back to
   its start (a query, not a fast path: mi_heap_of). */
mi_segment_t* _mi_segment_map_segment_of(const void* p) {
  mi_segment_t* segment = _mi_ptr_segment_checked(p);
  if (segment != NULL || p == NULL) return segment;
  for (uintptr_t chunk = ((uintptr_t)p - 1) >> MI_SEGMENT_SHIFT; chunk > 0 && chunk < MI_SEGMENT_MAP_CHUNKS; chunk--) {
    if (!_mi_segment_map_covers((void*)(chunk << MI_SEGMENT_SHIFT))) return NULL;
    if (mi_atomic_load_relaxed(&_mi_segment_map_start[chunk]) != 0) {
      segment = (mi_segment_t*)(chunk << MI_SEGMENT_SHIFT);
      return ((uintptr_t)p - (uintptr_t)segment < segment->segment_size ? segment : NULL);
    }
  }
  return NULL;
}

/* Call `visit` on every segment of ours (their start chunks); for the leak report. */
void _mi_segment_map_visit(void (*visit)(mi_segment_t* segment, void* arg), void* arg) {
  for (size_t part = 0; part < MI_COVERED_PARTS; part++) {
    const uintptr_t* bits = mi_atomic_load_acquire(&mi_segment_map_covered[part]);
    if (bits == NULL) continue;
    for (size_t w = 0; w < MI_COVERED_PART_CHUNKS / MI_INTPTR_BITS; w++) {
      uintptr_t x = mi_atomic_load_relaxed((_Atomic(uintptr_t)*)&bits[w]);
      while (x != 0) {
        const size_t chunk = part * MI_COVERED_PART_CHUNKS + w * MI_INTPTR_BITS + (size_t)__builtin_ctzll((unsigned long long)x);
        x &= x - 1;
        if (mi_atomic_load_relaxed(&_mi_segment_map_start[chunk]) != 0) visit((mi_segment_t*)(chunk << MI_SEGMENT_SHIFT), arg);
      }
    }
  }
}

/* Memory for a segment from the arenas or the OS (arena.c), refused (so the allocation fails)
   in the unlikely case that the OS places it beyond the address range of the segment map, or
   when the map's parts for it cannot be had (_mi_segment_map_prepare). */
mi_segment_t* _mi_segment_map_alloc(size_t size, size_t alignment, size_t align_offset, bool commit,
                                    mi_arena_id_t req_arena_id, int numa_node, mi_memid_t* memid) {
  void* p = _mi_arena_alloc_aligned(size, alignment, align_offset, commit, req_arena_id, numa_node, memid);
  if (p != NULL && !_mi_segment_map_can_hold(p, memid->size)) {
    _mi_warning_message("the OS returned memory at %p, beyond the %d-bit range this allocator maps\n", p, MI_SEGMENT_MAP_ADDR_BITS);
    _mi_arena_free(p, memid->size, (memid->initially_committed ? memid->size : 0), memid);
    return NULL;
  }
  if (p != NULL && !_mi_segment_map_prepare(p, memid->size)) {
    _mi_arena_free(p, memid->size, (memid->initially_committed ? memid->size : 0), memid);
    return NULL;
  }
  return (mi_segment_t*)p;
}
