/* SPDX-License-Identifier: MIT */
/* Layer 1 (docs/design.md, "Layers"): what every layer uses. The compiler's attributes and the
   assertions; options, output and errors (options.c); the statistics' counters (stats.c); the
   arithmetic helpers; the thread id. Every layer header includes it. */
#pragma once
#include "types.h"
#include "sched.h"   /* the schedule fuzzer's points (test builds) */
#include <string.h>
#include <stdarg.h>

#if defined(__GNUC__)
#define mi_likely(x)      __builtin_expect(!!(x), 1)
#define mi_unlikely(x)    __builtin_expect(!!(x), 0)
#define mi_decl_noinline  __attribute__((noinline))
#define mi_decl_cold      __attribute__((cold))
#if defined(_WIN32)
/* PE has neither TLS models nor symbol visibility (exports are chosen by dllexport) */
#define mi_decl_thread    __thread
#define mi_decl_hidden
#else
#define mi_decl_thread    __thread __attribute__((tls_model("initial-exec")))
#define mi_decl_hidden    __attribute__((visibility("hidden")))
#endif
#define mi_decl_weak      __attribute__((weak))
/* malloc and free entry points: a cache-line aligned start measured 2-3% faster on
   bench-st than wherever the unity build happens to place them */
#define mi_decl_cache_align __attribute__((aligned(64)))
/* Makes the compiler keep x in a register as computed (no rematerialisation); no code. */
#define mi_opaque_reg(x)  __asm__("" : "+r"(x))
/* Large zero-initialised tables that a process touches rarely or sparsely (the segment map,
   spare parts, report buffers): kept together, away from the small variables that every
   process touches at start-up, so that those share a few pages (each page of zero data costs
   a page fault when first touched, two when first read and then written). Zero-initialised
   data only (a .bss.* section, so it takes no room in the file). */
#if defined(_WIN32)
#define mi_decl_cold_bss  /* PE: a named section would be stored as initialised data (32 MiB of zeros) */
#elif defined(__APPLE__)
#define mi_decl_cold_bss  /* Mach-O: plain zero-fill data (no ELF .bss.* section names) */
#else
#define mi_decl_cold_bss  __attribute__((section(".bss.mi_cold")))
#endif
#else
#define mi_likely(x)      (x)
#define mi_unlikely(x)    (x)
#define mi_decl_noinline
#define mi_decl_cold
#define mi_decl_thread    _Thread_local
#define mi_decl_hidden
#define mi_decl_weak
#define mi_decl_cache_align
#define mi_opaque_reg(x)  ((void)(x))
#define mi_decl_cold_bss
#endif
#if defined(__GNUC__)
#define mi_decl_always_inline  inline __attribute__((always_inline))
#else
#define mi_decl_always_inline  inline
#endif

#if MI_DEBUG > 0
void _mi_assert_fail(const char* assertion, const char* fname, unsigned line, const char* func);
#define mi_assert(expr)   ((expr) ? (void)0 : _mi_assert_fail(#expr, __FILE__, __LINE__, __func__))
#else
#define mi_assert(x)      ((void)0)
#endif
#if MI_DEBUG > 1
#define mi_assert_internal  mi_assert
#else
#define mi_assert_internal(x) ((void)0)
#endif
#if MI_DEBUG > 2
#define mi_assert_expensive mi_assert
#else
#define mi_assert_expensive(x) ((void)0)
#endif

/* ------------------------------------------------------------------------------------------
   options.c: options, output, errors
------------------------------------------------------------------------------------------ */
void       _mi_options_init(void);
void       _mi_fputs(mi_output_fun* out, void* arg, const char* prefix, const char* message);
void       _mi_message(const char* fmt, ...);
void       _mi_verbose_message(const char* fmt, ...);
void       _mi_trace_message(const char* fmt, ...);     /* verbose >= 2: each OS call */
void       _mi_warning_message(const char* fmt, ...);   /* with show_errors or verbose */
void       _mi_warning_always(const char* fmt, ...);    /* about the user's settings: unless show_errors=0 was set */
void       _mi_error_message(int err, const char* fmt, ...);
int        _mi_vsnprintf(char* buf, size_t bufsize, const char* fmt, va_list args);
int        _mi_snprintf(char* buf, size_t bufsize, const char* fmt, ...);
void       _mi_options_deferred_free(mi_heap_t* heap, bool force);
bool       _mi_option_env_flag(const char* name);   /* a boolean MIMALLOC_ setting outside the option table */

/* ------------------------------------------------------------------------------------------
   stats.c (see mi_stats_data_t in types.h)
------------------------------------------------------------------------------------------ */
extern mi_stats_data_t _mi_stats_main;     /* process totals: atomic updates only */
void       _mi_stat_increase(mi_stat_count_t* stat, size_t amount);          /* thread-local */
void       _mi_stat_atomic_increase(mi_stat_count_t* stat, size_t amount);   /* process totals */
void       _mi_stat_atomic_decrease(mi_stat_count_t* stat, size_t amount);
/* The increase in two steps, for a caller that may take it back (limit.h): the current value
   (returns the new one), then, once it stands, the total and the peak. */
int64_t    _mi_stat_atomic_add(mi_stat_count_t* stat, int64_t amount);
void       _mi_stat_atomic_counted(mi_stat_count_t* stat, size_t amount, int64_t current);
int64_t    _mi_stat_atomic_add_upto(mi_stat_count_t* stat, int64_t amount, int64_t limit);   /* -1: not added, it would pass `limit` */
void       _mi_stat_atomic_counter_add(mi_stat_counter_t* stat, size_t amount);
/* Blocks of a page leave (out) or join (in) the figures of the thread `tld` (NULL: the page
   is or was abandoned and its blocks count in the process totals only). MI_STAT > 1. */
void       _mi_stat_page_transfer(const mi_page_t* page, mi_tld_t* from, mi_tld_t* to);
/* A non-huge block of `page` freed or collected by its owner (tld NULL: abandoned page). */
void       _mi_stat_blocks_freed(const mi_page_t* page, mi_tld_t* tld, size_t count);
void       _mi_stat_block_malloc(mi_tld_t* tld, const mi_page_t* page, size_t size);
void       _mi_stats_merge_thread(mi_tld_t* tld);     /* add the thread's figures to the totals */
void       _mi_stats_sum(mi_stats_data_t* dst, const mi_stats_data_t* src);   /* dst += src, peaks too (plain memory) */
void       _mi_stats_snapshot(mi_stats_data_t* copy);   /* the process totals as they are (relaxed loads) */

#define mi_stat_counter_increase(tld, stat, n)  ((tld)->stats.stat.total += (int64_t)(n))
#define mi_os_stat_increase(stat, n)            _mi_stat_atomic_increase(&_mi_stats_main.stat, (n))
#define mi_os_stat_decrease(stat, n)            _mi_stat_atomic_decrease(&_mi_stats_main.stat, (n))
#define mi_os_stat_counter_increase(stat, n)    _mi_stat_atomic_counter_add(&_mi_stats_main.stat, (n))

/* ------------------------------------------------------------------------------------------
   Inline helpers
------------------------------------------------------------------------------------------ */
static inline bool mi_is_power_of_two(uintptr_t x) { return (x & (x - 1)) == 0; }

static inline uintptr_t _mi_align_up(uintptr_t sz, size_t alignment) {
  mi_assert_internal(alignment != 0);
  uintptr_t mask = alignment - 1;
  if ((alignment & mask) == 0) return ((sz + mask) & ~mask);
  return ((sz + mask) / alignment) * alignment;
}
static inline uintptr_t _mi_align_down(uintptr_t sz, size_t alignment) {
  uintptr_t mask = alignment - 1;
  if ((alignment & mask) == 0) return (sz & ~mask);
  return ((sz / alignment) * alignment);
}
static inline size_t _mi_divide_up(size_t size, size_t divider) {
  return (divider == 0 ? size : ((size + divider - 1) / divider));
}

/* count*size with overflow detection; true when it overflowed */
static inline bool mi_mul_overflow(size_t count, size_t size, size_t* total) {
  return __builtin_mul_overflow(count, size, total);
}
/* true (and errno = ENOMEM) when count*size overflows */
static inline bool mi_count_size_overflow(size_t count, size_t size, size_t* total) {
  if (count == 1) { *total = size; return false; }
  if (mi_unlikely(mi_mul_overflow(count, size, total))) {
    _mi_error_message(EOVERFLOW, "allocation request is too large (%zu * %zu bytes)\n", count, size);
    errno = ENOMEM;
    return true;
  }
  return false;
}

static inline size_t _mi_wsize_from_size(size_t size) {
  return (size + sizeof(uintptr_t) - 1) / sizeof(uintptr_t);
}

static inline size_t mi_bsr(uintptr_t x) {  /* index of the highest set bit; x != 0 */
  return (sizeof(uintptr_t)*8 - 1) - (size_t)__builtin_clzll(x);   /* (long is 32 bits on Windows) */
}

/* The number of bits set. Where the target has no instruction for it (x86 without popcnt,
   riscv without Zbb) gcc calls libgcc's __popcountdi2, linked at the far end of the shared
   library's code: one call kept a 64 KiB window of it resident in every process (CMakeLists.txt,
   MI_HOT_TEXT). So the same few shifts and one multiply inline instead. */
static inline size_t mi_popcount(uint64_t x) {
#if defined(__POPCNT__) || defined(__aarch64__) || defined(__riscv_zbb)
  return (size_t)__builtin_popcountll((unsigned long long)x);
#else
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return (size_t)((x * 0x0101010101010101ULL) >> 56);
#endif
}

/* Size to bin, table free (see the bin layout in types.h). */
static inline size_t _mi_bin(size_t size) {
  size_t wsize = _mi_wsize_from_size(size);
  if (wsize <= 1) return 1;
  if (wsize <= MI_BIN_SMALL_WORDS) return ((wsize + 1) >> 1) + 1;
  if (size > MI_LARGE_OBJ_SIZE_MAX) return MI_BIN_HUGE_INTERNAL;
  wsize--;
  size_t b = mi_bsr(wsize);                                         /* b >= 4 */
  return ((b - 4) << 3) + ((wsize >> (b - 3)) & 7) + MI_BIN_FIRST_SPACED;
}

/* ------------------------------------------------------------------------------------------
   The thread's TLS (defined in init.c, layer 5): declared here because the thread id below
   falls back on its address where the target has no thread register.
------------------------------------------------------------------------------------------ */
#if defined(_WIN32) && defined(__x86_64__) && defined(__GNUC__)
/* Windows x64: mingw-w64's gcc has only emulated TLS (a call into libgcc per access, which
   allocates on a thread's first access), so the one TLS pointer is native TLS made by hand:
   it sits in the image's TLS template (section .tls$MI, between the CRT's _tls_start in .tls
   and _tls_end in .tls$ZZZ) and is reached through the TEB's ThreadLocalStoragePointer
   (%gs:0x58) indexed by the image's _tls_index, at its section-relative offset (SECREL32).
   Never access _mi_thread_default_heap directly there: only through _mi_thread_default_heap_ptr().
   Every thread-local variable that a thread's exit may touch is native TLS too (emulated TLS
   is freed by the CRT's TLS callbacks: a later access allocates it again with the CRT's
   malloc, which aborts the process when that fails at process exit): defined with
   mi_decl_tls_pe and a global name (the asm names its symbol), reached with mi_tls_pe_ptr. */
#define MI_TLS_PE 1
#define mi_decl_tls_pe  __attribute__((section(".tls$MI")))
#define mi_tls_pe_ptr(type, name) __extension__ ({ \
    uintptr_t idx_, tls_; \
    type* p_; \
    __asm__("movl _tls_index(%%rip), %k0" : "=r"(idx_)); \
    __asm__("movq %%gs:0x58, %0" : "=r"(tls_)); \
    __asm__("leaq " #name "@SECREL32(%1), %0" : "=r"(p_) : "r"(((char**)tls_)[idx_])); \
    p_; })
extern mi_heap_t* _mi_thread_default_heap;
static inline mi_heap_t** _mi_thread_default_heap_ptr(void) {
  return mi_tls_pe_ptr(mi_heap_t*, _mi_thread_default_heap);
}
#else
/* The fast paths' thread-local data, at one TLS address: the default heap, and beside it what
   the profiler's counted entry points read (prof-entry.c; one GOT load serves all three). */
typedef struct mi_thread_tls_s {
  mi_heap_t* heap;         /* the default heap: &_mi_thread_empty_heap until the thread is set up */
  size_t     prof_left;    /* bytes the counted entry points may allocate before the next sample */
  mi_page_t* const* prof_direct;   /* == mi_heap_direct_real(heap) (prof-hook.h): set with the
                                      heap (_mi_thread_set_default_heap), and again when the
                                      default heap's profiler comes or goes (prof.c) */
} mi_thread_tls_t;
extern mi_decl_thread mi_thread_tls_t _mi_thread_tls;
#endif

/* ------------------------------------------------------------------------------------------
   Thread id and the default heap
------------------------------------------------------------------------------------------ */
/* A unique id of the calling thread that costs one instruction: the thread pointer (the
   thread control block the C library sets up per thread; distinct for every live thread).
     x86-64     %fs:0, the TCB's self pointer (glibc and musl both store it there)
     aarch64    tpidr_el0 (EL0 read/write thread register, the TLS base)
     riscv64    tp (x4), the ABI's thread pointer
     Windows x64  %gs:0x30, the TEB's self pointer (NtCurrentTeb())
     macOS      %gs:0 on x86-64 (TSD slot 0: the thread's pthread), tpidrro_el0 on arm64 (the
                TSD base, the low 3 bits cleared); untested at run time (docs/platforms.md)
   Every id is at least 8-byte aligned: the page flags share its word (MI_PAGE_FLAGS_MASK).
   Any other target: __builtin_thread_pointer() where the compiler has it, else the address of
   a thread-local variable (unique per live thread too, one TLS address computation).
   The asm is not volatile: within a thread the value never changes, so the compiler may reuse
   it; it reads no memory. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
#define MI_HAS_BUILTIN_THREAD_POINTER 1
#endif
#endif
static inline uintptr_t _mi_thread_id(void) {
#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__)
  uintptr_t tid;
  __asm__("movq %%fs:0, %0" : "=r"(tid));
  return tid;
#elif defined(__x86_64__) && defined(_WIN32)
  uintptr_t tid;
  __asm__("movq %%gs:0x30, %0" : "=r"(tid));
  return tid;
#elif defined(__aarch64__) && defined(__linux__)
  uintptr_t tid;
  __asm__("mrs %0, tpidr_el0" : "=r"(tid));
  return tid;
#elif defined(__riscv) && (__riscv_xlen == 64) && defined(__linux__)
  uintptr_t tid;
  __asm__("mv %0, tp" : "=r"(tid));
  return tid;
#elif defined(__x86_64__) && defined(__APPLE__)
  uintptr_t tid;
  __asm__("movq %%gs:0, %0" : "=r"(tid));   /* the thread's pthread (TSD slot 0) */
  return tid;
#elif defined(__aarch64__) && defined(__APPLE__)
  uintptr_t tid;
  __asm__("mrs %0, tpidrro_el0" : "=r"(tid));   /* the thread's TSD base */
  return tid & ~(uintptr_t)7;                   /* older kernels kept the CPU number in bits 0-2 */
#elif defined(MI_HAS_BUILTIN_THREAD_POINTER) || (defined(__GNUC__) && __GNUC__ >= 11 && !defined(__clang__))
  return (uintptr_t)__builtin_thread_pointer();
#else
#if MI_TLS_PE
  return (uintptr_t)_mi_thread_default_heap_ptr();
#else
  return (uintptr_t)&_mi_thread_tls;
#endif
#endif
}

/* x == _mi_thread_id(), as one compare with the memory operand %fs:0 on x86-64 Linux (%gs:0 on
   macOS) (the free fast path; a C load through a __seg_fs null pointer would do too, but trips
   UBSan).
   Elsewhere the thread register is read into a register and compared (2 instructions). */
static inline bool _mi_thread_id_is(uintptr_t x) {
#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool eq;
  __asm__("cmpq %%fs:0, %1" : "=@cce"(eq) : "r"(x));
  return eq;
#elif defined(__x86_64__) && defined(__APPLE__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool eq;
  __asm__("cmpq %%gs:0, %1" : "=@cce"(eq) : "r"(x));
  return eq;
#else
  return (x == _mi_thread_id());
#endif
}

static inline mi_heap_t* mi_prim_get_default_heap(void) {
#if MI_TLS_PE
  return *_mi_thread_default_heap_ptr();
#else
  return _mi_thread_tls.heap;
#endif
}

static inline bool mi_heap_is_initialized(const mi_heap_t* heap) {
  return (heap != NULL && heap->tld != NULL);
}

/* (the statistics' counters, stats.c, count a huge page's block in the process totals only) */
/* a page of a huge segment: one block, larger than any bin (huge segments exceed MI_SEGMENT_SIZE) */
static inline bool mi_page_is_huge(const mi_page_t* page) { return page->block_size > MI_LARGE_OBJ_SIZE_MAX; }
