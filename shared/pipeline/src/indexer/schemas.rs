//! Where a spec's binary formats (of the value, and of the `kafka` format's key) read their
//! schemas from: the schema registry a `schema_registry` decoder names, and the descriptor set
//! file a Protobuf `file` decoder names (a path or a `file://` URL, read where the task runs,
//! bounded in size).

use sluice_format::input::{FormatSources, SchemaRegistry, SchemaSources};
use sluice_format::spec::{DatasourceSpec, InputFormat, ProtoBytesDecoder};
use sluice_kafka::HttpSchemaRegistry;
use std::io::Read;
use std::sync::Arc;

/// Largest descriptor set file read.
const MAX_DESCRIPTOR_SET_BYTES: u64 = 16 << 20;

/// The registry clients and descriptor sets `spec`'s value and key formats need.
pub(crate) fn schema_sources(spec: &DatasourceSpec) -> Result<SchemaSources, String> {
    let key = spec.input_format.kafka_columns().and_then(|c| c.key).map(|(_, format)| format);
    Ok(SchemaSources {
        value: format_sources(spec.input_format.value_format())?,
        key: key.as_ref().map(format_sources).transpose()?.unwrap_or_default(),
    })
}

fn format_sources(format: &InputFormat) -> Result<FormatSources, String> {
    let registry = match format.registry() {
        Some(settings) => Some(Arc::new(HttpSchemaRegistry::new(settings)?) as Arc<dyn SchemaRegistry>),
        None => None,
    };
    let descriptor_set = match format {
        InputFormat::Protobuf { proto_bytes_decoder: ProtoBytesDecoder::File { descriptor, .. }, .. } => {
            Some(Arc::new(read_descriptor_set(descriptor)?))
        }
        _ => None,
    };
    Ok(FormatSources { registry, descriptor_set })
}

/// The bytes of the descriptor set file at `descriptor`.
fn read_descriptor_set(descriptor: &str) -> Result<Vec<u8>, String> {
    let at = "ioConfig.inputFormat.protoBytesDecoder.descriptor";
    let path = match descriptor.split_once("://") {
        None => descriptor,
        Some(("file", rest)) => rest,
        Some((scheme, _)) => {
            return Err(format!(
                "{at}: {scheme}:// descriptors are not supported: give a file path, or the set inline (type inline, descriptorString)"
            ))
        }
    };
    let file = std::fs::File::open(path).map_err(|e| format!("{at} {path:?}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_DESCRIPTOR_SET_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("{at} {path:?}: {e}"))?;
    if bytes.len() as u64 > MAX_DESCRIPTOR_SET_BYTES {
        return Err(format!("{at} {path:?} is larger than {MAX_DESCRIPTOR_SET_BYTES} bytes"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_files_are_read_by_path_or_file_url_and_bounded() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("set.desc");
        std::fs::write(&path, b"\x0a\x00").expect("write");
        let shown = path.display().to_string();
        assert_eq!(read_descriptor_set(&shown).expect("path"), b"\x0a\x00");
        assert_eq!(read_descriptor_set(&format!("file://{shown}")).expect("url"), b"\x0a\x00");
        let e = read_descriptor_set("s3://bucket/set.desc").expect_err("s3");
        assert!(e.contains("s3:// descriptors are not supported") && e.contains("descriptorString"), "{e}");
        let e = read_descriptor_set(&format!("{shown}.missing")).expect_err("missing");
        assert!(e.contains("set.desc.missing"), "{e}");
        std::fs::File::create(&path).and_then(|f| f.set_len(MAX_DESCRIPTOR_SET_BYTES + 1)).expect("grow");
        let e = read_descriptor_set(&shown).expect_err("too large");
        assert!(e.contains("is larger than 16777216 bytes"), "{e}");
    }
}
