//! Result rows in Druid's SQL result formats: `object`, `array`, `objectLines`,
//! `arrayLines` and `csv`, with the optional header rows.

use crate::request::{ResultFormat, SqlRequest};
use crate::types::Column;
use serde_json::{Map, Value};

/// The answer to a SQL query: its columns and rows (values in column order).
#[derive(Debug, Clone, PartialEq)]
pub struct SqlResult {
    /// The columns.
    pub columns: Vec<Column>,
    /// The rows.
    pub rows: Vec<Vec<Value>>,
}

impl SqlResult {
    /// The rows as objects keyed by column name.
    pub fn objects(&self) -> Vec<Value> {
        self.rows.iter().map(|row| Value::Object(self.object(row))).collect()
    }

    fn object(&self, row: &[Value]) -> Map<String, Value> {
        self.columns.iter().zip(row).map(|(c, v)| (c.name.clone(), v.clone())).collect()
    }

    /// The body of the response to `request`.
    pub fn render(&self, request: &SqlRequest) -> String {
        match request.result_format {
            ResultFormat::Object | ResultFormat::ObjectLines => {
                let mut items: Vec<Value> = Vec::with_capacity(self.rows.len() + 1);
                if request.header {
                    items.push(Value::Object(
                        self.columns.iter().map(|c| (c.name.clone(), header_object(request, c))).collect(),
                    ));
                }
                items.extend(self.objects());
                lines_or_array(items, request.result_format == ResultFormat::ObjectLines)
            }
            ResultFormat::Array | ResultFormat::ArrayLines => {
                let mut items: Vec<Value> = self
                    .header_rows(request)
                    .iter()
                    .map(|h| Value::Array(h.iter().map(|s| Value::String(s.clone())).collect()))
                    .collect();
                items.extend(self.rows.iter().map(|r| Value::Array(r.clone())));
                lines_or_array(items, request.result_format == ResultFormat::ArrayLines)
            }
            ResultFormat::Csv => {
                let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
                for h in &self.header_rows(request) {
                    let _ = w.write_record(h);
                }
                for row in &self.rows {
                    let _ = w.write_record(row.iter().map(csv_field));
                }
                let mut out = String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned();
                out.push('\n');
                out
            }
        }
    }

    /// The header rows `request` asks for: names, native types, SQL types.
    fn header_rows(&self, request: &SqlRequest) -> Vec<Vec<String>> {
        if !request.header {
            return Vec::new();
        }
        let mut rows = vec![self.columns.iter().map(|c| c.name.clone()).collect()];
        if request.types_header {
            rows.push(self.columns.iter().map(|c| c.ty.native_name()).collect());
        }
        if request.sql_types_header {
            rows.push(self.columns.iter().map(|c| c.ty.sql_name()).collect());
        }
        rows
    }
}

/// The header object of a column in the object formats: null, or its requested types.
fn header_object(request: &SqlRequest, column: &Column) -> Value {
    let mut types = Map::new();
    if request.types_header {
        types.insert("type".into(), Value::String(column.ty.native_name()));
    }
    if request.sql_types_header {
        types.insert("sqlType".into(), Value::String(column.ty.sql_name()));
    }
    if types.is_empty() {
        Value::Null
    } else {
        Value::Object(types)
    }
}

fn lines_or_array(items: Vec<Value>, lines: bool) -> String {
    if !lines {
        return Value::Array(items).to_string();
    }
    let mut out = String::new();
    for item in items {
        out.push_str(&item.to_string());
        out.push('\n');
    }
    out.push('\n');
    out
}

fn csv_field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SqlType;
    use serde_json::json;

    fn result() -> SqlResult {
        SqlResult {
            columns: vec![Column::new("page", SqlType::Varchar), Column::new("n", SqlType::Bigint)],
            rows: vec![vec![json!("a,b"), json!(3)], vec![Value::Null, json!(1)]],
        }
    }

    fn render(format: ResultFormat, header: bool, types: bool, sql_types: bool) -> String {
        let mut r = SqlRequest::new("SELECT 1");
        (r.result_format, r.header, r.types_header, r.sql_types_header) = (format, header, types, sql_types);
        result().render(&r)
    }

    #[test]
    fn renders_each_druid_result_format() {
        assert_eq!(render(ResultFormat::Object, false, false, false), r#"[{"page":"a,b","n":3},{"page":null,"n":1}]"#);
        assert_eq!(render(ResultFormat::Array, false, false, false), r#"[["a,b",3],[null,1]]"#);
        assert_eq!(
            render(ResultFormat::ObjectLines, false, false, false),
            "{\"page\":\"a,b\",\"n\":3}\n{\"page\":null,\"n\":1}\n\n"
        );
        assert_eq!(render(ResultFormat::ArrayLines, false, false, false), "[\"a,b\",3]\n[null,1]\n\n");
        assert_eq!(render(ResultFormat::Csv, false, false, false), "\"a,b\",3\n,1\n\n");
    }

    #[test]
    fn headers_name_columns_and_their_types() {
        assert_eq!(
            render(ResultFormat::Object, true, true, true),
            r#"[{"page":{"type":"STRING","sqlType":"VARCHAR"},"n":{"type":"LONG","sqlType":"BIGINT"}},{"page":"a,b","n":3},{"page":null,"n":1}]"#
        );
        assert_eq!(
            render(ResultFormat::Object, true, false, false).split("},{").next(),
            Some(r#"[{"page":null,"n":null"#)
        );
        assert_eq!(
            render(ResultFormat::Array, true, false, true),
            r#"[["page","n"],["VARCHAR","BIGINT"],["a,b",3],[null,1]]"#
        );
        assert_eq!(render(ResultFormat::Csv, true, true, false), "page,n\nSTRING,LONG\n\"a,b\",3\n,1\n\n");
    }
}
