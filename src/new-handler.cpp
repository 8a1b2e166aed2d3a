/* SPDX-License-Identifier: MIT */
/* The one C++ function of the library: call a std::new_handler on behalf of a nothrow
   allocation and turn a std::bad_alloc it throws into a `false` result, as nothrow operator
   new must. Every C++ runtime symbol this needs is weak, so C programs that never reach this
   code link and load without libstdc++; C++ programs always have the runtime. */
#include <new>

/* assembler-level weak references (C++ declarations cannot make typeinfo or the
   personality routine weak). Not on macOS: Mach-O has no .weak directive, and its linker
   wants every weak import defined in a linked library anyway; the library links libc++,
   which every macOS system has (CMakeLists.txt). */
#if !defined(__APPLE__)
__asm__(".weak __gxx_personality_v0\n\t.weak __cxa_begin_catch\n\t.weak __cxa_end_catch\n\t"
        ".weak __cxa_call_terminate\n\t.weak _Unwind_Resume\n\t.weak _ZTISt9bad_alloc\n\t"
        ".weak _ZSt9terminatev");
#endif

#if defined(_WIN32)
extern "C" bool _mi_new_handler_call_nothrow(std::new_handler handler) noexcept;       /* (PE: no visibility) */
#else
extern "C" bool _mi_new_handler_call_nothrow(std::new_handler handler) noexcept
  __attribute__((visibility("hidden")));
#endif

/* Returns true when the handler returned (retry the allocation), false when it threw
   std::bad_alloc (give up and return NULL). */
extern "C" bool _mi_new_handler_call_nothrow(std::new_handler handler) noexcept {
  try {
    handler();
    return true;
  }
  catch (const std::bad_alloc&) {
    return false;
  }
}

#if defined(_WIN32)
/* Windows: new.c throws through here (PE has no weak references to typeinfo and vtables) */
extern "C" void _mi_new_handler_throw_bad_alloc(void);
extern "C" void _mi_new_handler_throw_bad_alloc(void) {
  throw std::bad_alloc();
}
#endif
