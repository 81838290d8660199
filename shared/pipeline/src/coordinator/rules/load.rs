//! Druid's retention rules (`POST /druid/coordinator/v1/rules/{dataSource}`): an ordered list
//! whose first rule that applies to a segment decides whether it is kept (`load*`) or dropped
//! (`drop*`); a segment no rule applies to is kept, as under Druid's default `loadForever`.
//!
//! Read: `loadForever`, `loadByPeriod`, `loadByInterval`, `dropForever`, `dropByPeriod`,
//! `dropBeforeByPeriod`, `dropByInterval`, with Druid's matching (`Rules.eligibleForLoad`):
//! a period rule's window is `[now - period, now)`; with `includeFuture` (the default) it
//! applies to every segment ending after the window starts, otherwise to segments overlapping
//! it; `dropBeforeByPeriod` applies to segments ending at or before `now - period`;
//! `loadByInterval` to segments overlapping its interval, `dropByInterval` to segments it
//! contains. Sluice has no tiers or replicas: `tieredReplicants` and `useDefaultTierForNull`
//! are warned and ignored. Broadcast rules are refused.

use serde_json::Value;
use sluice_format::spec::{SpecError, SpecWarning};
use sluice_format::time::{Interval, Period};

/// Most rules a datasource may have.
pub const MAX_RULES: usize = 1_000;

/// One retention rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetentionRule {
    /// Keeps every segment.
    LoadForever,
    /// Keeps segments in the period before now (and after, with `include_future`).
    LoadByPeriod {
        /// The period.
        period: Period,
        /// Whether segments after now count as inside.
        include_future: bool,
    },
    /// Keeps segments overlapping the interval.
    LoadByInterval(Interval),
    /// Drops every segment.
    DropForever,
    /// Drops segments in the period before now (and after, with `include_future`).
    DropByPeriod {
        /// The period.
        period: Period,
        /// Whether segments after now count as inside.
        include_future: bool,
    },
    /// Drops segments that end at or before now minus the period.
    DropBeforeByPeriod(Period),
    /// Drops segments the interval contains.
    DropByInterval(Interval),
}

impl RetentionRule {
    /// Whether the rule applies to a segment of `segment` at `now_ms`.
    pub fn applies_to(&self, segment: Interval, now_ms: i64) -> bool {
        let in_period = |period: &Period, include_future: bool| {
            let window = Interval::new(period.add_to(now_ms, -1), now_ms);
            if include_future {
                window.start < segment.end
            } else {
                window.start < segment.end && segment.start < window.end
            }
        };
        match self {
            RetentionRule::LoadForever | RetentionRule::DropForever => true,
            RetentionRule::LoadByPeriod { period, include_future }
            | RetentionRule::DropByPeriod { period, include_future } => in_period(period, *include_future),
            RetentionRule::LoadByInterval(i) => i.start < segment.end && segment.start < i.end,
            RetentionRule::DropBeforeByPeriod(period) => segment.end <= period.add_to(now_ms, -1),
            RetentionRule::DropByInterval(i) => i.start <= segment.start && segment.end <= i.end,
        }
    }

    /// Whether the rule keeps what it applies to.
    pub fn keeps(&self) -> bool {
        matches!(
            self,
            RetentionRule::LoadForever | RetentionRule::LoadByPeriod { .. } | RetentionRule::LoadByInterval(_)
        )
    }
}

/// Whether `rules` keep a segment of `segment` at `now_ms`: the first rule that applies
/// decides; none applying keeps it.
pub fn retained(rules: &[RetentionRule], segment: Interval, now_ms: i64) -> bool {
    rules.iter().find(|r| r.applies_to(segment, now_ms)).is_none_or(RetentionRule::keeps)
}

/// Checked rules and what in them is ignored.
#[derive(Debug, Clone)]
pub struct LoadedRules {
    /// The rules, in order.
    pub rules: Vec<RetentionRule>,
    /// Options ignored, by name (`[2].tieredReplicants`).
    pub warnings: Vec<SpecWarning>,
}

/// Loads Druid's rules JSON: an array of rule objects.
pub fn load_rules(json: &Value) -> Result<LoadedRules, SpecError> {
    let Value::Array(items) = json else {
        return Err(SpecError::field("rules", "expected a JSON array of rules"));
    };
    if items.len() > MAX_RULES {
        return Err(SpecError::field("rules", format!("{} rules, over the limit of {MAX_RULES}", items.len())));
    }
    let mut out = LoadedRules { rules: Vec::with_capacity(items.len()), warnings: Vec::new() };
    for (k, item) in items.iter().enumerate() {
        out.rules.push(rule(k, item, &mut out.warnings)?);
    }
    Ok(out)
}

fn rule(k: usize, item: &Value, warnings: &mut Vec<SpecWarning>) -> Result<RetentionRule, SpecError> {
    let at = |field: &str| format!("[{k}].{field}");
    let Value::Object(object) = item else {
        return Err(SpecError::field(format!("[{k}]"), "expected a rule object"));
    };
    let kind = object.get("type").and_then(Value::as_str).ok_or_else(|| SpecError::field(at("type"), "missing"))?;
    let period = || -> Result<Period, SpecError> {
        let text =
            object.get("period").and_then(Value::as_str).ok_or_else(|| SpecError::field(at("period"), "missing"))?;
        let p = Period::parse(text).map_err(|e| SpecError::field(at("period"), e.to_string()))?;
        if p.months < 0 || p.millis < 0 || p.is_zero() {
            return Err(SpecError::field(at("period"), format!("{text:?} is not a positive period")));
        }
        Ok(p)
    };
    let interval = || -> Result<Interval, SpecError> {
        let text = object
            .get("interval")
            .and_then(Value::as_str)
            .ok_or_else(|| SpecError::field(at("interval"), "missing"))?;
        Interval::parse(text).map_err(|e| SpecError::field(at("interval"), e.to_string()))
    };
    let include_future = || match object.get("includeFuture") {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(SpecError::field(at("includeFuture"), format!("expected true or false, got {other}"))),
    };
    let parsed = match kind {
        "loadForever" => RetentionRule::LoadForever,
        "loadByPeriod" => RetentionRule::LoadByPeriod { period: period()?, include_future: include_future()? },
        "loadByInterval" => RetentionRule::LoadByInterval(interval()?),
        "dropForever" => RetentionRule::DropForever,
        "dropByPeriod" => RetentionRule::DropByPeriod { period: period()?, include_future: include_future()? },
        "dropBeforeByPeriod" => RetentionRule::DropBeforeByPeriod(period()?),
        "dropByInterval" => RetentionRule::DropByInterval(interval()?),
        other => {
            return Err(SpecError::field(
                at("type"),
                format!(
                    "{other:?} is not a supported rule: loadForever, loadByPeriod, loadByInterval, dropForever, \
                     dropByPeriod, dropBeforeByPeriod or dropByInterval"
                ),
            ))
        }
    };
    let known: &[&str] = match parsed {
        RetentionRule::LoadByPeriod { .. } | RetentionRule::DropByPeriod { .. } => &["type", "period", "includeFuture"],
        RetentionRule::DropBeforeByPeriod(_) => &["type", "period"],
        RetentionRule::LoadByInterval(_) | RetentionRule::DropByInterval(_) => &["type", "interval"],
        RetentionRule::LoadForever | RetentionRule::DropForever => &["type"],
    };
    for key in object.keys().filter(|key| !known.contains(&key.as_str())) {
        let message = match key.as_str() {
            "tieredReplicants" | "useDefaultTierForNull" => "Sluice has no tiers or replicas; ignored",
            _ => "unknown option, ignored",
        };
        warnings.push(SpecWarning { field: at(key), message: message.into() });
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::time::parse_iso_instant;

    fn at(text: &str) -> i64 {
        parse_iso_instant(text).expect("instant")
    }

    fn day(text: &str) -> Interval {
        let start = at(text);
        Interval::new(start, start + 86_400_000)
    }

    fn rules(json: Value) -> Vec<RetentionRule> {
        load_rules(&json).expect("rules").rules
    }

    #[test]
    fn the_first_rule_that_applies_decides_as_in_druids_documentation() {
        // Druid's documented pattern: keep the last month, drop everything older.
        let r = rules(serde_json::json!([
            {"type": "loadByPeriod", "period": "P1M", "includeFuture": true, "tieredReplicants": {"_default_tier": 1}},
            {"type": "dropForever"}
        ]));
        let now = at("2026-12-01T00:00:00Z");
        assert!(retained(&r, day("2026-11-15T00:00:00Z"), now), "inside the month");
        assert!(retained(&r, day("2026-12-05T00:00:00Z"), now), "future data, includeFuture");
        assert!(retained(&r, day("2026-10-31T12:00:00Z"), now), "a segment reaching into the month");
        assert!(!retained(&r, day("2026-10-30T00:00:00Z"), now), "ended before the month: dropped");
        assert!(retained(&[], day("1970-01-01T00:00:00Z"), now), "no rule: kept");
    }

    #[test]
    fn each_rule_matches_as_druid_matches() {
        let now = at("2026-12-01T00:00:00Z");
        let seg = day("2026-11-29T00:00:00Z");
        let future = day("2026-12-03T00:00:00Z");
        let applies = |json: Value, s: Interval| rules(serde_json::json!([json]))[0].applies_to(s, now);
        assert!(applies(serde_json::json!({"type": "dropByPeriod", "period": "P7D"}), seg));
        assert!(applies(serde_json::json!({"type": "dropByPeriod", "period": "P7D"}), future));
        assert!(!applies(serde_json::json!({"type": "dropByPeriod", "period": "P7D", "includeFuture": false}), future));
        assert!(!applies(serde_json::json!({"type": "dropByPeriod", "period": "P1D"}), seg), "ended before the window");
        let before = |period: &str| serde_json::json!({"type": "dropBeforeByPeriod", "period": period});
        assert!(applies(before("P1D"), seg), "ends exactly at now - 1 day: before it");
        assert!(!applies(before("P2D"), seg), "ends after now - 2 days");
        let interval = serde_json::json!({"type": "dropByInterval", "interval": "2026-11-29/2026-12-01"});
        assert!(applies(interval, seg), "contained");
        let partial = serde_json::json!({"type": "dropByInterval", "interval": "2026-11-29T12:00:00Z/2026-12-01"});
        assert!(!applies(partial, seg), "only partly inside: not dropped");
        let load = serde_json::json!({"type": "loadByInterval", "interval": "2026-11-29T12:00:00Z/2026-12-01"});
        assert!(applies(load, seg), "a load interval needs only overlap");
        let month = rules(serde_json::json!([{"type": "dropBeforeByPeriod", "period": "P1M"}]));
        assert!(month[0].applies_to(day("2026-10-31T00:00:00Z"), now), "calendar month: before 2026-11-01");
        assert!(!month[0].applies_to(day("2026-11-01T00:00:00Z"), now));
    }

    #[test]
    fn bad_rules_name_the_rule_and_field() {
        let cases = [
            (serde_json::json!({"rules": []}), "rules"),
            (serde_json::json!([{"type": "loadByPeriod"}]), "[0].period"),
            (serde_json::json!([{"type": "loadForever"}, {"type": "dropByPeriod", "period": "P0D"}]), "[1].period"),
            (serde_json::json!([{"type": "dropByInterval", "interval": "yesterday"}]), "[0].interval"),
            (serde_json::json!([{"type": "broadcastForever"}]), "[0].type"),
            (serde_json::json!([{"period": "P1D"}]), "[0].type"),
            (
                serde_json::json!([{"type": "loadByPeriod", "period": "P1D", "includeFuture": "yes"}]),
                "[0].includeFuture",
            ),
            (serde_json::json!(["dropForever"]), "[0]"),
        ];
        for (json, field) in cases {
            match load_rules(&json) {
                Err(SpecError::Field { field: f, .. }) => assert_eq!(f, field, "{json}"),
                other => panic!("{json}: {other:?}"),
            }
        }
        let many = Value::Array(vec![serde_json::json!({"type": "loadForever"}); MAX_RULES + 1]);
        assert!(load_rules(&many).is_err(), "bounded");
    }

    #[test]
    fn tiers_and_unknown_options_are_warned() {
        let loaded = load_rules(&serde_json::json!([
            {"type": "loadForever", "tieredReplicants": {"hot": 2}, "useDefaultTierForNull": true},
            {"type": "dropForever", "color": "red"}
        ]))
        .expect("rules");
        let fields: Vec<&str> = loaded.warnings.iter().map(|w| w.field.as_str()).collect();
        assert_eq!(fields, ["[0].tieredReplicants", "[0].useDefaultTierForNull", "[1].color"]);
    }
}
