/* The OS layer: every system call of the allocator goes through these primitives, one file per
   OS (src/prim/unix.c). Each returns 0 on success or an errno value, and never allocates. */
#pragma once
#include "../internal/types.h"

typedef struct mi_os_mem_config_s {
  size_t page_size;          /* OS page size, e.g. 4 KiB */
  size_t large_page_size;    /* 2 MiB on x86-64 (0 if unknown) */
  size_t alloc_granularity;  /* smallest unit of mmap address alignment */
  bool   has_overcommit;     /* untouched reserved memory costs nothing (Linux) */
} mi_os_mem_config_t;

/* Fill in the memory configuration; called once at process init. */
void  _mi_prim_mem_init(mi_os_mem_config_t* config);

/* Map `size` bytes of zeroed read/write memory; `hint` may be NULL. *addr is NULL on error. */
int   _mi_prim_alloc(void* hint, size_t size, void** addr);

/* Unmap [addr, addr+size); addr and size page aligned. */
int   _mi_prim_free(void* addr, size_t size);

/* Drop the contents of [addr, addr+size): RSS falls, the range stays mapped and reads as zero
   when touched again (MADV_DONTNEED on private anonymous memory). */
int   _mi_prim_reset(void* addr, size_t size);

/* Make [addr, addr+size) inaccessible (protect) or read/write again. */
int   _mi_prim_protect(void* addr, size_t size, bool protect);

/* Monotonic clock in milliseconds. */
mi_msecs_t _mi_prim_clock_now(void);

/* Elapsed/user/system times, RSS (true current RSS from /proc), page faults. */
void  _mi_prim_process_info(mi_process_info_t* pinfo);

/* Write a NUL-terminated message to stderr without buffering or allocating. */
void  _mi_prim_out_stderr(const char* msg);

/* Create or truncate the file `path` and write `len` bytes to it; 0 or an errno value. */
int   _mi_prim_write_file(const char* path, const char* buf, size_t len);

/* Copy the value of environment variable `name` (matched case-insensitively) into `result`;
   false when absent. Never allocates; works before libc is fully initialised. */
bool  _mi_prim_getenv(const char* name, char* result, size_t result_size);

/* Fill `buf` with random bytes from the OS; false if none are available. */
bool  _mi_prim_random_buf(void* buf, size_t buf_len);

/* Register the thread-exit hook and associate `heap` with the calling thread so the hook runs
   _mi_thread_done(heap) when the thread ends (NULL disassociates). */
void  _mi_prim_thread_init_auto_done(void);
void  _mi_prim_thread_done_auto_done(void);
void  _mi_prim_thread_associate_default_heap(mi_heap_t* heap);

/* Run prepare before fork() in the forking thread, parent and child after it; false if the
   handlers could not be registered. */
bool  _mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
