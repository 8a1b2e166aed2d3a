/* Memory from the OS: page-granular, optionally aligned, through the prim layer only. */
#include "internal/internal.h"
#include "prim/prim.h"

static mi_os_mem_config_t mi_os_mem_config = {
  4096,         /* page size */
  2*MI_MiB,     /* large page size */
  4096,         /* allocation granularity */
  true          /* has overcommit */
};

void _mi_os_init(void) {
  _mi_prim_mem_init(&mi_os_mem_config);
}

size_t _mi_os_page_size(void) {
  return mi_os_mem_config.page_size;
}

size_t _mi_os_good_alloc_size(size_t size) {
  size_t align = mi_os_mem_config.page_size;
  if (size >= SIZE_MAX - align) return size;
  return _mi_align_up(size, align);
}

void* _mi_os_alloc(size_t size, bool* is_zero) {
  if (size == 0) return NULL;
  size = _mi_os_good_alloc_size(size);
  void* p = NULL;
  int err = _mi_prim_alloc(NULL, size, &p);
  if (err != 0) {
    _mi_warning_message("unable to allocate OS memory (error %d (0x%x), size 0x%zx bytes)\n", err, err, size);
    return NULL;
  }
  if (is_zero != NULL) *is_zero = true;
  mi_os_stat_increase(reserved, size);
  mi_os_stat_increase(committed, size);
  mi_os_stat_counter_increase(mmap_calls, 1);
  return p;
}

void _mi_os_free(void* p, size_t size) {
  if (p == NULL || size == 0) return;
  size = _mi_os_good_alloc_size(size);
  int err = _mi_prim_free(p, size);
  mi_os_stat_decrease(reserved, size);
  mi_os_stat_decrease(committed, size);
  if (err != 0) {
    _mi_warning_message("unable to free OS memory (error %d (0x%x), address %p, size 0x%zx bytes)\n", err, err, p, size);
  }
}

bool _mi_os_reset(void* p, size_t size) {
  /* shrink to whole pages inside [p, p+size) */
  uintptr_t start = _mi_align_up((uintptr_t)p, mi_os_mem_config.page_size);
  uintptr_t end   = _mi_align_down((uintptr_t)p + size, mi_os_mem_config.page_size);
  if (end <= start) return false;
  int err = _mi_prim_reset((void*)start, end - start);
  mi_os_stat_counter_increase(reset, end - start);
  mi_os_stat_counter_increase(reset_calls, 1);
  if (err != 0) {
    _mi_warning_message("unable to reset OS memory (error %d (0x%x), address %p, size 0x%zx bytes)\n", err, err, (void*)start, end - start);
    return false;
  }
  return true;
}

/* Over-allocate by `alignment` and unmap the unaligned head and the unused tail, so that
   (result + align_offset) % alignment == 0. align_offset must be a multiple of the page size. */
void* _mi_os_alloc_aligned_at(size_t size, size_t alignment, size_t align_offset, bool* is_zero) {
  mi_assert_internal(mi_is_power_of_two(alignment));
  mi_assert_internal(align_offset % mi_os_mem_config.page_size == 0);
  size = _mi_os_good_alloc_size(size);
  if (alignment < mi_os_mem_config.page_size) alignment = mi_os_mem_config.page_size;
  align_offset = align_offset % alignment;
  if (size >= SIZE_MAX - alignment) return NULL;

  void* p = NULL;
  size_t over_size = size + alignment;
  if (_mi_prim_alloc(NULL, over_size, &p) != 0) {
    _mi_warning_message("unable to allocate aligned OS memory (size 0x%zx bytes, alignment 0x%zx)\n", size, alignment);
    return NULL;
  }
  uintptr_t start   = (uintptr_t)p;
  uintptr_t aligned = _mi_align_up(start + align_offset, alignment) - align_offset;
  if (aligned < start) aligned += alignment;
  size_t pre  = aligned - start;
  size_t post = over_size - pre - size;
  if (pre > 0)  _mi_prim_free(p, pre);
  if (post > 0) _mi_prim_free((void*)(aligned + size), post);
  if (is_zero != NULL) *is_zero = true;
  mi_os_stat_increase(reserved, size);
  mi_os_stat_increase(committed, size);
  mi_os_stat_counter_increase(mmap_calls, 1);
  return (void*)aligned;
}
