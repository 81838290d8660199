//! JSON records read straight into the parser's slots: keys are borrowed from the record and
//! looked up without allocating; fields that no timestamp, dimension, metric, transform or
//! filter reads are skipped unparsed (unless dimensions are discovered). Records with a
//! `flattenSpec` go through the whole-tree path instead.

use super::RecordParser;
use crate::value::Value;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// Reads one JSON object into the parser's scratch slots.
pub(super) struct ObjectSeed<'p> {
    /// The parser whose slots receive the fields.
    pub parser: &'p mut RecordParser,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn not_an_object<E: de::Error>(kind: &str) -> E {
    E::custom(format!("expected a JSON object, found {kind}"))
}

impl<'de> Visitor<'de> for ObjectSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let p = self.parser;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let slot = match p.slots.get(key.as_ref()) {
                Some(&s) => Some(s),
                None if p.schema_discovery && !p.not_dimensions.contains(key.as_ref()) => {
                    Some(p.discovered_slot(&key, crate::spec::DimensionType::Auto))
                }
                None if p.discover && !p.not_dimensions.contains(key.as_ref()) => Some(p.input_slot(&key)),
                None => None,
            };
            match slot {
                Some(s) if p.json_slots.contains(&s) => {
                    let v: serde_json::Value = map.next_value()?;
                    p.set(s, Value::json(v));
                }
                Some(s) => {
                    let v = map.next_value_seed(ValueSeed { pool: &mut p.pool })?;
                    p.set(s, v);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(not_an_object("array"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(not_an_object("string"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(not_an_object("number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(not_an_object("number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(not_an_object("number"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(not_an_object("boolean"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(not_an_object("null"))
    }
}

/// A key, borrowed from the record unless it holds escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A field value as [`Value::from_json`] would convert it, without the intermediate tree;
/// strings are read into emptied ones from `pool` when it has any.
struct ValueSeed<'p> {
    pool: &'p mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::String(if v { "true" } else { "false" }.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Long(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or(Value::Double(v as f64), Value::Long))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Double(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        let mut s = self.pool.pop().unwrap_or_default();
        s.push_str(v);
        Ok(Value::String(s))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(ValueSeed { pool: &mut *self.pool })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        // Nested objects are kept as their JSON text, as the whole-tree path does.
        let object: serde_json::Value = de::Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Value::String(object.to_string()))
    }
}
