//! Granularities: how `segmentGranularity` buckets rows into time chunks and how
//! `queryGranularity` truncates timestamps, with Druid's names and JSON forms.

use crate::time::{month_floor, parse_iso_instant, Interval, Period, ETERNITY_END, ETERNITY_START};
use chrono::{Offset, TimeZone};
use chrono_tz::Tz;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A Druid granularity: `all`, `none`, a named one (`minute`, `day`, ...), a `period`
/// (with optional origin) or a `duration` in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Granularity {
    /// One bucket spanning all time.
    All,
    /// No truncation: every millisecond is its own bucket.
    None,
    /// A period with an origin (ms); named granularities are periods from the epoch,
    /// `week` starts on Monday as in Druid.
    Period {
        /// The period length.
        period: Period,
        /// The origin buckets are aligned to, in milliseconds.
        origin: i64,
    },
    /// A period bucketed in a time zone's wall-clock time (`{"type": "period", "timeZone"}`):
    /// a day starts at local midnight, across daylight-saving changes.
    Zoned {
        /// The period length.
        period: Period,
        /// The origin, in local wall-clock milliseconds.
        origin: i64,
        /// The time zone.
        tz: Tz,
    },
}

const MONDAY_1970_01_05: i64 = 4 * 86_400_000;

impl Granularity {
    /// Parses a Druid granularity name, case-insensitively.
    pub fn from_name(name: &str) -> Option<Self> {
        let p = |millis: i64| Granularity::Period { period: Period { months: 0, millis }, origin: 0 };
        let m = |months: i64| Granularity::Period { period: Period { months, millis: 0 }, origin: 0 };
        Some(match name.to_ascii_lowercase().as_str() {
            "all" => Granularity::All,
            "none" => Granularity::None,
            "second" => p(1_000),
            "minute" => p(60_000),
            "five_minute" => p(300_000),
            "ten_minute" => p(600_000),
            "fifteen_minute" => p(900_000),
            "thirty_minute" => p(1_800_000),
            "hour" => p(3_600_000),
            "six_hour" => p(6 * 3_600_000),
            "eight_hour" => p(8 * 3_600_000),
            "day" => p(86_400_000),
            "week" => {
                Granularity::Period { period: Period { months: 0, millis: 7 * 86_400_000 }, origin: MONDAY_1970_01_05 }
            }
            "month" => m(1),
            "quarter" => m(3),
            "year" => m(12),
            _ => return None,
        })
    }

    /// Truncates `t` to the start of its bucket.
    pub fn floor(&self, t: i64) -> i64 {
        match *self {
            Granularity::All => ETERNITY_START,
            Granularity::None => t,
            Granularity::Period { period, origin } => floor_period(period, origin, t),
            Granularity::Zoned { period, origin, tz } => to_utc(tz, floor_period(period, origin, to_local(tz, t))),
        }
    }

    /// The start of the bucket after the one starting at `bucket_start`.
    pub fn next(&self, bucket_start: i64) -> i64 {
        match *self {
            Granularity::All => ETERNITY_END,
            Granularity::None => bucket_start + 1,
            Granularity::Period { period, .. } => period.add_to(bucket_start, 1),
            Granularity::Zoned { period, tz, .. } => {
                let next = to_utc(tz, period.add_to(to_local(tz, bucket_start), 1));
                // A wall-clock time skipped by a daylight-saving change maps before its bucket.
                next.max(bucket_start + 1)
            }
        }
    }

    /// The bucket (time chunk) containing `t`.
    pub fn bucket(&self, t: i64) -> Interval {
        let start = self.floor(t);
        Interval::new(start, self.next(start))
    }
}

fn floor_period(period: Period, origin: i64, t: i64) -> i64 {
    match period.fixed_millis() {
        Some(len) if len > 0 => (t - origin).div_euclid(len) * len + origin,
        Some(_) => t,
        None => {
            // Month-based periods are aligned to calendar months from the origin's month.
            let origin_months = month_index(origin);
            month_floor(t, period.months.max(1), origin_months)
        }
    }
}

/// Wall-clock milliseconds of instant `t` in `tz`, counted as if that wall clock were UTC.
pub fn to_local(tz: Tz, t: i64) -> i64 {
    match tz.timestamp_millis_opt(t).single() {
        Some(dt) => t + i64::from(dt.offset().fix().local_minus_utc()) * 1000,
        None => t,
    }
}

/// The instant whose wall-clock time in `tz` is `local` (the earlier one when the clock runs
/// twice; the moment after the gap when it is skipped).
pub fn to_utc(tz: Tz, local: i64) -> i64 {
    let Some(naive) = chrono::DateTime::from_timestamp_millis(local).map(|d| d.naive_utc()) else {
        return local;
    };
    match tz.from_local_datetime(&naive) {
        chrono::LocalResult::Single(dt) | chrono::LocalResult::Ambiguous(dt, _) => dt.timestamp_millis(),
        chrono::LocalResult::None => {
            // Skipped by a daylight-saving change: the offset before the gap applies.
            let before = tz.offset_from_utc_datetime(&naive).fix().local_minus_utc();
            local - i64::from(before) * 1000
        }
    }
}

fn month_index(ms: i64) -> i64 {
    use chrono::{Datelike, TimeZone, Utc};
    Utc.timestamp_millis_opt(ms).single().map(|t| t.year() as i64 * 12 + t.month0() as i64).unwrap_or(0)
}

/// The JSON forms Druid accepts for a granularity.
#[derive(Deserialize)]
#[serde(untagged)]
enum GranularityJson {
    Name(String),
    Object(GranularityObject),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GranularityObject {
    #[serde(rename = "type")]
    kind: String,
    period: Option<String>,
    duration: Option<i64>,
    origin: Option<serde_json::Value>,
    time_zone: Option<String>,
}

impl<'de> Deserialize<'de> for Granularity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match GranularityJson::deserialize(d)? {
            GranularityJson::Name(name) => Granularity::from_name(&name).ok_or_else(|| {
                D::Error::custom(format!("unknown granularity {name:?}: expected all, none, second, minute, fifteen_minute, thirty_minute, hour, six_hour, eight_hour, day, week, month, quarter or year"))
            }),
            GranularityJson::Object(o) => {
                let tz: Option<Tz> = match o.time_zone.as_deref() {
                    None | Some("UTC" | "Etc/UTC" | "Z" | "+00:00") => None,
                    Some(name) => Some(name.parse().map_err(|_| {
                        D::Error::custom(format!("granularity timeZone {name:?}: expected an IANA time zone such as \"America/Los_Angeles\""))
                    })?),
                };
                let origin = match &o.origin {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::Number(n)) => n.as_i64(),
                    Some(serde_json::Value::String(s)) => Some(parse_iso_instant(s).map_err(D::Error::custom)?),
                    Some(other) => return Err(D::Error::custom(format!("granularity origin {other} is not an instant"))),
                };
                match o.kind.as_str() {
                    "period" => {
                        let text = o.period.ok_or_else(|| D::Error::custom("period granularity needs \"period\""))?;
                        let period = Period::parse(&text).map_err(D::Error::custom)?;
                        if period.is_zero() {
                            return Err(D::Error::custom("period granularity must not be zero"));
                        }
                        match tz {
                            // The origin is read as wall-clock time in the zone.
                            Some(tz) => Ok(Granularity::Zoned { period, origin: origin.map_or(0, |o| to_local(tz, o)), tz }),
                            None => Ok(Granularity::Period { period, origin: origin.unwrap_or(0) }),
                        }
                    }
                    "duration" => {
                        let millis = o.duration.ok_or_else(|| D::Error::custom("duration granularity needs \"duration\""))?;
                        if millis <= 0 {
                            return Err(D::Error::custom(format!("duration granularity must be positive, got {millis}")));
                        }
                        Ok(Granularity::Period { period: Period { months: 0, millis }, origin: origin.unwrap_or(0) })
                    }
                    "all" | "none" => Ok(Granularity::from_name(&o.kind).unwrap_or(Granularity::None)),
                    other => Granularity::from_name(other).ok_or_else(|| D::Error::custom(format!("unknown granularity type {other:?}"))),
                }
            }
        }
    }
}

impl Serialize for Granularity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Granularity::All => s.serialize_str("all"),
            Granularity::None => s.serialize_str("none"),
            Granularity::Period { period, origin } => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("type", "period")?;
                m.serialize_entry("period", &period.to_string())?;
                m.serialize_entry("origin", origin)?;
                m.end()
            }
            Granularity::Zoned { period, origin, tz } => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(4))?;
                m.serialize_entry("type", "period")?;
                m.serialize_entry("period", &period.to_string())?;
                m.serialize_entry("origin", &to_utc(*tz, *origin))?;
                m.serialize_entry("timeZone", tz.name())?;
                m.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{format_iso, parse_iso_instant};

    fn floor(g: &str, t: &str) -> String {
        let g: Granularity = serde_json::from_str(g).expect("granularity");
        format_iso(g.floor(parse_iso_instant(t).expect("instant")))
    }

    #[test]
    fn floors_like_druid() {
        assert_eq!(floor("\"minute\"", "2018-01-01T01:01:35Z"), "2018-01-01T01:01:00.000Z");
        assert_eq!(floor("\"DAY\"", "2015-09-12T23:59:59.999Z"), "2015-09-12T00:00:00.000Z");
        assert_eq!(floor("\"week\"", "2015-09-12T10:00:00Z"), "2015-09-07T00:00:00.000Z");
        assert_eq!(floor("\"quarter\"", "2015-09-12T10:00:00Z"), "2015-07-01T00:00:00.000Z");
        assert_eq!(floor("\"year\"", "2015-09-12T10:00:00Z"), "2015-01-01T00:00:00.000Z");
        assert_eq!(floor(r#"{"type":"period","period":"PT6H"}"#, "2015-09-12T10:00:00Z"), "2015-09-12T06:00:00.000Z");
        assert_eq!(
            floor(r#"{"type":"duration","duration":7200000,"origin":"1970-01-01T01:00:00Z"}"#, "2015-09-12T10:30:00Z"),
            "2015-09-12T09:00:00.000Z"
        );
        assert_eq!(floor("\"none\"", "1969-12-31T23:59:59.999Z"), "1969-12-31T23:59:59.999Z");
        assert_eq!(floor("\"hour\"", "1969-12-31T23:59:59.999Z"), "1969-12-31T23:00:00.000Z");
    }

    #[test]
    fn rejects_unknown_granularities_by_name() {
        let err = serde_json::from_str::<Granularity>("\"fortnight\"").expect_err("unknown");
        assert!(err.to_string().contains("fortnight"), "{err}");
        assert!(serde_json::from_str::<Granularity>(r#"{"type":"duration","duration":-5}"#).is_err());
        assert!(serde_json::from_str::<Granularity>(r#"{"type":"period","period":"PT1H","timeZone":"Mars/Olympus"}"#)
            .is_err());
    }

    #[test]
    fn zoned_periods_follow_the_wall_clock() {
        let la = r#"{"type":"period","period":"P1D","timeZone":"America/Los_Angeles"}"#;
        // 2015-09-12T05:00Z is 22:00 on the 11th in Los Angeles (UTC-7 in summer).
        assert_eq!(floor(la, "2015-09-12T05:00:00Z"), "2015-09-11T07:00:00.000Z");
        assert_eq!(floor(la, "2015-09-12T08:00:00Z"), "2015-09-12T07:00:00.000Z");
        // Winter: UTC-8.
        assert_eq!(floor(la, "2015-12-12T08:30:00Z"), "2015-12-12T08:00:00.000Z");
        // The day daylight saving ends is 25 hours long.
        let g: Granularity = serde_json::from_str(la).expect("granularity");
        let start = parse_iso_instant("2015-11-01T07:00:00Z").expect("instant");
        assert_eq!(g.next(start) - start, 25 * 3_600_000);
        let kolkata = r#"{"type":"period","period":"PT1H","timeZone":"Asia/Kolkata"}"#;
        assert_eq!(floor(kolkata, "2015-09-12T10:10:00Z"), "2015-09-12T09:30:00.000Z");
        let month = r#"{"type":"period","period":"P1M","timeZone":"Europe/Berlin"}"#;
        assert_eq!(floor(month, "2015-09-30T23:30:00Z"), "2015-09-30T22:00:00.000Z");
    }

    #[test]
    fn buckets_are_contiguous() {
        let g = Granularity::from_name("month").expect("month");
        let b = g.bucket(parse_iso_instant("2016-02-10T00:00:00Z").expect("instant"));
        assert_eq!(b.to_string(), "2016-02-01T00:00:00.000Z/2016-03-01T00:00:00.000Z");
    }
}
