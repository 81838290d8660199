//! Why an extraction function (`extractionFn`) or a lookup dimension spec cannot be read:
//! the error [`super::extractions`] and [`super::lookup_dimensions`] return, which a query's
//! reading reports as an invalid `extractionFn`.

use sluice_format::text::excerpt;

/// Why an extraction function or a lookup dimension spec cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ExtractionError {
    /// The function is not a JSON object.
    #[error("extractionFn: expected an object")]
    NotAnObject,
    /// A field the form needs is absent (or not of the form it needs).
    #[error("{form} needs {field}")]
    Needs {
        /// The form, as a user reads it (`a regex extractionFn`).
        form: &'static str,
        /// The field and what it holds (`"expr"`).
        field: &'static str,
    },
    /// A field's value is out of what the form accepts.
    #[error("{form} needs {expected}")]
    OutOfRange {
        /// The form at fault.
        form: &'static str,
        /// What it accepts.
        expected: &'static str,
    },
    /// A named choice that is not one the field offers.
    #[error("{field} {value:?}: expected {expected}")]
    NotAChoice {
        /// The field (`stringFormat nullHandling`).
        field: &'static str,
        /// The value given, cut to a readable length.
        value: String,
        /// The choices.
        expected: &'static str,
    },
    /// A function type that is not read here.
    #[error("extractionFn type {kind:?} is not supported: expected {expected}")]
    UnknownType {
        /// The type given, cut to a readable length.
        kind: String,
        /// The types read where it was given.
        expected: &'static str,
    },
    /// A form Druid has that is not supported, with what to do instead.
    #[error("{0}")]
    Unsupported(&'static str),
    /// `retainMissingValue` and `replaceMissingValueWith` given together.
    #[error("retainMissingValue and replaceMissingValueWith cannot both be set")]
    MissingValueConflict,
    /// A granularity name that is not Druid's.
    #[error("granularity {0:?} is not a Druid granularity name")]
    UnknownGranularity(String),
    /// `timeFormat`'s `timeZone` is not a zone.
    #[error("timeFormat timeZone: {0}")]
    TimeZone(sluice_format::expr::UnknownTimeZone),
    /// A `searchQuery` function's query does not read.
    #[error("search query: {0}")]
    SearchQuery(serde_json::Error),
    /// An inline lookup's map does not make a table.
    #[error("the inline lookup: {0}")]
    InlineMap(sluice_format::lookup::KeyedError),
    /// An inline lookup's value that is not a string.
    #[error("the inline lookup's value of {0:?} is not a string")]
    NotAString(String),
    /// A cascade longer (or nested deeper) than the bound.
    #[error("a cascade chains at most {0} functions")]
    CascadeTooLong(usize),
    /// The expression a cascade becomes passes the bound.
    #[error("the cascade's expression passes {0} bytes")]
    ExpressionTooLong(usize),
    /// Where in the query the function at fault is (`dimension "page"`, `filter on "page"`).
    #[error("{place}: {source}")]
    At {
        /// The dimension or filter.
        place: String,
        /// Why its function cannot be read.
        source: Box<ExtractionError>,
    },
}

impl ExtractionError {
    /// `kind` refused where `expected` are read.
    pub(super) fn unknown_type(kind: &str, expected: &'static str) -> Self {
        ExtractionError::UnknownType { kind: excerpt(kind, 40).to_string(), expected }
    }

    /// This error, placed at `place`.
    pub(super) fn at(self, place: String) -> Self {
        ExtractionError::At { place, source: Box::new(self) }
    }
}
