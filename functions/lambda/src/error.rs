//! Function errors, classified for Lambda: retryable or not.

use lambda_runtime::Diagnostic;

/// Why an invocation failed.
#[derive(Debug, thiserror::Error)]
pub enum FunctionError {
    /// The event cannot be handled as given; running it again cannot help.
    #[error("invalid event: {field}: {reason}")]
    InvalidEvent {
        /// The field at fault (a path such as `task.seq`).
        field: String,
        /// What was expected.
        reason: String,
    },
    /// The function is misconfigured (a variable, a secret): fix the deployment.
    #[error("configuration: {0}")]
    Configuration(String),
    /// A store, the broker or an invoke failed; another attempt may succeed.
    #[error("{0}")]
    Retryable(String),
}

impl FunctionError {
    /// Whether running the invocation again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, FunctionError::Retryable(_))
    }
}

impl From<FunctionError> for Diagnostic {
    fn from(e: FunctionError) -> Diagnostic {
        let error_type = match &e {
            FunctionError::InvalidEvent { .. } => "Sluice.InvalidEvent",
            FunctionError::Configuration(_) => "Sluice.Configuration",
            FunctionError::Retryable(_) => "Sluice.Retryable",
        };
        Diagnostic { error_type: error_type.into(), error_message: e.to_string() }
    }
}
