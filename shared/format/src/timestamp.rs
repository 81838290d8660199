//! `timestampSpec.format`: `iso`, `millis`, `posix`, `micro`, `nano`, `auto`, `ruby` and Joda
//! patterns (translated once into chrono format strings).

use crate::time::parse_iso_instant;
use crate::value::Value;
use chrono::{DateTime, NaiveDate, NaiveDateTime};

/// Why a timestamp format could not be parsed, or a value not read as a timestamp in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    /// A value that does not read as a timestamp in the format.
    #[error("could not parse timestamp {value} as {format}")]
    Unreadable {
        /// The value, as printed.
        value: String,
        /// The format's name or Joda pattern.
        format: String,
    },
    /// A Joda pattern without a date field.
    #[error("timestamp pattern {pattern:?} has no date: expected a format name (iso, millis, posix, micro, nano, auto) or a Joda pattern such as yyyy-MM-dd HH:mm:ss")]
    NoDate {
        /// The pattern.
        pattern: String,
    },
    /// A quoted literal that a pattern reading timestamps does not close.
    #[error("timestamp pattern {pattern:?} has an unterminated quote")]
    UnterminatedQuote {
        /// The pattern.
        pattern: String,
    },
    /// A time zone name (`z`), which chrono cannot read.
    #[error("timestamp pattern {pattern:?}: time zone names (z) are not supported; use Z")]
    ZoneName {
        /// The pattern.
        pattern: String,
    },
    /// A pattern letter chrono cannot express.
    #[error("timestamp pattern {pattern:?}: letter {letter:?} is not supported")]
    Letter {
        /// The pattern.
        pattern: String,
        /// The letter.
        letter: char,
    },
}

/// A parsed timestamp format.
#[derive(Debug, Clone, PartialEq)]
pub enum TimestampFormat {
    /// Numbers as milliseconds, strings as ISO-8601 or numeric milliseconds.
    Auto,
    /// ISO-8601 strings.
    Iso,
    /// Milliseconds since the epoch.
    Millis,
    /// Seconds since the epoch.
    Posix,
    /// Microseconds since the epoch.
    Micro,
    /// Nanoseconds since the epoch.
    Nano,
    /// Seconds with a fraction.
    Ruby,
    /// A Joda pattern, as a chrono format string; `zoned` when it reads an offset.
    Pattern {
        /// The Joda pattern as given.
        joda: String,
        /// The equivalent chrono format.
        chrono: String,
        /// Whether the pattern carries an offset.
        zoned: bool,
        /// Whether the pattern has a time of day.
        has_time: bool,
    },
}

impl TimestampFormat {
    /// Parses a format name or Joda pattern; the error says what is wrong.
    pub fn parse(format: &str) -> Result<Self, TimestampError> {
        Ok(match format {
            "auto" => TimestampFormat::Auto,
            "iso" => TimestampFormat::Iso,
            "millis" => TimestampFormat::Millis,
            "posix" => TimestampFormat::Posix,
            "micro" => TimestampFormat::Micro,
            "nano" => TimestampFormat::Nano,
            "ruby" => TimestampFormat::Ruby,
            joda => joda_to_chrono(joda)?,
        })
    }

    /// Reads a timestamp in milliseconds from a field value.
    pub fn read(&self, value: &Value) -> Result<i64, TimestampError> {
        let bad = || TimestampError::Unreadable { value: value.to_string(), format: self.name().to_string() };
        let number = || -> Option<f64> {
            match value {
                Value::Long(v) => Some(*v as f64),
                Value::Double(v) => Some(*v),
                Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            }
        };
        let scaled = |divisor: f64| -> Result<i64, TimestampError> {
            if let Value::Long(v) = value {
                if divisor == 1.0 {
                    return Ok(*v);
                }
            }
            if let Value::String(s) = value {
                if let Ok(v) = s.trim().parse::<i64>() {
                    return Ok((v as f64 / divisor).floor() as i64);
                }
            }
            let v = number().filter(|v| v.is_finite()).ok_or_else(bad)?;
            let ms = (v / divisor).floor();
            if ms.abs() > 9.2e15 {
                return Err(bad());
            }
            Ok(ms as i64)
        };
        match self {
            TimestampFormat::Millis => scaled(1.0),
            TimestampFormat::Posix | TimestampFormat::Ruby => scaled(0.001),
            TimestampFormat::Micro => scaled(1_000.0),
            TimestampFormat::Nano => scaled(1_000_000.0),
            TimestampFormat::Iso => match value {
                Value::String(s) => parse_iso_instant(s).map_err(|_| bad()),
                _ => Err(bad()),
            },
            TimestampFormat::Auto => match value {
                Value::Long(_) | Value::Double(_) => scaled(1.0),
                Value::String(s) if is_integer(s) => scaled(1.0),
                Value::String(s) => parse_iso_instant(s).map_err(|_| bad()),
                _ => Err(bad()),
            },
            TimestampFormat::Pattern { chrono, zoned, has_time, .. } => {
                let s = value.as_str().ok_or_else(bad)?;
                let s = s.trim();
                let parsed = if *zoned {
                    DateTime::parse_from_str(s, chrono).map(|t| t.timestamp_millis()).ok()
                } else if *has_time {
                    NaiveDateTime::parse_from_str(s, chrono).map(|t| t.and_utc().timestamp_millis()).ok()
                } else {
                    NaiveDate::parse_from_str(s, chrono)
                        .ok()
                        .and_then(|d| d.and_hms_opt(0, 0, 0))
                        .map(|t| t.and_utc().timestamp_millis())
                };
                parsed.ok_or_else(bad)
            }
        }
    }

    fn name(&self) -> &str {
        match self {
            TimestampFormat::Auto => "auto",
            TimestampFormat::Iso => "iso",
            TimestampFormat::Millis => "millis",
            TimestampFormat::Posix => "posix",
            TimestampFormat::Micro => "micro",
            TimestampFormat::Nano => "nano",
            TimestampFormat::Ruby => "ruby",
            TimestampFormat::Pattern { joda, .. } => joda,
        }
    }
}

fn is_integer(s: &str) -> bool {
    let t = s.strip_prefix('-').unwrap_or(s);
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

/// Translates a Joda-Time pattern into a chrono format string.
fn joda_to_chrono(joda: &str) -> Result<TimestampFormat, TimestampError> {
    let pattern = joda_pattern(joda)?;
    if !pattern.has_date {
        return Err(TimestampError::NoDate { pattern: joda.to_string() });
    }
    Ok(TimestampFormat::Pattern {
        joda: joda.to_string(),
        chrono: pattern.chrono,
        zoned: pattern.zoned,
        has_time: pattern.has_time,
    })
}

/// A Joda-Time pattern translated for chrono.
#[derive(Debug, Clone, PartialEq)]
pub struct JodaPattern {
    /// The chrono format string.
    pub chrono: String,
    /// Reads or writes an offset (`Z`).
    pub zoned: bool,
    /// Has a time of day field.
    pub has_time: bool,
    /// Has a date field.
    pub has_date: bool,
}

/// Translates a Joda-Time pattern (`yyyy-MM-dd HH:mm:ss`, quoted literals) into a chrono
/// format string; a letter chrono cannot express is an error naming it.
pub fn joda_pattern(joda: &str) -> Result<JodaPattern, TimestampError> {
    pattern_of(joda, false)
}

/// [`joda_pattern`] for writing times: a numeric field of one letter (`H`, `d`, `M`, ...) is
/// written without padding, as Joda writes it.
pub fn joda_output_pattern(joda: &str) -> Result<JodaPattern, TimestampError> {
    pattern_of(joda, true)
}

fn pattern_of(joda: &str, output: bool) -> Result<JodaPattern, TimestampError> {
    let chars: Vec<char> = joda.chars().collect();
    let mut out = String::new();
    let (mut zoned, mut has_time, mut has_date) = (false, false, false);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            // Writing, an unterminated quote runs to the end of the pattern, as in Joda; a
            // pattern that reads timestamps must close it.
            let close = match chars[i + 1..].iter().position(|&q| q == '\'') {
                Some(close) => close,
                None if output => chars.len() - i - 1,
                None => return Err(TimestampError::UnterminatedQuote { pattern: joda.to_string() }),
            };
            let literal: String = chars[i + 1..i + 1 + close].iter().collect();
            out.push_str(&if literal.is_empty() { "'".to_string() } else { literal.replace('%', "%%") });
            i += close + 2;
            continue;
        }
        let mut n = 1;
        while i + n < chars.len() && chars[i + n] == c {
            n += 1;
        }
        let spec = match (c, n) {
            ('M', 1) if output => "%-m",
            ('d', 1) if output => "%-d",
            ('H' | 'k', 1) if output => "%-H",
            ('h', 1) if output => "%-I",
            ('m', 1) if output => "%-M",
            ('s', 1) if output => "%-S",
            ('y' | 'Y' | 'u', 2) => "%y",
            ('y' | 'Y' | 'u', _) => "%Y",
            ('M', 1 | 2) => "%m",
            ('M', 3) => "%b",
            ('M', _) => "%B",
            ('d', _) => "%d",
            ('D', _) => "%j",
            ('H', _) => "%H",
            ('k', _) => "%H",
            ('h', _) => "%I",
            ('m', _) => "%M",
            ('s', _) => "%S",
            ('S', _) => "%3f",
            ('a', _) => "%p",
            ('E', 1..=3) => "%a",
            ('E', _) => "%A",
            ('Z', 1) => "%z",
            ('Z', _) => "%:z",
            ('z', _) => return Err(TimestampError::ZoneName { pattern: joda.to_string() }),
            (c, _) if c.is_ascii_alphabetic() => {
                return Err(TimestampError::Letter { pattern: joda.to_string(), letter: c })
            }
            _ => {
                for _ in 0..n {
                    out.push(if c == '%' { '%' } else { c });
                    if c == '%' {
                        out.push('%');
                    }
                }
                i += n;
                continue;
            }
        };
        match c {
            'Z' => zoned = true,
            'H' | 'k' | 'h' | 'm' | 's' | 'S' => has_time = true,
            'y' | 'Y' | 'u' | 'M' | 'd' | 'D' => has_date = true,
            _ => {}
        }
        if c == 'S' {
            // chrono's %3f reads exactly the fraction digits after a separator the pattern holds.
            if out.ends_with('.') {
                out.pop();
                out.push_str("%.3f");
                i += n;
                continue;
            }
        }
        out.push_str(spec);
        i += n;
    }
    Ok(JodaPattern { chrono: out, zoned, has_time, has_date })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(format: &str, v: Value) -> Result<i64, TimestampError> {
        TimestampFormat::parse(format).expect("format").read(&v)
    }

    #[test]
    fn reads_every_named_format() {
        let iso = 1_442_018_818_771;
        assert_eq!(read("iso", Value::String("2015-09-12T00:46:58.771Z".into())), Ok(iso));
        assert_eq!(read("auto", Value::String("2015-09-12T00:46:58.771Z".into())), Ok(iso));
        assert_eq!(read("auto", Value::Long(iso)), Ok(iso));
        assert_eq!(read("auto", Value::String(iso.to_string())), Ok(iso));
        assert_eq!(read("millis", Value::String(iso.to_string())), Ok(iso));
        assert_eq!(read("posix", Value::Long(1_442_018_818)), Ok(1_442_018_818_000));
        assert_eq!(read("ruby", Value::Double(1_442_018_818.771)), Ok(iso));
        assert_eq!(read("micro", Value::Long(1_442_018_818_771_123)), Ok(iso));
        assert_eq!(read("nano", Value::Long(1_442_018_818_771_123_456)), Ok(iso));
        assert!(read("iso", Value::Long(5)).is_err());
        assert!(read("auto", Value::String("soon".into())).is_err());
        assert!(read("millis", Value::Null).is_err());
    }

    #[test]
    fn reads_joda_patterns() {
        assert_eq!(read("yyyy-MM-dd HH:mm:ss", Value::String("2015-09-12 00:46:58".into())), Ok(1_442_018_818_000));
        assert_eq!(
            read("yyyy-MM-dd'T'HH:mm:ss.SSSZ", Value::String("2015-09-12T02:46:58.771+0200".into())),
            Ok(1_442_018_818_771)
        );
        assert_eq!(read("dd/MM/yyyy", Value::String("12/09/2015".into())), Ok(1_442_016_000_000));
        assert_eq!(read("MMM dd yyyy HH:mm", Value::String("Sep 12 2015 00:46".into())), Ok(1_442_018_760_000));
        assert!(read("yyyy-MM-dd", Value::String("2015/09/12".into())).is_err());
        assert!(TimestampFormat::parse("HH:mm").is_err());
        assert!(TimestampFormat::parse("yyyy-MM-dd zzz").is_err());
        assert!(TimestampFormat::parse("yyyy'T").is_err());
    }

    #[test]
    fn errors_print_the_pattern_or_value_at_fault() {
        let e = |f: &str| TimestampFormat::parse(f).expect_err(f).to_string();
        assert_eq!(e("HH:mm"), "timestamp pattern \"HH:mm\" has no date: expected a format name (iso, millis, posix, micro, nano, auto) or a Joda pattern such as yyyy-MM-dd HH:mm:ss");
        assert_eq!(
            e("yyyy-MM-dd zzz"),
            "timestamp pattern \"yyyy-MM-dd zzz\": time zone names (z) are not supported; use Z"
        );
        assert_eq!(e("yyyy'T"), "timestamp pattern \"yyyy'T\" has an unterminated quote");
        assert_eq!(e("yyyy q"), "timestamp pattern \"yyyy q\": letter 'q' is not supported");
        let unread = read("iso", Value::String("soon".into())).expect_err("soon").to_string();
        assert_eq!(unread, format!("could not parse timestamp {} as iso", Value::String("soon".into())));
    }
}
