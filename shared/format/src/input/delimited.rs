//! CSV and TSV records: `columns`, `findColumnsFromHeader`, `skipHeaderRows`, `listDelimiter`.

use super::ParseError;
use crate::spec::input_format::Delimited;
use crate::value::Value;

/// Why a CSV or TSV format's settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelimitedError {
    /// A delimiter of more than one byte.
    #[error("delimiter {delimiter:?} must be one byte")]
    Delimiter {
        /// The delimiter given.
        delimiter: String,
    },
    /// Neither `columns` nor `findColumnsFromHeader`.
    #[error("csv/tsv input needs columns or findColumnsFromHeader")]
    NoColumns,
}

/// Decodes delimited lines into field values, tracking header state across records.
#[derive(Debug)]
pub struct DelimitedDecoder {
    columns: Vec<String>,
    find_header: bool,
    skip: usize,
    seen: usize,
    list_delimiter: String,
    delimiter: u8,
}

impl DelimitedDecoder {
    /// Builds a decoder; `columns` or `findColumnsFromHeader` must be given.
    pub fn new(d: &Delimited, default_delimiter: u8) -> Result<Self, DelimitedError> {
        let delimiter = match d.delimiter.as_deref() {
            None => default_delimiter,
            Some(s) if s.len() == 1 => s.as_bytes()[0],
            Some(s) => return Err(DelimitedError::Delimiter { delimiter: s.to_string() }),
        };
        let columns = d.columns.clone().unwrap_or_default();
        if columns.is_empty() && !d.find_columns_from_header {
            return Err(DelimitedError::NoColumns);
        }
        Ok(Self {
            columns,
            find_header: d.find_columns_from_header,
            skip: d.skip_header_rows,
            seen: 0,
            list_delimiter: d.list_delimiter.clone().unwrap_or_else(|| "\u{1}".to_string()),
            delimiter,
        })
    }

    /// The column names (known once a header was read).
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Decodes one line; `None` for skipped and header lines.
    pub fn decode(&mut self, line: &str) -> Result<Option<Vec<Value>>, ParseError> {
        self.seen += 1;
        if self.seen <= self.skip {
            return Ok(None);
        }
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(self.delimiter)
            .flexible(true)
            .from_reader(line.as_bytes());
        let mut record = csv::StringRecord::new();
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => return Err(ParseError::new("empty record")),
            Err(e) => return Err(ParseError::new(format!("malformed delimited record: {e}"))),
        }
        if self.find_header && self.seen == self.skip + 1 {
            self.columns = record.iter().map(str::to_string).collect();
            return Ok(None);
        }
        if record.len() > self.columns.len() {
            return Err(ParseError::new(format!(
                "record has {} fields but {} columns are defined",
                record.len(),
                self.columns.len()
            )));
        }
        let values = record
            .iter()
            .map(|field| {
                if field.is_empty() {
                    Value::Null
                } else if !self.list_delimiter.is_empty() && field.contains(&self.list_delimiter) {
                    Value::Array(field.split(&self.list_delimiter).map(|s| Value::String(s.to_string())).collect())
                } else {
                    Value::String(field.to_string())
                }
            })
            .collect();
        Ok(Some(values))
    }
}
