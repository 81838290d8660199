//! Time in SQL: TIMESTAMP literals and the units of FLOOR, DATE_TRUNC and TIME_FLOOR.

use crate::SqlError;

/// A TIMESTAMP literal's milliseconds (`2015-09-12 00:00:00`, `2015-09-12`, ISO 8601): on the
/// wall clock of `zone` (the request's `sqlTimeZone`; UTC when none) unless it names its own
/// offset.
pub fn parse_timestamp(text: &str, zone: Option<&str>) -> Result<i64, SqlError> {
    let t = sluice_format::time::parse_iso_instant(text)
        .map_err(|_| SqlError::validation(format!("{:?} is not a TIMESTAMP", crate::short(text))))?;
    match zone {
        Some(z) if !sluice_format::time::names_offset(text) => Ok(sluice_format::granularity::to_utc(tz(z)?, t)),
        _ => Ok(t),
    }
}

/// The time zone named `name`.
pub fn tz(name: &str) -> Result<chrono_tz::Tz, SqlError> {
    sluice_format::expr::time_zone(name)
        .map_err(|e| SqlError::validation(format!("time zone {:?}: {e}", crate::short(name))))
}

/// The ISO period of a time unit name (`HOUR`, `day`, ...).
pub fn unit_period(unit: &str) -> Result<String, SqlError> {
    Ok(match unit.trim_matches('\'').to_ascii_uppercase().as_str() {
        "SECOND" => "PT1S",
        "MINUTE" => "PT1M",
        "HOUR" => "PT1H",
        "DAY" => "P1D",
        "WEEK" => "P1W",
        "MONTH" => "P1M",
        "QUARTER" => "P3M",
        "YEAR" => "P1Y",
        other => return Err(SqlError::unsupported(format!("time unit {}", crate::short(other)))),
    }
    .to_string())
}

/// Checks a TIME_FLOOR period.
pub fn floor_period(period: &str) -> Result<(), SqlError> {
    sluice_format::time::Period::parse(period)
        .map(|_| ())
        .map_err(|e| SqlError::validation(format!("TIME_FLOOR period {:?}: {e}", crate::short(period))))
}
