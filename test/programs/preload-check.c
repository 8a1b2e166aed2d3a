/* SPDX-License-Identifier: MIT */
/* Preloaded after libmimalloc.so by the program tests (run-program.sh): at the exit of every
   process that has MI_PRELOAD_CHECK_OUT set, append one line to that file telling whether the
   process really ran on our allocator:

     pid=<pid> comm=<name> tid_is_pid=<0|1> malloc=ok free=ok calloc=ok realloc=ok new=ok
     delete=ok heap_malloc=ok heap_libc_strdup=ok live=<n> result=ok

   - <symbol>=ok: dlsym(RTLD_DEFAULT, symbol) is the same address as our mi_ function and
     dladdr puts it in the object that defines mi_version (libmimalloc); ok/plt: dlsym gives
     the executable's canonical PLT entry and the definition it is bound to is ours; exe: the
     executable defines the symbol itself, accepted for operator new/delete only (cc1plus links
     libstdc++ statically; its operators call malloc/free, which are ours); otherwise the
     basename of the object that won (plt:<object> through a canonical PLT entry), or
     "missing" (see check_symbol);
   - heap_malloc / heap_libc_strdup: a fresh malloc, and a string duplicated by glibc's own
     __strdup (libc calling malloc internally; our library also defines strdup, so the plain
     name would prove nothing), are in our heap (mi_is_in_heap_region);
   - live: blocks alive in the default heap of the exiting thread (normally the main thread,
     tid_is_pid=1) after the probes above are freed: > 0 means the program's own allocations
     were served by us;
   - result=ok when every check above is ok (live is judged by the driver, per program).

   Rules: never write to stdout/stderr (the tests compare them), no stdio, and no allocation
   before the environment variable has said this process is to be checked. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mimalloc.h>

typedef struct buf_s {
  char   text[512];
  size_t len;
} buf_t;

static void put(buf_t* b, const char* s) {
  while (*s != 0 && b->len < sizeof(b->text) - 1) b->text[b->len++] = *s++;
}

static void put_num(buf_t* b, uint64_t n) {
  char digits[24];
  size_t i = 0;
  do { digits[i++] = (char)('0' + n % 10); n /= 10; } while (n != 0);
  while (i > 0 && b->len < sizeof(b->text) - 1) b->text[b->len++] = digits[--i];
}

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return (slash != NULL ? slash + 1 : path);
}

/* ---- which definition the dynamic linker binds ----
   A non-PIE executable that takes a function's address (python3 stores &malloc, cc1plus
   &free) has a "canonical PLT entry": an undefined symbol with a value, which dlsym returns
   and dladdr puts in the executable. The executable's calls and that address go through its
   GOT, bound to the first definition in load order outside it, which we find here in the
   objects' dynamic symbol tables (GNU or SysV hash), as the dynamic linker does. */
typedef struct lookup_s {
  const char* name;
  uintptr_t   addr;   /* first definition outside the executable, or 0 */
  bool        in_exe; /* the executable itself defines it (e.g. a static libstdc++) */
  int         index;  /* objects seen; the first is the executable */
} lookup_t;

static uint32_t gnu_hash(const char* s) {
  uint32_t h = 5381;
  for (; *s != 0; s++) h = h * 33 + (unsigned char)*s;
  return h;
}

static uint32_t sysv_hash(const char* s) {
  uint32_t h = 0;
  for (; *s != 0; s++) {
    h = (h << 4) + (unsigned char)*s;
    uint32_t g = h & 0xf0000000u;
    if (g != 0) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

static bool is_definition(const ElfW(Sym)* sym, const char* strtab, const char* name) {
  /* st_info is one byte in both ELF classes: the ELF64_ macros fit ELF32 too */
  const int bind = ELF64_ST_BIND(sym->st_info), type = ELF64_ST_TYPE(sym->st_info);
  return (sym->st_shndx != SHN_UNDEF && sym->st_value != 0 &&
          (bind == STB_GLOBAL || bind == STB_WEAK) && (type == STT_FUNC || type == STT_GNU_IFUNC) &&
          strcmp(strtab + sym->st_name, name) == 0);
}

static const ElfW(Sym)* find_definition(const ElfW(Dyn)* dyn, uintptr_t base, const char* name) {
  const ElfW(Sym)* symtab = NULL;
  const char* strtab = NULL;
  const uint32_t* gnu = NULL;
  const uint32_t* sysv = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    /* glibc relocates these in place except in read-only dynamic sections (the vDSO) */
    uintptr_t p = dyn->d_un.d_ptr;
    if (p < base) p += base;
    if (dyn->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym)*)p;
    else if (dyn->d_tag == DT_STRTAB) strtab = (const char*)p;
    else if (dyn->d_tag == DT_GNU_HASH) gnu = (const uint32_t*)p;
    else if (dyn->d_tag == DT_HASH) sysv = (const uint32_t*)p;
  }
  if (symtab == NULL || strtab == NULL) return NULL;
  if (gnu != NULL) {
    const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
    const uint32_t* buckets = (const uint32_t*)((const ElfW(Addr)*)(gnu + 4) + bloom_size);
    const uint32_t* chain = buckets + nbuckets;
    const uint32_t h = gnu_hash(name);
    if (nbuckets == 0) return NULL;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return NULL;
    for (;; i++) {
      const uint32_t ch = chain[i - symoffset];
      if ((ch | 1) == (h | 1) && is_definition(&symtab[i], strtab, name)) return &symtab[i];
      if (ch & 1) return NULL;   /* end of this bucket's chain */
    }
  }
  if (sysv != NULL) {
    const uint32_t nbucket = sysv[0];
    const uint32_t* bucket = sysv + 2;
    const uint32_t* chain = bucket + nbucket;
    if (nbucket == 0) return NULL;
    for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i != STN_UNDEF; i = chain[i]) {
      if (is_definition(&symtab[i], strtab, name)) return &symtab[i];
    }
  }
  return NULL;
}

static int lookup_object(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  lookup_t* lk = (lookup_t*)arg;
  const bool exe = (lk->index++ == 0);   /* glibc reports the executable first */
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
    const ElfW(Dyn)* dyn = (const ElfW(Dyn)*)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    const ElfW(Sym)* sym = find_definition(dyn, info->dlpi_addr, lk->name);
    if (sym == NULL) return 0;
    if (exe) { lk->in_exe = true; return 1; }
    lk->addr = info->dlpi_addr + sym->st_value;
    return 1;   /* stop: the first definition wins */
  }
  return 0;
}

/* name=ok (dlsym finds ours), name=ok/plt (the executable's canonical PLT entry, bound to
   ours), name=exe (the executable defines it itself: accepted only for operator new/delete,
   a statically linked libstdc++ whose operators call our malloc/free), else the basename of
   the object that won, or "missing". Returns whether acceptable. */
static bool check_symbol(buf_t* b, const char* label, const char* symbol, void* ours, const void* our_base,
                         const void* exe_base, bool exe_allowed) {
  void* found = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info;
  const void* found_base = (found != NULL && dladdr(found, &info) != 0 ? info.dli_fbase : NULL);
  put(b, " "); put(b, label); put(b, "=");
  if (found != NULL && found == ours && found_base == our_base) { put(b, "ok"); return true; }
  if (found != NULL && found_base != NULL && found_base == exe_base) {
    lookup_t lk = { symbol, 0, false, 0 };
    dl_iterate_phdr(&lookup_object, &lk);
    if (lk.in_exe) { put(b, "exe"); return exe_allowed; }
    if (lk.addr != 0 && dladdr((void*)lk.addr, &info) != 0) {
      if (lk.addr == (uintptr_t)ours && info.dli_fbase == our_base) { put(b, "ok/plt"); return true; }
      put(b, "plt:"); put(b, info.dli_fname != NULL ? base_name(info.dli_fname) : "unknown");
      return false;
    }
  }
  if (found == NULL) put(b, "missing");
  else if (found_base != NULL && dladdr(found, &info) != 0 && info.dli_fname != NULL && info.dli_fname[0] != 0) put(b, base_name(info.dli_fname));
  else if (found_base == exe_base) put(b, "executable");
  else put(b, "unknown");
  return false;
}

static bool count_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap; (void)area; (void)size;
  if (block != NULL) (*(size_t*)arg)++;   /* block == NULL is the call for the area itself */
  return true;
}

/* the comm of the process (its main thread), without stdio */
static void put_comm(buf_t* b) {
  char comm[64];
  ssize_t n = -1;
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) { n = read(fd, comm, sizeof(comm) - 1); close(fd); }
  if (n <= 0) { put(b, "?"); return; }
  comm[n] = 0;
  for (ssize_t i = 0; i < n; i++) {
    if (comm[i] == '\n') { comm[i] = 0; break; }
    if (comm[i] == ' ') comm[i] = '_';  /* keep the line split-able on spaces */
  }
  put(b, comm);
}

__attribute__((destructor))
static void mi_preload_check_at_exit(void) {
  const char* out = getenv("MI_PRELOAD_CHECK_OUT");   /* getenv does not allocate */
  if (out == NULL || out[0] == 0) return;
  const int saved_errno = errno;

  buf_t b;
  b.len = 0;
  put(&b, "pid="); put_num(&b, (uint64_t)getpid());
  put(&b, " comm="); put_comm(&b);
  put(&b, " tid_is_pid="); put(&b, (syscall(SYS_gettid) == getpid() ? "1" : "0"));

  Dl_info ours, exe;
  const void* our_base = (dladdr((void*)&mi_version, &ours) != 0 ? ours.dli_fbase : NULL);
  /* the executable's base as dladdr reports it (for a non-PIE executable that is its first
     mapped address, not the link map's l_addr of 0) */
  void* main_handle = dlopen(NULL, RTLD_NOW | RTLD_NOLOAD);
  struct link_map* exe_map = NULL;
  const void* exe_base = NULL;
  if (main_handle != NULL && dlinfo(main_handle, RTLD_DI_LINKMAP, &exe_map) == 0 && exe_map != NULL &&
      exe_map->l_ld != NULL && dladdr(exe_map->l_ld, &exe) != 0) {
    exe_base = exe.dli_fbase;
  }
  if (main_handle != NULL) dlclose(main_handle);
  bool ok = (our_base != NULL);
  ok &= check_symbol(&b, "malloc",  "malloc",  (void*)&mi_malloc,  our_base, exe_base, false);
  ok &= check_symbol(&b, "free",    "free",    (void*)&mi_free,    our_base, exe_base, false);
  ok &= check_symbol(&b, "calloc",  "calloc",  (void*)&mi_calloc,  our_base, exe_base, false);
  ok &= check_symbol(&b, "realloc", "realloc", (void*)&mi_realloc, our_base, exe_base, false);
  ok &= check_symbol(&b, "new",     "_Znwm",   (void*)&mi_new,     our_base, exe_base, true);
  ok &= check_symbol(&b, "delete",  "_ZdlPv",  (void*)&mi_free,    our_base, exe_base, true);

  /* the probes go through the PLT like the program's own calls */
  void* p = malloc(64);
  bool in_heap = mi_is_in_heap_region(p);
  put(&b, " heap_malloc="); put(&b, in_heap ? "ok" : "no");
  ok &= in_heap;
  free(p);

  char* (*libc_strdup)(const char*) = (char* (*)(const char*))dlsym(RTLD_DEFAULT, "__strdup");
  char* s = (libc_strdup != NULL ? libc_strdup("preload-check") : NULL);
  in_heap = mi_is_in_heap_region(s);
  put(&b, " heap_libc_strdup="); put(&b, libc_strdup == NULL ? "missing" : in_heap ? "ok" : "no");
  ok &= in_heap;
  free(s);

  size_t live = 0;
  mi_heap_visit_blocks(mi_heap_get_default(), true, &count_block, &live);
  put(&b, " live="); put_num(&b, live);
  put(&b, " result="); put(&b, ok ? "ok" : "FAIL");
  put(&b, "\n");

  int fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    /* one write(2) with O_APPEND: lines of concurrent processes do not interleave */
    ssize_t w = write(fd, b.text, b.len);
    (void)w;
    close(fd);
  }
  errno = saved_errno;
}
