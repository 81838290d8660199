//! This process's resident memory and CPU time, from `/proc/self` (Linux).

use std::time::Duration;

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

/// Resident memory now, in bytes.
pub fn rss() -> u64 {
    status_kib("VmRSS:").unwrap_or(0) * 1024
}

/// Peak resident memory since start or the last [`reset_peak`], in bytes.
pub fn peak_rss() -> u64 {
    status_kib("VmHWM:").unwrap_or(0) * 1024
}

/// Resets the peak resident memory to the current one (`/proc/self/clear_refs`, value 5).
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Returns the memory both allocators hold free to the system (mimalloc's `mi_collect`, glibc's
/// `malloc_trim` for librdkafka), so that a peak measured from now shows what is allocated
/// from now: freed pages kept resident (the records of a wave just produced) would otherwise
/// be reused unseen.
pub fn release_freed() {
    // SAFETY: both only return free pages to the system; no live allocation is touched.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        libc::malloc_trim(0);
    }
}

/// CPU time used by every thread of the process (user + system).
pub fn cpu_time() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return Duration::ZERO };
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10)
}
