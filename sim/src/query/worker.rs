//! One query-worker invocation: download its segments from S3 (whole when small, else the
//! needed columns with ranged reads, as built; those not already in its /tmp cache) a chunk of
//! at most `chunk_bytes` of segments at a time, scan each chunk on its cores while the next
//! arrives, and return its partial: in the Invoke response up to
//! the 6 MB payload limit, through S3 above it.

use super::noise::Noise;
use super::setup::{QueryKind, QuerySetup};

/// The segments one function reads.
#[derive(Debug, Clone, Copy)]
pub struct Batch {
    /// Segments.
    pub segments: f64,
    /// Rows in them.
    pub rows: f64,
    /// Bytes downloaded when none is local (whole segments, or the columns read).
    pub bytes: f64,
}

impl Batch {
    /// `segments` whole segments.
    pub fn of(segments: f64, s: &QuerySetup) -> Self {
        let rows = segments * s.rows_per_segment;
        Batch { segments, rows, bytes: rows * s.download_bytes_per_row() }
    }
}

/// How a partial reaches its invoker.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum Return {
    /// In the Invoke response.
    Payload,
    /// Written to S3, its key in the response; the invoker reads it back.
    ThroughS3,
}

/// The return path of a partial of `bytes`: Lambda's synchronous response holds 6 MB.
pub fn return_path(bytes: f64, s: &QuerySetup) -> Return {
    if bytes > s.payload_limit {
        Return::ThroughS3
    } else {
        Return::Payload
    }
}

/// What one worker run took.
#[derive(Debug, Clone, Copy)]
pub struct WorkerRun {
    /// Seconds from its handler's start to its response (cold init excluded).
    pub secs: f64,
    /// Seconds of it spent downloading (first bytes included).
    pub download_secs: f64,
    /// Seconds of it spent scanning.
    pub scan_secs: f64,
    /// S3 GETs (ranged reads of the segments).
    pub gets: f64,
    /// Bytes of its partial.
    pub partial_bytes: f64,
    /// How the partial returns.
    pub returned: Return,
}

/// Runs `batch` for `kind` with `hit` of its bytes already local.
pub fn run(batch: Batch, kind: &QueryKind, hit: f64, s: &QuerySetup, noise: &mut Noise) -> WorkerRun {
    let remote = (1.0 - hit.clamp(0.0, 1.0)) * batch.bytes;
    let remote_segments = (1.0 - hit.clamp(0.0, 1.0)) * batch.segments;
    let (mut first, mut download) = (0.0, 0.0);
    if remote > 0.0 {
        // The directory first, then the columns' ranges, in parallel streams.
        first = noise.lognormal(s.s3_first_byte, s.s3_first_byte_sigma)
            + noise.lognormal(s.s3_first_byte, s.s3_first_byte_sigma);
        download = remote / noise.lognormal(s.download_rate(), s.throughput_sigma);
    }
    let scan = batch.rows / s.scan_rate(kind, s.worker_mb);
    // A chunk is scanned while the next downloads: the slower side, plus one chunk of the other.
    let chunks = (batch.rows * s.segment_bytes_per_row / s.chunk_bytes).ceil().clamp(1.0, batch.segments.max(1.0));
    let mut work = download.max(scan) + download.min(scan) / chunks;
    if noise.chance(s.straggler_p) {
        work *= s.straggler_factor;
    }
    let partial_bytes = kind.groups_per_partial * kind.bytes_per_group;
    let returned = return_path(partial_bytes, s);
    let put = match returned {
        Return::Payload => 0.0,
        Return::ThroughS3 => {
            noise.lognormal(s.s3_first_byte, s.s3_first_byte_sigma) + partial_bytes / s.download_rate()
        }
    };
    let segment_bytes = s.rows_per_segment * s.download_bytes_per_row();
    // A whole segment in one GET; a larger one's first 64 KiB, then its runs of parts in
    // pieces of at most `range_bytes`.
    let gets_per_segment =
        if s.whole_segments() { 1.0 } else { 1.0 + s.part_runs.max((segment_bytes / s.range_bytes).ceil()) };
    WorkerRun {
        secs: first + work + put,
        download_secs: first + download,
        scan_secs: scan,
        gets: remote_segments * gets_per_segment,
        partial_bytes,
        returned,
    }
}

/// Seconds for an invoker to receive a partial of `bytes` once its worker returns: the
/// response's transfer, or a GET of the object the worker wrote.
pub fn receive_secs(bytes: f64, s: &QuerySetup, noise: &mut Noise) -> f64 {
    match return_path(bytes, s) {
        Return::Payload => bytes / (s.payload_mbps * 1e6),
        Return::ThroughS3 => noise.lognormal(s.s3_first_byte, s.s3_first_byte_sigma) + bytes / s.download_rate(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::setup::KINDS;

    const MB: f64 = 1024.0 * 1024.0;

    #[test]
    fn partials_over_six_megabytes_go_through_s3() {
        let s = QuerySetup::default();
        assert_eq!(return_path(6.0 * MB, &s), Return::Payload);
        assert_eq!(return_path(6.0 * MB + 1.0, &s), Return::ThroughS3);
        let big = QueryKind { groups_per_partial: 1_000_000.0, ..KINDS[0] };
        let run_big = run(Batch::of(2.0, &s), &big, 0.0, &s, &mut Noise::off());
        let run_small = run(Batch::of(2.0, &s), &KINDS[0], 0.0, &s, &mut Noise::off());
        assert_eq!(run_big.returned, Return::ThroughS3);
        assert_eq!(run_small.returned, Return::Payload);
        assert!(run_big.secs > run_small.secs, "the PUT takes time");
        let (mut n, b) = (Noise::off(), 48e6);
        assert!(receive_secs(b, &s, &mut n) > s.s3_first_byte, "and the invoker's GET");
    }

    #[test]
    fn more_segments_take_longer_and_cached_ones_skip_s3() {
        let s = QuerySetup::default();
        let one = run(Batch::of(1.0, &s), &KINDS[1], 0.0, &s, &mut Noise::off());
        let four = run(Batch::of(4.0, &s), &KINDS[1], 0.0, &s, &mut Noise::off());
        assert!(four.secs > one.secs && four.gets == 4.0 * one.gets, "{one:?} {four:?}");
        let cached = run(Batch::of(4.0, &s), &KINDS[1], 1.0, &s, &mut Noise::off());
        assert_eq!((cached.gets, cached.download_secs), (0.0, 0.0));
        assert!(cached.secs < four.secs && cached.secs >= cached.scan_secs);
    }

    #[test]
    fn a_two_vcpu_function_scans_faster_than_one_and_arm_speed_scales_it() {
        let s = QuerySetup::default();
        let k = &KINDS[2];
        assert!(s.scan_rate(k, 2048.0) > s.scan_rate(k, 1769.0));
        assert!((s.scan_rate(k, 1769.0) - k.rows_per_sec() * s.arm_core_factor).abs() < 1.0);
        assert!(s.scan_rate(k, 3538.0) <= k.rows_per_sec() * s.arm_core_factor * k.two_thread_speedup() + 1.0);
    }
}
