# SPDX-License-Identifier: MIT
# x86-64 Linux with musl libc through Debian's musl-gcc wrapper (musl-tools); test/musl.sh.
# musl-gcc is C only (there is no musl C++ runtime in Debian): MI_CXX=OFF builds a C-only
# library and leaves the C++ tests out; the host's g++ is only seen by configure.
# MI_TEST_MUSL: tests that need glibc's loader are disabled with their reasons (mi_skip_musl,
# test/CMakeLists.txt; docs/platforms.md). The programs run natively (no emulator).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER musl-gcc)
set(MI_TEST_MUSL ON CACHE BOOL "musl build: tests that need glibc's loader are disabled")
set(MI_CXX OFF CACHE BOOL "no C++ runtime for musl on Debian: a C-only library")
