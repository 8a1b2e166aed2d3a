/* SPDX-License-Identifier: MIT */
/* libc-alloc.c -- memory that glibc allocates for the caller comes from our heap: strdup,
   strndup, getline and getdelim (from NULL and growing a buffer of ours), asprintf, vasprintf,
   realpath(path, NULL), getcwd(NULL, 0), get_current_dir_name, the open_memstream buffer,
   scandir's array and entries, glob's path list, and the FILE of fopen (glibc's own internal
   allocation). Each result must satisfy mi_is_in_heap_region, hold the right contents and be
   freed by free (which silently ignores pointers that are not ours, so the heap check is what
   catches a libc allocation that bypassed the override).

   Built linked (override-libc-alloc) and plain under LD_PRELOAD (override-libc-alloc-preload). */
#define _GNU_SOURCE
#include <dirent.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "ov.h"

#define OURS(p, what) CHECK_MSG((p) != NULL && mi_is_in_heap_region(p), "%s: %p is not in our heap", what, (void*)(p))

static int my_vasprintf(char** out, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const int n = vasprintf(out, fmt, args);
  va_end(args);
  return n;
}

int main(void) {
  ov_require_override("libc-alloc");

  /* a scratch directory with a few files */
  char dir[] = "/tmp/ov-libc-alloc-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[PATH_MAX];
  for (int i = 0; i < 12; i++) {
    snprintf(path, sizeof(path), "%s/file-%02d.txt", dir, i);
    FILE* f = fopen(path, "w");
    CHECK(f != NULL);
    if (f == NULL) continue;
    if (i == 0) OURS(f, "fopen's FILE");   /* glibc allocates it internally with malloc */
    fprintf(f, "line one of %d\nsecond line, somewhat longer than the first one: %d\n", i, i);
    for (int k = 0; k < 50; k++) fputs("x", f);   /* a 50-character line without newline */
    fclose(f);
  }

  /* strdup, strndup */
  char* s = strdup("duplicated by libc's name");
  OURS(s, "strdup");
  CHECK(s != NULL && strcmp(s, "duplicated by libc's name") == 0);
  free(s);
  s = strndup("duplicated by libc's name", 10);
  OURS(s, "strndup");
  CHECK(s != NULL && strcmp(s, "duplicated") == 0);
  free(s);

  /* getline from NULL, getline growing a small buffer of ours, getdelim */
  snprintf(path, sizeof(path), "%s/file-03.txt", dir);
  FILE* f = fopen(path, "r");
  CHECK(f != NULL);
  if (f != NULL) {
    char* line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    CHECK_EQ(n, (ssize_t)strlen("line one of 3\n"));
    OURS(line, "getline (from NULL)");
    CHECK(line != NULL && strcmp(line, "line one of 3\n") == 0);
    free(line);

    cap = 4;
    line = (char*)malloc(cap);   /* too small: glibc reallocs it */
    char* small = line;
    n = getline(&line, &cap, f);
    CHECK(n > 40);
    OURS(line, "getline (grown)");
    CHECK(line != small || cap <= 4);
    CHECK(line != NULL && strncmp(line, "second line", 11) == 0);
    CHECK_GE(malloc_usable_size(line), cap);
    free(line);

    line = NULL;
    cap = 0;
    n = getdelim(&line, &cap, 'x', f);   /* up to and including the first 'x' */
    CHECK_EQ(n, 1);
    OURS(line, "getdelim");
    free(line);
    fclose(f);
  }

  /* asprintf, vasprintf */
  char* a = NULL;
  CHECK(asprintf(&a, "%s-%d-%0200d", "asprintf", 42, 7) > 200);
  OURS(a, "asprintf");
  CHECK(a != NULL && strncmp(a, "asprintf-42-000", 15) == 0);
  free(a);
  a = NULL;
  CHECK(my_vasprintf(&a, "%s %ld", "vasprintf", 123456789L) == (int)strlen("vasprintf 123456789"));
  OURS(a, "vasprintf");
  CHECK(a != NULL && strcmp(a, "vasprintf 123456789") == 0);
  free(a);

  /* realpath, getcwd, get_current_dir_name */
  char* rp = realpath(dir, NULL);
  OURS(rp, "realpath");
  CHECK(rp != NULL && strstr(rp, "ov-libc-alloc-") != NULL);
  free(rp);
  char* cwd = getcwd(NULL, 0);
  OURS(cwd, "getcwd(NULL, 0)");
  char* cdn = get_current_dir_name();
  OURS(cdn, "get_current_dir_name");
  CHECK(cwd != NULL && cdn != NULL && strcmp(cwd, cdn) == 0);
  free(cwd);
  free(cdn);

  /* open_memstream: glibc grows the buffer with realloc */
  char* buf = NULL;
  size_t len = 0;
  FILE* ms = open_memstream(&buf, &len);
  CHECK(ms != NULL);
  if (ms != NULL) {
    for (int i = 0; i < 2000; i++) fprintf(ms, "%04d,", i);
    fclose(ms);
    CHECK_EQ(len, 2000 * 5);
    OURS(buf, "open_memstream buffer");
    CHECK(buf != NULL && strncmp(buf, "0000,0001,", 10) == 0 && strncmp(buf + 1999 * 5, "1999,", 5) == 0);
    free(buf);
  }

  /* scandir: the array and each entry */
  struct dirent** names = NULL;
  const int count = scandir(dir, &names, NULL, alphasort);
  CHECK_EQ(count, 12 + 2);   /* the files, . and .. */
  if (count > 0) {
    OURS(names, "scandir array");
    for (int i = 0; i < count; i++) {
      OURS(names[i], "scandir entry");
      free(names[i]);
    }
    free(names);
  }

  /* glob */
  glob_t g;
  snprintf(path, sizeof(path), "%s/file-*.txt", dir);
  CHECK_EQ(glob(path, 0, NULL, &g), 0);
  CHECK_EQ(g.gl_pathc, 12);
  OURS(g.gl_pathv, "glob path list");
  if (g.gl_pathc > 0) OURS(g.gl_pathv[0], "glob path");
  globfree(&g);

  /* clean up the scratch directory */
  for (int i = 0; i < 12; i++) {
    snprintf(path, sizeof(path), "%s/file-%02d.txt", dir, i);
    CHECK_EQ(unlink(path), 0);
  }
  CHECK_EQ(rmdir(dir), 0);

  /* allocation goes on normally */
  for (int i = 0; i < 1000; i++) {
    void* p = ov_make(16 + (size_t)i * 13, (uint64_t)i);
    CHECK(p != NULL && ov_verify(p));
    free(p);
  }
  return test_summary("override-libc-alloc" OV_SUFFIX, "libc's allocating functions");
}
