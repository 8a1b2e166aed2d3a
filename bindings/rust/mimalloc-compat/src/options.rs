//! Options (`mi_option_*`): read from `MIMALLOC_<NAME>` environment variables on first use,
//! or set by the program.

use crate::ffi;
use core::ffi::c_long;

/// An option of the allocator (`mi_option_t`). Each is read from the environment variable
/// `MIMALLOC_<NAME>` on first use; a value set by the program wins over the environment.
///
/// ```
/// use mimalloc_compat::MiOption;
///
/// MiOption::PurgeDelay.set(50);
/// assert_eq!(MiOption::PurgeDelay.get(), 50);
/// MiOption::ShowStats.disable();
/// assert!(!MiOption::ShowStats.is_enabled());
/// assert_eq!(MiOption::ArenaReserve.name(), "arena_reserve");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
#[non_exhaustive]
pub enum MiOption {
    /// `mi_option_show_errors` (`MIMALLOC_SHOW_ERRORS`)
    ShowErrors = ffi::mi_option_show_errors,
    /// `mi_option_show_stats` (`MIMALLOC_SHOW_STATS`)
    ShowStats = ffi::mi_option_show_stats,
    /// `mi_option_verbose` (`MIMALLOC_VERBOSE`)
    Verbose = ffi::mi_option_verbose,
    /// `mi_option_eager_commit` (`MIMALLOC_EAGER_COMMIT`)
    EagerCommit = ffi::mi_option_eager_commit,
    /// `mi_option_arena_eager_commit` (`MIMALLOC_ARENA_EAGER_COMMIT`)
    ArenaEagerCommit = ffi::mi_option_arena_eager_commit,
    /// `mi_option_purge_decommits` (`MIMALLOC_PURGE_DECOMMITS`)
    PurgeDecommits = ffi::mi_option_purge_decommits,
    /// `mi_option_allow_large_os_pages` (`MIMALLOC_ALLOW_LARGE_OS_PAGES`)
    AllowLargeOsPages = ffi::mi_option_allow_large_os_pages,
    /// `mi_option_reserve_huge_os_pages` (`MIMALLOC_RESERVE_HUGE_OS_PAGES`)
    ReserveHugeOsPages = ffi::mi_option_reserve_huge_os_pages,
    /// `mi_option_reserve_huge_os_pages_at` (`MIMALLOC_RESERVE_HUGE_OS_PAGES_AT`)
    ReserveHugeOsPagesAt = ffi::mi_option_reserve_huge_os_pages_at,
    /// `mi_option_reserve_os_memory` (`MIMALLOC_RESERVE_OS_MEMORY`)
    ReserveOsMemory = ffi::mi_option_reserve_os_memory,
    /// `mi_option_deprecated_segment_cache` (`MIMALLOC_DEPRECATED_SEGMENT_CACHE`)
    DeprecatedSegmentCache = ffi::mi_option_deprecated_segment_cache,
    /// `mi_option_deprecated_page_reset` (`MIMALLOC_DEPRECATED_PAGE_RESET`)
    DeprecatedPageReset = ffi::mi_option_deprecated_page_reset,
    /// `mi_option_abandoned_page_purge` (`MIMALLOC_ABANDONED_PAGE_PURGE`)
    AbandonedPagePurge = ffi::mi_option_abandoned_page_purge,
    /// `mi_option_deprecated_segment_reset` (`MIMALLOC_DEPRECATED_SEGMENT_RESET`)
    DeprecatedSegmentReset = ffi::mi_option_deprecated_segment_reset,
    /// `mi_option_eager_commit_delay` (`MIMALLOC_EAGER_COMMIT_DELAY`)
    EagerCommitDelay = ffi::mi_option_eager_commit_delay,
    /// `mi_option_purge_delay` (`MIMALLOC_PURGE_DELAY`)
    PurgeDelay = ffi::mi_option_purge_delay,
    /// `mi_option_use_numa_nodes` (`MIMALLOC_USE_NUMA_NODES`)
    UseNumaNodes = ffi::mi_option_use_numa_nodes,
    /// `mi_option_disallow_os_alloc` (`MIMALLOC_DISALLOW_OS_ALLOC`)
    DisallowOsAlloc = ffi::mi_option_disallow_os_alloc,
    /// `mi_option_os_tag` (`MIMALLOC_OS_TAG`)
    OsTag = ffi::mi_option_os_tag,
    /// `mi_option_max_errors` (`MIMALLOC_MAX_ERRORS`)
    MaxErrors = ffi::mi_option_max_errors,
    /// `mi_option_max_warnings` (`MIMALLOC_MAX_WARNINGS`)
    MaxWarnings = ffi::mi_option_max_warnings,
    /// `mi_option_max_segment_reclaim` (`MIMALLOC_MAX_SEGMENT_RECLAIM`)
    MaxSegmentReclaim = ffi::mi_option_max_segment_reclaim,
    /// `mi_option_destroy_on_exit` (`MIMALLOC_DESTROY_ON_EXIT`)
    DestroyOnExit = ffi::mi_option_destroy_on_exit,
    /// `mi_option_arena_reserve` (`MIMALLOC_ARENA_RESERVE`)
    ArenaReserve = ffi::mi_option_arena_reserve,
    /// `mi_option_arena_purge_mult` (`MIMALLOC_ARENA_PURGE_MULT`)
    ArenaPurgeMult = ffi::mi_option_arena_purge_mult,
    /// `mi_option_purge_extend_delay` (`MIMALLOC_PURGE_EXTEND_DELAY`)
    PurgeExtendDelay = ffi::mi_option_purge_extend_delay,
    /// `mi_option_abandoned_reclaim_on_free` (`MIMALLOC_ABANDONED_RECLAIM_ON_FREE`)
    AbandonedReclaimOnFree = ffi::mi_option_abandoned_reclaim_on_free,
    /// `mi_option_disallow_arena_alloc` (`MIMALLOC_DISALLOW_ARENA_ALLOC`)
    DisallowArenaAlloc = ffi::mi_option_disallow_arena_alloc,
    /// `mi_option_retry_on_oom` (`MIMALLOC_RETRY_ON_OOM`)
    RetryOnOom = ffi::mi_option_retry_on_oom,
    /// `mi_option_visit_abandoned` (`MIMALLOC_VISIT_ABANDONED`)
    VisitAbandoned = ffi::mi_option_visit_abandoned,
    /// `mi_option_guarded_min` (`MIMALLOC_GUARDED_MIN`)
    GuardedMin = ffi::mi_option_guarded_min,
    /// `mi_option_guarded_max` (`MIMALLOC_GUARDED_MAX`)
    GuardedMax = ffi::mi_option_guarded_max,
    /// `mi_option_guarded_precise` (`MIMALLOC_GUARDED_PRECISE`)
    GuardedPrecise = ffi::mi_option_guarded_precise,
    /// `mi_option_guarded_sample_rate` (`MIMALLOC_GUARDED_SAMPLE_RATE`)
    GuardedSampleRate = ffi::mi_option_guarded_sample_rate,
    /// `mi_option_guarded_sample_seed` (`MIMALLOC_GUARDED_SAMPLE_SEED`)
    GuardedSampleSeed = ffi::mi_option_guarded_sample_seed,
    /// `mi_option_target_segments_per_thread` (`MIMALLOC_TARGET_SEGMENTS_PER_THREAD`)
    TargetSegmentsPerThread = ffi::mi_option_target_segments_per_thread,
    /// `mi_option_generic_collect` (`MIMALLOC_GENERIC_COLLECT`)
    GenericCollect = ffi::mi_option_generic_collect,
    /// `mi_option_allow_thp` (`MIMALLOC_ALLOW_THP`)
    AllowThp = ffi::mi_option_allow_thp,
    /// `mi_option_live` (`MIMALLOC_LIVE`): publish live statistics in shared memory
    /// (`/dev/shm/mimalloc-live.<pid>`) for the viewer `tools/mimalloc-live` (docs/live.md).
    /// This implementation's own option (see [`MiOption::is_extension`]).
    Live = ffi::mi_option_live,
    /// `mi_option_live_interval` (`MIMALLOC_LIVE_INTERVAL`): milliseconds between
    /// publications of the live statistics, 10..60000. This implementation's own option.
    LiveInterval = ffi::mi_option_live_interval,
    /// `mi_option_purge_thread` (`MIMALLOC_PURGE_THREAD`): 1 (default) runs due purges on a
    /// background thread, started on the first purge, so an idle process gives memory back;
    /// 0: purges from allocator activity only. This implementation's own option.
    PurgeThread = ffi::mi_option_purge_thread,
    /// `mi_option_memory_limit` (`MIMALLOC_MEMORY_LIMIT`): the soft memory limit in KiB, or -P
    /// for P% of the process's cgroup limit (default -100: the cgroup's limit); 0: none. Near
    /// it, freed memory goes back to the OS at once (docs/memory.md). This implementation's own.
    MemoryLimit = ffi::mi_option_memory_limit,
    /// `mi_option_memory_limit_hard` (`MIMALLOC_MEMORY_LIMIT_HARD`): the hard limit, as above
    /// (default 0: none): an allocation that would commit past it returns NULL (ENOMEM). This implementation's own option.
    MemoryLimitHard = ffi::mi_option_memory_limit_hard,
}

impl MiOption {
    /// Every option, in the order of their numbers: mimalloc's (numbered
    /// `0.._mi_option_last`, at the same index here), then this implementation's own
    /// (numbered from `MI_OPTION_EXT_FIRST` on; [`MiOption::is_extension`]).
    pub const ALL: [MiOption; 43] = [
        MiOption::ShowErrors,
        MiOption::ShowStats,
        MiOption::Verbose,
        MiOption::EagerCommit,
        MiOption::ArenaEagerCommit,
        MiOption::PurgeDecommits,
        MiOption::AllowLargeOsPages,
        MiOption::ReserveHugeOsPages,
        MiOption::ReserveHugeOsPagesAt,
        MiOption::ReserveOsMemory,
        MiOption::DeprecatedSegmentCache,
        MiOption::DeprecatedPageReset,
        MiOption::AbandonedPagePurge,
        MiOption::DeprecatedSegmentReset,
        MiOption::EagerCommitDelay,
        MiOption::PurgeDelay,
        MiOption::UseNumaNodes,
        MiOption::DisallowOsAlloc,
        MiOption::OsTag,
        MiOption::MaxErrors,
        MiOption::MaxWarnings,
        MiOption::MaxSegmentReclaim,
        MiOption::DestroyOnExit,
        MiOption::ArenaReserve,
        MiOption::ArenaPurgeMult,
        MiOption::PurgeExtendDelay,
        MiOption::AbandonedReclaimOnFree,
        MiOption::DisallowArenaAlloc,
        MiOption::RetryOnOom,
        MiOption::VisitAbandoned,
        MiOption::GuardedMin,
        MiOption::GuardedMax,
        MiOption::GuardedPrecise,
        MiOption::GuardedSampleRate,
        MiOption::GuardedSampleSeed,
        MiOption::TargetSegmentsPerThread,
        MiOption::GenericCollect,
        MiOption::AllowThp,
        MiOption::Live,
        MiOption::LiveInterval,
        MiOption::PurgeThread,
        MiOption::MemoryLimit,
        MiOption::MemoryLimitHard,
    ];

    /// The option's name as in `mi_option_<name>` (the environment variable is
    /// `MIMALLOC_` and the name in upper case).
    pub fn name(self) -> &'static str {
        match self {
            MiOption::ShowErrors => "show_errors",
            MiOption::ShowStats => "show_stats",
            MiOption::Verbose => "verbose",
            MiOption::EagerCommit => "eager_commit",
            MiOption::ArenaEagerCommit => "arena_eager_commit",
            MiOption::PurgeDecommits => "purge_decommits",
            MiOption::AllowLargeOsPages => "allow_large_os_pages",
            MiOption::ReserveHugeOsPages => "reserve_huge_os_pages",
            MiOption::ReserveHugeOsPagesAt => "reserve_huge_os_pages_at",
            MiOption::ReserveOsMemory => "reserve_os_memory",
            MiOption::DeprecatedSegmentCache => "deprecated_segment_cache",
            MiOption::DeprecatedPageReset => "deprecated_page_reset",
            MiOption::AbandonedPagePurge => "abandoned_page_purge",
            MiOption::DeprecatedSegmentReset => "deprecated_segment_reset",
            MiOption::EagerCommitDelay => "eager_commit_delay",
            MiOption::PurgeDelay => "purge_delay",
            MiOption::UseNumaNodes => "use_numa_nodes",
            MiOption::DisallowOsAlloc => "disallow_os_alloc",
            MiOption::OsTag => "os_tag",
            MiOption::MaxErrors => "max_errors",
            MiOption::MaxWarnings => "max_warnings",
            MiOption::MaxSegmentReclaim => "max_segment_reclaim",
            MiOption::DestroyOnExit => "destroy_on_exit",
            MiOption::ArenaReserve => "arena_reserve",
            MiOption::ArenaPurgeMult => "arena_purge_mult",
            MiOption::PurgeExtendDelay => "purge_extend_delay",
            MiOption::AbandonedReclaimOnFree => "abandoned_reclaim_on_free",
            MiOption::DisallowArenaAlloc => "disallow_arena_alloc",
            MiOption::RetryOnOom => "retry_on_oom",
            MiOption::VisitAbandoned => "visit_abandoned",
            MiOption::GuardedMin => "guarded_min",
            MiOption::GuardedMax => "guarded_max",
            MiOption::GuardedPrecise => "guarded_precise",
            MiOption::GuardedSampleRate => "guarded_sample_rate",
            MiOption::GuardedSampleSeed => "guarded_sample_seed",
            MiOption::TargetSegmentsPerThread => "target_segments_per_thread",
            MiOption::GenericCollect => "generic_collect",
            MiOption::AllowThp => "allow_thp",
            MiOption::Live => "live",
            MiOption::LiveInterval => "live_interval",
            MiOption::PurgeThread => "purge_thread",
            MiOption::MemoryLimit => "memory_limit",
            MiOption::MemoryLimitHard => "memory_limit_hard",
        }
    }

    /// The option's number (`mi_option_t`).
    pub fn as_raw(self) -> ffi::mi_option_t {
        self as ffi::mi_option_t
    }

    /// Whether this is one of this implementation's own options (numbered from
    /// `MI_OPTION_EXT_FIRST` on), which mimalloc does not have.
    pub fn is_extension(self) -> bool {
        self.as_raw() >= ffi::MI_OPTION_EXT_FIRST
    }

    /// The option with number `raw`, if there is one.
    pub fn from_raw(raw: ffi::mi_option_t) -> Option<MiOption> {
        // mimalloc's options are at their number in ALL, the extension options follow them
        let index = if (0..ffi::_mi_option_last).contains(&raw) {
            raw
        } else if raw >= ffi::MI_OPTION_EXT_FIRST {
            ffi::_mi_option_last + (raw - ffi::MI_OPTION_EXT_FIRST)
        } else {
            return None;
        };
        let option = Self::ALL.get(usize::try_from(index).ok()?).copied()?;
        (option.as_raw() == raw).then_some(option)
    }

    /// The current value (reading the environment on first access).
    pub fn get(self) -> i64 {
        unsafe { ffi::mi_option_get(self.as_raw()) as i64 }
    }

    /// The current value clamped to `[min, max]`.
    pub fn get_clamp(self, min: i64, max: i64) -> i64 {
        unsafe { ffi::mi_option_get_clamp(self.as_raw(), min as c_long, max as c_long) as i64 }
    }

    /// The value as a size: the options counted in KiB are converted to bytes.
    pub fn get_size(self) -> usize {
        unsafe { ffi::mi_option_get_size(self.as_raw()) }
    }

    /// Whether the value is non-zero.
    pub fn is_enabled(self) -> bool {
        unsafe { ffi::mi_option_is_enabled(self.as_raw()) }
    }

    /// Sets the value (the environment no longer overrides it); it is clamped to the
    /// option's range.
    pub fn set(self, value: i64) {
        unsafe { ffi::mi_option_set(self.as_raw(), value as c_long) }
    }

    /// Sets the value only if neither the program nor the environment gave one.
    pub fn set_default(self, value: i64) {
        unsafe { ffi::mi_option_set_default(self.as_raw(), value as c_long) }
    }

    /// Sets the value to 1.
    pub fn enable(self) {
        unsafe { ffi::mi_option_enable(self.as_raw()) }
    }

    /// Sets the value to 0.
    pub fn disable(self) {
        unsafe { ffi::mi_option_disable(self.as_raw()) }
    }

    /// Sets the value to 1 or 0.
    pub fn set_enabled(self, enable: bool) {
        unsafe { ffi::mi_option_set_enabled(self.as_raw(), enable) }
    }

    /// Sets the value to 1 or 0 only if neither the program nor the environment gave one.
    pub fn set_enabled_default(self, enable: bool) {
        unsafe { ffi::mi_option_set_enabled_default(self.as_raw(), enable) }
    }
}

/// Prints the version and build line and every option's value to the allocator's output
/// (stderr unless redirected; see [`crate::stats::capture_output`]).
pub fn options_print() {
    unsafe { ffi::mi_options_print() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_options_are_numbered_in_order() {
        // mimalloc's options: 0.._mi_option_last, at their number in ALL
        let last = ffi::_mi_option_last as usize;
        let (mimalloc, ext) = MiOption::ALL.split_at(last);
        for (i, o) in mimalloc.iter().enumerate() {
            assert_eq!(o.as_raw(), i as i32);
            assert!(!o.is_extension());
            assert_eq!(MiOption::from_raw(i as i32), Some(*o));
        }
        // then this implementation's own, numbered from MI_OPTION_EXT_FIRST
        assert_eq!(ext, [MiOption::Live, MiOption::LiveInterval, MiOption::PurgeThread,
                         MiOption::MemoryLimit, MiOption::MemoryLimitHard]);
        for (i, o) in ext.iter().enumerate() {
            assert_eq!(o.as_raw(), ffi::MI_OPTION_EXT_FIRST + i as i32);
            assert!(o.is_extension());
            assert_eq!(MiOption::from_raw(o.as_raw()), Some(*o));
        }
        assert_eq!(MiOption::Live.as_raw(), ffi::mi_option_live);
        assert_eq!(MiOption::LiveInterval.as_raw(), ffi::mi_option_live_interval);
        assert_eq!(MiOption::PurgeThread.as_raw(), ffi::mi_option_purge_thread);
        // numbers that are no option
        for raw in [
            -1,
            i32::MIN,
            ffi::_mi_option_last,
            ffi::MI_OPTION_EXT_FIRST - 1,
            ffi::MI_OPTION_EXT_FIRST + ext.len() as i32,
            i32::MAX,
        ] {
            assert_eq!(MiOption::from_raw(raw), None, "{raw}");
        }
    }

    #[test]
    fn names_match_the_library() {
        // the library prints "option '<name>': <value>" for each option
        let ((), out) = crate::stats::capture_output(options_print);
        for o in MiOption::ALL {
            assert!(out.contains(&format!("option '{}':", o.name())), "{} missing in:\n{out}", o.name());
        }
    }

    #[test]
    fn get_set_enable_disable() {
        let o = MiOption::MaxWarnings;
        o.set(17);
        assert_eq!(o.get(), 17);
        assert_eq!(o.get_clamp(0, 10), 10);
        o.set_default(99); // already set: ignored
        assert_eq!(o.get(), 17);
        o.disable();
        assert!(!o.is_enabled());
        assert_eq!(o.get(), 0);
        o.enable();
        assert!(o.is_enabled());
        assert_eq!(o.get(), 1);
        o.set_enabled(false);
        assert_eq!(o.get(), 0);
        o.set_enabled_default(true); // already set: ignored
        assert_eq!(o.get(), 0);
        o.set(32);
        // KiB-valued options are reported in bytes by get_size
        MiOption::ArenaReserve.set(2048);
        assert_eq!(MiOption::ArenaReserve.get_size(), 2048 * 1024);
        MiOption::ArenaReserve.set(1024 * 1024);
        // values are clamped to the option's range
        MiOption::Verbose.set(1000);
        assert!(MiOption::Verbose.get() <= 2);
        MiOption::Verbose.set(0);
    }

    #[test]
    fn live_options() {
        // off unless MIMALLOC_LIVE says otherwise (not enabled here: that creates a file in
        // /dev/shm)
        if std::env::var_os("MIMALLOC_LIVE").is_none() {
            assert!(!MiOption::Live.is_enabled());
            assert_eq!(MiOption::Live.get(), 0);
        }
        // the interval, set through the wrapper and read back, clamped to 10..60000 ms
        let o = MiOption::LiveInterval;
        let old = o.get();
        o.set(250);
        assert_eq!(o.get(), 250);
        assert_eq!(unsafe { ffi::mi_option_get(ffi::mi_option_live_interval) }, 250);
        o.set(5);
        assert_eq!(o.get(), 10);
        o.set(100_000);
        assert_eq!(o.get(), 60_000);
        o.set(old);
    }
}
