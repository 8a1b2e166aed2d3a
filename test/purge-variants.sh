# SPDX-License-Identifier: MIT
# Sourced by test/cross.sh and test/musl.sh: the ctest name pattern of the memory tests that run a
# program again under other purge settings (docs/testing.md, "The cross suites' selection").
# Each family keeps its default-settings run (memory-purge-default, -delay, -grid, -now;
# memory-rss-small-activity, memory-rss-large-activity; the stress program itself); these
# variants differ only in which OS calls (madvise, mprotect, mmap) the same C code makes and
# when, checked in every native glibc suite (release, debug, secure, the sanitizers). Also
# memory-collect-loaded (ten 1 GiB runs beside six busy loops, RUN_SERIAL: the purger's
# scheduling under load, not the C library's) and the label churn (threads ending with blocks
# alive, by size and purge delay).
MI_PURGE_VARIANTS_RE='^(memory-purge-(arena-eager0|arena-eager0-decommits0|arena-eager0-eager-delay4|decommits0|delay-1|delay0|eager-commit0|eager-delay0|eager-delay4|noarena|thp)|memory-rss-small-(arena-eager0|eager-delay4|never|now|collect)|memory-rss-large-(never|now|collect|noarena|thp)|memory-stress-.*|memory-collect-loaded)$'
MI_PURGE_VARIANTS_LABEL_RE='^churn$'
