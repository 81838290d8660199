//! The sample's records as Protobuf messages, for `bench segment`'s Protobuf parse stage: the
//! same rows as the JSON records, one proto2 `optional` field per JSON field (so a `false` or a
//! `0` is present, as in the JSON), the spec's inputFormat `protobuf` with the descriptor set
//! inline.

use anyhow::{anyhow, Result};
use base64::Engine;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, Value as Proto};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet};
use serde_json::Value;

/// The Wikipedia sample's fields and their Protobuf types, as the Avro stage's.
const FIELDS: [(&str, Type); 20] = [
    ("time", Type::String),
    ("channel", Type::String),
    ("cityName", Type::String),
    ("comment", Type::String),
    ("countryIsoCode", Type::String),
    ("countryName", Type::String),
    ("isAnonymous", Type::Bool),
    ("isMinor", Type::Bool),
    ("isNew", Type::Bool),
    ("isRobot", Type::Bool),
    ("isUnpatrolled", Type::Bool),
    ("metroCode", Type::Int64),
    ("namespace", Type::String),
    ("page", Type::String),
    ("regionIsoCode", Type::String),
    ("regionName", Type::String),
    ("user", Type::String),
    ("delta", Type::Int64),
    ("added", Type::Int64),
    ("deleted", Type::Int64),
];

fn file() -> FileDescriptorProto {
    let field = |(i, (name, kind)): (usize, &(&str, Type))| FieldDescriptorProto {
        name: Some(name.to_string()),
        number: Some(i as i32 + 1),
        label: Some(Label::Optional as i32),
        r#type: Some(*kind as i32),
        ..Default::default()
    };
    FileDescriptorProto {
        name: Some("wikipedia.proto".into()),
        package: Some("wikipedia".into()),
        syntax: Some("proto2".into()),
        message_type: vec![DescriptorProto {
            name: Some("Edit".into()),
            field: FIELDS.iter().enumerate().map(field).collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The `protoBytesDecoder` reading [`encode`]'s messages.
pub fn decoder() -> Value {
    let set = FileDescriptorSet { file: vec![file()] }.encode_to_vec();
    serde_json::json!({"type": "inline", "protoMessageType": "wikipedia.Edit",
        "descriptorString": base64::engine::general_purpose::STANDARD.encode(set)})
}

/// `records` (JSON objects) encoded as `wikipedia.Edit` messages.
pub fn encode(records: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_proto(file()).map_err(|e| anyhow!("descriptor: {e}"))?;
    let edit = pool.get_message_by_name("wikipedia.Edit").ok_or_else(|| anyhow!("no Edit"))?;
    records
        .iter()
        .map(|r| {
            let obj: serde_json::Map<String, Value> = serde_json::from_slice(r)?;
            let mut m = DynamicMessage::new(edit.clone());
            for (name, kind) in &FIELDS {
                let v = match (obj.get(*name), kind) {
                    (None | Some(Value::Null), _) => continue,
                    (Some(Value::String(s)), Type::String) => Proto::String(s.clone()),
                    (Some(Value::Bool(b)), Type::Bool) => Proto::Bool(*b),
                    (Some(Value::Number(n)), Type::Int64) => {
                        Proto::I64(n.as_i64().ok_or_else(|| anyhow!("{name}: {n}"))?)
                    }
                    (Some(other), _) => return Err(anyhow!("{name}: {other} is not a {kind:?}")),
                };
                m.set_field_by_name(name, v);
            }
            Ok(m.encode_to_vec())
        })
        .collect()
}
