/* SPDX-License-Identifier: MIT */
/* The sampling heap profiler's output (src/internal/prof.h states the contract): a profile
   copy written as profile.proto for pprof, as a plain-text top list, or as collapsed stacks
   for flame graphs.

   This runs inside the allocator (at exit, or on the profiler's request), so it never calls
   malloc or stdio: scratch memory comes from the OS (_mi_os_alloc), files are read with
   open/read/mmap, numbers are formatted with _mi_snprintf (options.c; it does not allocate)
   and output goes out through write(2).

   The text and folded writers name functions themselves, without dladdr (it takes the
   loader's lock, and .dynsym lacks static functions): every executable file-backed mapping
   of /proc/self/maps is mapped read-only and its ELF symbol table (.symtab, or .dynsym when
   stripped) indexed by address for the length of one call. C++ names stay mangled.
   Linux (ELF, /proc) only: elsewhere the writers return false. */
#include "internal/observers.h"
#include "internal/prof-hook.h"
#include "internal/prof.h"

#if defined(__linux__)
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if UINTPTR_MAX > 0xFFFFFFFFu
#define MI_PW_ELFCLASS  ELFCLASS64
typedef Elf64_Ehdr  mi_pw_ehdr_t;
typedef Elf64_Phdr  mi_pw_phdr_t;
typedef Elf64_Shdr  mi_pw_shdr_t;
typedef Elf64_Sym   mi_pw_esym_t;
typedef Elf64_Nhdr  mi_pw_nhdr_t;
#else
#define MI_PW_ELFCLASS  ELFCLASS32
typedef Elf32_Ehdr  mi_pw_ehdr_t;
typedef Elf32_Phdr  mi_pw_phdr_t;
typedef Elf32_Shdr  mi_pw_shdr_t;
typedef Elf32_Sym   mi_pw_esym_t;
typedef Elf32_Nhdr  mi_pw_nhdr_t;
#endif

#define MI_PW_TEXT_TOP     30     /* sites per section of the text list */
#define MI_PW_TEXT_FRAMES  16     /* frames shown per site in the text list */
#define MI_PW_FLUSH        (64*MI_KiB)   /* text output is written out in chunks of this size */
#define MI_PW_BUILD_ID_MAX 64     /* bytes of a build id we keep (GNU ld writes 20) */

/* -----------------------------------------------------------------------------------------
   Scratch memory, output
----------------------------------------------------------------------------------------- */

/* Memory from the OS in multiples of 64 KiB (so _mi_os_free gets the size back exactly). */
static size_t mi_pw_round(size_t size) { return (size + 64*MI_KiB - 1) & ~(size_t)(64*MI_KiB - 1); }

static void* mi_pw_alloc(size_t size) {
  bool is_zero = false;
  void* p = _mi_os_alloc(mi_pw_round(size), &is_zero);
  if (p != NULL && !is_zero) memset(p, 0, mi_pw_round(size));
  return p;
}

static void mi_pw_free(void* p, size_t size) {
  if (p != NULL) _mi_os_free(p, mi_pw_round(size));
}

/* A growing byte buffer. Invariant: len <= cap; failed once any growth failed (what was
   appended after that is lost, and the writer returns false). */
typedef struct mi_pw_buf_s {
  uint8_t* p;
  size_t   len;
  size_t   cap;
  bool     failed;
} mi_pw_buf_t;

static bool mi_pw_reserve(mi_pw_buf_t* b, size_t extra) {
  if (b->failed) return false;
  if (b->len + extra <= b->cap) return true;
  size_t cap = (b->cap == 0 ? 64*MI_KiB : 2*b->cap);
  while (cap < b->len + extra) cap *= 2;
  uint8_t* p = (uint8_t*)mi_pw_alloc(cap);
  if (p == NULL) { b->failed = true; return false; }
  if (b->len > 0) memcpy(p, b->p, b->len);
  mi_pw_free(b->p, b->cap);
  b->p = p;
  b->cap = mi_pw_round(cap);
  return true;
}

static void mi_pw_append(mi_pw_buf_t* b, const void* s, size_t n) {
  if (n == 0 || !mi_pw_reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void mi_pw_puts(mi_pw_buf_t* b, const char* s) { mi_pw_append(b, s, strlen(s)); }

static void mi_pw_printf(mi_pw_buf_t* b, const char* fmt, ...) {
  char line[512];
  va_list args;
  va_start(args, fmt);
  _mi_vsnprintf(line, sizeof(line), fmt, args);
  va_end(args);
  mi_pw_puts(b, line);
}

static void mi_pw_buf_done(mi_pw_buf_t* b) {
  mi_pw_free(b->p, b->cap);
  b->p = NULL; b->len = b->cap = 0;
}

/* Every byte to fd: write(2) may write part of it, or be interrupted. */
static bool mi_pw_write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0) { if (errno == EINTR) continue; return false; }
    if (w == 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* Writes out what the buffer holds and empties it; false if the buffer failed to grow or the
   write failed (sticky: once false, later flushes write nothing more). */
static bool mi_pw_flush(int fd, mi_pw_buf_t* b) {
  if (b->failed) return false;
  if (!mi_pw_write_all(fd, b->p, b->len)) { b->failed = true; return false; }
  b->len = 0;
  return true;
}

/* Nearest integer (half away from zero); the estimates are scaled doubles. No libm: the
   library does not link it. */
static int64_t mi_pw_round_i64(double x) {
  if (x >= 9.2e18) return INT64_MAX;
  if (x <= -9.2e18) return INT64_MIN;
  return (x >= 0 ? (int64_t)(x + 0.5) : -(int64_t)(-x + 0.5));
}

/* In-place heap sort (libc's qsort may allocate: glibc's merge sort takes a malloc'd buffer). */
typedef bool (mi_pw_less_fun)(const void* a, const void* b);

static void mi_pw_swap(uint8_t* a, uint8_t* b, size_t size) {
  for (size_t i = 0; i < size; i++) { const uint8_t t = a[i]; a[i] = b[i]; b[i] = t; }
}

static void mi_pw_sift(uint8_t* base, size_t size, size_t root, size_t n, mi_pw_less_fun* less) {
  for (;;) {
    size_t child = 2*root + 1;
    if (child >= n) return;
    if (child + 1 < n && less(base + child*size, base + (child + 1)*size)) child++;
    if (!less(base + root*size, base + child*size)) return;
    mi_pw_swap(base + root*size, base + child*size, size);
    root = child;
  }
}

static void mi_pw_sort(void* base, size_t n, size_t size, mi_pw_less_fun* less) {
  uint8_t* const b = (uint8_t*)base;
  if (n < 2) return;
  for (size_t i = n/2; i-- > 0; ) mi_pw_sift(b, size, i, n, less);
  for (size_t end = n - 1; end > 0; end--) {
    mi_pw_swap(b, b + end*size, size);
    mi_pw_sift(b, size, 0, end, less);
  }
}

/* -----------------------------------------------------------------------------------------
   Mappings (/proc/self/maps) and their ELF files
----------------------------------------------------------------------------------------- */

typedef struct mi_pw_sym_s {
  uintptr_t   addr;     /* st_value: link-time address */
  uintptr_t   size;
  const char* name;     /* in the file's mapped string table */
} mi_pw_sym_t;

/* One ELF file, mapped read-only for the length of a call. Invariant: base == NULL, or
   [base, base+size) is the whole file and its ELF header is of our class; syms sorted by addr. */
typedef struct mi_pw_file_s {
  const char*    path;       /* in the maps buffer */
  const uint8_t* base;
  size_t         size;
  bool           indexed;    /* syms built (maybe empty) */
  mi_pw_sym_t*   syms;
  size_t         nsyms;
  size_t         syms_bytes;
  char           build_id[2*MI_PW_BUILD_ID_MAX + 1];   /* hex; "" if none */
} mi_pw_file_t;

/* One executable file-backed mapping. */
typedef struct mi_pw_map_s {
  uintptr_t      start;
  uintptr_t      limit;
  uintptr_t      offset;     /* file offset of start */
  uintptr_t      bias;       /* load bias: run-time address - link-time address */
  mi_pw_file_t*  file;
} mi_pw_map_t;

typedef struct mi_pw_maps_s {
  mi_pw_buf_t    text;       /* /proc/self/maps, paths NUL-terminated in place */
  mi_pw_map_t*   maps;       /* count, the main executable's first (pprof's mapping[0]) */
  size_t         count;
  mi_pw_map_t**  sorted;     /* the same, by start address, for lookups */
  mi_pw_file_t*  files;      /* nfiles distinct paths */
  size_t         nfiles;
  size_t         cap;        /* entries allocated in maps, sorted and files */
} mi_pw_maps_t;

static bool mi_pw_in_file(const mi_pw_file_t* f, uintptr_t off, uintptr_t len) {
  return (off <= f->size && len <= f->size - off);
}

static const mi_pw_ehdr_t* mi_pw_ehdr(const mi_pw_file_t* f) { return (const mi_pw_ehdr_t*)f->base; }

static const mi_pw_phdr_t* mi_pw_phdrs(const mi_pw_file_t* f, size_t* n) {
  const mi_pw_ehdr_t* eh = mi_pw_ehdr(f);
  *n = 0;
  if (eh->e_phentsize != sizeof(mi_pw_phdr_t) || !mi_pw_in_file(f, eh->e_phoff, (uintptr_t)eh->e_phnum * sizeof(mi_pw_phdr_t))) return NULL;
  *n = eh->e_phnum;
  return (const mi_pw_phdr_t*)(f->base + eh->e_phoff);
}

/* The GNU build id from the PT_NOTE segments (only the program headers and the notes are
   touched, a page or two of the file). */
static void mi_pw_file_build_id(mi_pw_file_t* f) {
  size_t nph;
  const mi_pw_phdr_t* ph = mi_pw_phdrs(f, &nph);
  for (size_t i = 0; i < nph; i++) {
    if (ph[i].p_type != PT_NOTE || !mi_pw_in_file(f, ph[i].p_offset, ph[i].p_filesz)) continue;
    const uint8_t* p = f->base + ph[i].p_offset;
    const uint8_t* end = p + ph[i].p_filesz;
    while ((size_t)(end - p) >= sizeof(mi_pw_nhdr_t)) {
      const mi_pw_nhdr_t* nh = (const mi_pw_nhdr_t*)p;
      const size_t namesz = (nh->n_namesz + 3) & ~(size_t)3;   /* 4-byte aligned fields */
      const size_t descsz = (nh->n_descsz + 3) & ~(size_t)3;
      const uint8_t* name = p + sizeof(mi_pw_nhdr_t);
      if (namesz > (size_t)(end - name) || descsz > (size_t)(end - name) - namesz) break;
      const uint8_t* desc = name + namesz;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        static const char hex[] = "0123456789abcdef";
        const size_t n = (nh->n_descsz < MI_PW_BUILD_ID_MAX ? nh->n_descsz : MI_PW_BUILD_ID_MAX);
        for (size_t k = 0; k < n; k++) {
          f->build_id[2*k] = hex[desc[k] >> 4];
          f->build_id[2*k + 1] = hex[desc[k] & 15];
        }
        f->build_id[2*n] = 0;
        return;
      }
      p = desc + descsz;
    }
  }
}

/* Maps the whole file read-only; on any failure (gone, not ELF, another class) base stays NULL
   and the file's frames stay unnamed. */
static void mi_pw_file_open(mi_pw_file_t* f) {
  const int fd = open(f->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size >= sizeof(mi_pw_ehdr_t) &&
      (uintmax_t)st.st_size <= (uintmax_t)SIZE_MAX) {
    void* p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      const mi_pw_ehdr_t* eh = (const mi_pw_ehdr_t*)p;
      if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == MI_PW_ELFCLASS) {
        f->base = (const uint8_t*)p;
        f->size = (size_t)st.st_size;
      }
      else {
        munmap(p, (size_t)st.st_size);
      }
    }
  }
  close(fd);
  if (f->base != NULL) mi_pw_file_build_id(f);
}

static bool mi_pw_sym_less(const void* a, const void* b) {
  return ((const mi_pw_sym_t*)a)->addr < ((const mi_pw_sym_t*)b)->addr;
}

/* Indexes the file's function symbols by address: .symtab, or .dynsym if the file is
   stripped. Built on the first lookup in the file. */
static void mi_pw_file_index(mi_pw_file_t* f) {
  f->indexed = true;
  if (f->base == NULL) return;
  const mi_pw_ehdr_t* eh = mi_pw_ehdr(f);
  if (eh->e_shentsize != sizeof(mi_pw_shdr_t) || !mi_pw_in_file(f, eh->e_shoff, (uintptr_t)eh->e_shnum * sizeof(mi_pw_shdr_t))) return;
  const mi_pw_shdr_t* sh = (const mi_pw_shdr_t*)(f->base + eh->e_shoff);
  const mi_pw_shdr_t* tab = NULL;
  for (size_t i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type == SHT_SYMTAB) { tab = &sh[i]; break; }
    if (sh[i].sh_type == SHT_DYNSYM && tab == NULL) tab = &sh[i];
  }
  if (tab == NULL || tab->sh_entsize != sizeof(mi_pw_esym_t) || tab->sh_link >= eh->e_shnum) return;
  const mi_pw_shdr_t* strs = &sh[tab->sh_link];
  if (!mi_pw_in_file(f, tab->sh_offset, tab->sh_size) || !mi_pw_in_file(f, strs->sh_offset, strs->sh_size) ||
      strs->sh_size == 0 || f->base[strs->sh_offset + strs->sh_size - 1] != 0) return;   /* names end inside */
  const mi_pw_esym_t* es = (const mi_pw_esym_t*)(f->base + tab->sh_offset);
  const size_t n = tab->sh_size / sizeof(mi_pw_esym_t);
  const char* names = (const char*)(f->base + strs->sh_offset);
  size_t count = 0;
  for (size_t pass = 0; pass < 2; pass++) {   /* count, then fill */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      const unsigned type = es[i].st_info & 0xf;
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || es[i].st_shndx == SHN_UNDEF || es[i].st_value == 0 ||
          es[i].st_name >= strs->sh_size || names[es[i].st_name] == 0) continue;
      if (pass == 1) {
        f->syms[k].addr = es[i].st_value;
        f->syms[k].size = es[i].st_size;
        f->syms[k].name = names + es[i].st_name;
      }
      k++;
    }
    if (pass == 0) {
      count = k;
      if (count == 0) return;
      f->syms_bytes = count * sizeof(mi_pw_sym_t);
      f->syms = (mi_pw_sym_t*)mi_pw_alloc(f->syms_bytes);
      if (f->syms == NULL) return;
    }
  }
  f->nsyms = count;
  mi_pw_sort(f->syms, f->nsyms, sizeof(mi_pw_sym_t), &mi_pw_sym_less);
}

/* The load bias of a mapping: its start is the run-time address of file offset `offset`; the
   PT_LOAD segment holding that offset says which link-time address that offset has. (Segments
   need not start on a page: the mapping starts at the page below.) */
static void mi_pw_map_bias(mi_pw_map_t* m) {
  const mi_pw_file_t* f = m->file;
  m->bias = m->start - m->offset;   /* no program headers: assume link address == offset */
  if (f->base == NULL) return;
  const mi_pw_ehdr_t* eh = mi_pw_ehdr(f);
  if (eh->e_type == ET_EXEC) { m->bias = 0; return; }
  const size_t page = _mi_os_page_size();
  size_t nph;
  const mi_pw_phdr_t* ph = mi_pw_phdrs(f, &nph);
  for (size_t i = 0; i < nph; i++) {
    if (ph[i].p_type != PT_LOAD) continue;
    const uintptr_t first = (uintptr_t)ph[i].p_offset & ~(uintptr_t)(page - 1);
    if (m->offset >= first && m->offset < (uintptr_t)ph[i].p_offset + (uintptr_t)ph[i].p_filesz) {
      /* p_vaddr and p_offset agree modulo the page size, so this is exact */
      m->bias = m->start - ((uintptr_t)ph[i].p_vaddr - (uintptr_t)ph[i].p_offset + m->offset);
      if ((ph[i].p_flags & PF_X) != 0) return;   /* prefer the executable segment */
    }
  }
}

static bool mi_pw_map_less(const void* a, const void* b) {
  return (*(mi_pw_map_t* const*)a)->start < (*(mi_pw_map_t* const*)b)->start;
}

static uintptr_t mi_pw_parse_hex(const char** s) {
  uintptr_t x = 0;
  for (;;) {
    const char c = **s;
    unsigned d;
    if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
    else return x;
    x = x*16 + d;
    (*s)++;
  }
}

static void mi_pw_skip_field(char** s) {   /* past the field and the blanks after it */
  while (**s != ' ' && **s != '\n' && **s != 0) (*s)++;
  while (**s == ' ') (*s)++;
}

/* Reads /proc/self/maps into OS memory (read(2) until the end: its size is not known). */
static bool mi_pw_read_maps(mi_pw_buf_t* text) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = true;
  for (;;) {
    if (!mi_pw_reserve(text, 16*MI_KiB + 1)) { ok = false; break; }
    const ssize_t n = read(fd, text->p + text->len, text->cap - text->len - 1);
    if (n < 0) { if (errno == EINTR) continue; ok = false; break; }
    if (n == 0) break;
    text->len += (size_t)n;
  }
  close(fd);
  if (ok) text->p[text->len] = 0;
  return ok;
}

/* One entry per executable file-backed mapping, the main executable's first: pprof takes
   mapping[0] for the program. Files are opened (and their build ids read) here; their symbol
   tables on first need. */
static bool mi_pw_maps_init(mi_pw_maps_t* ms) {
  memset(ms, 0, sizeof(*ms));
  if (!mi_pw_read_maps(&ms->text)) return false;
  size_t lines = 0;
  for (size_t i = 0; i < ms->text.len; i++) { if (ms->text.p[i] == '\n') lines++; }
  ms->cap = lines + 1;
  ms->maps = (mi_pw_map_t*)mi_pw_alloc(ms->cap * sizeof(mi_pw_map_t));
  ms->sorted = (mi_pw_map_t**)mi_pw_alloc(ms->cap * sizeof(mi_pw_map_t*));
  ms->files = (mi_pw_file_t*)mi_pw_alloc(ms->cap * sizeof(mi_pw_file_t));
  if (ms->maps == NULL || ms->sorted == NULL || ms->files == NULL) return false;
  char exe[512];
  const ssize_t exelen = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[exelen > 0 ? exelen : 0] = 0;
  size_t main_index = SIZE_MAX;
  char* s = (char*)ms->text.p;
  while (*s != 0) {
    /* start-limit perms offset dev inode path */
    char* line = s;
    while (*s != '\n' && *s != 0) s++;
    if (*s == '\n') *s++ = 0;
    const char* q = line;
    const uintptr_t start = mi_pw_parse_hex(&q);
    if (*q != '-') continue;
    q++;
    const uintptr_t limit = mi_pw_parse_hex(&q);
    char* field = (char*)q;
    while (*field == ' ') field++;
    const bool exec = (field[0] == 'r' && field[2] == 'x');
    mi_pw_skip_field(&field);
    q = field;
    const uintptr_t offset = mi_pw_parse_hex(&q);
    mi_pw_skip_field(&field);   /* offset */
    mi_pw_skip_field(&field);   /* dev */
    mi_pw_skip_field(&field);   /* inode */
    if (!exec || field[0] != '/') continue;   /* anonymous, [vdso], [vsyscall] */
    mi_pw_file_t* file = NULL;
    for (size_t i = 0; i < ms->nfiles && file == NULL; i++) {
      if (strcmp(ms->files[i].path, field) == 0) file = &ms->files[i];
    }
    if (file == NULL) {
      file = &ms->files[ms->nfiles++];
      file->path = field;
      mi_pw_file_open(file);
    }
    mi_pw_map_t* m = &ms->maps[ms->count];
    m->start = start; m->limit = limit; m->offset = offset; m->file = file;
    mi_pw_map_bias(m);
    if (main_index == SIZE_MAX && exe[0] != 0 && strcmp(field, exe) == 0) main_index = ms->count;
    ms->count++;
  }
  if (main_index != SIZE_MAX && main_index > 0) {   /* the executable first, the rest in order */
    const mi_pw_map_t m = ms->maps[main_index];
    memmove(&ms->maps[1], &ms->maps[0], main_index * sizeof(mi_pw_map_t));
    ms->maps[0] = m;
  }
  for (size_t i = 0; i < ms->count; i++) ms->sorted[i] = &ms->maps[i];
  mi_pw_sort(ms->sorted, ms->count, sizeof(mi_pw_map_t*), &mi_pw_map_less);
  return true;
}

static void mi_pw_maps_done(mi_pw_maps_t* ms) {
  for (size_t i = 0; i < ms->nfiles; i++) {
    mi_pw_file_t* f = &ms->files[i];
    if (f->base != NULL) munmap((void*)f->base, f->size);
    mi_pw_free(f->syms, f->syms_bytes);
  }
  mi_pw_free(ms->maps, ms->cap * sizeof(mi_pw_map_t));
  mi_pw_free(ms->sorted, ms->cap * sizeof(mi_pw_map_t*));
  mi_pw_free(ms->files, ms->cap * sizeof(mi_pw_file_t));
  mi_pw_buf_done(&ms->text);
}

/* The index in ms->maps of the mapping holding addr, or SIZE_MAX. */
static size_t mi_pw_maps_find(const mi_pw_maps_t* ms, uintptr_t addr) {
  size_t lo = 0, hi = ms->count;   /* sorted[lo ..] start <= addr is unknown; [hi ..] start > addr */
  while (lo < hi) {
    const size_t mid = lo + (hi - lo)/2;
    if (ms->sorted[mid]->start <= addr) lo = mid + 1; else hi = mid;
  }
  if (lo == 0) return SIZE_MAX;
  const mi_pw_map_t* m = ms->sorted[lo - 1];
  return (addr < m->limit ? (size_t)(m - ms->maps) : SIZE_MAX);
}

/* A frame, named: function and offset into it, and the file. Addresses on the stack are
   return addresses: pc - 1 is inside the call instruction, so a call that ends its function
   (a noreturn callee) still names the caller. */
typedef struct mi_pw_frame_s {
  const char* name;     /* NULL: no symbol holds the address */
  uintptr_t   offset;   /* of pc - 1 from the symbol's start */
  const char* path;     /* NULL: in no executable mapping */
} mi_pw_frame_t;

static mi_pw_frame_t mi_pw_symbolize(mi_pw_maps_t* ms, uintptr_t pc) {
  mi_pw_frame_t fr = { NULL, 0, NULL };
  const size_t i = mi_pw_maps_find(ms, pc - 1);
  if (i == SIZE_MAX) return fr;
  const mi_pw_map_t* m = &ms->maps[i];
  mi_pw_file_t* f = m->file;
  fr.path = f->path;
  if (!f->indexed) mi_pw_file_index(f);
  const uintptr_t a = pc - 1 - m->bias;
  size_t lo = 0, hi = f->nsyms;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo)/2;
    if (f->syms[mid].addr <= a) lo = mid + 1; else hi = mid;
  }
  if (lo == 0) return fr;
  const mi_pw_sym_t* sym = &f->syms[lo - 1];
  if (sym->size != 0 && a - sym->addr >= sym->size) return fr;   /* between functions */
  fr.name = sym->name;
  fr.offset = a - sym->addr;
  return fr;
}

/* Frames in pcs: depth, or fewer if a 0 ends the stack early (0 is the hash table's free slot). */
static size_t mi_pw_depth(const mi_prof_site_t* site) {
  const size_t depth = (site->depth <= MI_PROF_DEPTH_MAX ? site->depth : MI_PROF_DEPTH_MAX);
  for (size_t k = 0; k < depth; k++) { if (site->pcs[k] == 0) return k; }
  return depth;
}

static const char* mi_pw_basename(const char* path) {
  const char* b = strrchr(path, '/');
  return (b == NULL ? path : b + 1);
}

/* -----------------------------------------------------------------------------------------
   profile.proto (docs/profiler-plan.md, section 3)
----------------------------------------------------------------------------------------- */

enum { MI_PB_VARINT = 0, MI_PB_LEN = 2 };

static size_t mi_pb_varint_len(uint64_t x) {
  size_t n = 1;
  while (x >= 0x80) { x >>= 7; n++; }
  return n;
}

static void mi_pb_varint(mi_pw_buf_t* b, uint64_t x) {
  uint8_t v[10];
  size_t n = 0;
  while (x >= 0x80) { v[n++] = (uint8_t)(x | 0x80); x >>= 7; }
  v[n++] = (uint8_t)x;
  mi_pw_append(b, v, n);
}

static void mi_pb_key(mi_pw_buf_t* b, unsigned field, unsigned wire) { mi_pb_varint(b, ((uint64_t)field << 3) | wire); }

/* int64 fields take the two's complement as a varint (10 bytes when negative) */
static void mi_pb_uint(mi_pw_buf_t* b, unsigned field, uint64_t x) {
  mi_pb_key(b, field, MI_PB_VARINT);
  mi_pb_varint(b, x);
}

static void mi_pb_bytes(mi_pw_buf_t* b, unsigned field, const void* p, size_t n) {
  mi_pb_key(b, field, MI_PB_LEN);
  mi_pb_varint(b, n);
  mi_pw_append(b, p, n);
}

/* A nested message: encoded into `sub` first, then copied in with its length. */
static void mi_pb_message(mi_pw_buf_t* b, unsigned field, mi_pw_buf_t* sub) {
  if (sub->failed) b->failed = true;
  mi_pb_bytes(b, field, sub->p, sub->len);
  sub->len = 0;
}

/* Strings of the table, by index; the mappings' file names and build ids follow. */
enum {
  MI_PS_EMPTY, MI_PS_ALLOC_OBJECTS, MI_PS_COUNT, MI_PS_ALLOC_SPACE, MI_PS_BYTES, MI_PS_INUSE_OBJECTS,
  MI_PS_INUSE_SPACE, MI_PS_SPACE, MI_PS_COMMENT, MI_PS_COMMENT_EXIT, MI_PS_FIXED
};

static void mi_pb_value_type(mi_pw_buf_t* b, unsigned field, mi_pw_buf_t* sub, uint64_t type, uint64_t unit) {
  mi_pb_uint(sub, 1, type);
  mi_pb_uint(sub, 2, unit);
  mi_pb_message(b, field, sub);
}

/* Distinct addresses, each a Location (id = index + 1). Open addressing; cap a power of two,
   at least twice the number of frames, so a free slot always ends a probe. */
typedef struct mi_pw_addrs_s {
  uintptr_t* slots;     /* address, 0: free (a return address is never 0) */
  uint32_t*  ids;       /* the address's location id */
  uintptr_t* by_id;     /* address of location id i+1 */
  size_t     cap;
  size_t     count;
} mi_pw_addrs_t;

static uint32_t mi_pw_addr_id(mi_pw_addrs_t* t, uintptr_t pc) {
  size_t i = (size_t)((pc * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (t->cap - 1);
  while (t->slots[i] != 0) {
    if (t->slots[i] == pc) return t->ids[i];
    i = (i + 1) & (t->cap - 1);
  }
  t->slots[i] = pc;
  t->by_id[t->count] = pc;
  t->ids[i] = (uint32_t)(++t->count);
  return t->ids[i];
}

static void mi_pw_write_samples(mi_pw_buf_t* b, mi_pw_buf_t* sub, const mi_prof_profile_t* prof, mi_pw_addrs_t* addrs) {
  for (size_t s = 0; s < prof->count; s++) {
    const mi_prof_site_t* site = &prof->sites[s];
    const size_t depth = mi_pw_depth(site);
    uint32_t ids[MI_PROF_DEPTH_MAX];
    size_t len = 0;
    for (size_t k = 0; k < depth; k++) {   /* leaf first, as in pcs */
      ids[k] = mi_pw_addr_id(addrs, site->pcs[k]);
      len += mi_pb_varint_len(ids[k]);
    }
    mi_pb_key(sub, 1, MI_PB_LEN);   /* location_id, packed */
    mi_pb_varint(sub, len);
    for (size_t k = 0; k < depth; k++) mi_pb_varint(sub, ids[k]);
    const int64_t v[4] = { mi_pw_round_i64(site->alloc_objects), mi_pw_round_i64(site->alloc_bytes),
                           mi_pw_round_i64(site->inuse_objects), mi_pw_round_i64(site->inuse_bytes) };
    len = 0;
    for (size_t k = 0; k < 4; k++) len += mi_pb_varint_len((uint64_t)v[k]);
    mi_pb_key(sub, 2, MI_PB_LEN);   /* value, packed, in the order of sample_type */
    mi_pb_varint(sub, len);
    for (size_t k = 0; k < 4; k++) mi_pb_varint(sub, (uint64_t)v[k]);
    mi_pb_message(b, 2, sub);
  }
}

static void mi_pw_write_proto(mi_pw_buf_t* b, mi_pw_buf_t* sub, const mi_prof_profile_t* prof, mi_pw_maps_t* ms, mi_pw_addrs_t* addrs) {
  /* sample_type: Go's heap profile, so pprof's -sample_index=alloc_space (and the others) work */
  mi_pb_value_type(b, 1, sub, MI_PS_ALLOC_OBJECTS, MI_PS_COUNT);
  mi_pb_value_type(b, 1, sub, MI_PS_ALLOC_SPACE, MI_PS_BYTES);
  mi_pb_value_type(b, 1, sub, MI_PS_INUSE_OBJECTS, MI_PS_COUNT);
  mi_pb_value_type(b, 1, sub, MI_PS_INUSE_SPACE, MI_PS_BYTES);
  mi_pw_write_samples(b, sub, prof, addrs);
  /* mappings: id i+1; file name and build id at MI_PS_FIXED + 2i and + 2i + 1 */
  for (size_t i = 0; i < ms->count; i++) {
    const mi_pw_map_t* m = &ms->maps[i];
    mi_pb_uint(sub, 1, i + 1);
    mi_pb_uint(sub, 2, m->start);
    mi_pb_uint(sub, 3, m->limit);
    mi_pb_uint(sub, 4, m->offset);
    mi_pb_uint(sub, 5, MI_PS_FIXED + 2*i);
    if (m->file->build_id[0] != 0) mi_pb_uint(sub, 6, MI_PS_FIXED + 2*i + 1);
    mi_pb_message(b, 3, sub);
  }
  /* locations, unsymbolized: pprof names them from the mapped files. The addresses are
     return addresses; we write pc - 1 for every frame (the leaf too: pcs[0] returns from the
     allocator) so that the line pprof shows is the call's, not the next statement's. */
  for (size_t id = 1; id <= addrs->count; id++) {
    const uintptr_t pc = addrs->by_id[id - 1];
    const size_t mi = mi_pw_maps_find(ms, pc - 1);
    mi_pb_uint(sub, 1, id);
    if (mi != SIZE_MAX) mi_pb_uint(sub, 2, mi + 1);
    mi_pb_uint(sub, 3, pc - 1);
    mi_pb_message(b, 4, sub);
  }
  /* the string table, [0] = "" */
  char comment[160];
  _mi_snprintf(comment, sizeof(comment), "mimalloc heap profile: %llu samples, %llu samples dropped (the store was full)",
               (unsigned long long)prof->samples, (unsigned long long)prof->samples_dropped);
  const char* fixed[MI_PS_FIXED] = { "", "alloc_objects", "count", "alloc_space", "bytes", "inuse_objects",
                                     "inuse_space", "space", comment, "at exit: in-use values are blocks never freed" };
  for (size_t i = 0; i < MI_PS_FIXED; i++) mi_pb_bytes(b, 6, fixed[i], strlen(fixed[i]));
  for (size_t i = 0; i < ms->count; i++) {
    mi_pb_bytes(b, 6, ms->maps[i].file->path, strlen(ms->maps[i].file->path));
    mi_pb_bytes(b, 6, ms->maps[i].file->build_id, strlen(ms->maps[i].file->build_id));
  }
  mi_pb_uint(b, 9, (uint64_t)prof->time_nanos);
  mi_pb_uint(b, 10, (uint64_t)prof->duration_nanos);
  mi_pb_value_type(b, 11, sub, MI_PS_SPACE, MI_PS_BYTES);   /* period_type */
  mi_pb_uint(b, 12, prof->rate);
  mi_pb_uint(b, 13, MI_PS_COMMENT);
  if (prof->at_exit) mi_pb_uint(b, 13, MI_PS_COMMENT_EXIT);
  mi_pb_uint(b, 14, MI_PS_INUSE_SPACE);   /* default_sample_type */
}

bool _mi_prof_write_pprof(int fd, const mi_prof_profile_t* prof) {
  if (prof == NULL || fd < 0) return false;
  mi_pw_maps_t ms;
  mi_pw_buf_t b = { NULL, 0, 0, false };
  mi_pw_buf_t sub = { NULL, 0, 0, false };
  mi_pw_addrs_t addrs = { NULL, NULL, NULL, 0, 0 };
  mi_pw_maps_init(&ms);   /* without it: no mappings (pprof then needs the binary named) */
  bool ok = true;
  size_t frames = 0;
  for (size_t s = 0; s < prof->count; s++) frames += prof->sites[s].depth;
  addrs.cap = 64;
  while (addrs.cap < 2*frames) addrs.cap *= 2;
  addrs.slots = (uintptr_t*)mi_pw_alloc(addrs.cap * sizeof(uintptr_t));
  addrs.ids = (uint32_t*)mi_pw_alloc(addrs.cap * sizeof(uint32_t));
  addrs.by_id = (uintptr_t*)mi_pw_alloc(addrs.cap * sizeof(uintptr_t));
  if (addrs.slots == NULL || addrs.ids == NULL || addrs.by_id == NULL) ok = false;
  if (ok) {
    mi_pw_write_proto(&b, &sub, prof, &ms, &addrs);
    ok = !sub.failed && mi_pw_flush(fd, &b);
  }
  mi_pw_free(addrs.slots, addrs.cap * sizeof(uintptr_t));
  mi_pw_free(addrs.ids, addrs.cap * sizeof(uint32_t));
  mi_pw_free(addrs.by_id, addrs.cap * sizeof(uintptr_t));
  mi_pw_buf_done(&sub);
  mi_pw_buf_done(&b);
  mi_pw_maps_done(&ms);
  return ok;
}

/* -----------------------------------------------------------------------------------------
   Text top list and collapsed stacks
----------------------------------------------------------------------------------------- */

/* Sorting site indices by one of the values, largest first: the key travels with the index. */
typedef struct mi_pw_rank_s {
  double   key;
  size_t   site;
} mi_pw_rank_t;

static bool mi_pw_rank_less(const void* a, const void* b) {   /* "less" = comes later */
  return ((const mi_pw_rank_t*)a)->key > ((const mi_pw_rank_t*)b)->key;
}

/* "12.5" for part/total in percent, rounded to a tenth */
static void mi_pw_percent(char* buf, size_t size, double part, double total) {
  const int64_t tenths = (total > 0 ? mi_pw_round_i64(part * 1000.0 / total) : 0);
  _mi_snprintf(buf, size, "%lld.%lld", (long long)(tenths / 10), (long long)(tenths % 10));
}

/* "60.0 MiB" (tenths, binary units) */
static void mi_pw_human(char* buf, size_t size, int64_t bytes) {
  static const char* units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  size_t u = 0;
  double x = (double)bytes;
  while ((x >= 1024.0 || x <= -1024.0) && u < 4) { x /= 1024.0; u++; }
  const int64_t tenths = mi_pw_round_i64(x * 10.0);
  const int64_t mag = (tenths < 0 ? -tenths : tenths);
  _mi_snprintf(buf, size, "%s%lld.%lld %s", (tenths < 0 ? "-" : ""), (long long)(mag / 10), (long long)(mag % 10), units[u]);
}

/* "#k name+0xoff (file)"; a frame no symbol holds shows its return address as captured (the
   text and folded writers agree on that). */
static void mi_pw_text_frame(mi_pw_buf_t* b, mi_pw_maps_t* ms, size_t k, uintptr_t pc) {
  const mi_pw_frame_t fr = mi_pw_symbolize(ms, pc);
  if (fr.name != NULL) mi_pw_printf(b, "    #%zu %s+0x%zx (%s)\n", k, fr.name, (size_t)fr.offset, mi_pw_basename(fr.path));
  else if (fr.path != NULL) mi_pw_printf(b, "    #%zu 0x%zx (%s)\n", k, (size_t)pc, mi_pw_basename(fr.path));
  else mi_pw_printf(b, "    #%zu 0x%zx\n", k, (size_t)pc);
}

/* One section: the top sites by bytes (inuse or allocated), with their stacks. */
static void mi_pw_text_section(int fd, mi_pw_buf_t* b, const mi_prof_profile_t* prof, mi_pw_maps_t* ms, mi_pw_rank_t* rank,
                               bool inuse, const char* title, double total_bytes) {
  size_t n = 0;
  for (size_t s = 0; s < prof->count; s++) {
    const mi_prof_site_t* site = &prof->sites[s];
    const double key = (inuse ? site->inuse_bytes : site->alloc_bytes);
    if (mi_pw_round_i64(key) <= 0) continue;
    rank[n].key = key;
    rank[n].site = s;
    n++;
  }
  mi_pw_sort(rank, n, sizeof(mi_pw_rank_t), &mi_pw_rank_less);
  const size_t shown = (n < MI_PW_TEXT_TOP ? n : MI_PW_TEXT_TOP);
  mi_pw_printf(b, "\n%s: the top %zu of %zu sites by bytes\n", title, shown, n);
  for (size_t i = 0; i < shown; i++) {
    const mi_prof_site_t* site = &prof->sites[rank[i].site];
    const int64_t bytes = mi_pw_round_i64(inuse ? site->inuse_bytes : site->alloc_bytes);
    const int64_t objects = mi_pw_round_i64(inuse ? site->inuse_objects : site->alloc_objects);
    char human[32], pct[32];
    mi_pw_human(human, sizeof(human), bytes);
    mi_pw_percent(pct, sizeof(pct), (double)bytes, total_bytes);
    mi_pw_printf(b, "%lld bytes (%s, %s%%) in %lld objects\n", (long long)bytes, human, pct, (long long)objects);
    const size_t depth = mi_pw_depth(site);
    for (size_t k = 0; k < depth && k < MI_PW_TEXT_FRAMES; k++) mi_pw_text_frame(b, ms, k, site->pcs[k]);
    if (depth > MI_PW_TEXT_FRAMES) mi_pw_printf(b, "    ... %zu more frames\n", depth - MI_PW_TEXT_FRAMES);
    if (b->len >= MI_PW_FLUSH) mi_pw_flush(fd, b);
  }
}

bool _mi_prof_write_text(int fd, const mi_prof_profile_t* prof) {
  if (prof == NULL || fd < 0) return false;
  mi_pw_maps_t ms;
  mi_pw_buf_t b = { NULL, 0, 0, false };
  const bool maps_ok = mi_pw_maps_init(&ms);   /* without it: addresses only */
  const size_t rank_bytes = (prof->count + 1) * sizeof(mi_pw_rank_t);
  mi_pw_rank_t* rank = (mi_pw_rank_t*)mi_pw_alloc(rank_bytes);
  bool ok = (rank != NULL);
  if (ok) {
    /* totals of the rounded values, as pprof adds them up */
    int64_t inuse_bytes = 0, inuse_objects = 0, alloc_bytes = 0, alloc_objects = 0;
    for (size_t s = 0; s < prof->count; s++) {
      inuse_bytes += mi_pw_round_i64(prof->sites[s].inuse_bytes);
      inuse_objects += mi_pw_round_i64(prof->sites[s].inuse_objects);
      alloc_bytes += mi_pw_round_i64(prof->sites[s].alloc_bytes);
      alloc_objects += mi_pw_round_i64(prof->sites[s].alloc_objects);
    }
    char h1[32], h2[32];
    mi_pw_human(h1, sizeof(h1), inuse_bytes);
    mi_pw_human(h2, sizeof(h2), alloc_bytes);
    mi_pw_printf(&b, "mimalloc heap profile%s: sampling rate %zu bytes, %llu samples, %llu dropped, %zu sites\n",
                 (prof->at_exit ? " at exit" : ""), prof->rate, (unsigned long long)prof->samples,
                 (unsigned long long)prof->samples_dropped, prof->count);
    mi_pw_printf(&b, "in use: %lld bytes (%s) in %lld objects%s\n", (long long)inuse_bytes, h1, (long long)inuse_objects,
                 (prof->at_exit ? " (at exit: blocks never freed)" : ""));
    mi_pw_printf(&b, "allocated in total: %lld bytes (%s) in %lld objects\n", (long long)alloc_bytes, h2, (long long)alloc_objects);
    if (!maps_ok) mi_pw_puts(&b, "(no function names: /proc/self/maps could not be read)\n");
    mi_pw_text_section(fd, &b, prof, &ms, rank, true, (prof->at_exit ? "still live at exit (leaks)" : "in use"), (double)inuse_bytes);
    mi_pw_text_section(fd, &b, prof, &ms, rank, false, "allocated in total", (double)alloc_bytes);
    ok = mi_pw_flush(fd, &b);
  }
  mi_pw_free(rank, rank_bytes);
  mi_pw_buf_done(&b);
  mi_pw_maps_done(&ms);
  return ok;
}

bool _mi_prof_write_folded(int fd, const mi_prof_profile_t* prof, bool inuse) {
  if (prof == NULL || fd < 0) return false;
  mi_pw_maps_t ms;
  mi_pw_buf_t b = { NULL, 0, 0, false };
  mi_pw_maps_init(&ms);   /* without it: addresses only */
  for (size_t s = 0; s < prof->count; s++) {
    const mi_prof_site_t* site = &prof->sites[s];
    const int64_t bytes = mi_pw_round_i64(inuse ? site->inuse_bytes : site->alloc_bytes);
    if (bytes <= 0) continue;
    const size_t depth = mi_pw_depth(site);
    for (size_t k = depth; k-- > 0; ) {   /* root first */
      const mi_pw_frame_t fr = mi_pw_symbolize(&ms, site->pcs[k]);
      if (fr.name != NULL) mi_pw_puts(&b, fr.name);
      else mi_pw_printf(&b, "0x%zx", (size_t)site->pcs[k]);
      mi_pw_puts(&b, (k > 0 ? ";" : " "));
    }
    mi_pw_printf(&b, "%lld\n", (long long)bytes);
    if (b.len >= MI_PW_FLUSH) mi_pw_flush(fd, &b);
  }
  const bool ok = mi_pw_flush(fd, &b);
  mi_pw_buf_done(&b);
  mi_pw_maps_done(&ms);
  return ok;
}

#else  /* not Linux: no /proc/self/maps, no ELF */

bool _mi_prof_write_pprof(int fd, const mi_prof_profile_t* prof) { (void)fd; (void)prof; return false; }
bool _mi_prof_write_text(int fd, const mi_prof_profile_t* prof) { (void)fd; (void)prof; return false; }
bool _mi_prof_write_folded(int fd, const mi_prof_profile_t* prof, bool inuse) { (void)fd; (void)prof; (void)inuse; return false; }

#endif
