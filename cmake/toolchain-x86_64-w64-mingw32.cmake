# SPDX-License-Identifier: MIT
# Cross build for Windows x64 with Debian's mingw-w64 (gcc, win32 thread model); ctest runs the
# test programs under Wine (wine64), in a Wine prefix of its own under the build directory
# (test/windows.sh creates it first: a first run of Wine in a fresh prefix takes a while).
# Usage: cmake -B build-win -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-x86_64-w64-mingw32.cmake
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-win32)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-win32)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# (winedbg.exe= : a program that crashes ends at once with exit code 5; Wine's debugger would
# print a backtrace, exit 0, or hang: seen on CI, 900 s, a test's whole timeout)
# (the project links its programs -static: Wine needs no path to the toolchain's DLLs, only
# to libmimalloc.dll in the build directory, WINEPATH)
set(CMAKE_CROSSCOMPILING_EMULATOR
    env WINEDEBUG=-all WINEPREFIX=${CMAKE_BINARY_DIR}/wineprefix WINEPATH=${CMAKE_BINARY_DIR}
        WINEDLLOVERRIDES=mscoree,mshtml,winedbg.exe= wine)
