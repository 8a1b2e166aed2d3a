/* SPDX-License-Identifier: MIT */
/* The leak report (MIMALLOC_SHOW_LEAKS=1, for development): at process exit, every block
   still allocated, grouped by size class with counts and bytes; in debug builds also the
   first few blocks of each class with the return address of their allocating call,
   symbolised with dladdr. Found through the segment map, so it sees the blocks of every
   heap, of ended threads (abandoned) and of threads still running. The blocks of threads
   still running are counted from their pages' `used` figure without addresses: their free
   lists belong to those threads. */
#include "internal/observers.h"
#if !defined(_WIN32)
#include <dlfcn.h>   /* dladdr: the object and symbol of a caller */
#define MI_HAVE_DLADDR 1
#endif

#define MI_LEAK_SHOW_PER_CLASS  (4)

typedef struct mi_leak_class_s {
  size_t count;
  size_t bytes;       /* requested bytes in debug builds, block bytes otherwise */
  size_t shown;
} mi_leak_class_t;

typedef struct mi_leak_report_s {
  mi_leak_class_t classes[MI_BIN_HUGE_INTERNAL + 1];
  size_t count;
  size_t bytes;
  size_t running_count;   /* blocks in pages of other threads still running */
} mi_leak_report_t;

static void mi_leak_print_block(const mi_page_t* page, const mi_block_t* block, size_t bytes) {
#if MI_DEBUG > 0
  void* caller = _mi_debug_block_caller(page, block);
#if MI_HAVE_DLADDR
  Dl_info info;
  if (caller != NULL && dladdr(caller, &info) != 0 && info.dli_fname != NULL) {
    const char* object = info.dli_fname;
    for (const char* s = object; *s != 0; s++) { if (*s == '/') object = s + 1; }
    if (info.dli_sname != NULL) {
      _mi_message("  %p: %zu bytes, allocated at %p (%s+0x%zx in %s)\n", (void*)block, bytes, caller,
                  info.dli_sname, (size_t)((uint8_t*)caller - (uint8_t*)info.dli_saddr), object);
    }
    else {
      _mi_message("  %p: %zu bytes, allocated at %p (%s+0x%zx)\n", (void*)block, bytes, caller,
                  object, (size_t)((uint8_t*)caller - (uint8_t*)info.dli_fbase));
    }
    return;
  }
#endif
  _mi_message("  %p: %zu bytes, allocated at %p\n", (void*)block, bytes, caller);
#else
  (void)page; (void)block; (void)bytes;
#endif
}

typedef struct mi_leak_visit_s {
  mi_leak_report_t* report;
  const mi_page_t*  page;
  bool              print;    /* second pass: print the first blocks of each class */
} mi_leak_visit_t;

static size_t mi_leak_block_bytes(const mi_page_t* page, const void* block) {
#if MI_PADDING
  return _mi_debug_requested_size(page, (const mi_block_t*)block, block);
#else
  (void)block;
  return page->block_size;
#endif
}

static bool mi_leak_visit_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap; (void)area; (void)size;
  if (block == NULL) return true;
  mi_leak_visit_t* visit = (mi_leak_visit_t*)arg;
  const mi_page_t* page = visit->page;
  mi_leak_class_t* cls = &visit->report->classes[_mi_bin(page->block_size)];
  const size_t bytes = mi_leak_block_bytes(page, block);
  if (visit->print) {
    if (cls->shown < MI_LEAK_SHOW_PER_CLASS) {
      cls->shown++;
      mi_leak_print_block(page, (const mi_block_t*)block, bytes);
    }
  }
  else {
    cls->count++;
    cls->bytes += bytes;
    visit->report->count++;
    visit->report->bytes += bytes;
  }
  return true;
}

/* Visit the live blocks of every page of ours; `print` selects the pass. */
typedef struct mi_leak_walk_s {
  mi_leak_report_t* report;
  bool print;
  size_t bin_only;
  uintptr_t self;
} mi_leak_walk_t;

static void mi_leak_walk_segment(mi_segment_t* segment, void* arg) {
  mi_leak_walk_t* walk = (mi_leak_walk_t*)arg;
  /* the slots of a shared segment change under its subprocess' lock; held while we look, so
     abandoned pages are neither adopted nor released meanwhile */
  mi_lock_acquire(&segment->subproc->lock);
  for (size_t i = 0; i < segment->capacity; i++) {
    mi_page_t* page = &segment->pages[i];
    if (!page->segment_in_use || page->block_size == 0 || page->used == 0) continue;
    if (mi_tf_is_emptied(mi_atomic_load_acquire(&page->xthread_free))) continue;   /* all free: emptied by the purger (heap-idle.c), not yet freed by its owner */
    const uintptr_t owner = mi_page_owner(page);
    if (walk->bin_only != SIZE_MAX && _mi_bin(page->block_size) != walk->bin_only) continue;
    if (owner != walk->self && owner != 0) {
      if (!walk->print) walk->report->running_count += page->used;
      continue;
    }
    _mi_page_free_collect(page, true);   /* ours or abandoned: nobody else touches it */
    mi_leak_visit_t visit = { walk->report, page, walk->print };
    _mi_heap_area_visit_blocks(NULL, page, true, &mi_leak_visit_block, &visit);
  }
  mi_lock_release(&segment->subproc->lock);
}

static void mi_leak_walk(mi_leak_report_t* report, bool print, size_t bin_only) {
  mi_leak_walk_t walk = { report, print, bin_only, _mi_thread_id() };
  _mi_segment_map_visit(&mi_leak_walk_segment, &walk);
}

static const char* mi_plural(size_t n) { return (n == 1 ? "" : "s"); }

static void mi_leak_amount(char* buf, size_t size, size_t n) {
  if (n < 1024) _mi_snprintf(buf, size, "%zu bytes", n);
  else if (n < MI_MiB) _mi_snprintf(buf, size, "%zu.%zu KiB", n / 1024, (n % 1024) * 10 / 1024);
  else _mi_snprintf(buf, size, "%zu.%zu MiB", n / MI_MiB, (n % MI_MiB) * 10 / MI_MiB);
}

void _mi_leaks_report(void) {
  static mi_decl_cold_bss mi_leak_report_t report;   /* at exit, once: no stack or heap needed */
  memset(&report, 0, sizeof(report));
  mi_leak_walk(&report, false, SIZE_MAX);
  char amount[32];
  mi_leak_amount(amount, sizeof(amount), report.bytes);
  if (report.count == 0 && report.running_count == 0) {
    _mi_message("leak report: no blocks are still allocated\n");
    return;
  }
  _mi_message("leak report: %zu block%s (%s) still allocated at exit\n", report.count, mi_plural(report.count), amount);
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    const mi_leak_class_t* cls = &report.classes[bin];
    if (cls->count == 0) continue;
    mi_leak_amount(amount, sizeof(amount), cls->bytes);
    if (bin == MI_BIN_HUGE_INTERNAL) {
      _mi_message("leaks: %zu huge block%s, %s%s\n", cls->count, mi_plural(cls->count), amount, (MI_PADDING ? " requested" : ""));
    }
    else {
      _mi_message("leaks: %zu block%s of size class %zu, %s%s\n", cls->count, mi_plural(cls->count), _mi_page_bin_size(bin), amount, (MI_PADDING ? " requested" : ""));
    }
    if (MI_DEBUG > 0) mi_leak_walk(&report, true, bin);
  }
  if (report.running_count > 0) {
    _mi_message("leaks: %zu more block%s in pages of threads still running (not examined)\n", report.running_count, mi_plural(report.running_count));
  }
}
