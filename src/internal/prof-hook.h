/* SPDX-License-Identifier: MIT */
/* The sampling heap profiler's interface to the rest of the library (prof.c, prof-samples.c,
   prof-stack.c; docs/profiler.md): whether it is built, its hooks on the allocation slow path
   and in heaps, the counted entry points, and the samples. Layer 9; what the core reads of it is in observe.h. */
#pragma once

#include "observers.h"

void*  _mi_prof_counted_due(size_t size, bool zero);   /* countdown at zero */
void*  _mi_prof_counted_slow(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset);
                                                     /* no free block (prof-entry.c's mi_malloc_slow_fun) */
void       _mi_prof_heap_init(mi_heap_t* heap);     /* the heap's proxies, if the profiler is on */
void       _mi_prof_heap_done(mi_heap_t* heap);     /* leases back, proxies gone */
void       _mi_prof_thread_start(mi_tld_t* tld);    /* _mi_prof_heap_init for the thread's heaps */
void       _mi_prof_return_all(mi_heap_t* heap);    /* every lease back to its page */
mi_heap_t* _mi_prof_sample_heap(const mi_heap_t* heap); /* the heap's sampled blocks' heap, or NULL */
mi_block_t* _mi_prof_leased(const mi_heap_t* heap, const mi_page_t* page);   /* the blocks of page leased and
                             not handed out (free; page->used counts them), or NULL; may be read by a
                             thread other than the heap's while the heap's thread keeps out of it */
void*      _mi_prof_malloc(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset);
double     _mi_prof_probability(double x);          /* 1 - exp(-x) */
/* prof-samples.c: the samples, their stacks, the dumps */
void       _mi_prof_samples_init_env(void);         /* MIMALLOC_PROFILE*, at process start */
void       _mi_prof_samples_record(void* p, size_t size, size_t counted, const uintptr_t* start);   /* p (usable
                             size bytes) was sampled, with the probability of `counted` bytes;
                             owner thread; start: as for _mi_prof_stack_backtrace */
void       _mi_prof_samples_freed(mi_page_t* page, mi_block_t* block);   /* a free into a page with samples */
void       _mi_prof_samples_page_gone(mi_page_t* page);     /* the page is released with samples in it */
void       _mi_prof_samples_periodic(void);         /* MIMALLOC_PROFILE_INTERVAL: a dump if due */
void       _mi_prof_samples_process_done(void);     /* the dump at exit */
size_t     _mi_prof_stack_backtrace(uintptr_t* pcs, size_t max, uintptr_t skip_lo, uintptr_t skip_hi, const unsigned long long loader[2],
                              const uintptr_t* start);   /* prof-stack.c; under the store lock */
/* The stack walk may start at a frame the caller names: start[0..2] = the return address into
   it, the stack pointer after that return, and rbp then (x86-64's cached walk; NULL: from the
   walker's own frame). The counted entry points name their caller's frame, so the walk skips
   the allocator's frames without unwinding them (prof.c). */
#if MI_PROF_AVAILABLE && defined(__x86_64__) && defined(__GNUC__) && !defined(MI_PROF_UNWIND_CACHE)
#define MI_PROF_UNWIND_CACHE 1
#elif !defined(MI_PROF_UNWIND_CACHE)
#define MI_PROF_UNWIND_CACHE 0
#endif
void       _mi_prof_stack_unwinder_load(bool may_load);   /* libgcc's unwinder, if loaded (may_load: dlopen it) */
void       _mi_prof_stack_loader_generation(unsigned long long counts[2]);   /* before taking the store lock */
void       _mi_prof_stack_loader_fork_prepare(void);   /* fork: no thread in the loader's lock (prof-stack.c) */
void       _mi_prof_stack_loader_fork_parent(void);
void       _mi_prof_stack_loader_fork_child(void);
struct mi_json_s;
void       _mi_prof_samples_json(struct mi_json_s* json, size_t count);   /* the top sites for the live view */
void       _mi_prof_samples_fork_prepare(void);
void       _mi_prof_samples_fork_parent(void);
void       _mi_prof_samples_fork_child(void);
