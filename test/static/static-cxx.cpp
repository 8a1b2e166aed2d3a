/* SPDX-License-Identifier: MIT */
// static-cxx.cpp -- the static override in C++ (test static-cxx): linked with mimalloc.o first.
//
// Checks that each of the 20 global operators new/delete
//  - is defined in this executable, and is what the whole process binds to (dlsym agrees,
//    so libstdc++'s own calls use it too),
//  - is the mi_ function that override.c aliases it to (mi_new, mi_new_nothrow, mi_new_aligned,
//    mi_new_aligned_nothrow, mi_free);
// that every variant returns blocks of our heap, also when called from inside libstdc++
// (std::string, streams, exception objects); that objects deleted on another thread work; and
// that failing `new` throws std::bad_alloc. Linked against plain libstdc++ every check of the
// operators and of the heap fails.
#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>

#include <mimalloc.h>
#include "../testing.h"
#include "cxx-variants.h"

static bool in_heap(const void* p) { return mi_is_in_heap_region(p); }

static void exe_marker() {}

static void check_operators() {
  Dl_info self;
  CHECK(dladdr(reinterpret_cast<void*>(&exe_marker), &self) != 0);
  void* const mi_targets[] = {
    reinterpret_cast<void*>(&mi_new), reinterpret_cast<void*>(&mi_new_nothrow),
    reinterpret_cast<void*>(&mi_new_aligned), reinterpret_cast<void*>(&mi_new_aligned_nothrow),
    reinterpret_cast<void*>(&mi_free) };
  // index into mi_targets for each entry of cxx_operators(), in its order
  static const int target_of[20] = { 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4 };
  std::size_t count = 0;
  const cxx_operator* ops = cxx_operators(&count);
  CHECK_EQ(count, 20);
  for (std::size_t i = 0; i < count && i < 20; i++) {
    void* global = dlsym(RTLD_DEFAULT, ops[i].name);
    CHECK_MSG(global == ops[i].addr, "%s: dlsym gives %p, the program uses %p", ops[i].name, global, ops[i].addr);
    Dl_info def;
    CHECK_MSG(dladdr(ops[i].addr, &def) != 0 && def.dli_fbase == self.dli_fbase,
              "%s is defined in %s, not in the executable", ops[i].name, def.dli_fname ? def.dli_fname : "?");
    CHECK_MSG(ops[i].addr == mi_targets[target_of[i]], "%s is not the mi_ function it aliases", ops[i].name);
  }
}

static int find_mimalloc_object(struct dl_phdr_info* info, size_t, void* arg) {
  const char* slash = info->dlpi_name != nullptr ? std::strrchr(info->dlpi_name, '/') : nullptr;
  if (slash != nullptr && std::strncmp(slash + 1, "libmimalloc", 11) == 0) {   // the file name only
    *static_cast<const char**>(arg) = info->dlpi_name;
    return 1;
  }
  return 0;
}

// allocations made inside libstdc++.so (it calls operator new and malloc through its PLT)
static void check_runtime_allocations() {
  std::string s(1000, 'x');                       // basic_string<char> is instantiated in libstdc++
  s.append(5000, 'y');
  CHECK(in_heap(s.data()));

  std::ostringstream os;
  for (int i = 0; i < 1000; i++) os << i << ',';
  std::string str = os.str();
  CHECK(str.size() > 2000 && in_heap(str.data()));

  bool caught = false;
  try {
    throw std::runtime_error(std::string(200, 'e'));
  } catch (const std::runtime_error& e) {
    caught = true;
    CHECK_MSG(in_heap(&e), "exception object %p (from __cxa_allocate_exception/malloc) not in our heap", (const void*)&e);
    CHECK_MSG(in_heap(e.what()), "exception message (libstdc++'s string) not in our heap");
  }
  CHECK(caught);

  std::map<int, std::string> m;
  std::unordered_map<std::string, int> um;
  for (int i = 0; i < 500; i++) {
    m[i] = std::string(40, static_cast<char>('a' + i % 26));
    um[std::to_string(i) + std::string(30, 'k')] = i;
  }
  CHECK(in_heap(m[250].data()) && in_heap(&*m.find(3)));
  CHECK(in_heap(&*um.begin()) && um.size() == 500);
}

// objects created on one thread and deleted on another
static void check_cross_thread() {
  const int N = 3000;
  std::vector<std::string*> strings(N);
  std::vector<cxx_aligned<256>*> aligned(N / 10);
  std::thread producer([&] {
    for (int i = 0; i < N; i++) strings[i] = new std::string(static_cast<std::size_t>(20 + i % 300), 'p');
    for (auto& a : aligned) a = new cxx_aligned<256>;
  });
  producer.join();
  std::thread consumer([&] {
    bool ok = true;
    for (int i = 0; i < N; i++) {
      ok = ok && in_heap(strings[i]) && strings[i]->size() == static_cast<std::size_t>(20 + i % 300);
      delete strings[i];
    }
    for (auto* a : aligned) { ok = ok && in_heap(a) && a->ok(); delete a; }
    CHECK(ok);
  });
  consumer.join();
  // the memory freed remotely is usable again
  mi_collect(true);
  std::vector<std::string> again(N, std::string(100, 'z'));
  CHECK(in_heap(again[N - 1].data()));
}

int main() {
  check_operators();
  const char* found = nullptr;
  dl_iterate_phdr(&find_mimalloc_object, static_cast<void*>(&found));
  CHECK_MSG(found == nullptr, "shared object %s is loaded", found);
  cxx_exercise(&in_heap);
  cxx_exercise_failure(&in_heap);
  check_runtime_allocations();
  check_cross_thread();
  return test_summary("static-cxx", "20 operators in the executable, C++ runtime blocks in our heap");
}
