# SPDX-License-Identifier: MIT
# x86-64 Linux with musl libc through Debian's musl-gcc wrapper (musl-tools). musl-gcc is C only
# (there is no musl C++ runtime in Debian), so the C++ compiler is the host's g++, used only to
# configure: test/CMakeLists.txt leaves the C++ tests out when MI_TEST_MUSL is set.
# The programs run natively (no emulator).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER musl-gcc)
set(MI_TEST_MUSL ON CACHE BOOL "musl build: glibc-only and C++ tests left out")
set(MI_CXX OFF CACHE BOOL "no C++ runtime for musl on Debian: a C-only library")
