//! The sample's records as Avro datums, for `bench segment`'s Avro parse stage: the same rows
//! as the JSON records, every field a nullable union of its JSON type, the spec's inputFormat
//! `avro_stream` with the schema inline.

use anyhow::{anyhow, Result};
use apache_avro::types::Value as Avro;
use apache_avro::Schema;
use serde_json::Value;

/// The Wikipedia sample's fields and their Avro types.
const FIELDS: [(&str, &str); 20] = [
    ("time", "string"),
    ("channel", "string"),
    ("cityName", "string"),
    ("comment", "string"),
    ("countryIsoCode", "string"),
    ("countryName", "string"),
    ("isAnonymous", "boolean"),
    ("isMinor", "boolean"),
    ("isNew", "boolean"),
    ("isRobot", "boolean"),
    ("isUnpatrolled", "boolean"),
    ("metroCode", "long"),
    ("namespace", "string"),
    ("page", "string"),
    ("regionIsoCode", "string"),
    ("regionName", "string"),
    ("user", "string"),
    ("delta", "long"),
    ("added", "long"),
    ("deleted", "long"),
];

/// The schema as JSON.
pub fn schema_json() -> Value {
    let fields: Vec<Value> = FIELDS
        .iter()
        .map(|(name, kind)| serde_json::json!({"name": name, "type": ["null", kind], "default": null}))
        .collect();
    serde_json::json!({"type": "record", "name": "Edit", "namespace": "wikipedia", "fields": fields})
}

/// `records` (JSON objects) encoded as Avro datums of [`schema_json`].
pub fn encode(records: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
    let schema = Schema::parse(&schema_json()).map_err(|e| anyhow!("Avro schema: {e}"))?;
    records
        .iter()
        .map(|r| {
            let obj: serde_json::Map<String, Value> = serde_json::from_slice(r)?;
            let fields = FIELDS
                .iter()
                .map(|(name, kind)| {
                    let v = match (obj.get(*name), *kind) {
                        (None | Some(Value::Null), _) => {
                            return Ok((name.to_string(), Avro::Union(0, Box::new(Avro::Null))))
                        }
                        (Some(Value::String(s)), "string") => Avro::String(s.clone()),
                        (Some(Value::Bool(b)), "boolean") => Avro::Boolean(*b),
                        (Some(Value::Number(n)), "long") => {
                            Avro::Long(n.as_i64().ok_or_else(|| anyhow!("{name}: {n}"))?)
                        }
                        (Some(other), _) => return Err(anyhow!("{name}: {other} is not a {kind}")),
                    };
                    Ok((name.to_string(), Avro::Union(1, Box::new(v))))
                })
                .collect::<Result<Vec<_>>>()?;
            apache_avro::to_avro_datum(&schema, Avro::Record(fields)).map_err(|e| anyhow!("encode: {e}"))
        })
        .collect()
}
