/* SPDX-License-Identifier: MIT */
// A translation unit of test-api-cpp that includes nothing but mimalloc.h: it relies only on the
// standard headers that mimalloc.h promises to bring in under C++ (<cstddef>, <cstdint>,
// <type_traits>, <utility>, <memory>), as programs written for mimalloc v2 may do.
#include "mimalloc.h"

static_assert(std::is_same<std::size_t, decltype(sizeof(int))>::value, "<cstddef>");
static_assert(sizeof(std::uint64_t) == 8, "<cstdint>");

int include_only_check();
int include_only_check() {
  std::shared_ptr<int> sp = std::make_shared<int>(3);  // <memory>
  int x = std::move(*sp);                              // <utility>
  mi_stl_allocator<int> a;
  int* p = a.allocate(4);
  p[0] = x;
  int r = p[0];
  a.deallocate(p, 4);
  mi_heap_stl_allocator<long> ha;
  long* q = ha.allocate(2);
  q[1] = r;
  r = (int)q[1];
  ha.deallocate(q, 2);
  return r;
}
