/* SPDX-License-Identifier: MIT */
/* Tracking builds (MI_TRACK_VALGRIND, MI_TRACK_ASAN; track.h): what the memory checker is told
   when a block is handed out, changes size or alignment, is freed, or dies with its heap. */
#include "internal/page.h"
#if MI_TRACK_ASAN
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if MI_TRACK_ENABLED

/* ---------------------------------------------------------------------------------------
   AddressSanitizer: the shadow byte of each 8-byte granule says how many of its bytes are
   accessible (0: all; 1..7: the first k) or why none is. We write ASan's heap codes, so its
   report names the kind of error; the library's code is not instrumented, so its own accesses
   are never checked, but the C library's string functions are (they are ASan's interceptors):
   the allocator opens a range before it zeroes or copies it. Blocks are 16-byte aligned.
--------------------------------------------------------------------------------------- */
#if MI_TRACK_ASAN
#define MI_ASAN_HEAP_REDZONE  (0xfa)   /* ASan's "heap left redzone": heap-buffer-overflow */
#define MI_ASAN_HEAP_FREED    (0xfd)   /* ASan's "freed heap region": heap-use-after-free */
#define MI_ASAN_GRANULE       (8)

/* ASan's interface, weak: a program without ASan runs the library with no shadow to write */
mi_decl_weak void __asan_get_shadow_mapping(size_t* scale, size_t* offset);
mi_decl_weak void __asan_report_error(void* pc, void* bp, void* sp, void* addr, int is_write, size_t size);

static size_t mi_asan_scale, mi_asan_offset;   /* fixed for the process */
static _Atomic(size_t) mi_asan_ready;

static uint8_t* mi_asan_shadow(const void* p) {
  return (uint8_t*)(((uintptr_t)p >> mi_asan_scale) + mi_asan_offset);
}

/* Is there a shadow to write? Not in a program without ASan, and not yet while ASan
   initialises (it may call malloc before it maps the shadow): until the shadow of our own data
   is mapped, blocks are handed out and freed untracked (accessible, as the shadow says). */
static bool mi_asan_active(void) {
  if (mi_likely(mi_atomic_load_relaxed(&mi_asan_ready) != 0)) return true;
  if (__asan_get_shadow_mapping == NULL) return false;
  __asan_get_shadow_mapping(&mi_asan_scale, &mi_asan_offset);
  const size_t psize = _mi_os_page_size();   /* mincore needs an OS-page-aligned address (4, 16 or 64 KiB) */
  const uintptr_t probe = (uintptr_t)mi_asan_shadow(&mi_asan_ready) & ~(uintptr_t)(psize - 1);
  unsigned char resident;
  if (syscall(SYS_mincore, (void*)probe, psize, &resident) != 0) return false;   /* not mapped yet */
  mi_atomic_store_relaxed(&mi_asan_ready, 1);
  return true;
}

/* Set the shadow of [p, p+size) (p granule-aligned; a partial last granule counts whole).
   A volatile loop: a call of memset would go through ASan's checking interceptor. */
static void mi_asan_shadow_set(const void* p, size_t size, uint8_t code) {
  if (!mi_asan_active()) return;
  volatile uint8_t* s = mi_asan_shadow(p);
  const size_t n = (size + MI_ASAN_GRANULE - 1) / MI_ASAN_GRANULE;
  for (size_t i = 0; i < n; i++) s[i] = code;
}

/* [p, p+size) accessible, exactly (p granule-aligned) */
static void mi_asan_open_exact(void* p, size_t size) {
  if (!mi_asan_active()) return;
  mi_asan_shadow_set(p, size - size % MI_ASAN_GRANULE, 0);
  if (size % MI_ASAN_GRANULE != 0) *mi_asan_shadow((uint8_t*)p + size - size % MI_ASAN_GRANULE) = (uint8_t)(size % MI_ASAN_GRANULE);
}

void _mi_track_asan_open(void* p, size_t size) { mi_asan_shadow_set(p, size, 0); }
void _mi_track_asan_close(void* p, size_t size) { mi_asan_shadow_set(p, size, MI_ASAN_HEAP_REDZONE); }

/* the block at p (granule-aligned) serves [p, p+size); the rest of it up to its end is a
   redzone (already so when it was free; a resize sets it again) */
void _mi_track_asan_malloc(void* p, size_t size) {
  mi_asan_open_exact(p, size);
}

void _mi_track_asan_resize(void* p, size_t oldsize, size_t newsize) {
  if (newsize < oldsize) {
    const size_t keep = _mi_align_up(newsize, MI_ASAN_GRANULE);
    if (oldsize > keep) mi_asan_shadow_set((uint8_t*)p + keep, oldsize - keep, MI_ASAN_HEAP_REDZONE);
  }
  mi_asan_open_exact(p, newsize);
}

static void mi_asan_set_freed(const mi_page_t* page, const mi_block_t* block) {
  mi_asan_shadow_set(block, page->block_size, MI_ASAN_HEAP_FREED);
}
#endif

#if MI_TRACK_VALGRIND
/* The pointer memcheck knows a live block by: the block start, or for an aligned allocation
   the first byte it considers accessible. */
static void* mi_track_user_pointer(const mi_page_t* page, mi_block_t* block) {
  if (mi_page_has_aligned(page) && RUNNING_ON_VALGRIND) {
    for (size_t ofs = 0; ofs < page->block_size; ofs += MI_MAX_ALIGN_SIZE) {
      uint8_t vbits;
      if (VALGRIND_GET_VBITS((uint8_t*)block + ofs, &vbits, 1) != 3) return (uint8_t*)block + ofs;
    }
  }
  return block;
}
#endif

/* ---------------------------------------------------------------------------------------
   Blocks
--------------------------------------------------------------------------------------- */
/* Where the inaccessible tail of a block serving `size` bytes at p starts: byte-exact for
   memcheck; for ASan at the next granule (the partial granule's shadow says the rest). */
static uint8_t* mi_track_tail(void* p, size_t size) {
#if MI_TRACK_ASAN
  return (uint8_t*)_mi_align_up((uintptr_t)p + size, MI_ASAN_GRANULE);
#else
  return (uint8_t*)p + size;
#endif
}

void _mi_track_block_alloc(const mi_page_t* page, mi_block_t* block, size_t size, bool zero) {
  (void)zero;
  mi_track_malloc(block, size, zero);
  uint8_t* const tail = mi_track_tail(block, size);
  uint8_t* const end = (uint8_t*)block + page->block_size;
  if (tail < end) mi_track_mem_noaccess(tail, (size_t)(end - tail));
}

/* The live block `block` was known to the tool as [oldp, oldp+oldsize) and is now
   [p, p+newsize) (an in-place realloc, or an aligned pointer inside an over-allocation). */
void _mi_track_block_change(const mi_page_t* page, mi_block_t* block, void* oldp, size_t oldsize, void* p, size_t newsize, bool zero) {
  const size_t bsize = page->block_size;
  uint8_t* const end = (uint8_t*)block + bsize;
  if (oldp == p && oldsize > 0 && newsize > 0) {   /* memcheck takes a resize to or from 0 for a free */
    mi_track_resize(p, oldsize, newsize);
    if (zero && newsize > oldsize) mi_track_mem_defined((uint8_t*)p + oldsize, newsize - oldsize);
  }
  else {
#if MI_TRACK_VALGRIND
    VALGRIND_FREELIKE_BLOCK(oldp, 0);
    mi_track_malloc(p, newsize, zero);
#else
    mi_track_mem_noaccess(oldp, oldsize);
    mi_track_malloc(p, newsize, zero);
#endif
    if ((uint8_t*)p > (uint8_t*)block) mi_track_mem_noaccess(block, (size_t)((uint8_t*)p - (uint8_t*)block));
  }
  uint8_t* const tail = mi_track_tail(p, newsize);
  if (tail < end) mi_track_mem_noaccess(tail, (size_t)(end - tail));
}

/* realloc kept the live block at p, which served `oldsize` bytes and now serves `newsize`
   (the added bytes zero when `zero`) */
void _mi_track_realloc_in_place(void* p, size_t oldsize, size_t newsize, bool zero) {
  const mi_page_t* page = _mi_ptr_page(p);
  mi_block_t* block = (mi_page_has_aligned(page) ? _mi_page_ptr_unalign(page, p) : (mi_block_t*)p);
  _mi_track_block_change(page, block, p, oldsize, p, newsize, zero);
}

/* From mi_free, before anything else: false if the tool says p is not a live block (it has
   reported it, e.g. as a double free), in which case the free must not go on. */
mi_decl_noinline bool _mi_track_free(void* p) {
  if (p == NULL || !_mi_segment_map_covers(p)) return true;   /* mi_free handles those */
  mi_page_t* page = _mi_ptr_page(p);
  if (!page->segment_in_use || page->block_size == 0) return true;
  mi_block_t* block = (mi_page_has_aligned(page) ? _mi_page_ptr_unalign(page, p) : (mi_block_t*)p);
#if MI_TRACK_VALGRIND
  const unsigned before = VALGRIND_COUNT_ERRORS;
  VALGRIND_FREELIKE_BLOCK(p, 0);
  if (VALGRIND_COUNT_ERRORS != before) return false;   /* memcheck reported an invalid free */
  mi_track_mem_noaccess(block, page->block_size);
#else
  if (mi_asan_active()) {
    const uint8_t code = *mi_asan_shadow(p);
    if (code == MI_ASAN_HEAP_FREED) {
      _mi_error_message(EAGAIN, "double free detected of block %p (ignored)\n", p);
      /* ASan's report, as an access by mi_free (its frame is the saved frame pointer of ours) */
      __asan_report_error(__builtin_return_address(0), *(void**)__builtin_frame_address(0), __builtin_frame_address(0), p, 1, 1);
      return false;
    }
    if (code >= MI_ASAN_GRANULE || (!mi_page_has_aligned(page) && block != p)) {
      _mi_error_message(EINVAL, "mi_free: invalid pointer %p (not a live block; ignored)\n", p);
      return false;
    }
  }
  mi_asan_set_freed(page, block);
#endif
  return true;
}

/* A live block that dies with its heap (mi_heap_destroy). */
void _mi_track_block_destroyed(const mi_page_t* page, mi_block_t* block) {
#if MI_TRACK_VALGRIND
  VALGRIND_FREELIKE_BLOCK(mi_track_user_pointer(page, block), 0);
  mi_track_mem_noaccess(block, page->block_size);
#else
  mi_asan_set_freed(page, block);
#endif
}

/* The same as a block visitor (mi_block_visit_fun; arg: the page) over the live blocks of a page
   that dies with them. */
bool _mi_track_visit_destroyed(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area; (void)block_size;
  if (block != NULL) _mi_track_block_destroyed((const mi_page_t*)arg, (mi_block_t*)block);
  return true;
}

#endif /* MI_TRACK_ENABLED */
