//! Table names resolved: datasources (`wikipedia`, `druid.wikipedia`) to their columns, and
//! the metadata tables (`INFORMATION_SCHEMA.*`, `sys.*`).

use super::{Catalog, Input, Relation};
use crate::catalog::Schemas;
use crate::system::SystemTable;
use crate::types::{Column, SqlType};
use crate::SqlError;

impl Catalog for Schemas {
    fn relation(&self, path: &[String]) -> Result<Relation, SqlError> {
        let lower: Vec<String> = path.iter().map(|p| p.to_ascii_lowercase()).collect();
        let system = match lower.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["information_schema", t] => SystemTable::information_schema(t),
            ["sys", t] => SystemTable::sys(t),
            _ => None,
        };
        if let Some(t) = system {
            return Ok(Relation { columns: t.columns(), input: Input::System(t), joins: Vec::new() });
        }
        if let [schema, name] = path {
            if schema.eq_ignore_ascii_case("lookup") {
                if !self.lookups.contains_key(name) {
                    return Err(SqlError::validation(format!(
                        "lookup '{}' not found (lookups: {})",
                        crate::short(name),
                        crate::short(&self.lookups.keys().cloned().collect::<Vec<_>>().join(", "))
                    )));
                }
                let columns = vec![Column::new("k", SqlType::Varchar), Column::new("v", SqlType::Varchar)];
                return Ok(Relation { columns, input: Input::Lookup(name.clone()), joins: Vec::new() });
            }
        }
        let name = match path {
            [name] => name,
            [schema, name] if schema == "druid" => name,
            _ => return Err(not_found(path)),
        };
        match self.tables.get(name) {
            Some(columns) => {
                Ok(Relation { input: Input::Table(name.clone()), columns: columns.clone(), joins: Vec::new() })
            }
            None => Err(not_found(path)),
        }
    }
}

fn not_found(path: &[String]) -> SqlError {
    SqlError::validation(format!(
        "table '{}' not found (tables are datasources with published segments, lookup.<name>, INFORMATION_SCHEMA.* sys.segments, sys.servers, sys.server_segments, sys.supervisors and sys.tasks)",
        crate::short(&path.join("."))
    ))
}
