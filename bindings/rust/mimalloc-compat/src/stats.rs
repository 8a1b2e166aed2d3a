//! Statistics and process information.
//!
//! ```
//! use mimalloc_compat::stats;
//!
//! let v = vec![0u8; 1 << 20];
//! let text = stats::stats_string();          // what mi_stats_print_out prints
//! assert!(!text.is_empty());
//! let info = stats::process_info();
//! assert!(info.peak_rss >= info.current_rss / 2);
//! let json = stats::stats_json();
//! assert!(json.starts_with('{'));
//! let s = stats::stats().expect("statistics");
//! assert!(s.reserved.current > 0);
//! drop(v);
//! ```

use crate::ffi;
use core::ffi::{c_char, c_void, CStr};
use std::io;
use std::sync::Mutex;
use std::time::Duration;

struct Sink<'a> {
    out: &'a mut dyn io::Write,
    error: Option<io::Error>,
}

unsafe extern "C" fn write_to_sink(msg: *const c_char, arg: *mut c_void) {
    let sink = &mut *(arg as *mut Sink<'_>);
    if sink.error.is_some() || msg.is_null() {
        return;
    }
    if let Err(e) = sink.out.write_all(CStr::from_ptr(msg).to_bytes()) {
        sink.error = Some(e);
    }
}

/// Merges the calling thread's statistics and prints the process-wide statistics to `out`
/// (`mi_stats_print_out`); the layout is described in `docs/statistics.md`.
pub fn stats_print<W: io::Write>(out: &mut W) -> io::Result<()> {
    let mut sink = Sink { out, error: None };
    unsafe { ffi::mi_stats_print_out(Some(write_to_sink), &mut sink as *mut Sink<'_> as *mut c_void) };
    sink.error.map_or(Ok(()), Err)
}

/// Prints only the calling thread's statistics not yet merged (`mi_thread_stats_print_out`).
pub fn thread_stats_print<W: io::Write>(out: &mut W) -> io::Result<()> {
    let mut sink = Sink { out, error: None };
    unsafe {
        ffi::mi_thread_stats_print_out(Some(write_to_sink), &mut sink as *mut Sink<'_> as *mut c_void)
    };
    sink.error.map_or(Ok(()), Err)
}

/// [`stats_print`] into a `String`.
pub fn stats_string() -> String {
    let mut buf = Vec::new();
    stats_print(&mut buf).expect("writing to a Vec does not fail");
    String::from_utf8_lossy(&buf).into_owned()
}

/// [`thread_stats_print`] into a `String`.
pub fn thread_stats_string() -> String {
    let mut buf = Vec::new();
    thread_stats_print(&mut buf).expect("writing to a Vec does not fail");
    String::from_utf8_lossy(&buf).into_owned()
}

/// Zeroes the calling thread's and the process-wide statistics.
pub fn stats_reset() {
    unsafe { ffi::mi_stats_reset() }
}

/// Folds the calling thread's statistics into the process-wide totals.
pub fn stats_merge() {
    unsafe { ffi::mi_stats_merge() }
}

/// The process-wide statistics as numbers (`mi_stats_get`), or `None` if the library refuses
/// the struct (a layout version mismatch).
pub fn stats() -> Option<Box<ffi::mi_stats_t>> {
    let mut s = Box::new(ffi::mi_stats_t::new());
    unsafe { ffi::mi_stats_get(&mut *s) }.then_some(s)
}

/// All statistics as a JSON object (`mi_stats_get_json`).
pub fn stats_json() -> String {
    StatsJson::get()
        .map(|j| j.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The JSON text of `mi_stats_get_json`, in a block of the allocator that is freed on drop.
/// Dereferences to a [`CStr`] (as the `mimalloc` crate's type of the same name).
#[derive(Debug)]
pub struct StatsJson {
    ptr: core::ptr::NonNull<c_char>,
}

impl StatsJson {
    /// Renders the statistics.
    pub fn get() -> Result<StatsJson, &'static str> {
        let p = unsafe { ffi::mi_stats_get_json(0, core::ptr::null_mut()) };
        core::ptr::NonNull::new(p)
            .map(|ptr| StatsJson { ptr })
            .ok_or("mi_stats_get_json failed")
    }
}

impl core::ops::Deref for StatsJson {
    type Target = CStr;
    fn deref(&self) -> &CStr {
        unsafe { CStr::from_ptr(self.ptr.as_ptr()) }
    }
}

impl Drop for StatsJson {
    fn drop(&mut self) {
        unsafe { ffi::mi_free(self.ptr.as_ptr().cast()) }
    }
}

/// Time, memory and page-fault figures of the process (`mi_process_info`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// time since the process started
    pub elapsed: Duration,
    /// user CPU time
    pub user: Duration,
    /// system CPU time
    pub system: Duration,
    /// resident set size, bytes
    pub current_rss: usize,
    /// peak resident set size, bytes
    pub peak_rss: usize,
    /// memory committed by the allocator, bytes
    pub current_commit: usize,
    /// peak memory committed by the allocator, bytes
    pub peak_commit: usize,
    /// hard page faults
    pub page_faults: usize,
}

/// The process's time, memory and page-fault figures.
pub fn process_info() -> ProcessInfo {
    let mut v = [0usize; 8];
    let [a, b, c, d, e, f, g, h] = &mut v;
    unsafe { ffi::mi_process_info(a, b, c, d, e, f, g, h) };
    let ms = |x: usize| Duration::from_millis(x as u64);
    ProcessInfo {
        elapsed: ms(v[0]),
        user: ms(v[1]),
        system: ms(v[2]),
        current_rss: v[3],
        peak_rss: v[4],
        current_commit: v[5],
        peak_commit: v[6],
        page_faults: v[7],
    }
}

/// Capacity of the buffer of [`capture_output`]; longer output is cut there.
pub const CAPTURE_CAPACITY: usize = 256 * 1024;

static CAPTURE: Mutex<Option<String>> = Mutex::new(None);
static CAPTURE_SCOPE: Mutex<()> = Mutex::new(());

unsafe extern "C" fn capture_message(msg: *const c_char, _arg: *mut c_void) {
    if msg.is_null() {
        return;
    }
    let text = CStr::from_ptr(msg).to_string_lossy();
    if let Ok(mut guard) = CAPTURE.try_lock() {
        if let Some(buf) = guard.as_mut() {
            // never grow the buffer here: the message may come from inside the allocator
            let room = buf.capacity() - buf.len();
            if text.len() <= room {
                buf.push_str(&text);
            }
        }
    }
}

/// Runs `f` with every message of the allocator (errors, warnings, verbose messages,
/// [`crate::options::options_print`] ...) captured into the returned `String` instead of
/// going to stderr, then restores the default output.
///
/// The output slot is process-wide: messages of other threads during `f` are captured too,
/// and an output function registered with `mi_register_output` is replaced by the default
/// afterwards. At most [`CAPTURE_CAPACITY`] bytes are kept.
pub fn capture_output<R>(f: impl FnOnce() -> R) -> (R, String) {
    let _scope = CAPTURE_SCOPE.lock().unwrap_or_else(|e| e.into_inner());
    *CAPTURE.lock().unwrap_or_else(|e| e.into_inner()) = Some(String::with_capacity(CAPTURE_CAPACITY));
    unsafe { ffi::mi_register_output(Some(capture_message), core::ptr::null_mut()) };
    let result = f();
    unsafe { ffi::mi_register_output(None, core::ptr::null_mut()) };
    let text = CAPTURE.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
    (result, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_to_a_writer_and_a_string() {
        let p = unsafe { ffi::mi_malloc(5000) };
        let mut out = Vec::new();
        stats_print(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().count() > 5, "{text}");
        assert!(!stats_string().is_empty());
        let _ = thread_stats_string();
        unsafe { ffi::mi_free(p) };
    }

    #[test]
    fn writer_errors_are_returned() {
        struct Failing;
        impl io::Write for Failing {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let err = stats_print(&mut Failing).unwrap_err();
        assert_eq!(err.to_string(), "full");
    }

    #[test]
    fn numbers_reset_and_merge() {
        let p = unsafe { ffi::mi_malloc(3 << 20) }; // a huge block
        stats_merge();
        let s = stats().unwrap();
        assert!(s.committed.current > 0);
        assert!(s.malloc_huge_count.total >= 1 || s.malloc_huge.total >= 1);
        unsafe { ffi::mi_free(p) };
        stats_reset();
        let s = stats().unwrap();
        assert_eq!(s.malloc_huge_count.total, 0);
    }

    #[test]
    fn process_info_is_plausible() {
        let v = vec![1u8; 4 << 20];
        let info = process_info();
        assert!(info.current_rss > 0 && info.peak_rss >= info.current_rss);
        assert!(info.peak_commit >= info.current_commit);
        assert!(info.elapsed >= info.user.min(info.elapsed));
        drop(v);
    }

    #[test]
    fn json_and_capture() {
        let j = stats_json();
        assert!(j.starts_with('{') && j.trim_end().ends_with('}'), "{j}");
        assert!(j.contains("\"committed\""), "{j}");
        let ((), out) = capture_output(|| unsafe { ffi::mi_options_print() });
        assert!(out.contains("option 'verbose'"), "{out}");
    }
}
