/* SPDX-License-Identifier: MIT */
/* A small real program on the library: counts word frequencies of a text (a file given as
   argument, or a generated one) in a hash table whose nodes and strings come from a
   first-class heap, then hands half of a batch of blocks to a second thread to free. */
#include <mimalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <ctype.h>

typedef struct node_s { struct node_s* next; char* word; size_t count; } node_t;

typedef struct table_s { node_t** buckets; size_t nbuckets; size_t nwords; mi_heap_t* heap; } table_t;

static size_t hash(const char* s) {
  size_t h = 1469598103934665603ULL;
  while (*s) { h ^= (unsigned char)*s++; h *= 1099511628211ULL; }
  return h;
}

static void table_grow(table_t* t) {
  size_t n = (t->nbuckets == 0 ? 64 : t->nbuckets * 2);
  node_t** b = mi_heap_calloc_tp(t->heap, node_t*, n);
  for (size_t i = 0; i < t->nbuckets; i++) {
    for (node_t* e = t->buckets[i]; e != NULL; ) {
      node_t* next = e->next;
      size_t j = hash(e->word) & (n - 1);
      e->next = b[j]; b[j] = e;
      e = next;
    }
  }
  mi_free(t->buckets);
  t->buckets = b; t->nbuckets = n;
}

static void table_add(table_t* t, const char* word) {
  if (t->nwords >= t->nbuckets) table_grow(t);
  size_t i = hash(word) & (t->nbuckets - 1);
  for (node_t* e = t->buckets[i]; e != NULL; e = e->next) {
    if (strcmp(e->word, word) == 0) { e->count++; return; }
  }
  node_t* e = mi_heap_malloc_tp(t->heap, node_t);
  e->word = mi_heap_strdup(t->heap, word);
  e->count = 1;
  e->next = t->buckets[i]; t->buckets[i] = e;
  t->nwords++;
}

static void* free_worker(void* arg) {
  void** blocks = (void**)arg;
  for (size_t i = 0; blocks[i] != NULL; i++) mi_free(blocks[i]);   /* cross-thread frees */
  return NULL;
}

int main(int argc, char** argv) {
  table_t t = { NULL, 0, 0, mi_heap_new() };
  char word[64]; size_t len = 0; size_t total = 0;
  FILE* f = (argc > 1 ? fopen(argv[1], "r") : NULL);
  if (argc > 1 && f == NULL) { perror(argv[1]); return 1; }
  static const char* vocab[] = { "memory", "allocator", "thread", "heap", "page", "segment", "free", "list", "block", "fast" };
  unsigned long long rng = 42;
  for (size_t n = 0; ; n++) {
    int c;
    if (f != NULL) { c = fgetc(f); if (c == EOF) break; }
    else {
      if (n >= 200000) break;
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      const char* w = vocab[(rng >> 33) % 10];
      table_add(&t, w); total++;
      continue;
    }
    if (isalnum(c) && len < sizeof(word) - 1) { word[len++] = (char)tolower(c); }
    else if (len > 0) { word[len] = 0; table_add(&t, word); total++; len = 0; }
  }
  if (f != NULL) fclose(f);
  if (len > 0) { word[len] = 0; table_add(&t, word); total++; }

  node_t* best = NULL;
  for (size_t i = 0; i < t.nbuckets; i++)
    for (node_t* e = t.buckets[i]; e != NULL; e = e->next)
      if (best == NULL || e->count > best->count) best = e;
  printf("words: %zu, distinct: %zu, most frequent: \"%s\" (%zu times)\n",
         total, t.nwords, (best ? best->word : ""), (best ? best->count : 0));
  mi_heap_destroy(t.heap);   /* frees every node and string at once */

  /* hand blocks to another thread to free */
  enum { N = 10000 };
  void** blocks = mi_calloc_tp(void*, N + 1);
  for (size_t i = 0; i < N; i++) blocks[i] = mi_malloc(16 + (i % 512));
  pthread_t th;
  pthread_create(&th, NULL, &free_worker, blocks);
  pthread_join(th, NULL);
  mi_free(blocks);
  printf("allocator: mimalloc-compatible API version %d; %d blocks freed by a second thread\n", mi_version(), N);
  return 0;
}
