# SPDX-License-Identifier: MIT
# library-needed: the shared library's NEEDED entries are the C library's own parts, nothing
# else. Every program that preloads or links the library loads what it needs at start-up
# (libgcc_s once cost every program about 0.1 ms; docs/benchmarks.md, "Start-up").
#   cmake -DREADELF=<readelf> -DLIB=<libmimalloc.so> -P check-needed.cmake
# Allowed: glibc's libc.so.6 and loader, and the parts glibc had apart before 2.34
# (libpthread.so.0, libdl.so.2); musl's libc.so.
execute_process(COMMAND ${READELF} -d ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${LIB} failed (${rc})")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]*\\]" entries "${out}")
set(bad "")
set(all "")
foreach(e IN LISTS entries)
  string(REGEX REPLACE ".*\\[(.*)\\]" "\\1" name "${e}")
  list(APPEND all ${name})
  if(NOT name MATCHES "^(libc\\.so(\\.[0-9]+)?|ld-linux[-a-z0-9_.]*\\.so\\.[0-9]+|ld64\\.so\\.[0-9]+|ld-musl-[a-z0-9_]+\\.so\\.1|libpthread\\.so\\.0|libdl\\.so\\.2)$")
    list(APPEND bad ${name})
  endif()
endforeach()
if(NOT all)
  message(FATAL_ERROR "no NEEDED entries found in ${LIB} (readelf said:\n${out})")
endif()
if(bad)
  message(FATAL_ERROR "${LIB} needs ${bad} beyond the C library (NEEDED: ${all})")
endif()
message(STATUS "NEEDED: ${all}")
