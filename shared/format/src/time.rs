//! Millisecond timestamps, intervals and ISO-8601 periods, the way Druid spells them.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The earliest instant Druid's `ETERNITY` interval starts at, in milliseconds.
pub const ETERNITY_START: i64 = -4_611_686_018_427_387;
/// The instant Druid's `ETERNITY` interval ends at, in milliseconds.
pub const ETERNITY_END: i64 = 4_611_686_018_427_387;

/// A half-open time interval `[start, end)` in milliseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Interval {
    /// Inclusive start, milliseconds since the epoch.
    pub start: i64,
    /// Exclusive end, milliseconds since the epoch.
    pub end: i64,
}

impl Interval {
    /// Builds an interval; `start` must not be after `end`.
    pub fn new(start: i64, end: i64) -> Self {
        debug_assert!(start <= end, "interval start after end");
        Self { start, end }
    }

    /// Returns true when `t` lies inside the interval.
    pub fn contains(&self, t: i64) -> bool {
        self.start <= t && t < self.end
    }

    /// Parses Druid's `start/end` interval notation (ISO-8601 instants or dates).
    pub fn parse(text: &str) -> Result<Self, TimeError> {
        let (a, b) = text.split_once('/').ok_or_else(|| TimeError::Invalid(format!("interval {text:?} has no '/'")))?;
        let start = parse_iso_instant(a)?;
        let end = match parse_iso_instant(b) {
            Ok(end) => end,
            Err(_) => Period::parse(b)?.add_to(start, 1),
        };
        if end < start {
            return Err(TimeError::Invalid(format!("interval {text:?} ends before it starts")));
        }
        Ok(Self { start, end })
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", format_iso(self.start), format_iso(self.end))
    }
}

/// An error in a time value, naming the text that was wrong.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TimeError {
    /// The text is not a valid time, interval or period.
    #[error("{0}")]
    Invalid(String),
}

/// The wall clock, in ms since the epoch: the one place Sluice reads it. Everything that
/// decides on time (leases, grace periods, versions) takes this value as an argument.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Formats milliseconds as Druid prints instants: `2015-09-12T00:00:00.000Z`.
pub fn format_iso(ms: i64) -> String {
    match Utc.timestamp_millis_opt(ms).single() {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        None => ms.to_string(),
    }
}

/// Whether a time text ends with its own offset (`Z`, `+02:00`, `-0700`): a text without one
/// is read on a session's wall clock.
pub fn names_offset(text: &str) -> bool {
    let text = text.trim_end();
    if text.ends_with('Z') || text.ends_with('z') {
        return true;
    }
    // An offset follows the time of day: a sign after the date's `T` or space.
    text.split_once(['T', ' ']).is_some_and(|(_, time)| time.contains(['+', '-']))
}

/// Parses an ISO-8601 instant as Druid accepts it: full date-time with offset, a date-time
/// without offset (taken as UTC), a date alone, or a year-month.
pub fn parse_iso_instant(text: &str) -> Result<i64, TimeError> {
    let s = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%dT%H:%M%:z", "%Y-%m-%d %H:%M:%S%.f%:z"] {
        if let Ok(t) = DateTime::parse_from_str(s, fmt) {
            return Ok(t.timestamp_millis());
        }
    }
    let naive = s.strip_suffix('Z').unwrap_or(s);
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(naive, fmt) {
            return Ok(t.and_utc().timestamp_millis());
        }
    }
    // An hour alone (`2015-09-12T00Z`, as plywood writes intervals): chrono wants the minutes.
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(&format!("{naive}:00"), "%Y-%m-%dT%H:%M") {
        return Ok(t.and_utc().timestamp_millis());
    }
    if let Ok(d) = NaiveDate::parse_from_str(naive, "%Y-%m-%d") {
        return Ok(day_start(d));
    }
    if let Ok(d) = NaiveDate::parse_from_str(&format!("{naive}-01"), "%Y-%m-%d") {
        return Ok(day_start(d));
    }
    if let Ok(d) = NaiveDate::parse_from_str(&format!("{naive}-01-01"), "%Y-%m-%d") {
        return Ok(day_start(d));
    }
    Err(TimeError::Invalid(format!("{text:?} is not an ISO-8601 instant")))
}

fn day_start(d: NaiveDate) -> i64 {
    d.and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp_millis()).unwrap_or(0)
}

/// Longest period accepted, in months: 10,000 years, the span of the timestamps Sluice reads.
pub const MAX_PERIOD_MONTHS: i64 = 12 * 10_000;
/// Longest fixed-length part of a period accepted, in milliseconds: 10,000 years of days.
pub const MAX_PERIOD_MILLIS: i64 = 10_000 * 366 * 86_400_000;

/// An ISO-8601 period such as `PT1H`, `P1D`, `P3M` or `P1W`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Period {
    /// Calendar months (years count as 12).
    pub months: i64,
    /// Fixed-length part in milliseconds (weeks, days, hours, minutes, seconds).
    pub millis: i64,
}

impl Period {
    /// Parses `PnYnMnWnDTnHnMnS` (fractional seconds allowed).
    pub fn parse(text: &str) -> Result<Self, TimeError> {
        let bad = || TimeError::Invalid(format!("{text:?} is not an ISO-8601 period such as PT1H or P1D"));
        let too_long = || TimeError::Invalid(format!("period {text:?} is longer than 10,000 years"));
        let rest = text.trim().strip_prefix(['P', 'p']).ok_or_else(bad)?;
        if rest.is_empty() {
            return Err(bad());
        }
        let mut period = Period::default();
        let mut in_time = false;
        let mut number = String::new();
        let mut any = false;
        for c in rest.chars() {
            match c {
                'T' | 't' if number.is_empty() && !in_time => in_time = true,
                '0'..='9' | '.' => number.push(c),
                _ => {
                    let value: f64 = number.parse().map_err(|_| bad())?;
                    number.clear();
                    any = true;
                    // `as` saturates, and a saturated count fails the checks below.
                    let whole = value as i64;
                    let (months, millis) = match (in_time, c.to_ascii_uppercase()) {
                        (false, 'Y') => (whole.checked_mul(12), Some(0)),
                        (false, 'M') => (Some(whole), Some(0)),
                        (false, 'W') => (Some(0), whole.checked_mul(7 * 86_400_000)),
                        (false, 'D') => (Some(0), whole.checked_mul(86_400_000)),
                        (true, 'H') => (Some(0), whole.checked_mul(3_600_000)),
                        (true, 'M') => (Some(0), whole.checked_mul(60_000)),
                        (true, 'S') => (Some(0), Some((value * 1000.0).round() as i64)),
                        _ => return Err(bad()),
                    };
                    period.months = months.and_then(|m| period.months.checked_add(m)).ok_or_else(too_long)?;
                    period.millis = millis.and_then(|m| period.millis.checked_add(m)).ok_or_else(too_long)?;
                }
            }
        }
        if !number.is_empty() || !any {
            return Err(bad());
        }
        if period.months > MAX_PERIOD_MONTHS || period.millis > MAX_PERIOD_MILLIS {
            return Err(too_long());
        }
        Ok(period)
    }

    /// Returns true for the zero period, which can bucket nothing.
    pub fn is_zero(&self) -> bool {
        self.months == 0 && self.millis == 0
    }

    /// Adds `times` copies of the period to `t` (UTC calendar arithmetic for months).
    pub fn add_to(&self, t: i64, times: i64) -> i64 {
        let mut out = t;
        if self.months != 0 {
            out = add_months(out, self.months.saturating_mul(times));
        }
        out.saturating_add(self.millis.saturating_mul(times))
    }

    /// The length of a fixed-length period in milliseconds, if it has no month part.
    pub fn fixed_millis(&self) -> Option<i64> {
        (self.months == 0).then_some(self.millis)
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "P")?;
        if self.months != 0 {
            write!(f, "{}M", self.months)?;
        }
        if self.millis != 0 || self.months == 0 {
            let secs = self.millis as f64 / 1000.0;
            write!(f, "T{secs}S")?;
        }
        Ok(())
    }
}

/// Whole calendar months from `from` to `to` (negative when `to` is earlier), as Joda's
/// `Months.monthsBetween` counts them: a month is whole once the day and time of `from` are
/// reached again.
pub fn months_between(from: i64, to: i64) -> i64 {
    let index = |ms: i64| Utc.timestamp_millis_opt(ms).single().map(|t| t.year() as i64 * 12 + t.month0() as i64);
    let (Some(a), Some(b)) = (index(from), index(to)) else { return 0 };
    let mut months = b - a;
    if months > 0 && add_months(from, months) > to {
        months -= 1;
    } else if months < 0 && add_months(from, months) < to {
        months += 1;
    }
    months
}

/// Adds calendar months to a UTC instant, clamping the day of month like Joda does. Past the
/// calendar's range the result saturates (`i64::MAX` forward, `i64::MIN` back), so adding a
/// non-zero number of months always moves the instant.
pub fn add_months(ms: i64, months: i64) -> i64 {
    let past_the_end = if months > 0 { i64::MAX } else { i64::MIN };
    let Some(t) = Utc.timestamp_millis_opt(ms).single() else {
        return if months == 0 { ms } else { past_the_end };
    };
    let Some(total) = (t.year() as i64 * 12 + t.month0() as i64).checked_add(months) else {
        return past_the_end;
    };
    let (Ok(year), month0) = (i32::try_from(total.div_euclid(12)), total.rem_euclid(12) as u32) else {
        return past_the_end;
    };
    let mut day = t.day();
    loop {
        if let Some(d) = NaiveDate::from_ymd_opt(year, month0 + 1, day) {
            return d.and_time(t.time()).and_utc().timestamp_millis();
        }
        if day <= 28 {
            return past_the_end;
        }
        day -= 1;
    }
}

/// The first instant of the UTC calendar month containing `ms`, shifted by `months`.
pub fn month_floor(ms: i64, step_months: i64, origin_months: i64) -> i64 {
    let Some(t) = Utc.timestamp_millis_opt(ms).single() else {
        return ms;
    };
    let total = t.year() as i64 * 12 + t.month0() as i64;
    let bucket = (total - origin_months).div_euclid(step_months) * step_months + origin_months;
    let (year, month0) = (bucket.div_euclid(12) as i32, bucket.rem_euclid(12) as u32);
    NaiveDate::from_ymd_opt(year, month0 + 1, 1).map(day_start).unwrap_or(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_druid_instants_and_intervals() {
        assert_eq!(parse_iso_instant("2015-09-12T00:46:58.771Z"), Ok(1_442_018_818_771));
        assert_eq!(parse_iso_instant("2015-09-12"), Ok(1_442_016_000_000));
        // Hours alone, as plywood writes them (Joda reads them).
        assert_eq!(parse_iso_instant("2015-09-12T00Z"), Ok(1_442_016_000_000));
        assert_eq!(parse_iso_instant("2015-09-12T05"), Ok(1_442_016_000_000 + 5 * 3_600_000));
        assert!(parse_iso_instant("2015-09-12T25Z").is_err());
        let i = Interval::parse("2018-01-01/2018-01-03").expect("interval");
        assert_eq!(i.end - i.start, 2 * 86_400_000);
        assert_eq!(i.to_string(), "2018-01-01T00:00:00.000Z/2018-01-03T00:00:00.000Z");
        assert_eq!(Interval::parse("2018-01-01/P1D").expect("period end").end - i.start, 86_400_000);
        assert!(parse_iso_instant("yesterday").is_err());
    }

    #[test]
    fn parses_periods() {
        assert_eq!(Period::parse("PT10M"), Ok(Period { months: 0, millis: 600_000 }));
        assert_eq!(Period::parse("P1Y2M"), Ok(Period { months: 14, millis: 0 }));
        assert_eq!(Period::parse("PT0.5S").map(|p| p.millis), Ok(500));
        assert!(Period::parse("P").is_err());
        assert!(Period::parse("10M").is_err());
        assert!(Period::parse("PT5X").is_err());
    }

    #[test]
    fn periods_past_ten_thousand_years_are_refused_and_months_saturate() {
        for text in
            ["P300000Y", "P99999999999999999999Y", "PT99999999999999999999H", "P9223372036854775807M", "P10000Y1M"]
        {
            let err = Period::parse(text).expect_err(text).to_string();
            assert!(err.contains("longer than 10,000 years"), "{text}: {err}");
        }
        assert_eq!(Period::parse("P10000Y").map(|p| p.months), Ok(MAX_PERIOD_MONTHS));
        let december_9999 = parse_iso_instant("9999-12-01").expect("instant");
        assert_eq!(add_months(december_9999, MAX_PERIOD_MONTHS * 30), i64::MAX);
        assert_eq!(add_months(0, -MAX_PERIOD_MONTHS * 30), i64::MIN);
        assert_eq!(add_months(i64::MAX, 1), i64::MAX);
        let longest = Period::parse("P10000Y").expect("period");
        assert!(longest.add_to(december_9999, 1) > december_9999, "a step always advances");
        assert_eq!(longest.add_to(december_9999, i64::MAX), i64::MAX);
    }

    #[test]
    fn month_arithmetic_clamps_day() {
        let jan31 = parse_iso_instant("2020-01-31T10:00:00Z").expect("instant");
        assert_eq!(format_iso(add_months(jan31, 1)), "2020-02-29T10:00:00.000Z");
        let mid = parse_iso_instant("2020-05-17T10:00:00Z").expect("instant");
        assert_eq!(format_iso(month_floor(mid, 3, 0)), "2020-04-01T00:00:00.000Z");
    }
}
