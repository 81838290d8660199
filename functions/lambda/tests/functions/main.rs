//! The Lambda functions: the API, the binaries through a local Lambda runtime, the template.

mod api;
mod local_lambda;
mod template;
