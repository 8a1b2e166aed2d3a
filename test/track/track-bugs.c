/* SPDX-License-Identifier: MIT */
/* One deliberate heap bug per case, for the tracking builds (run-track.py): the memory checker
   must report each at the line marked "BUG <case>", and nothing for `clean`. The program finds
   our library through dlsym, so it also runs unlinked under LD_PRELOAD, and prints whether
   malloc's blocks are ours (a checker's own malloc would make the test meaningless). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int sink;

/* A new thread's first block is the first of its first segment's first page: what lies
   before it is the segment's header, unless the page's room before its first block is there. */
static void* first_underflow(void* arg) {
  char* q = malloc(24);
  sink = q[-1];   /* BUG first-underflow */
  free(q);
  return arg;
}

int main(int argc, char** argv) {
  const char* what = (argc > 1 ? argv[1] : "clean");
  bool (*in_heap)(const void*) = (bool (*)(const void*))dlsym(RTLD_DEFAULT, "mi_is_in_heap_region");
  char* p = malloc(10);
  printf("ours %d\n", (in_heap != NULL && in_heap(p)) ? 1 : 0);
  fflush(stdout);
  memcpy(p, "123456789", 10);
  if (strcmp(what, "overflow") == 0) {
    p[10] = 'x';   /* BUG overflow */
  }
  else if (strcmp(what, "underflow") == 0) {
    char* q0 = malloc(24);   /* q's neighbour below it (a fresh page hands out in address order) */
    char* q = malloc(24);
    sink = q[-1];   /* BUG underflow */
    free(q);
    free(q0);
  }
  else if (strcmp(what, "first-underflow") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, &first_underflow, NULL) != 0 || pthread_join(t, NULL) != 0) return 2;
  }
  else if (strcmp(what, "uaf") == 0) {
    char* q = malloc(40);
    q[0] = 1;
    free(q);
    q[1] = 2;   /* BUG uaf */
  }
  else if (strcmp(what, "double-free") == 0) {
    char* q = malloc(20);
    free(q);
    free(q);   /* BUG double-free */
  }
  else if (strcmp(what, "uninit") == 0) {
    int* u = malloc(4 * sizeof(int));
    if (u[2] > 0) sink = 1;   /* BUG uninit */
    free(u);
  }
  else if (strcmp(what, "leak") == 0) {
    char* l = malloc(1000);   /* BUG leak */
    l[0] = 1;
    sink = l[0];
    l = NULL;
  }
  else if (strcmp(what, "clean") == 0) {
    /* the same operations done right, and the API's resize paths */
    char* q = malloc(24);
    q[23] = 1;
    q = realloc(q, 16);      /* in place, smaller */
    q[15] = 2;
    q = realloc(q, 4000);    /* moves */
    q[3999] = 3;
    int* u = calloc(4, sizeof(int));
    if (u[2] != 0) sink = 1;
    void* a = aligned_alloc(256, 100);
    memset(a, 1, 100);
    free(a);
    free(u);
    free(q);
  }
  else {
    fprintf(stderr, "unknown case %s\n", what);
    return 2;
  }
  free(p);
  puts("done");
  return 0;
}
