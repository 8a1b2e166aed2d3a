/* SPDX-License-Identifier: MIT */
/* hot-text-probe.c -- a small program for test/hot-text/check-hot-text.py: the calls a typical
   small program makes (malloc, calloc, realloc, free, stdio, a second thread), then, from an
   atexit handler, the library's code pages that are resident (/proc/self/pagemap), as offsets
   in the library's file, on one line: "resident: OFF OFF ...", and for each read-only mapping
   of the library a line "readonly FROM-TO: OFF OFF ..." (its file range, its resident pages).
   Linked with libmimalloc.so. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the resident pages of [lo, hi), mapped from file offset off, as file offsets */
static void print_resident(int pagemap, unsigned long lo, unsigned long hi, unsigned long off) {
  for (unsigned long a = lo; a < hi; a += 4096) {
    uint64_t entry = 0;
    if (pread(pagemap, &entry, sizeof(entry), (off_t)(a / 4096 * sizeof(entry))) != sizeof(entry)) continue;
    if ((entry >> 63) != 0) printf(" %lx", off + (a - lo));
  }
}

static void resident_pages(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  const int pagemap = open("/proc/self/pagemap", O_RDONLY);
  if (maps == NULL || pagemap < 0) { printf("resident: unknown\n"); return; }
  char line[1024];
  char readonly[4096] = "";
  printf("resident:");
  while (fgets(line, sizeof(line), maps) != NULL) {
    unsigned long lo, hi, off;
    char perm[8];
    if (strstr(line, "libmimalloc") == NULL || sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perm, &off) != 4) continue;
    if (perm[2] == 'x') print_resident(pagemap, lo, hi, off);
    else if (perm[1] != 'w') {   /* (listed after the code's line) */
      const size_t n = strlen(readonly);
      snprintf(readonly + n, sizeof(readonly) - n, "%lx %lx %lx\n", lo, hi, off);
    }
  }
  printf("\n");
  for (char* r = readonly; *r != 0; r = strchr(r, '\n') + 1) {
    unsigned long lo, hi, off;
    if (sscanf(r, "%lx %lx %lx", &lo, &hi, &off) != 3) break;
    printf("readonly %lx-%lx:", off, off + (hi - lo));
    print_resident(pagemap, lo, hi, off);
    printf("\n");
  }
  fclose(maps);
  close(pagemap);
}

static void* worker(void* arg) {
  char** blocks = (char**)arg;
  for (int i = 0; i < 100; i++) free(blocks[i]);   /* frees of another thread's blocks */
  void* p = malloc(200);
  free(p);
  return NULL;
}

int main(void) {
  char* s = (char*)malloc(100);
  strcpy(s, "hello");
  s = (char*)realloc(s, 1000);
  int* z = (int*)calloc(100, sizeof(int));
  char* blocks[100];
  for (int i = 0; i < 100; i++) blocks[i] = (char*)malloc(16 + 8 * (size_t)i);
  pthread_t t;
  if (pthread_create(&t, NULL, &worker, blocks) == 0) pthread_join(t, NULL);
  printf("%s %d\n", s, z[7]);
  free(z);
  free(s);
  atexit(&resident_pages);
  return 0;
}
