/* SPDX-License-Identifier: MIT */
/* provider.cpp -- a C++ program that uses malloc and operator new, for provider.sh. */
#include <cstdio>
#include <cstdlib>
#include <string>

int main() {
  void* p = std::malloc(100);
  std::string* s = new std::string(200, 'x');
  std::printf("%zu\n", s->size() + (p != nullptr ? 1 : 0));
  delete s;
  std::free(p);
  return 0;
}
