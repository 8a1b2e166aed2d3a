/* SPDX-License-Identifier: MIT */
/* The OS layer: every system call of the allocator goes through these primitives, one file per
   OS (src/prim/unix.c, src/prim/windows.c; src/static.c picks one). A port is one such file.

   Rules for every function below, unless its entry says otherwise:
   - Errors: an int result is 0 on success or an errno value (<errno.h>; a port maps its own
     codes, e.g. Windows' GetLastError, to the nearest one). Output pointers are set on every
     path (NULL on error).
   - Never allocates through malloc (which may be this allocator, being initialised).
   - Thread-safe: may be called from any thread at any time, concurrently.
   - May be called before the C library's constructors and the allocator's own init have run
     (from the first malloc of the process), and after its destructors (threads still freeing).
   - Keeps errno (and Windows' last-error value) as the caller left it where it can: malloc
     and free must not change what the program sees there. The functions that only run on
     malloc's slow paths and report through their result may leave it changed.
   - Addresses and sizes of memory functions are multiples of config->page_size; [addr,
     addr+size) lies within one mapping returned by _mi_prim_alloc (or the huge-page call).

   When a memory primitive fails, the callers fall back as follows (nothing else: a test build
   with MI_FAIL_INJECT, src/prim/failinject.c, fails each call in turn, test/failinject/):
   - alloc: the allocation returns NULL with errno ENOMEM; a refused arena reservation makes
     segments come straight from the OS until an arena can be reserved;
   - commit (also one that fails half-way): the arena's claim is rolled back and another arena
     (reserved on demand) is tried, else NULL/ENOMEM; a segment freed while one of its slots
     cannot be committed again is decommitted whole and handed back uncommitted;
   - decommit, reset (purges): the memory stays committed with its contents, counted so, and
     is not taken as zero;
   - free: a warning; the range stays mapped (its address space is lost);
   - guard, protect (secure builds): an install leaves the page unguarded; a removal that
     fails keeps a segment of an arena out of use (one straight from the OS is unmapped), and
     a sampled guarded object's block allocated for good (guarded.c);
   - alloc_huge_os_pages: a warning, ordinary pages are used;
   - random_buf: the generator is seeded from the clock and addresses;
   - thread_start: a warning, and no purger thread (purges from allocator activity only). */
#pragma once
#include "../internal/types.h"

typedef struct mi_os_mem_config_s {
  size_t page_size;          /* OS page size, e.g. 4 KiB */
  size_t large_page_size;    /* 2 MiB on x86-64 (0 if unknown) */
  size_t alloc_granularity;  /* smallest unit of mapping address alignment (Windows: 64 KiB) */
  bool   has_partial_free;   /* _mi_prim_free may unmap part of a mapping (mmap: yes; Windows'
                                VirtualFree releases only whole reservations: no) */
  bool   decommit_keeps_access; /* _mi_prim_decommit without `protect` cannot fail half-way and
                                leave the range inaccessible (madvise: yes; Windows, which
                                decommits and commits again: no, so os.c resets instead) */
} mi_os_mem_config_t;

/* Fill in the memory configuration; called once at process init (os.c preset the fields: a
   port changes only those that differ). Makes no system call (the start-up of a process that
   never allocates stays cheap): what needs the OS to be asked is asked on first need. */
void  _mi_prim_mem_init(mi_os_mem_config_t* config);

/* Does untouched reserved memory cost nothing (Linux overcommit mode 0 or 1)? Asks the OS
   (/proc on Linux) at each call: the caller keeps the answer. False where memory is charged
   when made accessible (Windows commit, strict overcommit): arenas are then reserved
   inaccessible and committed piecewise. */
bool  _mi_prim_has_overcommit(void);

/* Map `size` bytes of zeroed memory, read/write if `commit` else inaccessible (a reservation).
   `hint`: NULL, or an address (a multiple of alloc_granularity) the caller would like; the OS
   may place the mapping elsewhere, and the caller checks. With allow_large (and commit): 2 MiB
   large pages where the system has them for us (then *is_large: pinned, never purged or
   decommitted; Linux: a hugetlb pool, Windows: SeLockMemoryPrivilege), else, where the OS has
   them, transparent huge pages requested as a hint. *addr is NULL on error. */
int   _mi_prim_alloc(void* hint, size_t size, bool commit, bool allow_large, bool* is_large, void** addr);

/* Unmap [addr, addr+size). Without has_partial_free, addr must be the start of a mapping and
   the whole mapping is released (size is then only informative). */
int   _mi_prim_free(void* addr, size_t size);

/* Make [addr, addr+size) read/write (commit a reservation). ENOMEM when the OS refuses the
   commit charge. */
int   _mi_prim_commit(void* addr, size_t size);

/* Decommit: RSS falls at once and the range reads as zero (Linux MADV_DONTNEED; macOS, where
   that neither frees at once nor zeroes, a fresh anonymous mapping over it); with `protect` it
   also becomes inaccessible (returning the commit charge on strict-overcommit systems and
   Windows). Without `protect` the range stays usable without a new _mi_prim_commit. Never
   called on large (pinned) pages. */
int   _mi_prim_decommit(void* addr, size_t size, bool protect);

/* Reset: the OS may reclaim the pages lazily (MADV_FREE, else MADV_DONTNEED; Windows
   MEM_RESET); the range stays usable and its contents are undefined. */
int   _mi_prim_reset(void* addr, size_t size);

/* The OS call behind _mi_prim_decommit (`decommit`) or _mi_prim_reset, as a user of this OS
   knows it ("MADV_DONTNEED", "MEM_RESET"): for the verbose start-up line of the purge policy. */
const char* _mi_prim_purge_method(bool decommit);

/* Make [addr, addr+size) inaccessible (protect) or read/write again; the range is committed
   (Windows cannot protect reserved pages). */
int   _mi_prim_protect(void* addr, size_t size, bool protect);
/* Install (or remove) a guard region over [addr, addr+size): accesses fault, no memory is used,
   the markers survive purges (Linux 6.13+ MADV_GUARD_INSTALL); 0, or an errno (EINVAL: no
   such support for this memory or kernel, and os.c then uses _mi_prim_protect where it may;
   other memory keeps its contents on removal). */
int   _mi_prim_guard(void* addr, size_t size, bool install);

/* Map `size` bytes (a multiple of 1 GiB) of 1 GiB huge pages at exactly `hint` (if not NULL),
   preferring `numa_node` (-1: any). 0 or an errno value (ENOMEM where the OS has none,
   ENOTSUP where the port has no such pages). */
int   _mi_prim_alloc_huge_os_pages(void* hint, size_t size, int numa_node, void** addr);

/* The NUMA node of the calling thread's CPU (0 when unknown), and the number of nodes (>= 1;
   asked once, on the first allocation, so it should be cheap). */
size_t _mi_prim_numa_node(void);
size_t _mi_prim_numa_node_count(void);

/* Monotonic clock in milliseconds (any origin). Cheap: called on slow paths. */
mi_msecs_t _mi_prim_clock_now(void);

/* Preemption on request, for the schedule fuzzer of test builds (src/prim/sched-fuzz.c); any
   thread, never allocates, keeps errno (and Windows' last-error value).
   _mi_prim_thread_yield: give the CPU to another runnable thread, if there is one (sched_yield;
   Windows SwitchToThread).
   _mi_prim_thread_sleep: sleep the calling thread for at least `usecs` microseconds (a signal may
   end it early); the OS rounds up to its timer (Linux: tens of microseconds; Windows: the
   system tick, often 1 to 16 ms, for any sleep below it). */
void  _mi_prim_thread_yield(void);
void  _mi_prim_thread_sleep(size_t usecs);

/* Elapsed/user/system times, RSS (current and peak), commit, page faults; the fields the OS
   cannot tell are left as the caller set them (zero). Linux: true current RSS from /proc,
   major faults; macOS: task_info's resident sizes; Windows: working set, pagefile usage, all
   faults. */
void  _mi_prim_process_info(mi_process_info_t* pinfo);

/* Write a NUL-terminated message to stderr without buffering or allocating; errors are
   ignored. */
void  _mi_prim_out_stderr(const char* msg);

/* Create (or truncate) the file `path` of `size` zero bytes, readable by the owner only, and
   map it shared read/write at *addr; 0 or an errno value (ENOTSUP: no live view on this OS).
   Called when the live view starts (process init, or mi_option_set) and at exit (src/live.c). */
int   _mi_prim_shared_map(const char* path, size_t size, void** addr);
/* Unmap what _mi_prim_shared_map mapped (addr NULL: nothing), and with `unlink` remove the file. */
void  _mi_prim_shared_unmap(const char* path, void* addr, size_t size, bool unlink);

/* The process id, and the calling thread's OS id (Linux: as in /proc/<pid>/task/<tid>; macOS:
   pthread_threadid_np; Windows: GetCurrentThreadId). */
long  _mi_prim_process_id(void);
long  _mi_prim_thread_os_id(void);

/* Create or truncate the file `path` and write `len` bytes to it; 0 or an errno value. Only
   at exit or on the program's request (statistics JSON). */
int   _mi_prim_write_file(const char* path, const char* buf, size_t len);

/* Read the start of the file `path` (at most size-1 bytes) into `buf`, NUL-terminated, and its
   length into *len (0 on error); 0 or an errno value (ENOENT: no such file; ENOTSUP: the port
   reads no files). Never allocates, keeps errno: the memory limit (src/limit.c) reads small
   /proc and /sys files with it, on slow paths and from the purger's thread. */
int   _mi_prim_read_file(const char* path, char* buf, size_t size, size_t* len);

/* The memory limits of the job object the process is in (Windows): its per-process and its
   whole-job commit limits in bytes, 0 where that one is not set; false where the process is in
   no job or the system has no such thing (Unix: the cgroup is read with _mi_prim_read_file).
   Never allocates, keeps the last error. Tests: MIMALLOC_TEST_JOB_LIMIT="PROCESS,JOB" (bytes)
   stands in for the job (Wine neither keeps nor reports a job's limits). */
bool  _mi_prim_job_limits(size_t* process_limit, size_t* job_limit);

/* Copy the value of environment variable `name` (matched case-insensitively) into `result`
   (NUL-terminated; Unix cuts a value that does not fit, Windows reports it as absent); false
   when absent. Never allocates; works before libc is fully initialised (false then: the
   options are read again later). */
bool  _mi_prim_getenv(const char* name, char* result, size_t result_size);

/* Which loaded object the program's calls to the function `name` bind to (the first definition
   in load order): 1 the one that contains `self`, 0 another one (its path in `path`), -1
   unknown (the only answer a port needs to give); `addr` is the definition's address. Reads the
   loaded objects' symbol tables in place (no dlsym); never allocates; takes the loader's lock
   once (dladdr of `self`). Called after process init, only with verbose or show_errors. */
int   _mi_prim_symbol_provider(const char* name, const void* self, void** addr, char* path, size_t path_size);

/* The first definition of the function `name` among the loaded objects, or NULL: for a function
   that not every supported libc version has (a plain reference would raise the version the
   library needs). Reads the symbol tables in place; no lock, never allocates, so it may run
   inside an allocation. Unix with glibc only (the profiler's, prof-stack.c). */
void* _mi_prim_loaded_function(const char* name);

/* Point the PLT slots through which the loaded objects (not this library) call names[k] at
   to[k], where they are bound to from[k] or not bound yet; returns how many were rewritten.
   Only where the profiler's counted entry points are (MI_PROF_ENTRIES: Linux with glibc);
   called once, at process init. */
size_t _mi_prim_rebind_calls(const char* const* names, void* const* from, void* const* to, size_t n);

/* Call `visit` on each "NAME=value" entry of the environment; false if the environment is
   not accessible yet. Never allocates from this allocator (Windows: a copy of the block on
   the process heap, GetEnvironmentStringsW). Called once, at process init. */
bool  _mi_prim_env_visit(void (*visit)(const char* entry, void* arg), void* arg);

/* True once the environment can be read: false only early in a process's start (a
   .preinit_array function, as AddressSanitizer's start-up, runs before libc sets `environ`),
   when _mi_prim_getenv finds nothing although the variable may be set. */
bool  _mi_prim_env_ready(void);

/* False only if the environment is readable and no variable's name starts with `prefix`
   (case-insensitively): one pass over the environment, for skipping many _mi_prim_getenv. */
bool  _mi_prim_env_may_have(const char* prefix);

/* Fill `buf` with random bytes from the OS; false if none are available (the caller then
   seeds from the clock and addresses). */
bool  _mi_prim_random_buf(void* buf, size_t buf_len);

/* Thread exit. _mi_prim_thread_init_auto_done registers the exit hook once, at process init
   (on the initialising thread, no concurrency); associate_default_heap(heap) makes the hook
   run _mi_thread_done(heap) on the exiting thread itself, while its thread-local variables are
   still usable (NULL disassociates: nothing runs); it is called on the calling thread's own
   behalf only. The hook must run for every thread that allocated, however it was started
   (pthread key destructor; Windows: FLS callback, and a TLS callback for heaps made after it). done_auto_done: process exit; may keep the
   hook (threads still running may exit later). */
void  _mi_prim_thread_init_auto_done(void);
void  _mi_prim_thread_done_auto_done(void);
void  _mi_prim_thread_associate_default_heap(mi_heap_t* heap);

/* True once the calling thread's last exit hook has run (Windows: the TLS callback, after which
   no hook of ours runs on the thread again). An allocation then gets a heap for that one call,
   which is abandoned at once (_mi_malloc_generic): nothing is left owned by the dying thread.
   Elsewhere the exit hook runs last (a pthread key destructor re-runs while values are set). */
#if defined(_WIN32)
bool  _mi_prim_thread_is_exited(void);
#else
static inline bool _mi_prim_thread_is_exited(void) { return false; }
#endif

/* True when this library is the redirecting DLL (Windows, mimalloc-redirect.dll, built with
   src/redirect-windows.c): as it loads, it sends the C runtime's malloc, free & co. of every
   module of the process to this allocator (its DllMain, right after process init). Known by
   the module's own export table (mi_redirect_imports); for the verbose start-up line. */
#if defined(_WIN32)
bool  _mi_prim_is_redirect_dll(void);
#else
static inline bool _mi_prim_is_redirect_dll(void) { return false; }
#endif

/* Run prepare before fork() in the forking thread, parent and child after it; false if the
   handlers could not be registered. Where there is no fork (Windows): true, nothing done.
   Called after process init (pthread_atfork may allocate). */
bool  _mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* The purger's thread (src/purger.c), the one thread of our own.
   _mi_prim_thread_start: run fun(arg) on a new thread, detached (never joined), with a small
   stack (64 KiB where the OS takes it) and every signal blocked (a program's handlers never
   run on it); 0 or an errno value (EAGAIN: no thread could be made). Such a thread counts as
   a thread of the process: while it runs, a process whose other threads all ended (a main
   that called pthread_exit) goes on; so it must end when it has nothing to do. Not
   thread-safe: the caller starts one thread at a time. Unix: pthread_create allocates the
   thread's TLS vector through malloc, which may be us: the caller serves that allocation
   itself (purger.c). With init_wait it (re)initialises the wait below: on the first start and
   the first in a fork child (which may have inherited the wait's lock held by a thread it does
   not have); not on a restart, when a wake may be under way.
   _mi_prim_thread_wait: sleep the calling thread (the one started) until _mi_prim_thread_wake
   or for timeout_ms (< 0: no timeout); it may return early. A wake that comes while the thread
   is not waiting is kept: the next wait returns at once.
   _mi_prim_thread_wake: from any thread; never allocates; blocks at most while the sleeper
   holds the wait's lock (a few instructions). Only once a thread was started. */
int   _mi_prim_thread_start(void (*fun)(void* arg), void* arg, bool init_wait);
/* Name the calling thread `name` (ASCII, at most 15 characters), as debuggers and process
   listings show it (Linux: /proc/<pid>/task/<tid>/comm, ps -L, top -H, gdb; macOS; Windows 10
   1607+: SetThreadDescription, looked up at run time so that older Windows still loads us).
   Called by the purger's thread on itself; never allocates, keeps errno (and Windows'
   last-error value); where the OS has no such name, or refuses it, nothing happens. */
void  _mi_prim_thread_set_name(const char* name);
/* True only when the process provably never had a second thread (so no thread teardown, which
   frees with the C library's locks held, can be under way): glibc's __libc_single_threaded.
   False where that is unknown (musl, macOS, Windows). */
bool  _mi_prim_process_single_threaded(void);
void  _mi_prim_thread_wait(mi_msecs_t timeout_ms);
void  _mi_prim_thread_wake(void);
/* False once the thread last started is known to have ended. Windows: ExitProcess ends the
   other threads before a DLL's exit handlers (mi_process_done) run, wherever they were; Unix:
   threads run until _exit, after those handlers, so always true. */
bool  _mi_prim_thread_alive(void);
/* True once the process has begun to end and its other threads may have been ended wherever
   they were, holding locks that are never released (Windows: ExitProcess, whose thread runs the
   exit hooks afterwards; RtlDllShutdownInProgress). Unix: always false (threads run on). */
bool  _mi_prim_process_ending(void);
