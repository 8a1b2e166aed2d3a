/* SPDX-License-Identifier: MIT */
/* The OS layer: every system call of the allocator goes through these primitives, one file per
   OS (src/prim/unix.c). Each returns 0 on success or an errno value, and never allocates. */
#pragma once
#include "../internal/types.h"

typedef struct mi_os_mem_config_s {
  size_t page_size;          /* OS page size, e.g. 4 KiB */
  size_t large_page_size;    /* 2 MiB on x86-64 (0 if unknown) */
  size_t alloc_granularity;  /* smallest unit of mmap address alignment */
} mi_os_mem_config_t;

/* Fill in the memory configuration; called once at process init. Makes no system call (the
   start-up of a process that never allocates stays cheap): what needs the OS to be asked is
   asked on first need, as below. */
void  _mi_prim_mem_init(mi_os_mem_config_t* config);

/* Does untouched reserved memory cost nothing (Linux overcommit mode 0 or 1)? Asks the OS
   (/proc on Linux) at each call: the caller keeps the answer. */
bool  _mi_prim_has_overcommit(void);

/* Map `size` bytes of zeroed memory, read/write if `commit` else inaccessible (a reservation);
   `hint` may be NULL. With allow_large (and commit): 2 MiB hugetlb pages where the system has a
   pool of them (then *is_large: pinned, never purged), else transparent huge pages requested
   with madvise. *addr is NULL on error. */
int   _mi_prim_alloc(void* hint, size_t size, bool commit, bool allow_large, bool* is_large, void** addr);

/* Unmap [addr, addr+size); addr and size page aligned. */
int   _mi_prim_free(void* addr, size_t size);

/* Make [addr, addr+size) read/write (commit a reservation). */
int   _mi_prim_commit(void* addr, size_t size);

/* Decommit: RSS falls at once and the range reads as zero (MADV_DONTNEED); with `protect` it
   also becomes inaccessible (returning the commit charge on strict-overcommit systems). */
int   _mi_prim_decommit(void* addr, size_t size, bool protect);

/* Reset: the OS may reclaim the pages lazily (MADV_FREE, else MADV_DONTNEED); the range stays
   usable and its contents are undefined. */
int   _mi_prim_reset(void* addr, size_t size);

/* Make [addr, addr+size) inaccessible (protect) or read/write again. */
int   _mi_prim_protect(void* addr, size_t size, bool protect);
/* Install (or remove) a guard region over [addr, addr+size): accesses fault, no memory is used,
   the markers survive purges (Linux 6.13+ MADV_GUARD_INSTALL); 0, or an errno (EINVAL: no
   such support for this memory or kernel; other memory keeps its contents on removal). */
int   _mi_prim_guard(void* addr, size_t size, bool install);

/* Map `size` bytes (a multiple of 1 GiB) of 1 GiB huge pages at exactly `hint` (if not NULL),
   preferring `numa_node` (-1: any). 0 or an errno value (ENOMEM where the OS has none). */
int   _mi_prim_alloc_huge_os_pages(void* hint, size_t size, int numa_node, void** addr);

/* The NUMA node of the calling thread's CPU, and the number of nodes (>= 1). */
size_t _mi_prim_numa_node(void);
size_t _mi_prim_numa_node_count(void);

/* Monotonic clock in milliseconds. */
mi_msecs_t _mi_prim_clock_now(void);

/* Elapsed/user/system times, RSS (true current RSS from /proc), page faults. */
void  _mi_prim_process_info(mi_process_info_t* pinfo);

/* Write a NUL-terminated message to stderr without buffering or allocating. */
void  _mi_prim_out_stderr(const char* msg);

/* Create (or truncate) the file `path` of `size` zero bytes, readable by the owner only, and
   map it shared read/write at *addr; 0 or an errno value. */
int   _mi_prim_shared_map(const char* path, size_t size, void** addr);
/* Unmap what _mi_prim_shared_map mapped, and with `unlink` remove the file. */
void  _mi_prim_shared_unmap(const char* path, void* addr, size_t size, bool unlink);

/* The process id, and the calling thread's OS id (as in /proc/<pid>/task/<tid>). */
long  _mi_prim_process_id(void);
long  _mi_prim_thread_os_id(void);

/* Create or truncate the file `path` and write `len` bytes to it; 0 or an errno value. */
int   _mi_prim_write_file(const char* path, const char* buf, size_t len);

/* Copy the value of environment variable `name` (matched case-insensitively) into `result`;
   false when absent. Never allocates; works before libc is fully initialised. */
bool  _mi_prim_getenv(const char* name, char* result, size_t result_size);

/* Which loaded object the program's calls to the function `name` bind to (the first definition
   in load order): 1 the one that contains `self`, 0 another one (its path in `path`), -1
   unknown; `addr` is the definition's address. Reads the loaded objects' symbol tables in
   place (no dlsym); never allocates; takes the loader's lock once (dladdr of `self`). */
int   _mi_prim_symbol_provider(const char* name, const void* self, void** addr, char* path, size_t path_size);

/* Call `visit` on each "NAME=value" entry of the environment; false if the environment is
   not accessible yet. Never allocates. */
bool  _mi_prim_env_visit(void (*visit)(const char* entry, void* arg), void* arg);

/* False only if the environment is readable and no variable's name starts with `prefix`
   (case-insensitively): one pass over the environment, for skipping many _mi_prim_getenv. */
bool  _mi_prim_env_may_have(const char* prefix);

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
