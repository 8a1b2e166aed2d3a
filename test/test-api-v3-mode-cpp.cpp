/* SPDX-License-Identifier: MIT */
// test-api-v3-mode-cpp.cpp -- the C++ side of a program written for mimalloc 3.x, compiled with
// MI_V3_API (test/CMakeLists.txt): the declarations v3 gives other exception specifications,
// and the heap STL allocators over a heap that several threads allocate in (v3's heap; in v2
// mode a heap is its thread's alone). Like test-api-v3-mode.c it uses no v2-only name.
#include <cstring>
#include <thread>
#include <vector>

#include "mimalloc.h"
#include "testing.h"
#include "rss-guard.h"

// v3 declares mi_heap_collect without noexcept, the theap functions with it
static_assert(!noexcept(mi_heap_collect(nullptr, false)), "v3's mi_heap_collect");
static_assert(noexcept(mi_theap_collect(nullptr, false)), "v3's mi_theap_collect");
static_assert(!std::is_same<mi_theap_t, mi_heap_t>::value, "a theap is its own type");
static_assert(std::is_same<mi_arena_id_t, void*>::value, "v3's arena id");
static_assert(_mi_option_last == 47, "v3's options");

// Every thread appends to its own vector, all of them allocating in the one heap.
static void fill(mi_heap_t* heap, std::vector<long, mi_heap_stl_allocator<long>>* out, long base) {
  mi_heap_stl_allocator<long> alloc(heap);
  std::vector<long, mi_heap_stl_allocator<long>> v(alloc);
  for (long i = 0; i < 5000; i++) v.push_back(base + i);
  CHECK(mi_heap_of(v.data()) == heap);
  *out = std::move(v);   // handed to the main thread, which frees it
}

static void test_shared_allocators() {
  mi_heap_t* heap = mi_heap_new();
  CHECK(heap != nullptr);
  if (heap == nullptr) return;
  std::vector<long, mi_heap_stl_allocator<long>> results[4] = {
    std::vector<long, mi_heap_stl_allocator<long>>(mi_heap_stl_allocator<long>(heap)),
    std::vector<long, mi_heap_stl_allocator<long>>(mi_heap_stl_allocator<long>(heap)),
    std::vector<long, mi_heap_stl_allocator<long>>(mi_heap_stl_allocator<long>(heap)),
    std::vector<long, mi_heap_stl_allocator<long>>(mi_heap_stl_allocator<long>(heap)),
  };
  std::thread threads[4];
  for (int t = 0; t < 4; t++) threads[t] = std::thread(fill, heap, &results[t], 100000L * t);
  for (int t = 0; t < 4; t++) threads[t].join();
  for (int t = 0; t < 4; t++) {
    CHECK_EQ(results[t].size(), 5000);
    CHECK_EQ(results[t][4999], 100000L * t + 4999);
    results[t].reserve(2 * results[t].capacity());   // moved by the main thread, in the same heap
    CHECK(mi_heap_of(results[t].data()) == heap);
    CHECK_EQ(results[t][0], 100000L * t);
  }
  for (auto& r : results) { r.clear(); r.shrink_to_fit(); }
  mi_heap_delete(heap);

  // a destroying allocator made in one thread, used in another, destroyed with its last copy
  mi_heap_destroy_stl_allocator<int> destroying;
  std::thread other([&destroying]() {
    std::vector<int, mi_heap_destroy_stl_allocator<int>> v(destroying);
    for (int i = 0; i < 1000; i++) v.push_back(i);
    CHECK_EQ(v[999], 999);
    destroying.collect(true);
  });
  other.join();
  int* p = destroying.allocate(10);
  CHECK(p != nullptr);
  std::memset(p, 0, 10 * sizeof(int));
}

int main() {
  test_rss_guard_start("api-v3-mode-cpp", 0.0, 64);   /* (a few MiB at most: a fixed bound) */
  test_shared_allocators();
  return test_summary("api-v3-mode-cpp", "%s", "C++ with MI_V3_API");
}
