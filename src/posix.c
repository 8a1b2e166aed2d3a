/* SPDX-License-Identifier: MIT */
/* POSIX, BSD, glibc, macOS and MSVC compatibility functions (thin wrappers). */
#include "internal/alloc.h"
#include <stdlib.h>
#include <wchar.h>

void mi_cfree(void* p) mi_attr_noexcept {
  if (mi_is_in_heap_region(p)) mi_free(p);
}

size_t mi_malloc_size(const void* p) mi_attr_noexcept          { return mi_usable_size(p); }
size_t mi_malloc_usable_size(const void* p) mi_attr_noexcept   { return mi_usable_size(p); }
size_t mi_malloc_good_size(size_t size) mi_attr_noexcept       { return mi_good_size(size); }

void mi_free_size(void* p, size_t size) mi_attr_noexcept {
  (void)size;
  mi_free(p);
}
void mi_free_size_aligned(void* p, size_t size, size_t alignment) mi_attr_noexcept {
  (void)size; (void)alignment;
  mi_free(p);
}
void mi_free_aligned(void* p, size_t alignment) mi_attr_noexcept {
  (void)alignment;
  mi_free(p);
}

int mi_posix_memalign(void** p, size_t alignment, size_t size) {
  if (p == NULL) return EINVAL;
  if (alignment % sizeof(void*) != 0 || !mi_is_power_of_two(alignment) || alignment == 0) return EINVAL;
  const int err = errno;
  void* q = mi_malloc_aligned(size, alignment);
  if (q == NULL && size != 0) { errno = err; return ENOMEM; }
  *p = q;
  return 0;
}

/* memalign and aligned_alloc fail with EINVAL for an alignment that is not a power of two,
   as POSIX asks of aligned_alloc (mi_malloc_aligned itself reports ENOMEM). */
static bool mi_posix_alignment_ok(size_t alignment) {
  if (alignment != 0 && mi_is_power_of_two(alignment)) return true;
  errno = EINVAL;
  return false;
}

void* mi_memalign(size_t alignment, size_t size) mi_attr_noexcept {
  if (!mi_posix_alignment_ok(alignment)) return NULL;
  return mi_malloc_aligned(size, alignment);
}

void* mi_valloc(size_t size) mi_attr_noexcept {
  return mi_malloc_aligned(size, _mi_os_page_size());
}

void* mi_pvalloc(size_t size) mi_attr_noexcept {
  const size_t psize = _mi_os_page_size();
  if (size >= SIZE_MAX - psize) { errno = ENOMEM; return NULL; }
  const size_t asize = _mi_align_up(size, psize);
  return mi_malloc_aligned(asize, psize);
}

void* mi_aligned_alloc(size_t alignment, size_t size) mi_attr_noexcept {
  /* C11 asks size to be a multiple of alignment; like glibc we do not require it */
  if (!mi_posix_alignment_ok(alignment)) return NULL;
  return mi_malloc_aligned(size, alignment);
}

void* mi_reallocarray(void* p, size_t count, size_t size) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;   /* errno = ENOMEM */
  return mi_realloc(p, total);
}

int mi_reallocarr(void* ptrp, size_t count, size_t size) mi_attr_noexcept {
  if (ptrp == NULL || size == 0) { errno = EINVAL; return EINVAL; }
  void** op = (void**)ptrp;
  size_t total;
  if (mi_mul_overflow(count, size, &total)) { errno = EOVERFLOW; return EOVERFLOW; }
  if (total == 0) {
    mi_free(*op);
    *op = NULL;
    return 0;
  }
  void* newp = mi_realloc(*op, total);
  if (newp == NULL) { errno = ENOMEM; return ENOMEM; }
  *op = newp;
  return 0;
}

void* mi__expand(void* p, size_t newsize) mi_attr_noexcept {
  void* res = mi_expand(p, newsize);
  if (res == NULL) errno = ENOMEM;
  return res;
}

void* mi_aligned_recalloc(void* p, size_t newcount, size_t size, size_t alignment) mi_attr_noexcept {
  return mi_recalloc_aligned(p, newcount, size, alignment);
}
void* mi_aligned_offset_recalloc(void* p, size_t newcount, size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_recalloc_aligned_at(p, newcount, size, alignment, offset);
}

unsigned char* mi_mbsdup(const unsigned char* s) mi_attr_noexcept {
  return (unsigned char*)mi_strdup((const char*)s);
}

wchar_t* mi_wcsdup(const wchar_t* s) mi_attr_noexcept {
  if (s == NULL) return NULL;
  size_t len = wcslen(s);
  size_t total;
  if (mi_count_size_overflow(len + 1, sizeof(wchar_t), &total)) return NULL;
  wchar_t* p = (wchar_t*)mi_malloc(total);
  if (p != NULL) memcpy(p, s, total);
  return p;
}

int mi_dupenv_s(char** buf, size_t* size, const char* name) mi_attr_noexcept {
  if (size != NULL) *size = 0;
  if (buf == NULL || name == NULL) return EINVAL;
  char* value = getenv(name);
  if (value == NULL) {
    *buf = NULL;
    return 0;
  }
  *buf = mi_strdup(value);
  if (*buf == NULL) return ENOMEM;
  if (size != NULL) *size = strlen(value) + 1;
  return 0;
}

int mi_wdupenv_s(wchar_t** buf, size_t* size, const wchar_t* name) mi_attr_noexcept {
  if (size != NULL) *size = 0;
  if (buf == NULL || name == NULL) return EINVAL;
  *buf = NULL;
  return EINVAL;   /* wide environment strings exist only on Windows */
}
