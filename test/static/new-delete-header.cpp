/* SPDX-License-Identifier: MIT */
// new-delete-header.cpp -- <mimalloc-new-delete.h> (test static-new-delete-header).
//
// new-delete-header-defs.cpp includes the header; this unit does not, and uses the operators
// like any other code of the program. The program links libmimalloc.so (which, built with
// MI_OVERRIDE, exports the same operators): the program's own definitions must win. Checks
//  - each of the 20 operators is defined in this executable, and the whole process (dlsym:
//    libstdc++ and libmimalloc.so included) binds to that definition, not to libmimalloc.so's
//    or libstdc++'s;
//  - every variant gives blocks of our heap, aligned as asked; failing `new` throws
//    std::bad_alloc and the nothrow forms return nullptr.
// Without the header unit (or with an empty one) the operators are libmimalloc.so's and the
// first check fails.
#include <dlfcn.h>

#include <string>
#include <thread>
#include <vector>

#include <mimalloc.h>
#include "../testing.h"
#include "cxx-variants.h"

static bool in_heap(const void* p) { return mi_is_in_heap_region(p); }

static void exe_marker() {}

static void check_operators() {
  Dl_info self;
  CHECK(dladdr(reinterpret_cast<void*>(&exe_marker), &self) != 0);
  std::size_t count = 0;
  const cxx_operator* ops = cxx_operators(&count);
  CHECK_EQ(count, 20);
  for (std::size_t i = 0; i < count; i++) {
    void* global = dlsym(RTLD_DEFAULT, ops[i].name);
    CHECK_MSG(global == ops[i].addr, "%s: dlsym gives %p, the program uses %p", ops[i].name, global, ops[i].addr);
    Dl_info def;
    CHECK_MSG(dladdr(ops[i].addr, &def) != 0 && def.dli_fbase == self.dli_fbase,
              "%s is defined in %s, not in the executable", ops[i].name, def.dli_fname ? def.dli_fname : "?");
    // the header's operators are wrappers, not the library's aliases
    CHECK_MSG(ops[i].addr != reinterpret_cast<void*>(&mi_free) && ops[i].addr != reinterpret_cast<void*>(&mi_new),
              "%s is the library's own function", ops[i].name);
  }
}

int main() {
  check_operators();
  cxx_exercise(&in_heap);
  cxx_exercise_failure(&in_heap);

  // a second thread, and an object deleted on a thread other than the one that made it
  std::string* s = nullptr;
  std::thread maker([&] { s = new std::string(500, 'n'); });
  maker.join();
  std::thread deleter([&] { CHECK(in_heap(s) && in_heap(s->data())); delete s; cxx_exercise(&in_heap); });
  deleter.join();
  return test_summary("new-delete-header", "the program's operators win and use our heap");
}
