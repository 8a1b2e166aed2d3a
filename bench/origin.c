/* SPDX-License-Identifier: MIT */
/* origin.c: which shared object serves `malloc` in this process?
 *
 * Written for this project's benchmark suite (bench/bench.py suite); it models no published code.
 * The runner preloads it after the allocator under test:
 *     LD_PRELOAD="<allocator.so> <origin.so>"    (glibc: LD_PRELOAD="<origin.so>")
 * and sets BENCH_ORIGIN_FILE. In a constructor, every process of the run (including children
 * such as cc1plus under g++, or redis-server) resolves `malloc` the way the program itself does
 * (dlsym(RTLD_DEFAULT) + dladdr) and appends one line to that file:
 *     <pid> <executable> <path of the object that defines malloc>
 * It uses open(O_APPEND) and a single write() per line, and no stdio, so lines of concurrent
 * processes do not interleave.
 *
 * A non-PIE executable that takes malloc's address (Debian's /usr/bin/python3 does) has a
 * "canonical PLT entry": an undefined dynamic symbol `malloc` with a non-zero value, which
 * dlsym(RTLD_DEFAULT) returns and dladdr attributes to the executable, although every call goes
 * on to the real definition. In that case this walks the link map in search order and reports
 * the first object that really defines malloc (its symbol is not SHN_UNDEF).
 *
 * Build: cc -std=c11 -O2 -Wall -Wextra -shared -fPIC bench/origin.c -o origin.so -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_LEN 8192

static size_t append(char *buf, size_t pos, const char *s) {
  while (*s != 0 && pos < LINE_MAX_LEN - 2) {
    char c = *s++;
    buf[pos++] = (c == '\n' || c == ' ') ? '_' : c; /* keep the line's three fields parseable */
  }
  return pos;
}

static size_t append_uint(char *buf, size_t pos, unsigned long v) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0 && pos < LINE_MAX_LEN - 2) buf[pos++] = digits[--n];
  return pos;
}

/* Does `addr` lie in an object's real definition of a symbol (not a canonical PLT entry)?
 * Sets *name to the object's path. */
static int defined_at(void *addr, const char **name) {
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) == 0) return 0;
  *name = (info.dli_fname != NULL && info.dli_fname[0] != 0) ? info.dli_fname : "?";
  return sym == NULL || sym->st_shndx != SHN_UNDEF;
}

/* The first object in the global search order that defines malloc itself, or NULL. */
static const char *first_definition(void) {
  void *main_handle = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
  struct link_map *map = NULL;
  const char *found = NULL;
  if (main_handle == NULL) return NULL;
  if (dlinfo(main_handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL) {
    for (struct link_map *l = map->l_next; l != NULL && found == NULL; l = l->l_next) {
      if (l->l_name == NULL || l->l_name[0] == 0) continue;
      void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
      if (h == NULL) continue;
      void *addr = dlsym(h, "malloc"); /* this object first, then its dependencies */
      const char *name = NULL;
      if (addr != NULL && defined_at(addr, &name) && strcmp(name, l->l_name) == 0) found = name;
      dlclose(h);
    }
  }
  dlclose(main_handle);
  return found;
}

__attribute__((constructor)) static void bench_origin_report(void) {
  const char *file = getenv("BENCH_ORIGIN_FILE");
  if (file == NULL || file[0] == 0) return;

  const char *from = "none";
  void *addr = dlsym(RTLD_DEFAULT, "malloc");
  if (addr != NULL) {
    from = "?";
    if (!defined_at(addr, &from)) { /* a canonical PLT entry of the executable */
      const char *real = first_definition();
      if (real != NULL) from = real;
    }
  }

  static char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    exe[0] = '?';
    n = 1;
  }
  exe[n] = 0;

  static char line[LINE_MAX_LEN];
  size_t pos = append_uint(line, 0, (unsigned long)getpid());
  line[pos++] = ' ';
  pos = append(line, pos, exe);
  line[pos++] = ' ';
  pos = append(line, pos, from);
  line[pos++] = '\n';

  int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, line, pos);
  (void)w;
  close(fd);
}
