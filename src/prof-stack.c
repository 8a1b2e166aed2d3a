/* SPDX-License-Identifier: MIT */
/* The profiler's stack capture (prof-samples.c takes a sample's stack here).

   libgcc's _Unwind_Backtrace works without frame pointers (from .eh_frame) and, with glibc 2.35
   or later, finds the tables through _dl_find_object: no lock and no allocation. But it reads
   and interprets a frame's unwind program at every step: about 2500 instructions per frame, 15000
   per sample of a shallow stack (callgrind, glibc-thread), which made the profiler at the default
   rate twice as slow on an allocation-bound benchmark.

   On x86-64 each step is therefore taken from a cache keyed by the return address: the rule that
   the frame's unwind program gives at that address (CFA = rsp or rbp + offset; where rbp was
   saved; the return address at CFA - 8), worked out once from the frame's FDE (found through
   glibc's _dl_find_object and the object's .eh_frame_hdr table) and then applied in a few
   instructions. A program this code does not follow (a CFA given by an expression, registers
   saved in other registers, signal frames) marks the address "not cached", and a stack through
   such a frame is taken with _Unwind_Backtrace instead. Other targets always use
   _Unwind_Backtrace.

   libgcc_s is not a dependency of the library (every program would load it at start-up, profiler
   or not): its functions are weak references, bound when the program has it loaded from the
   start (C++ programs), and otherwise looked up with dlopen when the profiler is switched on at a
   point where the loader may run (mi_profile_start; the constructor below for MIMALLOC_PROFILE).
   Until then a stack through a frame the cache does not follow ends at that frame.

   The cache is shared and changed under the profiler's store lock, which the caller holds. */
#include "internal/observers.h"
#include "internal/prof-hook.h"
#include "prim/prim.h"

/* MI_PROF_UNWIND_CACHE (prof-hook.h; 0: always libgcc's walk, for comparing the two) */

#if MI_PROF_AVAILABLE
#include <unwind.h>
#include <link.h>
#include <dlfcn.h>

/* ------------------------------------------------------------------------------------------
   libgcc's unwinder, found when the profiler is switched on
------------------------------------------------------------------------------------------ */
/* what libgcc returns with _Unwind_Find_FDE (unwind-dw2-fde.h): func is the FDE's pc_begin */
struct mi_dwarf_eh_bases { void* tbase; void* dbase; void* func; };
extern const void* _Unwind_Find_FDE(void* pc, struct mi_dwarf_eh_bases* bases);
/* weak: no NEEDED entry for libgcc_s (the library links with --as-needed, which counts only
   strong references); non-NULL when the program has libgcc_s (or libgcc_eh) from the start */
#pragma weak _Unwind_Backtrace
#pragma weak _Unwind_GetIP
#pragma weak _Unwind_Find_FDE

typedef _Unwind_Reason_Code mi_unwind_backtrace_fun(_Unwind_Trace_Fn trace, void* arg);
typedef _Unwind_Ptr         mi_unwind_get_ip_fun(struct _Unwind_Context* ctx);
typedef const void*         mi_unwind_find_fde_fun(void* pc, struct mi_dwarf_eh_bases* bases);
static mi_unwind_get_ip_fun*   mi_libgcc_get_ip;      /* set before mi_libgcc_backtrace */
static mi_unwind_find_fde_fun* mi_libgcc_find_fde;    /* set before mi_libgcc_backtrace */
static _Atomic(uintptr_t)      mi_libgcc_backtrace;   /* mi_unwind_backtrace_fun*, or 0: not found (yet) */

static mi_unwind_backtrace_fun* mi_prof_libgcc(void) {
  return (mi_unwind_backtrace_fun*)mi_atomic_load_acquire(&mi_libgcc_backtrace);
}

/* glibc 2.35's _dl_find_object (<dlfcn.h>): which object holds an address, and its unwind
   tables; no lock, no allocation. Looked up rather than referenced: a reference would make the
   library need glibc 2.35. */
#if defined(DLFO_STRUCT_HAS_EH_DBASE)
typedef int mi_dl_find_object_fun(void* pc, struct dl_find_object* result);
static _Atomic(uintptr_t) mi_dl_find_object;   /* mi_dl_find_object_fun*, or 0 */
static void mi_prof_find_object_load(void) {
  if (mi_atomic_load_relaxed(&mi_dl_find_object) != 0) return;
  mi_atomic_store_release(&mi_dl_find_object, (uintptr_t)_mi_prim_loaded_function("_dl_find_object"));
}
#else
static void mi_prof_find_object_load(void) { }
#endif

/* weak as well: a program linked with -static (libc.a) gets no dlopen through us (glibc warns
   that it needs the shared libraries at run time); libc.so has them */
#pragma weak dlopen
#pragma weak dlsym
static void* mi_prof_dlsym(void* handle, const char* name) {
  return (handle == NULL ? NULL : dlsym(handle, name));
}

/* Find libgcc's unwinder: bound already (weak references), or, with may_load, dlopen'ed. dlopen
   allocates (through us) and takes the loader's lock: may_load only where a program could call
   dlopen itself, never from inside an allocation (whose caller may be the loader). The library
   stays loaded (never dlclose'd), so the pointers stay valid in forked children too. */
void _mi_prof_stack_unwinder_load(bool may_load) {
  mi_prof_find_object_load();
  if (mi_prof_libgcc() != NULL) return;
  mi_unwind_backtrace_fun* backtrace = NULL;
  if (&_Unwind_Backtrace != NULL && &_Unwind_GetIP != NULL && &_Unwind_Find_FDE != NULL) {
    mi_libgcc_get_ip = &_Unwind_GetIP;
    mi_libgcc_find_fde = &_Unwind_Find_FDE;
    backtrace = &_Unwind_Backtrace;
  }
  else if (may_load) {
    /* (two threads starting the profiler at once both get the same handle and functions) */
    void* const handle = (&dlopen != NULL && &dlsym != NULL ? dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL) : NULL);
    void* const get_ip = mi_prof_dlsym(handle, "_Unwind_GetIP");
    void* const find_fde = mi_prof_dlsym(handle, "_Unwind_Find_FDE");
    void* const bt = mi_prof_dlsym(handle, "_Unwind_Backtrace");
    if (get_ip == NULL || find_fde == NULL || bt == NULL) {
      _mi_verbose_message("profiler: libgcc_s.so.1 not loaded: stacks end at frames the profiler's own walk does not follow\n");
      return;
    }
    mi_libgcc_get_ip = (mi_unwind_get_ip_fun*)get_ip;
    mi_libgcc_find_fde = (mi_unwind_find_fde_fun*)find_fde;
    backtrace = (mi_unwind_backtrace_fun*)bt;
    _mi_verbose_message("profiler: loaded libgcc_s.so.1 for its unwinder\n");
  }
  if (backtrace != NULL) mi_atomic_store_release(&mi_libgcc_backtrace, (uintptr_t)backtrace);
}

/* MIMALLOC_PROFILE switches the profiler on at process init, which may run inside the first
   allocation (whose caller may be the loader): the unwinder is loaded here instead, where a
   constructor may dlopen. (Init is idempotent: whichever of the library's constructors runs
   first does it.) */
__attribute__((constructor)) static void mi_prof_unwinder_at_load(void) {
  mi_process_init();
  if (mi_prof_rate() != 0) _mi_prof_stack_unwinder_load(true);
}

/* ------------------------------------------------------------------------------------------
   libgcc's walk
------------------------------------------------------------------------------------------ */
typedef struct mi_prof_unwind_s {
  uintptr_t*  pcs;
  size_t      n;
  size_t      max;
  uintptr_t   skip_lo, skip_hi;   /* our code: frames skipped at the top */
  uintptr_t   last_skipped;
} mi_prof_unwind_t;

static _Unwind_Reason_Code mi_prof_unwind_step(struct _Unwind_Context* ctx, void* arg) {
  mi_prof_unwind_t* const u = (mi_prof_unwind_t*)arg;
  const uintptr_t ip = (uintptr_t)mi_libgcc_get_ip(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (u->n == 0 && ip >= u->skip_lo && ip < u->skip_hi) { u->last_skipped = ip; return _URC_NO_REASON; }
  u->pcs[u->n++] = ip;
  return (u->n >= u->max ? _URC_END_OF_STACK : _URC_NO_REASON);
}

/* SIZE_MAX: libgcc is not loaded */
static size_t mi_prof_backtrace_libgcc(uintptr_t* pcs, size_t max, uintptr_t skip_lo, uintptr_t skip_hi) {
  mi_unwind_backtrace_fun* const backtrace = mi_prof_libgcc();
  if (backtrace == NULL) return SIZE_MAX;
  mi_prof_unwind_t u = { pcs, 0, max, skip_lo, skip_hi, 0 };
  backtrace(&mi_prof_unwind_step, &u);
  if (u.n == 0 && u.last_skipped != 0) { pcs[0] = u.last_skipped; u.n = 1; }   /* only our frames (a call of ours) */
  return u.n;
}

#if MI_PROF_UNWIND_CACHE
/* ------------------------------------------------------------------------------------------
   The cached walk (x86-64)
------------------------------------------------------------------------------------------ */
#define MI_DW_RBP   6
#define MI_DW_RSP   7
#define MI_DW_RA    16

typedef enum mi_step_kind_e { MI_STEP_NONE = 0, MI_STEP_OK, MI_STEP_END, MI_STEP_SLOW } mi_step_kind_t;

typedef struct mi_prof_step_s {
  uintptr_t  ip;         /* the key: a return address (or the first frame's own address) */
  int32_t    cfa_off;    /* CFA = (cfa_rbp ? rbp : rsp) + cfa_off */
  int16_t    rbp_off;    /* rbp was saved at CFA + rbp_off; 0: rbp unchanged */
  uint8_t    cfa_rbp;
  uint8_t    kind;       /* mi_step_kind_t, | MI_STEP_RA when ip is a return address */
} mi_prof_step_t;
#define MI_STEP_RA  0x10

#define MI_PROF_STEPS  4096   /* direct mapped */
static mi_decl_cold_bss mi_prof_step_t mi_prof_steps[MI_PROF_STEPS];   /* (the profiler's only) */

/* A rule is the code's at its address: after a library is unloaded, another may be mapped
   there. glibc counts the objects loaded and unloaded (dl_iterate_phdr's dlpi_adds and
   dlpi_subs); the cache is emptied when they change. The counts are read before the store lock
   is taken (the loader's lock is held across dlopen, which may allocate and sample: taking it
   under the store lock could deadlock). */
#if defined(__GLIBC__)
static unsigned long long mi_prof_steps_adds, mi_prof_steps_subs;   /* the counts the cache is of */
static bool mi_prof_steps_used;   /* a rule was computed since the cache was last emptied */
static int mi_prof_loader_counts(struct dl_phdr_info* info, size_t size, void* arg) {
  unsigned long long* const counts = (unsigned long long*)arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    counts[0] = info->dlpi_adds;
    counts[1] = info->dlpi_subs;
  }
  return 1;   /* the first object is enough: the counts are the process's */
}
/* fork: dl_iterate_phdr holds the loader's lock while it runs, and glibc's fork does not take
   that lock, so a child forked while another thread was in here inherited it held and waited
   for it forever at its first sample (test-sheap's fork test: 1 run in 12 at a sample rate of
   64 bytes, and the parent's other thread went on allocating while it waited for the child).
   The fork waits until no thread is inside and keeps new ones out until it is done (the
   stack walks, which may also enter the loader, run under the store lock, which the fork
   takes too). */
static _Atomic(int) mi_prof_loader_busy;     /* threads inside dl_iterate_phdr here */
static _Atomic(int) mi_prof_loader_paused;   /* 1 from a fork's prepare to its parent or child handler */

void _mi_prof_stack_loader_generation(unsigned long long counts[2]) {
  counts[0] = counts[1] = 0;
  for (;;) {   /* (sequentially consistent, as the fork's side: one of the two sees the other) */
    atomic_fetch_add(&mi_prof_loader_busy, 1);
    if (atomic_load(&mi_prof_loader_paused) == 0) break;
    atomic_fetch_sub(&mi_prof_loader_busy, 1);
    while (atomic_load(&mi_prof_loader_paused) != 0) mi_atomic_yield();
  }
  dl_iterate_phdr(&mi_prof_loader_counts, counts);
  atomic_fetch_sub(&mi_prof_loader_busy, 1);
}

void _mi_prof_stack_loader_fork_prepare(void) {
  atomic_store(&mi_prof_loader_paused, 1);
  while (atomic_load(&mi_prof_loader_busy) != 0) mi_atomic_yield();
}
void _mi_prof_stack_loader_fork_parent(void) { atomic_store(&mi_prof_loader_paused, 0); }
void _mi_prof_stack_loader_fork_child(void)  { atomic_store(&mi_prof_loader_busy, 0); atomic_store(&mi_prof_loader_paused, 0); }
static void mi_prof_steps_check(const unsigned long long counts[2]) {
  if (counts[0] != mi_prof_steps_adds || counts[1] != mi_prof_steps_subs) {
    if (mi_prof_steps_used) memset(mi_prof_steps, 0, sizeof(mi_prof_steps));   /* (64 KiB: not at the first sample) */
    mi_prof_steps_used = false;
    mi_prof_steps_adds = counts[0];
    mi_prof_steps_subs = counts[1];
  }
}
#else
void _mi_prof_stack_loader_generation(unsigned long long counts[2]) { counts[0] = counts[1] = 0; }
void _mi_prof_stack_loader_fork_prepare(void) { }
void _mi_prof_stack_loader_fork_parent(void) { }
void _mi_prof_stack_loader_fork_child(void) { }
static void mi_prof_steps_check(const unsigned long long counts[2]) { (void)counts; }
#endif

static uint64_t mi_read_uleb(const uint8_t** p, const uint8_t* end) {
  uint64_t x = 0; unsigned shift = 0;
  while (*p < end) {
    const uint8_t b = *(*p)++;
    if (shift < 64) x |= (uint64_t)(b & 0x7F) << shift;
    shift += 7;
    if ((b & 0x80) == 0) break;
  }
  return x;
}
static int64_t mi_read_sleb(const uint8_t** p, const uint8_t* end) {
  int64_t x = 0; unsigned shift = 0; uint8_t b = 0;
  while (*p < end) {
    b = *(*p)++;
    if (shift < 64) x |= (int64_t)((uint64_t)(b & 0x7F) << shift);
    shift += 7;
    if ((b & 0x80) == 0) break;
  }
  if (shift < 64 && (b & 0x40) != 0) x |= -((int64_t)1 << shift);
  return x;
}
static uint32_t mi_read_u32(const uint8_t* p) { uint32_t x; memcpy(&x, p, 4); return x; }

/* size of a pointer in the encoding (DW_EH_PE_*); 0 if not handled */
static size_t mi_eh_size(uint8_t enc) {
  if (enc == 0xFF) return 0;   /* omit */
  switch (enc & 0x0F) {
    case 0x00: return sizeof(void*);   /* absptr */
    case 0x02: case 0x0A: return 2;
    case 0x03: case 0x0B: return 4;
    case 0x04: case 0x0C: return 8;
    default:   return 0;   /* (uleb128/sleb128: not used for pointers by gcc) */
  }
}

typedef struct mi_cfa_state_s { int cfa_reg; int64_t cfa_off; int64_t rbp_off; int ra_off; bool rbp_saved; bool ra_undefined; } mi_cfa_state_t;

/* Run a CFA program up to (and including the rows at or before) `target`. false: something
   this interpreter does not follow. */
static bool mi_cfa_run(const uint8_t* p, const uint8_t* end, uintptr_t* loc, uintptr_t target,
                       uint64_t caf, int64_t daf, mi_cfa_state_t* st, const mi_cfa_state_t* initial,
                       mi_cfa_state_t* stack, int* depth) {
  while (p < end) {
    const uint8_t op = *p++;
    const uint8_t hi = op & 0xC0, lo = op & 0x3F;
    uint64_t reg; int64_t off;
    if (hi == 0x40) { *loc += lo * caf; if (*loc > target) return true; continue; }   /* advance_loc */
    if (hi == 0x80) {   /* offset */
      off = (int64_t)mi_read_uleb(&p, end) * daf;
      if (lo == MI_DW_RBP) { st->rbp_saved = true; st->rbp_off = off; }
      else if (lo == MI_DW_RA) st->ra_off = (int)off;
      continue;
    }
    if (hi == 0xC0) {   /* restore */
      if (lo == MI_DW_RBP) { st->rbp_saved = initial->rbp_saved; st->rbp_off = initial->rbp_off; }
      else if (lo == MI_DW_RA) st->ra_off = initial->ra_off;
      continue;
    }
    switch (op) {
      case 0x00: break;   /* nop */
      case 0x02: if (p + 1 > end) return false; *loc += p[0] * caf; p += 1; if (*loc > target) return true; break;
      case 0x03: { if (p + 2 > end) return false; uint16_t d; memcpy(&d, p, 2); p += 2; *loc += d * caf; if (*loc > target) return true; break; }
      case 0x04: { if (p + 4 > end) return false; *loc += mi_read_u32(p) * caf; p += 4; if (*loc > target) return true; break; }
      case 0x05: case 0x11:   /* offset_extended(_sf) */
        reg = mi_read_uleb(&p, end);
        off = (op == 0x05 ? (int64_t)mi_read_uleb(&p, end) : mi_read_sleb(&p, end)) * daf;
        if (reg == MI_DW_RBP) { st->rbp_saved = true; st->rbp_off = off; }
        else if (reg == MI_DW_RA) st->ra_off = (int)off;
        break;
      case 0x06:   /* restore_extended */
        reg = mi_read_uleb(&p, end);
        if (reg == MI_DW_RBP) { st->rbp_saved = initial->rbp_saved; st->rbp_off = initial->rbp_off; }
        else if (reg == MI_DW_RA) st->ra_off = initial->ra_off;
        break;
      case 0x07:   /* undefined */
        reg = mi_read_uleb(&p, end);
        if (reg == MI_DW_RA) st->ra_undefined = true;
        else if (reg == MI_DW_RBP) return false;
        break;
      case 0x08:   /* same_value */
        reg = mi_read_uleb(&p, end);
        if (reg == MI_DW_RBP) st->rbp_saved = false;
        else if (reg == MI_DW_RA) return false;
        break;
      case 0x09:   /* register: reg in another register */
        reg = mi_read_uleb(&p, end); (void)mi_read_uleb(&p, end);
        if (reg == MI_DW_RBP || reg == MI_DW_RA) return false;
        break;
      case 0x0A: if (*depth >= 8) return false; stack[(*depth)++] = *st; break;   /* remember_state */
      case 0x0B: if (*depth <= 0) return false; *st = stack[--(*depth)]; break;   /* restore_state */
      case 0x0C: st->cfa_reg = (int)mi_read_uleb(&p, end); st->cfa_off = (int64_t)mi_read_uleb(&p, end); break;
      case 0x0D: st->cfa_reg = (int)mi_read_uleb(&p, end); break;
      case 0x0E: st->cfa_off = (int64_t)mi_read_uleb(&p, end); break;
      case 0x12: st->cfa_reg = (int)mi_read_uleb(&p, end); st->cfa_off = mi_read_sleb(&p, end) * daf; break;
      case 0x13: st->cfa_off = mi_read_sleb(&p, end) * daf; break;
      case 0x10: case 0x16: {   /* (val_)expression reg: skip unless it is one we need */
        reg = mi_read_uleb(&p, end);
        const uint64_t len = mi_read_uleb(&p, end);
        if (reg == MI_DW_RBP || reg == MI_DW_RA || len > (uint64_t)(end - p)) return false;
        p += len;
        break;
      }
      case 0x14: case 0x15:   /* val_offset(_sf) */
        reg = mi_read_uleb(&p, end);
        if (op == 0x14) (void)mi_read_uleb(&p, end); else (void)mi_read_sleb(&p, end);
        if (reg == MI_DW_RBP || reg == MI_DW_RA) return false;
        break;
      case 0x2E: (void)mi_read_uleb(&p, end); break;   /* GNU_args_size */
      default: return false;   /* set_loc, def_cfa_expression, vendor ops */
    }
  }
  return true;
}

static uint64_t mi_read_unsigned(const uint8_t* p, size_t size) {
  if (size == 8) { uint64_t x; memcpy(&x, p, 8); return x; }
  if (size == 2) { uint16_t x; memcpy(&x, p, 2); return x; }
  return mi_read_u32(p);
}

/* The FDE that covers pc, from the binary search table in the object's .eh_frame_hdr (what
   libgcc does too): _dl_find_object names the object and its PT_GNU_EH_FRAME segment without a
   lock or an allocation. Addresses outside every object (JIT code with tables registered through
   libgcc's __register_frame) and objects without the table go to libgcc's _Unwind_Find_FDE, if
   it is loaded. *func: the FDE's pc_begin. */
typedef enum mi_fde_found_e { MI_FDE_FOUND, MI_FDE_NONE, MI_FDE_UNKNOWN } mi_fde_found_t;
static mi_fde_found_t mi_prof_find_fde(uintptr_t pc, const uint8_t** fde, uintptr_t* func) {
  bool in_object = false;
#if defined(DLFO_STRUCT_HAS_EH_DBASE)
  mi_dl_find_object_fun* const find_object = (mi_dl_find_object_fun*)mi_atomic_load_acquire(&mi_dl_find_object);
  struct dl_find_object obj;
  if (find_object != NULL && find_object((void*)pc, &obj) == 0) {
    in_object = true;
    const uint8_t* const hdr = (const uint8_t*)obj.dlfo_eh_frame;
    if (hdr == NULL) return MI_FDE_NONE;   /* no unwind tables */
    const size_t ptr_size = mi_eh_size(hdr[1]), count_size = mi_eh_size(hdr[2]);
    if (hdr[0] == 1 && hdr[3] == 0x3B && ptr_size != 0 && count_size != 0) {   /* (version 1; table: datarel sdata4) */
      const uint8_t* const count_at = hdr + 4 + ptr_size;
      const uint8_t* const table = count_at + count_size;   /* {pc_begin, fde} pairs, relative to hdr, sorted */
      const uint64_t count = mi_read_unsigned(count_at, count_size);
      const int64_t rel = (int64_t)(pc - (uintptr_t)hdr);
      uint64_t lo = 0, hi = count;   /* the first entry whose pc_begin is above pc */
      while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if ((int32_t)mi_read_u32(table + 8 * mid) <= rel) lo = mid + 1; else hi = mid;
      }
      if (lo == 0) return MI_FDE_NONE;
      *func = (uintptr_t)hdr + (uintptr_t)(intptr_t)(int32_t)mi_read_u32(table + 8 * (lo - 1));
      *fde = hdr + (intptr_t)(int32_t)mi_read_u32(table + 8 * (lo - 1) + 4);
      return MI_FDE_FOUND;
    }
  }
#endif
  if (mi_prof_libgcc() != NULL) {
    struct mi_dwarf_eh_bases bases = { NULL, NULL, NULL };
    *fde = (const uint8_t*)mi_libgcc_find_fde((void*)pc, &bases);
    *func = (uintptr_t)bases.func;
    return (*fde == NULL ? MI_FDE_NONE : MI_FDE_FOUND);
  }
  return (in_object ? MI_FDE_UNKNOWN : MI_FDE_NONE);   /* (outside every object: as libgcc, if its registry is empty) */
}

/* The step rule at `pc` (pc = return address - 1, or the first frame's own address). */
static void mi_prof_step_compute(uintptr_t pc, mi_prof_step_t* step) {
  step->kind = MI_STEP_SLOW;
  const uint8_t* fde = NULL;
  uintptr_t func = 0;
  const mi_fde_found_t found = mi_prof_find_fde(pc, &fde, &func);
  if (found == MI_FDE_UNKNOWN) return;
  if (found == MI_FDE_NONE) { step->kind = MI_STEP_END; return; }   /* no unwind information: the stack ends here */
  const uint32_t fde_len = mi_read_u32(fde);
  if (fde_len == 0 || fde_len == 0xFFFFFFFFu) return;
  const uint8_t* const fde_end = fde + 4 + fde_len;
  const uint8_t* const cie = fde + 4 - mi_read_u32(fde + 4);
  const uint32_t cie_len = mi_read_u32(cie);
  if (cie_len == 0 || cie_len == 0xFFFFFFFFu || mi_read_u32(cie + 4) != 0) return;
  const uint8_t* const cie_end = cie + 4 + cie_len;
  const uint8_t* p = cie + 8;
  const uint8_t version = *p++;
  const char* const aug = (const char*)p;
  while (p < cie_end && *p != 0) p++;
  p++;
  if (aug[0] != 0 && aug[0] != 'z') return;
  const uint64_t caf = mi_read_uleb(&p, cie_end);
  const int64_t daf = mi_read_sleb(&p, cie_end);
  const uint64_t ra_reg = (version == 1 ? *p++ : mi_read_uleb(&p, cie_end));
  if (ra_reg != MI_DW_RA) return;
  uint8_t fde_enc = 0x00;
  bool has_aug = false;
  if (aug[0] == 'z') {
    has_aug = true;
    const uint64_t aug_len = mi_read_uleb(&p, cie_end);
    const uint8_t* const aug_end = p + aug_len;
    for (const char* a = aug + 1; *a != 0; a++) {
      if (*a == 'R') fde_enc = *p++;
      else if (*a == 'L') p++;
      else if (*a == 'P') { const uint8_t enc = *p++; const size_t sz = mi_eh_size(enc); if (sz == 0) return; p += sz; }
      else if (*a == 'S') return;   /* a signal frame: libgcc's walk */
      else break;   /* unknown: the augmentation length lets us skip the rest */
    }
    p = aug_end;
  }
  const uint8_t* const cie_insns = p;
  /* the FDE: pc_begin (func gives its value), pc_range, augmentation data, program */
  const size_t ptr_size = mi_eh_size(fde_enc);
  if (ptr_size == 0) return;
  if (pc - func >= mi_read_unsigned(fde + 8 + ptr_size, ptr_size)) { step->kind = MI_STEP_END; return; }   /* (between functions) */
  const uint8_t* q = fde + 8 + 2 * ptr_size;
  if (has_aug) { const uint64_t len = mi_read_uleb(&q, fde_end); q += len; }
  if (q > fde_end) return;
  mi_cfa_state_t st = { MI_DW_RSP, 8, 0, -8, false, false };
  mi_cfa_state_t stack[8];
  int depth = 0;
  uintptr_t loc = func;
  if (!mi_cfa_run(cie_insns, cie_end, &loc, UINTPTR_MAX, caf, daf, &st, &st, stack, &depth)) return;
  const mi_cfa_state_t initial = st;
  loc = func;
  if (!mi_cfa_run(q, fde_end, &loc, pc, caf, daf, &st, &initial, stack, &depth)) return;
  if (st.ra_undefined) { step->kind = MI_STEP_END; return; }   /* the outermost frame (_start, clone) */
  if ((st.cfa_reg != MI_DW_RSP && st.cfa_reg != MI_DW_RBP) || st.ra_off != -8 ||
      st.cfa_off < 0 || st.cfa_off > INT32_MAX || (st.rbp_saved && (st.rbp_off < INT16_MIN || st.rbp_off >= 0))) return;
  step->cfa_off = (int32_t)st.cfa_off;
  step->cfa_rbp = (st.cfa_reg == MI_DW_RBP);
  step->rbp_off = (st.rbp_saved ? (int16_t)st.rbp_off : 0);
  step->kind = MI_STEP_OK;
}

/* the cached rule for ip (a return address, or the first frame's own address) */
static const mi_prof_step_t* mi_prof_step_of(uintptr_t ip, bool is_return_address) {
  const uint8_t ra = (is_return_address ? MI_STEP_RA : 0);
  mi_prof_step_t* const step = &mi_prof_steps[((ip >> 1) ^ (ip >> 13)) % MI_PROF_STEPS];
  if (step->kind != MI_STEP_NONE && step->ip == ip && (step->kind & MI_STEP_RA) == ra) return step;
  step->ip = ip;
#if defined(__GLIBC__)
  mi_prof_steps_used = true;
#endif
  mi_prof_step_compute(is_return_address ? ip - 1 : ip, step);   /* (a call's return address may start the next function's rows) */
  step->kind |= ra;
  return step;
}

/* false: a frame it does not follow (the caller then takes libgcc's walk); *count is then the
   frames up to that one */
static mi_decl_noinline bool mi_prof_backtrace_cached(uintptr_t* pcs, size_t max, size_t* count, uintptr_t skip_lo, uintptr_t skip_hi, const uintptr_t* start) {
  uintptr_t ip, sp, bp;
  bool is_ra = false;
  if (start != NULL) { ip = start[0]; sp = start[1]; bp = start[2]; is_ra = true; }
  else __asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
  size_t n = 0;
  uintptr_t last_skipped = 0;
  for (size_t frames = 0; frames < max + 64; frames++) {
    const mi_prof_step_t* const step = mi_prof_step_of(ip, is_ra);
    const uint8_t kind = (step->kind & ~MI_STEP_RA);
    if (kind == MI_STEP_SLOW) { *count = (n == 0 && last_skipped != 0 ? (pcs[0] = last_skipped, 1) : n); return false; }
    if (is_ra) {   /* ip is a frame of the stack */
      if (n == 0 && ip >= skip_lo && ip < skip_hi) last_skipped = ip;
      else { pcs[n++] = ip; if (n >= max) break; }
    }
    if (kind == MI_STEP_END) break;
    const uintptr_t cfa = (step->cfa_rbp ? bp : sp) + (uintptr_t)(intptr_t)step->cfa_off;
    if (cfa <= sp || cfa - sp > MI_MiB || (cfa & 7) != 0) break;   /* not a frame just above this one: stop */
    const uintptr_t ra = *(const uintptr_t*)(cfa - 8);
    if (step->rbp_off != 0) bp = *(const uintptr_t*)(cfa + (intptr_t)step->rbp_off);
    sp = cfa;
    if (ra == 0) break;
    ip = ra;
    is_ra = true;
  }
  if (n == 0 && last_skipped != 0) { pcs[0] = last_skipped; n = 1; }
  *count = n;
  return true;
}
#endif

/* The return addresses of the calling thread's stack, innermost first, without the frames in
   [skip_lo, skip_hi) at its top (the allocator's); at most max. Under the store lock. */
size_t _mi_prof_stack_backtrace(uintptr_t* pcs, size_t max, uintptr_t skip_lo, uintptr_t skip_hi, const unsigned long long loader[2],
                          const uintptr_t* start) {
  size_t n = 0;
#if MI_PROF_UNWIND_CACHE
  mi_prof_steps_check(loader);
  if (mi_prof_backtrace_cached(pcs, max, &n, skip_lo, skip_hi, start)) return n;
#endif
  (void)loader; (void)start;   /* (libgcc's walk starts here and skips our frames by address) */
  const size_t m = mi_prof_backtrace_libgcc(pcs, max, skip_lo, skip_hi);
  return (m == SIZE_MAX ? n : m);   /* (libgcc not loaded (yet): the stack up to the frame not followed) */
}
#if !MI_PROF_UNWIND_CACHE
void _mi_prof_stack_loader_generation(unsigned long long counts[2]) { counts[0] = counts[1] = 0; }
void _mi_prof_stack_loader_fork_prepare(void) { }
void _mi_prof_stack_loader_fork_parent(void) { }
void _mi_prof_stack_loader_fork_child(void) { }
#endif
#endif
