/* SPDX-License-Identifier: MIT */
/* The OS layer for Windows (see prim.h for the contracts), built with mingw-w64 and tested
   under Wine (docs/platforms.md). Only kernel32 and advapi32 are used, which every program
   links, so that `cc app.c src/static.c` stays a complete build. */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include "prim.h"
#include "../internal/base.h"
#include "../internal/heap.h"   /* hook: _mi_thread_done at thread detach */
#include <windows.h>
#include <ntsecapi.h>   /* RtlGenRandom (advapi32's SystemFunction036) */
#ifndef PSAPI_VERSION
#define PSAPI_VERSION 2   /* GetProcessMemoryInfo is kernel32's K32GetProcessMemoryInfo: no psapi.dll */
#endif
#include <psapi.h>

/* The errno value closest to a Windows error code (the callers print it and test for ENOMEM,
   EINVAL and the like only). */
static int win_errno(DWORD err) {
  switch (err) {
    case ERROR_SUCCESS:             return 0;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
    case ERROR_COMMITMENT_LIMIT:
    case ERROR_NO_SYSTEM_RESOURCES: return ENOMEM;
    case ERROR_ACCESS_DENIED:
    case ERROR_PRIVILEGE_NOT_HELD:  return EACCES;
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:      return ENOENT;
    case ERROR_NOT_SUPPORTED:       return ENOTSUP;
    case ERROR_INVALID_ADDRESS:
    case ERROR_INVALID_PARAMETER:
    default:                        return EINVAL;
  }
}

static int win_last_errno(void) {   /* after a failed call: never 0 */
  const int err = win_errno(GetLastError());
  return (err != 0 ? err : EINVAL);
}

/* ---------------------------------------------------------------------------------------
   Memory. A mapping is a VirtualAlloc reservation; it can only be released whole (from its
   base), hence has_partial_free = false: os.c then aligns by placing, not by trimming.
--------------------------------------------------------------------------------------- */
void _mi_prim_mem_init(mi_os_mem_config_t* config) {
  /* no call to the OS: every Windows target has 4 KiB pages and a 64 KiB reservation
     granularity (GetSystemInfo would say the same) */
  config->page_size = 4096;
  config->alloc_granularity = 64 * MI_KiB;
  config->large_page_size = 2 * MI_MiB;   /* GetLargePageMinimum() on x64; asked on first need */
  config->has_partial_free = false;
  config->decommit_keeps_access = false;   /* see _mi_prim_decommit */
}

bool _mi_prim_has_overcommit(void) {
  return false;   /* committed memory is charged against the commit limit at once */
}

/* Large pages need the "Lock pages in memory" privilege (SeLockMemoryPrivilege) in the
   process token: it is enabled on the first request for large pages. Without it (the
   common case) there are no large pages, without a warning. 0 unknown, 1 no, 2 yes. */
static _Atomic(int) win_large_state;

static bool win_large_pages_enabled(void) {
  int state = mi_atomic_load_relaxed(&win_large_state);
  if (mi_likely(state != 0)) return (state == 2);
  const DWORD saved = GetLastError();
  bool ok = false;
  HANDLE token = NULL;
  if (OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token)) {
    TOKEN_PRIVILEGES tp;
    tp.PrivilegeCount = 1;
    tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
    if (LookupPrivilegeValueA(NULL, "SeLockMemoryPrivilege", &tp.Privileges[0].Luid)) {
      /* succeeds even when the privilege is not held: then the error is ERROR_NOT_ALL_ASSIGNED */
      ok = (AdjustTokenPrivileges(token, FALSE, &tp, 0, NULL, NULL) && GetLastError() == ERROR_SUCCESS);
    }
    CloseHandle(token);
  }
  if (ok) {
    const SIZE_T min = GetLargePageMinimum();
    ok = (min > 0 && (2 * MI_MiB) % min == 0);   /* our 2 MiB large pages are whole large pages */
  }
  SetLastError(saved);
  mi_atomic_store_relaxed(&win_large_state, ok ? 2 : 1);
  _mi_verbose_message("large OS pages: %s\n", ok ? "enabled (SeLockMemoryPrivilege)" : "not available (no SeLockMemoryPrivilege)");
  return ok;
}

/* VirtualAlloc at `hint` if that range is free (exactly there or not at all), else anywhere. */
static void* win_virtual_alloc(void* hint, size_t size, DWORD type, DWORD protect) {
  void* p = NULL;
  if (hint != NULL) p = VirtualAlloc(hint, size, type, protect);
  if (p == NULL) p = VirtualAlloc(NULL, size, type, protect);
  return p;
}

int _mi_prim_alloc(void* hint, size_t size, bool commit, bool allow_large, bool* is_large, void** addr) {
  *is_large = false;
  *addr = NULL;
  void* p = NULL;
  if (allow_large && commit && (size % (2*MI_MiB)) == 0 && win_large_pages_enabled()) {
    /* large pages are committed and locked in memory at once: never purged (is_large) */
    p = win_virtual_alloc(hint, size, MEM_RESERVE | MEM_COMMIT | MEM_LARGE_PAGES, PAGE_READWRITE);
    if (p != NULL) *is_large = true;
  }
  if (p == NULL) {
    p = win_virtual_alloc(hint, size, MEM_RESERVE | (commit ? MEM_COMMIT : 0), (commit ? PAGE_READWRITE : PAGE_NOACCESS));
    if (p == NULL) return win_last_errno();
  }
  *addr = p;
  return 0;
}

int _mi_prim_free(void* addr, size_t size) {
  (void)size;   /* the whole reservation that starts at addr */
  return (VirtualFree(addr, 0, MEM_RELEASE) ? 0 : win_last_errno());
}

int _mi_prim_commit(void* addr, size_t size) {
  return (VirtualAlloc(addr, size, MEM_COMMIT, PAGE_READWRITE) != NULL ? 0 : win_last_errno());
}

/* Decommitted pages are always inaccessible on Windows: without `protect` they are committed
   again at once, which costs no RSS (fresh pages are zero and materialise when touched). That
   second step can fail (the commit limit), leaving the range inaccessible: os.c does not ask
   for it (decommit_keeps_access is false) and resets instead. */
int _mi_prim_decommit(void* addr, size_t size, bool protect) {
  if (!VirtualFree(addr, size, MEM_DECOMMIT)) return win_last_errno();
  if (!protect) return _mi_prim_commit(addr, size);
  return 0;
}

int _mi_prim_reset(void* addr, size_t size) {
  /* MEM_RESET: the contents are no longer needed; the pages stay committed and usable */
  return (VirtualAlloc(addr, size, MEM_RESET, PAGE_READWRITE) != NULL ? 0 : win_last_errno());
}

const char* _mi_prim_purge_method(bool decommit) {
  return (decommit ? "MEM_DECOMMIT" : "MEM_RESET");
}

int _mi_prim_protect(void* addr, size_t size, bool protect) {
  DWORD old = 0;
  return (VirtualProtect(addr, size, (protect ? PAGE_NOACCESS : PAGE_READWRITE), &old) ? 0 : win_last_errno());
}

int _mi_prim_guard(void* addr, size_t size, bool install) {
  (void)addr; (void)size; (void)install;
  return EINVAL;   /* no guard markers: os.c falls back to _mi_prim_protect where it may */
}

/* ---------------------------------------------------------------------------------------
   Huge (1 GiB) OS pages and NUMA
--------------------------------------------------------------------------------------- */
int _mi_prim_alloc_huge_os_pages(void* hint, size_t size, int numa_node, void** addr) {
  /* 1 GiB pages need VirtualAlloc2 with MEM_EXTENDED_PARAMETER_NONPAGED_HUGE: not done */
  (void)hint; (void)size; (void)numa_node;
  *addr = NULL;
  return ENOTSUP;
}

size_t _mi_prim_numa_node(void) {
  PROCESSOR_NUMBER pnum;
  USHORT node = 0;
  GetCurrentProcessorNumberEx(&pnum);
  if (!GetNumaProcessorNodeEx(&pnum, &node) || node == 0xFFFF) return 0;
  return (size_t)node;
}

size_t _mi_prim_numa_node_count(void) {
  ULONG highest = 0;
  if (!GetNumaHighestNodeNumber(&highest)) return 1;
  return (size_t)highest + 1;
}

/* ---------------------------------------------------------------------------------------
   Time and process information
--------------------------------------------------------------------------------------- */
static _Atomic(int64_t) win_qpc_freq;   /* ticks per second; fixed at boot */

void _mi_prim_thread_yield(void) {
  SwitchToThread();   /* (sets no error) */
}

void _mi_prim_thread_sleep(size_t usecs) {
  const DWORD saved_err = GetLastError();
  Sleep((DWORD)((usecs + 999) / 1000));   /* whole milliseconds, rounded up to the system tick */
  SetLastError(saved_err);
}

mi_msecs_t _mi_prim_clock_now(void) {
  int64_t freq = mi_atomic_load_relaxed(&win_qpc_freq);
  if (mi_unlikely(freq == 0)) {
    LARGE_INTEGER f;
    QueryPerformanceFrequency(&f);   /* cannot fail since Windows XP */
    freq = (f.QuadPart > 0 ? f.QuadPart : 1);
    mi_atomic_store_relaxed(&win_qpc_freq, freq);
  }
  LARGE_INTEGER t;
  QueryPerformanceCounter(&t);
  return (mi_msecs_t)((t.QuadPart / freq) * 1000 + ((t.QuadPart % freq) * 1000) / freq);
}

static mi_msecs_t win_filetime_msecs(const FILETIME* ft) {   /* 100 ns units */
  const ULONGLONG t = ((ULONGLONG)ft->dwHighDateTime << 32) | ft->dwLowDateTime;
  return (mi_msecs_t)(t / 10000);
}

void _mi_prim_process_info(mi_process_info_t* pinfo) {
  FILETIME created, exited, kernel, user;
  if (GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) {
    pinfo->utime = win_filetime_msecs(&user);
    pinfo->stime = win_filetime_msecs(&kernel);
  }
  PROCESS_MEMORY_COUNTERS info;
  memset(&info, 0, sizeof(info));
  if (GetProcessMemoryInfo(GetCurrentProcess(), &info, sizeof(info))) {
    pinfo->current_rss = (size_t)info.WorkingSetSize;
    pinfo->peak_rss = (size_t)info.PeakWorkingSetSize;
    pinfo->current_commit = (size_t)info.PagefileUsage;
    pinfo->peak_commit = (size_t)info.PeakPagefileUsage;
    pinfo->page_faults = (size_t)info.PageFaultCount;   /* soft and hard faults (Linux: major only) */
  }
}

/* ---------------------------------------------------------------------------------------
   Output, files, ids
--------------------------------------------------------------------------------------- */
void _mi_prim_out_stderr(const char* msg) {
  HANDLE h = GetStdHandle(STD_ERROR_HANDLE);
  if (h == NULL || h == INVALID_HANDLE_VALUE) return;
  const DWORD saved = GetLastError();
  size_t len = strlen(msg);
  DWORD mode;
  const bool console = (GetConsoleMode(h, &mode) != 0);
  while (len > 0) {
    const DWORD chunk = (len > 0x10000 ? 0x10000 : (DWORD)len);
    DWORD n = 0;
    const BOOL ok = (console ? WriteConsoleA(h, msg, chunk, &n, NULL) : WriteFile(h, msg, chunk, &n, NULL));
    if (!ok || n == 0) break;
    msg += n;
    len -= n;
  }
  SetLastError(saved);
}

/* The live view (src/live.c) maps /dev/shm/mimalloc-live.<pid> for tools/mimalloc-live,
   which reads Linux's /dev/shm: not available on Windows (MIMALLOC_LIVE warns and is off). */
int _mi_prim_shared_map(const char* path, size_t size, void** addr) {
  (void)path; (void)size;
  *addr = NULL;
  return ENOTSUP;
}

void _mi_prim_shared_unmap(const char* path, void* addr, size_t size, bool unlink) {
  (void)path; (void)addr; (void)size; (void)unlink;   /* nothing was ever mapped */
}

long _mi_prim_process_id(void) {
  return (long)GetCurrentProcessId();
}

long _mi_prim_thread_os_id(void) {
  return (long)GetCurrentThreadId();
}

/* No cgroups on Windows: the job object's limits are the counterpart (_mi_prim_job_limits). */
int _mi_prim_read_file(const char* path, char* buf, size_t size, size_t* len) {
  (void)path;
  *len = 0;
  if (size > 0) buf[0] = 0;
  return ENOTSUP;
}

/* "PROCESS,JOB": two decimal byte counts (MIMALLOC_TEST_JOB_LIMIT); false if malformed. */
static bool win_parse_job_limits(const char* s, size_t* process_limit, size_t* job_limit) {
  size_t* out[2] = { process_limit, job_limit };
  for (int i = 0; i < 2; i++) {
    size_t v = 0, digits = 0;
    for (; *s >= '0' && *s <= '9' && digits < 19; s++, digits++) v = v * 10 + (size_t)(*s - '0');
    if (digits == 0 || *s != (i == 0 ? ',' : 0)) return false;
    *out[i] = v;
    s++;
  }
  return true;
}

/* QueryInformationJobObject(NULL, ...) asks about the job the calling process is in (the
   innermost one where jobs nest); it fails where the process is in none. Both limits count
   committed memory (private bytes), as the allocator's own limit does. */
bool _mi_prim_job_limits(size_t* process_limit, size_t* job_limit) {
  *process_limit = 0;
  *job_limit = 0;
  char test[64];
  if (_mi_prim_getenv("MIMALLOC_TEST_JOB_LIMIT", test, sizeof(test)) && test[0] != 0) {
    if (win_parse_job_limits(test, process_limit, job_limit)) return true;
    *process_limit = 0;
    *job_limit = 0;
    return false;
  }
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION info;
  memset(&info, 0, sizeof(info));
  const DWORD saved = GetLastError();
  const BOOL ok = QueryInformationJobObject(NULL, JobObjectExtendedLimitInformation, &info, sizeof(info), NULL);
  SetLastError(saved);
  if (!ok) return false;
  const DWORD flags = info.BasicLimitInformation.LimitFlags;
  if ((flags & JOB_OBJECT_LIMIT_PROCESS_MEMORY) != 0) *process_limit = (size_t)info.ProcessMemoryLimit;
  if ((flags & JOB_OBJECT_LIMIT_JOB_MEMORY) != 0) *job_limit = (size_t)info.JobMemoryLimit;
  return true;
}

int _mi_prim_write_file(const char* path, const char* buf, size_t len) {
  HANDLE h = CreateFileA(path, GENERIC_WRITE, FILE_SHARE_READ, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
  if (h == INVALID_HANDLE_VALUE) return win_last_errno();
  int err = 0;
  while (len > 0) {
    const DWORD chunk = (len > 0x40000000 ? 0x40000000 : (DWORD)len);
    DWORD n = 0;
    if (!WriteFile(h, buf, chunk, &n, NULL) || n == 0) { err = win_last_errno(); if (err == 0) err = EIO; break; }
    buf += n;
    len -= n;
  }
  if (!CloseHandle(h) && err == 0) err = win_last_errno();
  return err;
}

/* ---------------------------------------------------------------------------------------
   Environment (names are case-insensitive on Windows itself)
--------------------------------------------------------------------------------------- */
bool _mi_prim_getenv(const char* name, char* result, size_t result_size) {
  if (name == NULL || result == NULL || result_size == 0) return false;
  const DWORD saved = GetLastError();
  const DWORD size = (result_size > 0x7FFFFFFF ? 0x7FFFFFFF : (DWORD)result_size);
  SetLastError(ERROR_SUCCESS);
  const DWORD n = GetEnvironmentVariableA(name, result, size);
  /* 0: absent, or present and empty; >= size: the value does not fit (then treated as absent) */
  const bool found = (n > 0 ? n < size : GetLastError() != ERROR_ENVVAR_NOT_FOUND);
  if (!found || n == 0) result[0] = 0;
  SetLastError(saved);
  return found;
}

static char win_toupper(char c) { return (c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c); }

/* Each "NAME=value" entry of the process environment as ASCII (other characters read '?',
   entries longer than 511 characters are cut), in a stack buffer. The block comes from
   GetEnvironmentStringsW, a copy on the Windows process heap (never from this allocator). */
static bool win_env_walk(bool (*visit)(const char* entry, void* arg), void* arg) {
  wchar_t* block = GetEnvironmentStringsW();
  if (block == NULL) return false;
  char entry[512];
  for (const wchar_t* s = block; *s != 0; ) {
    size_t k = 0;
    for (; *s != 0; s++) {
      if (k + 1 < sizeof(entry)) entry[k++] = (*s < 128 ? (char)*s : '?');
    }
    entry[k] = 0;
    s++;
    if (entry[0] != '=' && !visit(entry, arg)) break;   /* "=C:=C:\dir" entries: the shell's drive dirs */
  }
  FreeEnvironmentStringsW(block);
  return true;
}

typedef struct win_env_visit_s {
  void (*visit)(const char* entry, void* arg);
  void* arg;
} win_env_visit_t;

static bool win_env_visit_one(const char* entry, void* arg) {
  const win_env_visit_t* v = (const win_env_visit_t*)arg;
  v->visit(entry, v->arg);
  return true;
}

bool _mi_prim_env_visit(void (*visit)(const char* entry, void* arg), void* arg) {
  win_env_visit_t v = { visit, arg };
  return win_env_walk(&win_env_visit_one, &v);
}

typedef struct win_env_prefix_s {
  const char* prefix;
  bool found;
} win_env_prefix_t;

static bool win_env_has_prefix(const char* entry, void* arg) {
  win_env_prefix_t* p = (win_env_prefix_t*)arg;
  size_t j = 0;
  while (p->prefix[j] != 0 && entry[j] != 0 && entry[j] != '=' && win_toupper(entry[j]) == win_toupper(p->prefix[j])) j++;
  if (p->prefix[j] == 0) { p->found = true; return false; }
  return true;
}

bool _mi_prim_env_ready(void) {
  return true;   /* the process's environment block exists before any code of it runs */
}

bool _mi_prim_env_may_have(const char* prefix) {
  if (prefix == NULL) return true;
  win_env_prefix_t p = { prefix, false };
  if (!win_env_walk(&win_env_has_prefix, &p)) return true;   /* cannot tell */
  return p.found;
}

/* Which module's function the program's calls bind to: not determined on Windows (a call
   goes to the module whose import the caller names; no search order as with ELF). */
int _mi_prim_symbol_provider(const char* name, const void* self, void** addr, char* path, size_t path_size) {
  (void)name; (void)self;
  *addr = NULL;
  if (path_size > 0) path[0] = 0;
  return -1;
}

bool _mi_prim_random_buf(void* buf, size_t buf_len) {
  uint8_t* p = (uint8_t*)buf;
  while (buf_len > 0) {
    const ULONG n = (buf_len > 0x10000000 ? 0x10000000 : (ULONG)buf_len);
    if (!RtlGenRandom(p, n)) return false;
    p += n;
    buf_len -= n;
  }
  return true;
}

/* ---------------------------------------------------------------------------------------
   Thread exit, in two hooks.
   1. A fiber-local storage slot whose callback receives the thread's backing heap. Windows
      runs FLS callbacks first when a thread ends, for threads started by CreateThread,
      _beginthreadex or pthread_create alike (not on fiber threads: win_fls_done).
   2. A TLS callback of this module (win_tls_exit below), for what runs after the FLS
      callbacks: the TLS callbacks and DLL_THREAD_DETACH of every module, among them mingw's: C++
      thread_local destructors registered with the CRT's __cxa_thread_atexit (.CRT$XLB), TLS
      key destructors (.CRT$XLD; gcc 12's libstdc++ queues its thread_local destructors there),
      winpthreads' (.CRT$XLF). An allocation
      there finds the thread done and makes a new heap (mi_thread_init), which no FLS callback
      would ever release: its pages would stay owned by a thread id (the TEB address) that a
      later thread may get. Ours sits in .CRT$XLY, after mingw's callbacks of the same module;
      the loader runs a module's TLS callbacks just before its DllMain, DLLs in reverse order of
      initialisation, the exe last. So in an exe (static library) it runs after everything
      else; as libmimalloc.dll, after the DLLs loaded after ours, but before the exe's
      callbacks (its thread_local destructors: seen under Wine) and the DLLs loaded before
      ours, whose late allocations take the "exited" path below.
   After the TLS callback the thread is "exited" (a flag in native TLS): an allocation still
   made on it gets a heap for that call only, abandoned at once (_mi_prim_thread_is_exited,
   _mi_malloc_generic), so nothing is left behind. DLL_PROCESS_DETACH does nothing: the
   process is ending, the statistics were reported (mi_process_done), the OS takes the memory.
--------------------------------------------------------------------------------------- */
/* ntdll's RtlDllShutdownInProgress, resolved at process init (_mi_prim_thread_init_auto_done):
   never later, where GetModuleHandle and GetProcAddress would take the loader lock inside an FLS
   callback, which holds the FLS lock that a starting thread takes under the loader lock (the
   two locks in opposite orders: Wine's ntdll, LdrInitializeThunk and RtlProcessFlsData) */
typedef BOOLEAN (NTAPI *win_shutdown_in_progress_t)(void);
static _Atomic(uintptr_t) win_shutdown_in_progress;   /* 0: not known (never "ending") */

static void win_shutdown_in_progress_resolve(void) {
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  void* const f = (ntdll == NULL ? NULL : (void*)GetProcAddress(ntdll, "RtlDllShutdownInProgress"));
  mi_atomic_store_release(&win_shutdown_in_progress, (uintptr_t)f);
}

bool _mi_prim_process_ending(void) {
  const uintptr_t fn = mi_atomic_load_acquire(&win_shutdown_in_progress);
  return (fn != 0 && ((win_shutdown_in_progress_t)fn)() != 0);
}

static DWORD         win_fls_key = FLS_OUT_OF_INDEXES;
static _Atomic(int)  win_fls_state;   /* 0: none, 1: created */

/* the "exited" flag: native TLS like _mi_thread_default_heap (base.h), valid through all TLS
   callbacks and DLL notifications (gcc's emulated TLS may be freed by then: .CRT$XLD) */
#if MI_TLS_PE
mi_decl_tls_pe int _mi_prim_win_thread_exited = 0;
static inline int* win_thread_exited_ptr(void) { return mi_tls_pe_ptr(int, _mi_prim_win_thread_exited); }
#else
static mi_decl_thread int win_thread_exited = 0;
static inline int* win_thread_exited_ptr(void) { return &win_thread_exited; }
#endif

bool _mi_prim_thread_is_exited(void) {
  return (*win_thread_exited_ptr() != 0);
}

/* FLS is per fiber: DeleteFiber runs the callbacks for the deleted fiber's values, on the
   calling thread, which goes on running; and a thread's values of fibers never deleted get no
   callback at all. The heaps belong to the thread, so on a thread that is a fiber (it called
   ConvertThreadToFiber) the callback does nothing: the TLS callback releases the heaps when the
   thread ends (docs/platforms.md, "Fibers"). */
static void NTAPI win_fls_done(void* value) {
  if (value == NULL || IsThreadAFiber()) return;
  _mi_thread_done((mi_heap_t*)value);
}

static void NTAPI win_tls_exit(PVOID module, DWORD reason, PVOID reserved) {
  (void)module; (void)reserved;
  if (reason != DLL_THREAD_DETACH) return;
  *win_thread_exited_ptr() = 1;   /* from here on: a heap per allocation, abandoned at once */
  if (!_mi_process_is_initialized) return;
  mi_heap_t* const heap = mi_prim_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;   /* done by the FLS callback, nothing since */
  /* made after the FLS callback ran (or the slot could not be made): the slot may hold it
     (mi_thread_init after the FLS callbacks); it must not point to freed metadata */
  if (mi_atomic_load_acquire(&win_fls_state) == 1 && FlsGetValue(win_fls_key) != NULL) {
    FlsSetValue(win_fls_key, NULL);
  }
  _mi_thread_done(heap);   /* sets the default heap to the empty one: never done twice */
}

/* The TLS directory's callback array is the .CRT$XLA..XLZ sections in name order (mingw's
   tlssup.c); `used` keeps the pointer in the object, and the linker keeps .CRT$ sections
   (KEEP in its script) of every object it links: this file always is (its functions are the
   OS layer), in the DLL and in an exe linked with the static library alike. */
__attribute__((used, section(".CRT$XLY"))) const PIMAGE_TLS_CALLBACK _mi_prim_win_tls_exit = &win_tls_exit;

void _mi_prim_thread_init_auto_done(void) {
  if (mi_atomic_load_acquire(&win_fls_state) != 0) return;
  win_shutdown_in_progress_resolve();
  const DWORD key = FlsAlloc(&win_fls_done);
  if (key == FLS_OUT_OF_INDEXES) return;
  win_fls_key = key;
  /* the callbacks must outlive every thread: keep this module loaded for good (as -z nodelete
     does for the ELF shared library) */
  HMODULE self = NULL;
  (void)GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
                           (LPCSTR)(void*)&win_fls_done, &self);
  mi_atomic_store_release(&win_fls_state, 1);
}

bool _mi_prim_is_redirect_dll(void) {
  HMODULE self = NULL;
  if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                          (LPCSTR)(void*)&_mi_prim_is_redirect_dll, &self)) return false;
  return (GetProcAddress(self, "mi_redirect_imports") != NULL);   /* (a program's own exports do not have it) */
}

void _mi_prim_thread_done_auto_done(void) {
  /* the slot is kept: threads may still exit (and free) after the process is done */
}

void _mi_prim_thread_associate_default_heap(mi_heap_t* heap) {
  /* an exited thread's heaps last one call: no slot value (the FLS callbacks have run) */
  if (mi_atomic_load_acquire(&win_fls_state) == 1 && !_mi_prim_thread_is_exited()) {
    FlsSetValue(win_fls_key, heap);
  }
}

bool _mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  (void)prepare; (void)parent; (void)child;
  return true;   /* no fork() on Windows: nothing to register */
}

/* ---------------------------------------------------------------------------------------
   The purger's thread: CreateThread with a 64 KiB stack reservation, and an auto-reset event
   to wait on. (The module is pinned, _mi_prim_thread_init_auto_done: its code stays mapped
   while the thread sleeps in it. A console program's Ctrl-C handler runs on a thread of the
   system's, and there are no signals to block.)
--------------------------------------------------------------------------------------- */
static HANDLE win_wait_event;
static HANDLE win_thread;   /* the thread last started (kept open for _mi_prim_thread_alive) */
static void (*win_thread_fun)(void*);
static void*  win_thread_arg;

static DWORD WINAPI win_thread_main(LPVOID unused) {
  (void)unused;
  win_thread_fun(win_thread_arg);
  return 0;
}

int _mi_prim_thread_start(void (*fun)(void* arg), void* arg, bool init_wait) {
  (void)init_wait;   /* (made once; no fork) */
  const DWORD saved_error = GetLastError();
  const int saved_errno = errno;
  int err = 0;
  if (win_wait_event == NULL) win_wait_event = CreateEventW(NULL, FALSE, FALSE, NULL);
  if (win_wait_event == NULL) err = win_last_errno();
  else {
    win_thread_fun = fun;
    win_thread_arg = arg;
    HANDLE thread = CreateThread(NULL, 64 * 1024, &win_thread_main, NULL, STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (thread == NULL) err = win_last_errno();
    else {   /* detached (never joined); the handle of an earlier one, which has ended, goes */
      if (win_thread != NULL) CloseHandle(win_thread);
      win_thread = thread;
    }
  }
  SetLastError(saved_error);
  errno = saved_errno;
  return (err == ENOMEM ? EAGAIN : err);
}

/* SetThreadDescription (kernel32, Windows 10 1607+; Wine) takes a wide string: the ASCII name
   is widened on the stack. Looked up on each call (once per thread start): no import of it,
   so that older Windows still loads the library. */
typedef HRESULT (WINAPI *win_set_thread_description_t)(HANDLE, PCWSTR);

void _mi_prim_thread_set_name(const char* name) {
  const DWORD saved_error = GetLastError();
  const int saved_errno = errno;
  HMODULE kernel32 = GetModuleHandleW(L"kernel32.dll");
  win_set_thread_description_t set_description = (kernel32 == NULL ? NULL
    : (win_set_thread_description_t)(void*)GetProcAddress(kernel32, "SetThreadDescription"));
  if (set_description != NULL) {
    WCHAR wname[32];
    size_t i = 0;
    for (; i + 1 < sizeof(wname) / sizeof(wname[0]) && name[i] != 0; i++) wname[i] = (WCHAR)(unsigned char)name[i];
    wname[i] = 0;
    (void)set_description(GetCurrentThread(), wname);
  }
  SetLastError(saved_error);
  errno = saved_errno;
}

bool _mi_prim_process_single_threaded(void) { return false; }   /* (the loader starts threads of its own) */

void _mi_prim_thread_wait(mi_msecs_t timeout_ms) {
  const DWORD ms = (timeout_ms < 0 ? INFINITE : timeout_ms >= 0x7FFFFFFF ? 0x7FFFFFFF : (DWORD)timeout_ms);
  WaitForSingleObject(win_wait_event, ms);
}

bool _mi_prim_thread_alive(void) {
  return (win_thread != NULL && WaitForSingleObject(win_thread, 0) == WAIT_TIMEOUT);
}

void _mi_prim_thread_wake(void) {
  const DWORD saved_error = GetLastError();
  SetEvent(win_wait_event);
  SetLastError(saved_error);
}
