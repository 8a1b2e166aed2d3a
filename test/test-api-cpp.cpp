/* SPDX-License-Identifier: MIT */
// test-api-cpp.cpp -- the C++ side of the API: the mi_new family with the standard new-handler
// and std::bad_alloc semantics (our deliberate difference 2: call the installed handler, then
// throw; the nothrow forms return NULL; never abort), and the STL allocators.
//
// It also stands for "a program written for mimalloc v2's API compiles unchanged": the only
// project header included is mimalloc.h, and std::shared_ptr / std::is_same / std::true_type are
// used through the transitive includes that mimalloc.h promises (<memory>, <type_traits>).
//
// Every scenario that must end in std::bad_alloc runs in a forked child process, so an abort()
// or std::terminate() is reported as a failure of that scenario instead of ending the test.
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mimalloc.h"
#include "testing.h"

#if !defined(MI_HAS_HEAP_STL_ALLOCATOR) || MI_HAS_HEAP_STL_ALLOCATOR != 1
#error "MI_HAS_HEAP_STL_ALLOCATOR must be 1 in C++11 and later"
#endif

static const size_t kHuge = (size_t)PTRDIFF_MAX;     // never satisfiable, no overflow
static const size_t kOverflowCount = SIZE_MAX / 4;   // kOverflowCount * 8 overflows

static volatile size_t opaque_sink;
static size_t opaque(size_t x) { opaque_sink = x; return opaque_sink; }

// ---------------------------------------------------------------------------------------------
// Compile-time compatibility
// ---------------------------------------------------------------------------------------------

// noexcept is part of the function type: the plain allocation functions are noexcept, the
// throwing mi_new family is not.
static_assert(noexcept(mi_malloc(1)), "mi_malloc must be noexcept");
static_assert(noexcept(mi_free(nullptr)), "mi_free must be noexcept");
static_assert(noexcept(mi_new_nothrow(1)), "mi_new_nothrow must be noexcept");
static_assert(noexcept(mi_new_aligned_nothrow(1, 16)), "mi_new_aligned_nothrow must be noexcept");
static_assert(!noexcept(mi_new(1)), "mi_new must not be noexcept");
static_assert(!noexcept(mi_new_aligned(1, 16)), "mi_new_aligned must not be noexcept");
static_assert(!noexcept(mi_new_n(1, 1)), "mi_new_n must not be noexcept");
static_assert(!noexcept(mi_new_realloc(nullptr, 1)), "mi_new_realloc must not be noexcept");
static_assert(!noexcept(mi_new_reallocn(nullptr, 1, 1)), "mi_new_reallocn must not be noexcept");
static_assert(!noexcept(mi_heap_alloc_new(nullptr, 1)), "mi_heap_alloc_new must not be noexcept");
static_assert(!noexcept(mi_heap_alloc_new_n(nullptr, 1, 1)), "mi_heap_alloc_new_n must not be noexcept");
#if MI_MALLOC_VERSION >= 20400
static_assert(!noexcept(mi_posix_memalign(nullptr, 0, 0)), "mi_posix_memalign is not noexcept in 2.4.x");
static wchar_t* (*const wcsdup_type_check)(const wchar_t*) noexcept = &mi_wcsdup;
static int (*const wdupenv_type_check)(wchar_t**, size_t*, const wchar_t*) noexcept = &mi_wdupenv_s;
#endif
static void* (*const malloc_type_check)(size_t) noexcept = &mi_malloc;
static void* (*const new_type_check)(size_t) = &mi_new;

// The STL allocator shapes.
static_assert(std::is_same<mi_stl_allocator<int>::value_type, int>::value, "value_type");
static_assert(std::is_same<mi_stl_allocator<int>::rebind<double>::other, mi_stl_allocator<double>>::value, "rebind");
static_assert(std::is_same<std::allocator_traits<mi_stl_allocator<int>>::rebind_alloc<long>, mi_stl_allocator<long>>::value, "rebind_alloc");
static_assert(std::is_same<mi_heap_stl_allocator<int>::rebind<char>::other, mi_heap_stl_allocator<char>>::value, "heap rebind");
static_assert(std::is_same<mi_heap_destroy_stl_allocator<int>::rebind<char>::other, mi_heap_destroy_stl_allocator<char>>::value, "destroy rebind");
static_assert(std::is_same<std::allocator_traits<mi_heap_stl_allocator<int>>::rebind_alloc<short>, mi_heap_stl_allocator<short>>::value, "heap rebind_alloc");
static_assert(mi_stl_allocator<int>::is_always_equal::value, "mi_stl_allocator is always equal");
static_assert(!mi_heap_stl_allocator<int>::is_always_equal::value, "heap allocators are not always equal");
static_assert(!mi_heap_destroy_stl_allocator<int>::is_always_equal::value, "heap allocators are not always equal");
static_assert(mi_stl_allocator<int>::propagate_on_container_copy_assignment::value, "pocca");
static_assert(mi_stl_allocator<int>::propagate_on_container_move_assignment::value, "pocma");
static_assert(mi_stl_allocator<int>::propagate_on_container_swap::value, "pocs");
static_assert(std::is_same<mi_stl_allocator<int>::size_type, std::size_t>::value, "size_type");
static_assert(std::is_same<mi_stl_allocator<int>::difference_type, std::ptrdiff_t>::value, "difference_type");
static_assert(std::is_nothrow_default_constructible<mi_stl_allocator<int>>::value, "noexcept default ctor");
static_assert(std::is_nothrow_copy_constructible<mi_stl_allocator<int>>::value, "noexcept copy ctor");

// ---------------------------------------------------------------------------------------------
// Child-process scenarios
// ---------------------------------------------------------------------------------------------

static int handler_calls = 0;
static int handler_limit = 0;

// Counts its calls and uninstalls itself on the handler_limit-th call.
static void counting_handler() {
  handler_calls++;
  if (handler_calls >= handler_limit) std::set_new_handler(nullptr);
}
// A handler may also end the loop by throwing bad_alloc itself (the standard allows it).
static void throwing_handler() {
  handler_calls++;
  throw std::bad_alloc();
}

static void install_counting_handler(int limit) {
  handler_calls = 0;
  handler_limit = limit;
  std::set_new_handler(limit > 0 ? &counting_handler : nullptr);
}

// Runs f in a forked child; the child must exit normally without failed checks.
template <class F>
static void in_child(const char* name, F f) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) { CHECK_MSG(false, "%s: fork failed", name); return; }
  if (pid == 0) {
    long before = test_failure_count();
    try {
      f();
    }
    catch (...) {
      CHECK_MSG(false, "%s: unexpected exception escaped", name);
    }
    fflush(stdout);
    fflush(stderr);
    _exit(test_failure_count() > before ? 1 : 0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status)) {
    CHECK_MSG(false, "%s: the child died of signal %d (%s) -- it must throw std::bad_alloc, never abort", name,
              WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  else {
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child reported failed checks", name);
  }
}

// Calls alloc() with a handler that uninstalls itself after `limit` calls: alloc must call it
// exactly `expected_calls` times (or at most `limit` times when expected_calls < 0) and then
// throw std::bad_alloc.
template <class F>
static void expect_bad_alloc(const char* name, int limit, int expected_calls, F alloc) {
  in_child(name, [&]() {
    install_counting_handler(limit);
    bool thrown = false;
    void* p = nullptr;
    try {
      p = alloc();
    }
    catch (const std::bad_alloc&) {
      thrown = true;
    }
    CHECK_MSG(thrown, "%s: no std::bad_alloc (returned %p)", name, p);
    if (expected_calls >= 0) {
      CHECK_MSG(handler_calls == expected_calls, "%s: new handler called %d times, expected %d", name, handler_calls, expected_calls);
    }
    else {
      CHECK_MSG(handler_calls <= limit, "%s: new handler called %d times (limit %d)", name, handler_calls, limit);
    }
    std::set_new_handler(nullptr);
  });
}

// A nothrow form must run the handler loop and then return NULL.
template <class F>
static void expect_null(const char* name, int limit, F alloc) {
  in_child(name, [&]() {
    install_counting_handler(limit);
    errno = 0;
    void* p = alloc();
    CHECK_MSG(p == nullptr, "%s: expected NULL, got %p", name, p);
    CHECK_MSG(errno == ENOMEM, "%s: errno %d, expected ENOMEM", name, errno);
    CHECK_MSG(handler_calls == limit, "%s: new handler called %d times, expected %d", name, handler_calls, limit);
    std::set_new_handler(nullptr);
  });
}

static void test_new_failures() {
  for (int limit = 0; limit <= 3; limit += 3) {  // no handler, then a handler that gives up after 3 calls
    expect_bad_alloc("mi_new(huge)", limit, limit, [] { return mi_new(opaque(kHuge)); });
    expect_bad_alloc("mi_new_aligned(huge)", limit, limit, [] { return mi_new_aligned(opaque(kHuge), 64); });
    expect_bad_alloc("mi_new_aligned(huge, 1 MiB)", limit, limit, [] { return mi_new_aligned(opaque(kHuge), 1 << 20); });
    expect_bad_alloc("mi_new_n(1, huge)", limit, limit, [] { return mi_new_n(1, opaque(kHuge)); });
    expect_bad_alloc("mi_new_n(overflow)", limit, -1, [] { return mi_new_n(opaque(kOverflowCount), 8); });
    expect_bad_alloc("mi_heap_alloc_new(huge)", limit, limit, [] {
      mi_heap_t* h = mi_heap_new();
      return mi_heap_alloc_new(h, opaque(kHuge));
    });
    expect_bad_alloc("mi_heap_alloc_new_n(1, huge)", limit, limit, [] { return mi_heap_alloc_new_n(mi_heap_get_default(), 1, opaque(kHuge)); });
    expect_bad_alloc("mi_heap_alloc_new_n(overflow)", limit, -1, [] { return mi_heap_alloc_new_n(mi_heap_get_default(), opaque(kOverflowCount), 8); });
    expect_null("mi_new_nothrow(huge)", limit, [] { return mi_new_nothrow(opaque(kHuge)); });
    expect_null("mi_new_aligned_nothrow(huge)", limit, [] { return mi_new_aligned_nothrow(opaque(kHuge), 256); });

    // realloc forms: on failure the original block stays valid and unchanged
    in_child("mi_new_realloc(p, huge)", [limit] {
      char* p = (char*)mi_new(100);
      memset(p, 'q', 100);
      install_counting_handler(limit);
      bool thrown = false;
      try { p = (char*)mi_new_realloc(p, opaque(kHuge)); }
      catch (const std::bad_alloc&) { thrown = true; }
      CHECK(thrown);
      CHECK_EQ(handler_calls, limit);
      CHECK(p[0] == 'q' && p[99] == 'q' && mi_usable_size(p) >= 100);
      std::set_new_handler(nullptr);
      mi_free(p);
    });
    in_child("mi_new_reallocn(p, overflow)", [limit] {
      char* p = (char*)mi_new(100);
      memset(p, 'r', 100);
      install_counting_handler(limit);
      bool thrown = false;
      try { p = (char*)mi_new_reallocn(p, opaque(kOverflowCount), 8); }
      catch (const std::bad_alloc&) { thrown = true; }
      CHECK(thrown);
      CHECK(handler_calls <= limit);
      install_counting_handler(limit);
      thrown = false;
      try { p = (char*)mi_new_reallocn(p, 1, opaque(kHuge)); }
      catch (const std::bad_alloc&) { thrown = true; }
      CHECK(thrown);
      CHECK_EQ(handler_calls, limit);
      CHECK(p[0] == 'r' && p[99] == 'r');
      std::set_new_handler(nullptr);
      mi_free(p);
    });
  }

  // a handler that throws bad_alloc itself: the exception reaches the caller after one call,
  // and the nothrow forms turn it into NULL
  in_child("mi_new with a throwing handler", [] {
    handler_calls = 0;
    std::set_new_handler(&throwing_handler);
    bool thrown = false;
    try { (void)mi_new(opaque(kHuge)); }
    catch (const std::bad_alloc&) { thrown = true; }
    CHECK(thrown);
    CHECK_EQ(handler_calls, 1);
    std::set_new_handler(nullptr);
  });
  in_child("mi_new_nothrow with a throwing handler", [] {
    handler_calls = 0;
    std::set_new_handler(&throwing_handler);
    void* p = mi_new_nothrow(opaque(kHuge));
    CHECK(p == nullptr);
    CHECK_EQ(handler_calls, 1);
    p = mi_new_aligned_nothrow(opaque(kHuge), 64);
    CHECK(p == nullptr);
    CHECK_EQ(handler_calls, 2);
    std::set_new_handler(nullptr);
  });

  // STL allocators report failure as std::bad_alloc too
  in_child("mi_stl_allocator::allocate(huge)", [] {
    mi_stl_allocator<int> a;
    bool thrown = false;
    try { (void)a.allocate(opaque(kHuge / 2)); }
    catch (const std::bad_alloc&) { thrown = true; }
    CHECK(thrown);
    std::vector<double, mi_stl_allocator<double>> v;
    thrown = false;
    try { v.reserve(v.get_allocator().max_size()); }
    catch (const std::bad_alloc&) { thrown = true; }
    CHECK(thrown);
  });
  in_child("mi_heap_stl_allocator::allocate(huge)", [] {
    mi_heap_stl_allocator<int> a;
    bool thrown = false;
    try { (void)a.allocate(opaque(kHuge / 8)); }
    catch (const std::bad_alloc&) { thrown = true; }
    CHECK(thrown);
    mi_heap_destroy_stl_allocator<long> d;
    thrown = false;
    try { (void)d.allocate(opaque(kOverflowCount)); }
    catch (const std::bad_alloc&) { thrown = true; }
    CHECK(thrown);
  });
}

// ---------------------------------------------------------------------------------------------
// Successful C++ helper calls
// ---------------------------------------------------------------------------------------------

static void test_new_success() {
  errno = 4242;
  char* p = (char*)mi_new(100);
  CHECK(p != nullptr && mi_usable_size(p) >= 100);
  memset(p, 'a', 100);
  p = (char*)mi_new_realloc(p, 100000);
  CHECK(p != nullptr && p[0] == 'a' && p[99] == 'a' && mi_usable_size(p) >= 100000);
  p = (char*)mi_new_reallocn(p, 1000, 1000);
  CHECK(p != nullptr && p[0] == 'a' && p[99] == 'a' && mi_usable_size(p) >= 1000000);
  mi_free(p);
  for (size_t align = 1; align <= ((size_t)1 << 24); align *= 2) {
    void* q = mi_new_aligned(1000, align);
    CHECK_ALIGNED(q, align);
    void* r = mi_new_aligned_nothrow(10, align);
    CHECK_ALIGNED(r, align);
    mi_free(q);
    mi_free(r);
  }
  void* n = mi_new_n(1000, 8);
  CHECK(n != nullptr && mi_usable_size(n) >= 8000);
  mi_free(n);
  void* z = mi_new(0);
  CHECK(z != nullptr);
  mi_free(z);
  void* nt = mi_new_nothrow(50);
  CHECK(nt != nullptr);
  mi_free(nt);
  mi_heap_t* h = mi_heap_new();
  void* hp = mi_heap_alloc_new(h, 500);
  void* hn = mi_heap_alloc_new_n(h, 50, 10);
  CHECK(mi_heap_contains_block(h, hp) && mi_heap_contains_block(h, hn));
  CHECK_GE(mi_usable_size(hn), 500);
  mi_free(hp);
  mi_free(hn);
  mi_heap_delete(h);
  CHECK_EQ(errno, 4242);  // successful calls leave errno alone
}

// ---------------------------------------------------------------------------------------------
// STL allocators
// ---------------------------------------------------------------------------------------------

using mi_string = std::basic_string<char, std::char_traits<char>, mi_stl_allocator<char>>;
struct mi_string_hash {  // std::hash is only specialised for std::allocator strings
  size_t operator()(const mi_string& s) const { return std::hash<std::string_view>()(std::string_view(s.data(), s.size())); }
};

static bool count_visitor(const mi_heap_t*, const mi_heap_area_t*, void* block, size_t, void* arg) {
  if (block != nullptr) (*(size_t*)arg)++;
  return true;
}
static size_t heap_live_blocks(mi_heap_t* heap) {
  size_t n = 0;
  (void)mi_heap_visit_blocks(heap, true, &count_visitor, &n);
  return n;
}

static void test_stl_default() {
  std::vector<int, mi_stl_allocator<int>> v;
  for (int i = 0; i < 100000; i++) v.push_back(i);
  long long sum = 0;
  for (int x : v) sum += x;
  CHECK_EQ(sum, 100000LL * 99999 / 2);
  CHECK(mi_is_in_heap_region(v.data()));
  CHECK(mi_heap_contains_block(mi_heap_get_default(), v.data()));
  v.resize(10);
  v.shrink_to_fit();
  CHECK_EQ(v.size(), 10);

  std::map<int, mi_string, std::less<int>, mi_stl_allocator<std::pair<const int, mi_string>>> m;
  for (int i = 0; i < 2000; i++) m[i] = mi_string("value number ") + mi_string(std::to_string(i).c_str()) + mi_string(40, 'x');
  CHECK_EQ(m.size(), 2000);
  CHECK(m[1234] == mi_string("value number 1234") + mi_string(40, 'x'));
  CHECK(mi_is_in_heap_region(m[7].data()));
  for (int i = 0; i < 2000; i += 2) m.erase(i);
  CHECK_EQ(m.size(), 1000);

  std::unordered_map<mi_string, int, mi_string_hash, std::equal_to<mi_string>, mi_stl_allocator<std::pair<const mi_string, int>>> um;
  for (int i = 0; i < 5000; i++) um[mi_string(std::to_string(i * 7).c_str())] = i;
  CHECK_EQ(um.size(), 5000);
  CHECK_EQ(um[mi_string("49")], 7);
  CHECK_EQ(um.count(mi_string("50")), 0);

  mi_string s(100000, 'z');
  s += "end";
  CHECK(s.size() == 100003 && s[99999] == 'z' && s.substr(100000) == "end");
  CHECK(mi_is_in_heap_region(s.data()));

  // equality: always equal, across value types
  mi_stl_allocator<int> a;
  mi_stl_allocator<double> b;
  mi_stl_allocator<int> c(b);  // converting constructor
  CHECK(a == b);
  CHECK(!(a != b));
  CHECK(a == c);
  CHECK(a.max_size() == (size_t)PTRDIFF_MAX / sizeof(int));
  CHECK(b.max_size() == (size_t)PTRDIFF_MAX / sizeof(double));
  int* ip = a.allocate(10);
  CHECK(ip != nullptr && mi_usable_size(ip) >= 10 * sizeof(int));
  a.deallocate(ip, 10);
  mi_stl_allocator<int> sel = a.select_on_container_copy_construction();
  CHECK(sel == a);
}

static void test_stl_heap() {
  // default-constructed: a fresh heap per allocator, shared by copies and rebinds
  {
    mi_heap_stl_allocator<int> a;
    mi_heap_stl_allocator<int> b;
    mi_heap_stl_allocator<int> a2(a);
    mi_heap_stl_allocator<double> ad(a);  // rebind copy
    CHECK(a != b);
    CHECK(!(a == b));
    CHECK(a == a2);
    CHECK(a == ad);
    CHECK(ad != b);
    std::vector<int, mi_heap_stl_allocator<int>> v(a);
    for (int i = 0; i < 50000; i++) v.push_back(i);
    CHECK(v[49999] == 49999);
    CHECK(mi_is_in_heap_region(v.data()));
    CHECK(!mi_heap_contains_block(mi_heap_get_default(), v.data()));  // not the default heap
    std::vector<int, mi_heap_stl_allocator<int>> copy(v);               // select_on_container_copy_construction
    CHECK(copy.get_allocator() == v.get_allocator());
    CHECK(copy[123] == 123);
    std::map<int, int, std::less<int>, mi_heap_stl_allocator<std::pair<const int, int>>> m(std::less<int>(), a);
    for (int i = 0; i < 1000; i++) m[i] = -i;
    CHECK(m[999] == -999);
    a.collect(false);
    a.collect(true);
    CHECK(v[100] == 100 && m[5] == -5);
  }  // the heap is deleted with the last copy

  // from an explicit heap: allocates there, never deletes it
  mi_heap_t* h = mi_heap_new();
  {
    mi_heap_stl_allocator<int> a(h);
    mi_heap_stl_allocator<int> b(h);
    CHECK(a == b);  // same heap
    std::vector<int, mi_heap_stl_allocator<int>> v(a);
    for (int i = 0; i < 10000; i++) v.push_back(i);
    CHECK(mi_heap_contains_block(h, v.data()));
    std::map<int, long, std::less<int>, mi_heap_stl_allocator<std::pair<const int, long>>> m(std::less<int>(), b);
    for (int i = 0; i < 100; i++) m[i] = i;
    CHECK_EQ(heap_live_blocks(h), 101);  // vector buffer (old ones deallocated) + 100 nodes
  }
  CHECK_EQ(heap_live_blocks(h), 0);  // deallocate freed everything
  void* still = mi_heap_malloc(h, 10);  // the heap is still alive
  CHECK(still != nullptr && mi_heap_contains_block(h, still));
  mi_free(still);
  mi_heap_delete(h);

  // destroy allocator: deallocate does nothing; the heap is destroyed with the last copy
  {
    mi_heap_destroy_stl_allocator<int> a;
    mi_heap_destroy_stl_allocator<int> b;
    mi_heap_destroy_stl_allocator<long> al(a);
    CHECK(a != b && a == al);
    std::vector<int, mi_heap_destroy_stl_allocator<int>> v(a);
    for (int i = 0; i < 100000; i++) v.push_back(i);
    CHECK(v[77777] == 77777);
    std::unordered_map<int, int, std::hash<int>, std::equal_to<int>, mi_heap_destroy_stl_allocator<std::pair<const int, int>>> um(
        16, std::hash<int>(), std::equal_to<int>(), a);
    for (int i = 0; i < 3000; i++) um[i] = i * 2;
    CHECK(um[2999] == 5998);
  }
  mi_heap_t* hd = mi_heap_new();
  {
    mi_heap_destroy_stl_allocator<int> a(hd);
    std::vector<int, mi_heap_destroy_stl_allocator<int>> v(a);
    for (int i = 0; i < 10000; i++) v.push_back(i);
    CHECK(mi_heap_contains_block(hd, v.data()));
    CHECK_GE(heap_live_blocks(hd), 2);  // the buffers left behind by growth were not freed
  }
  CHECK_GE(heap_live_blocks(hd), 2);
  mi_heap_destroy(hd);  // an explicit heap is ours to destroy
}

// ---------------------------------------------------------------------------------------------
// A typical mimalloc v2 program, written against the public header only
// ---------------------------------------------------------------------------------------------

struct node_t { node_t* next; int value; };

static void test_v2_program() {
  mi_heap_t* heap = mi_heap_new();
  node_t* list = nullptr;
  for (int i = 0; i < 1000; i++) {
    node_t* n = mi_heap_malloc_tp(heap, node_t);
    n->value = i;
    n->next = list;
    list = n;
  }
  size_t count = 0;
  bool done = mi_heap_visit_blocks(heap, true,
      [](const mi_heap_t*, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) -> bool {
        if (block != nullptr && block_size >= sizeof(node_t) && area->block_size == block_size) (*(size_t*)arg)++;
        return true;
      },
      &count);
  CHECK(done);
  CHECK_EQ(count, 1000);
  double* d = (double*)mi_malloc_aligned(64 * sizeof(double), 64);
  CHECK_ALIGNED(d, 64);
  mi_free(d);
  int* arr = mi_calloc_tp(int, 100);
  arr = mi_recalloc_tp(arr, int, 200);
  CHECK(arr != nullptr && arr[150] == 0);
  mi_free(arr);
  long sum = 0;
  for (node_t* n = list; n != nullptr; n = n->next) sum += n->value;
  CHECK_EQ(sum, 999L * 1000 / 2);
  mi_heap_destroy(heap);
  CHECK(malloc_type_check != nullptr && new_type_check != nullptr);
#if MI_MALLOC_VERSION >= 20400
  CHECK(wcsdup_type_check != nullptr && wdupenv_type_check != nullptr);
#endif
  CHECK_EQ(mi_version(), MI_MALLOC_VERSION);
}

int include_only_check();  // test-api-cpp-include.cpp

int main() {
  CHECK_EQ(include_only_check(), 3);
  test_new_success();
  test_stl_default();
  test_stl_heap();
  test_v2_program();
  test_new_failures();
  return test_summary("api-cpp", "mi_new family with new-handler/bad_alloc (each failure in a child process), "
                                 "mi_stl_allocator, mi_heap_stl_allocator, mi_heap_destroy_stl_allocator, v2 program");
}
