/* SPDX-License-Identifier: MIT */
// cxx-threads.cpp -- every operator new/delete variant from several threads, under
// LD_PRELOAD=libmimalloc.so (tests static-cxx-threads and static-cxx-threads-nopreload).
//
// Usage: test-static-cxx-threads <path of libmimalloc.so> [threads] [items per thread]
//
// The program is not linked to the library: it finds mi_is_in_heap_region with dlsym and
// checks that each of the 20 operators (dlsym(RTLD_DEFAULT, <mangled name>)) is defined by the
// library given as argument. Then each thread makes objects with one variant of new (plain,
// array, nothrow, aligned 32..4096, aligned nothrow, over-aligned types, containers) and sends
// them to another thread, which checks them and deletes them with the matching delete (plain,
// sized, aligned, sized aligned, nothrow, aligned nothrow): every object dies on a thread
// other than the one that made it. Without the preload the operator
// check fails ("_Znwm is defined in .../libstdc++.so.6").
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../testing.h"
#include "cxx-variants.h"

typedef bool (*is_in_heap_region_fun)(const void*);
static is_in_heap_region_fun mi_in_heap_region = nullptr;

static bool in_heap(const void* p) { return mi_in_heap_region == nullptr || mi_in_heap_region(p); }

static void check_operators(const char* library) {
  char want[PATH_MAX];
  CHECK_MSG(realpath(library, want) != nullptr, "cannot resolve %s", library);
  std::size_t count = 0;
  const cxx_operator* ops = cxx_operators(&count);
  CHECK_EQ(count, 20);
  const char* extra[] = { "malloc", "free", "posix_memalign" };
  for (std::size_t i = 0; i < count + 3; i++) {
    const char* name = (i < count ? ops[i].name : extra[i - count]);
    void* addr = dlsym(RTLD_DEFAULT, name);
    Dl_info def;
    char got[PATH_MAX] = "?";
    if (addr != nullptr && dladdr(addr, &def) != 0 && def.dli_fname != nullptr) {
      if (realpath(def.dli_fname, got) == nullptr) snprintf(got, sizeof(got), "%s", def.dli_fname);
    }
    CHECK_MSG(addr != nullptr && std::strcmp(got, want) == 0, "%s is defined in %s, not in %s", name, got, want);
    // the address the program itself calls (through its GOT) must be the same function
    if (i < count) CHECK_MSG(ops[i].addr == addr, "%s: the program uses %p, dlsym gives %p", name, ops[i].addr, addr);
  }
  mi_in_heap_region = reinterpret_cast<is_in_heap_region_fun>(dlsym(RTLD_DEFAULT, "mi_is_in_heap_region"));
  CHECK_MSG(mi_in_heap_region != nullptr, "mi_is_in_heap_region not found: the library is not loaded");
}

// ---- objects passed between threads ----

enum kind_t {
  K_NEW, K_NEW_SIZED, K_ARRAY, K_ARRAY_SIZED, K_NOTHROW, K_ARRAY_NOTHROW,
  K_ALIGNED, K_ALIGNED_SIZED, K_ARRAY_ALIGNED, K_ARRAY_ALIGNED_SIZED,
  K_ALIGNED_NOTHROW, K_ARRAY_ALIGNED_NOTHROW,
  K_OBJ64, K_OBJ256_ARRAY, K_UNIQUE4096, K_NOTHROW_OBJ256,
  K_STRING, K_VECTOR, K_MAP, K_UNORDERED_MAP,
  K_COUNT
};

struct item_t {
  int kind;
  int producer;
  void* p;
  std::size_t size;
  std::size_t align;
  unsigned seed;
};

typedef cxx_aligned<64> obj64;
typedef cxx_aligned<256> obj256;
typedef cxx_aligned<4096> obj4096;
typedef std::map<int, std::string> map_t;
typedef std::unordered_map<std::string, int> umap_t;

static void fill(void* p, std::size_t n, unsigned seed) {
  unsigned char* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; i++) b[i] = static_cast<unsigned char>(seed + i * 13);
}
static bool verify(const void* p, std::size_t n, unsigned seed) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; i++) if (b[i] != static_cast<unsigned char>(seed + i * 13)) return false;
  return true;
}

static item_t make_item(test_rng_t* rng, int producer) {
  item_t it{};
  it.kind = static_cast<int>(test_rand_below(rng, K_COUNT));
  it.producer = producer;
  it.seed = static_cast<unsigned>(test_rand(rng));
  // mostly small blocks, some medium, rarely large
  const uint64_t r = test_rand_below(rng, 100);
  it.size = (r < 85 ? test_rand_range(rng, 1, 512) : r < 99 ? test_rand_range(rng, 513, 40000)
                                                             : test_rand_range(rng, 40001, 600000));
  it.align = std::size_t(32) << test_rand_below(rng, 8);       // 32 .. 4096
  const std::align_val_t al = static_cast<std::align_val_t>(it.align);
  const std::size_t n = it.size;
  switch (it.kind) {
    case K_NEW: case K_NEW_SIZED:             it.p = ::operator new(n); break;
    case K_ARRAY: case K_ARRAY_SIZED:         it.p = ::operator new[](n); break;
    case K_NOTHROW:                           it.p = ::operator new(n, std::nothrow); break;
    case K_ARRAY_NOTHROW:                     it.p = ::operator new[](n, std::nothrow); break;
    case K_ALIGNED: case K_ALIGNED_SIZED:     it.p = ::operator new(n, al); break;
    case K_ARRAY_ALIGNED: case K_ARRAY_ALIGNED_SIZED: it.p = ::operator new[](n, al); break;
    case K_ALIGNED_NOTHROW:                   it.p = ::operator new(n, al, std::nothrow); break;
    case K_ARRAY_ALIGNED_NOTHROW:             it.p = ::operator new[](n, al, std::nothrow); break;
    case K_OBJ64:        it.p = new obj64; it.align = 64; break;
    case K_OBJ256_ARRAY: it.size = 1 + n % 5; it.p = new obj256[it.size]; it.align = 256; break;
    case K_UNIQUE4096:   it.p = std::make_unique<obj4096>().release(); it.align = 4096; break;
    case K_NOTHROW_OBJ256: it.p = new (std::nothrow) obj256; it.align = 256; break;
    case K_STRING: {
      it.size = 1 + n % 3000;                 // filled one element at a time: keep it short
      std::string* s = new std::string;
      for (std::size_t i = 0; i < it.size; i++) s->push_back(static_cast<char>('a' + (it.seed + i) % 26));
      it.p = s; it.align = alignof(std::string); break;
    }
    case K_VECTOR: {
      it.size = 1 + n % 3000;
      std::vector<unsigned>* v = new std::vector<unsigned>;
      for (std::size_t i = 0; i < it.size; i++) v->push_back(it.seed + static_cast<unsigned>(i));   // grows
      it.p = v; it.align = alignof(std::vector<unsigned>); break;
    }
    case K_MAP: {
      map_t* m = new map_t;
      for (std::size_t i = 0; i < n % 64; i++) (*m)[static_cast<int>(i)] = std::to_string(it.seed + i) + "-map";
      it.p = m; it.align = alignof(map_t); break;
    }
    case K_UNORDERED_MAP: {
      umap_t* m = new umap_t;
      for (std::size_t i = 0; i < n % 64; i++) (*m)["key-" + std::to_string(i)] = static_cast<int>(it.seed + i);
      it.p = m; it.align = alignof(umap_t); break;
    }
  }
  CHECK_MSG(it.p != nullptr && in_heap(it.p), "kind %d: %p not in our heap", it.kind, it.p);
  CHECK_ALIGNED(it.p, it.kind <= K_ARRAY_NOTHROW ? cxx_fundamental_align(n) : it.align);
  if (it.kind <= K_ARRAY_ALIGNED_NOTHROW && it.p != nullptr) fill(it.p, n, it.seed);
  return it;
}

// checks an item made by any thread and deletes it with the delete matching its new
static void destroy_item(const item_t& it) {
  const std::align_val_t al = static_cast<std::align_val_t>(it.align);
  const std::size_t n = it.size;
  bool ok = it.p != nullptr && in_heap(it.p);
  if (it.kind <= K_ARRAY_ALIGNED_NOTHROW && it.p != nullptr) ok = ok && verify(it.p, n, it.seed);
  switch (it.kind) {
    case K_NEW:                   ::operator delete(it.p); break;
    case K_NEW_SIZED:             ::operator delete(it.p, n); break;
    case K_ARRAY:                 ::operator delete[](it.p); break;
    case K_ARRAY_SIZED:           ::operator delete[](it.p, n); break;
    case K_NOTHROW:               ::operator delete(it.p, std::nothrow); break;
    case K_ARRAY_NOTHROW:         ::operator delete[](it.p, std::nothrow); break;
    case K_ALIGNED:               ::operator delete(it.p, al); break;
    case K_ALIGNED_SIZED:         ::operator delete(it.p, n, al); break;
    case K_ARRAY_ALIGNED:         ::operator delete[](it.p, al); break;
    case K_ARRAY_ALIGNED_SIZED:   ::operator delete[](it.p, n, al); break;
    case K_ALIGNED_NOTHROW:       ::operator delete(it.p, al, std::nothrow); break;
    case K_ARRAY_ALIGNED_NOTHROW: ::operator delete[](it.p, al, std::nothrow); break;
    case K_OBJ64: {
      obj64* o = static_cast<obj64*>(it.p);
      ok = ok && o->ok();
      delete o;
      break;
    }
    case K_OBJ256_ARRAY: {
      obj256* a = static_cast<obj256*>(it.p);
      for (std::size_t i = 0; i < n; i++) ok = ok && a[i].ok();
      delete[] a;
      break;
    }
    case K_UNIQUE4096: {
      std::unique_ptr<obj4096> u(static_cast<obj4096*>(it.p));
      ok = ok && u->ok();
      break;
    }
    case K_NOTHROW_OBJ256: {
      obj256* o = static_cast<obj256*>(it.p);
      ok = ok && o->ok();
      delete o;
      break;
    }
    case K_STRING: {
      std::string* s = static_cast<std::string*>(it.p);
      ok = ok && s->size() == n && (n == 0 || ((*s)[n - 1] == static_cast<char>('a' + (it.seed + n - 1) % 26)));
      if (n > 15) ok = ok && in_heap(s->data());
      delete s;
      break;
    }
    case K_VECTOR: {
      std::vector<unsigned>* v = static_cast<std::vector<unsigned>*>(it.p);
      ok = ok && v->size() == n && in_heap(v->data()) && (*v)[n - 1] == it.seed + static_cast<unsigned>(n - 1);
      delete v;
      break;
    }
    case K_MAP: {
      map_t* m = static_cast<map_t*>(it.p);
      ok = ok && m->size() == n % 64;
      if (!m->empty()) ok = ok && m->rbegin()->second == std::to_string(it.seed + m->size() - 1) + "-map";
      delete m;
      break;
    }
    case K_UNORDERED_MAP: {
      umap_t* m = static_cast<umap_t*>(it.p);
      ok = ok && m->size() == n % 64;
      if (!m->empty()) ok = ok && m->at("key-0") == static_cast<int>(it.seed);
      delete m;
      break;
    }
  }
  CHECK_MSG(ok, "kind %d (size %zu, alignment %zu) damaged or not ours", it.kind, it.size, it.align);
}

// Each thread has an inbox; an object is always sent to another thread's inbox, so every
// delete happens on a thread other than the one that made the object.
struct inbox_t {
  std::mutex lock;
  std::deque<item_t> items;
};

static std::atomic<long> cross_thread_deletes{0};
static std::atomic<long> same_thread_deletes{0};
static std::atomic<long> kinds_deleted[K_COUNT];

static void take_and_destroy(const item_t& it, int id) {
  (it.producer != id ? cross_thread_deletes : same_thread_deletes).fetch_add(1, std::memory_order_relaxed);
  kinds_deleted[it.kind].fetch_add(1, std::memory_order_relaxed);
  destroy_item(it);
}

static void worker(std::vector<inbox_t>* inboxes, int id, long count) {
  const int threads = static_cast<int>(inboxes->size());
  test_rng_t rng{ 0x9E3779B9u * static_cast<uint64_t>(id + 1) };
  cxx_exercise(&in_heap);                    // every variant once on this thread
  for (long i = 0; i < count; i++) {
    item_t made = make_item(&rng, id);
    const int to = (id + 1 + static_cast<int>(test_rand_below(&rng, static_cast<uint64_t>(threads - 1)))) % threads;
    {
      std::lock_guard<std::mutex> g((*inboxes)[to].lock);
      (*inboxes)[to].items.push_back(made);
    }
    item_t taken{};
    bool have = false;
    {
      // keep a backlog, so objects live a while and die in a different order than made
      inbox_t& mine = (*inboxes)[id];
      std::lock_guard<std::mutex> g(mine.lock);
      if (mine.items.size() > 32) { taken = mine.items.front(); mine.items.pop_front(); have = true; }
    }
    if (have) take_and_destroy(taken, id);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <libmimalloc.so> [threads] [items per thread]\n", argv[0]);
    return 2;
  }
  check_operators(argv[1]);
  const int threads = static_cast<int>(test_arg(argc, argv, 2, 6));
  const long count = test_arg(argc, argv, 3, 40000);
  if (threads < 2 || count < 1) {
    fprintf(stderr, "need at least 2 threads and 1 item\n");
    return 2;
  }

  cxx_exercise_failure(&in_heap);           // bad_alloc from the throwing forms, nullptr otherwise

  std::vector<inbox_t> inboxes(static_cast<std::size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) ts.emplace_back(worker, &inboxes, t, count);
  for (std::thread& t : ts) t.join();
  // the rest were made by threads that have exited; the main thread (-1) deletes them
  for (inbox_t& box : inboxes) {
    for (const item_t& it : box.items) take_and_destroy(it, -1);
    box.items.clear();
  }

  CHECK_EQ(same_thread_deletes.load(), 0);
  CHECK_EQ(cross_thread_deletes.load(), threads * count);
  for (int k = 0; k < K_COUNT; k++) CHECK_MSG(kinds_deleted[k].load() > 0, "kind %d never exercised", k);
  return test_summary("cxx-threads", "%d threads x %ld objects, %ld deleted by another thread",
                      threads, count, cross_thread_deletes.load());
}
