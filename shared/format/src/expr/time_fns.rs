//! The time functions of expressions: `timestamp_format` and `timestamp_extract`, with
//! their pattern, unit and time zone read once when the expression is parsed.

use crate::value::Value;
use chrono::{DateTime, Datelike, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

/// A time zone name that is not an IANA zone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown time zone {zone:?}")]
pub struct UnknownTimeZone {
    /// The name, cut.
    pub zone: String,
}

/// A `timestamp_extract` unit that is not one Druid names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unit {unit:?}: expected EPOCH, MILLISECOND, SECOND, MINUTE, HOUR, DAY, DOW, ISODOW, DOY, WEEK, MONTH, QUARTER, YEAR, ISOYEAR, DECADE or CENTURY")]
pub struct UnknownTimeUnit {
    /// The unit, cut.
    pub unit: String,
}

/// Why the pattern or time zone of `timestamp_format` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeFormatError {
    /// The pattern is not a Joda pattern chrono can write.
    #[error(transparent)]
    Pattern(#[from] crate::timestamp::TimestampError),
    /// The time zone is unknown.
    #[error(transparent)]
    Zone(#[from] UnknownTimeZone),
}

/// How `timestamp_format` prints: a Joda pattern (ISO 8601 by default) in a time zone.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeFormat {
    /// The chrono format of the pattern; ISO 8601 with milliseconds when `None`.
    pattern: Option<String>,
    /// The time zone; UTC when `None`.
    zone: Option<Tz>,
}

impl TimeFormat {
    /// A format from the pattern and time zone arguments as written.
    pub fn new(pattern: Option<&str>, zone: Option<&str>) -> Result<Self, TimeFormatError> {
        let pattern = match pattern {
            None => None,
            Some(joda) => Some(crate::timestamp::joda_output_pattern(joda)?.chrono),
        };
        Ok(Self { pattern, zone: zone.map(time_zone).transpose()? })
    }

    /// `t` (milliseconds) formatted; null when out of range.
    pub fn format(&self, t: i64) -> Value {
        let Some(utc) = DateTime::<Utc>::from_timestamp_millis(t) else {
            return Value::Null;
        };
        let text = match (&self.pattern, &self.zone) {
            (None, None) => crate::time::format_iso(t),
            (None, Some(z)) => utc.with_timezone(z).format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string(),
            (Some(p), None) => write(utc, p),
            (Some(p), Some(z)) => write(utc.with_timezone(z), p),
        };
        Value::String(text)
    }
}

/// `dt` in chrono format `pattern`; the translation from Joda only yields valid specifiers.
fn write<Z: TimeZone>(dt: DateTime<Z>, pattern: &str) -> String
where
    Z::Offset: std::fmt::Display,
{
    use std::fmt::Write;
    let mut out = String::new();
    match write!(out, "{}", dt.format(pattern)) {
        Ok(()) => out,
        Err(_) => String::new(),
    }
}

/// Reads an IANA time zone name (`America/New_York`, `UTC`).
pub fn time_zone(name: &str) -> Result<Tz, UnknownTimeZone> {
    name.parse::<Tz>().map_err(|_| UnknownTimeZone { zone: crate::text::excerpt(name, 60).into_owned() })
}

/// A field `timestamp_extract` reads, as Druid names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds since 1970.
    Epoch,
    /// Millisecond of the second.
    Millisecond,
    /// Second of the minute.
    Second,
    /// Minute of the hour.
    Minute,
    /// Hour of the day.
    Hour,
    /// Day of the month.
    Day,
    /// ISO day of the week (Monday 1 to Sunday 7).
    Dow,
    /// Day of the year (1-based).
    Doy,
    /// ISO week of the year.
    Week,
    /// Month (1 to 12).
    Month,
    /// Quarter (1 to 4).
    Quarter,
    /// Year.
    Year,
    /// ISO week-numbering year.
    IsoYear,
    /// Decade (year / 10).
    Decade,
    /// Century (1-based).
    Century,
}

impl TimeUnit {
    /// The unit of a name (case-insensitive), as Druid's `TIME_EXTRACT` spells them.
    pub fn parse(name: &str) -> Result<Self, UnknownTimeUnit> {
        Ok(match name.to_ascii_uppercase().as_str() {
            "EPOCH" => TimeUnit::Epoch,
            "MILLISECOND" => TimeUnit::Millisecond,
            "SECOND" => TimeUnit::Second,
            "MINUTE" => TimeUnit::Minute,
            "HOUR" => TimeUnit::Hour,
            "DAY" => TimeUnit::Day,
            "DOW" | "ISODOW" => TimeUnit::Dow,
            "DOY" => TimeUnit::Doy,
            "WEEK" => TimeUnit::Week,
            "MONTH" => TimeUnit::Month,
            "QUARTER" => TimeUnit::Quarter,
            "YEAR" => TimeUnit::Year,
            "ISOYEAR" => TimeUnit::IsoYear,
            "DECADE" => TimeUnit::Decade,
            "CENTURY" => TimeUnit::Century,
            _ => return Err(UnknownTimeUnit { unit: crate::text::excerpt(name, 40).into_owned() }),
        })
    }

    /// The field of `t` (milliseconds) in `zone` (UTC when `None`); null when out of range.
    pub fn extract(self, t: i64, zone: Option<&Tz>) -> Value {
        let Some(utc) = DateTime::<Utc>::from_timestamp_millis(t) else {
            return Value::Null;
        };
        let v = match zone {
            None => self.field(&utc.naive_utc(), t),
            Some(z) => self.field(&utc.with_timezone(z).naive_local(), t),
        };
        Value::Long(v)
    }

    fn field(self, dt: &chrono::NaiveDateTime, t: i64) -> i64 {
        match self {
            TimeUnit::Epoch => t.div_euclid(1000),
            TimeUnit::Millisecond => i64::from(dt.and_utc().timestamp_subsec_millis()),
            TimeUnit::Second => i64::from(dt.second()),
            TimeUnit::Minute => i64::from(dt.minute()),
            TimeUnit::Hour => i64::from(dt.hour()),
            TimeUnit::Day => i64::from(dt.day()),
            TimeUnit::Dow => i64::from(dt.weekday().number_from_monday()),
            TimeUnit::Doy => i64::from(dt.ordinal()),
            TimeUnit::Week => i64::from(dt.iso_week().week()),
            TimeUnit::Month => i64::from(dt.month()),
            TimeUnit::Quarter => i64::from(dt.month0() / 3 + 1),
            TimeUnit::Year => i64::from(dt.year()),
            TimeUnit::IsoYear => i64::from(dt.iso_week().year()),
            TimeUnit::Decade => i64::from(dt.year()).div_euclid(10),
            TimeUnit::Century => (i64::from(dt.year()) - 1).div_euclid(100) + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2015-09-12T00:46:58.771Z, a Saturday.
    const T: i64 = 1_442_018_818_771;

    #[test]
    fn formats_with_joda_patterns_and_zones() {
        let iso = TimeFormat::new(None, None).expect("iso");
        assert_eq!(iso.format(T), Value::String("2015-09-12T00:46:58.771Z".into()));
        let day = TimeFormat::new(Some("yyyy-MM-dd HH:mm"), None).expect("pattern");
        assert_eq!(day.format(T), Value::String("2015-09-12 00:46".into()));
        let ny = TimeFormat::new(Some("yyyy-MM-dd HH"), Some("America/New_York")).expect("zoned");
        assert_eq!(ny.format(T), Value::String("2015-09-11 20".into()));
        assert!(TimeFormat::new(Some("yyyy-qq"), None).is_err());
        assert!(TimeFormat::new(None, Some("Mars/Base")).expect_err("zone").to_string().contains("Mars/Base"));
    }

    #[test]
    fn extracts_druid_units() {
        let get = |u: &str| TimeUnit::parse(u).expect("unit").extract(T, None);
        for (unit, want) in [
            ("EPOCH", 1_442_018_818),
            ("MILLISECOND", 771),
            ("SECOND", 58),
            ("minute", 46),
            ("HOUR", 0),
            ("DAY", 12),
            ("DOW", 6),
            ("DOY", 255),
            ("WEEK", 37),
            ("MONTH", 9),
            ("QUARTER", 3),
            ("YEAR", 2015),
            ("DECADE", 201),
            ("CENTURY", 21),
        ] {
            assert_eq!(get(unit), Value::Long(want), "{unit}");
        }
        let ny = time_zone("America/New_York").expect("zone");
        assert_eq!(TimeUnit::Hour.extract(T, Some(&ny)), Value::Long(20));
        assert!(TimeUnit::parse("FORTNIGHT").is_err());
    }
}
