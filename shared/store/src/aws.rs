//! The AWS SDK configuration every Sluice client loads: the standard environment (region,
//! credentials, `AWS_ENDPOINT_URL`), the standard retry strategy bounded to
//! [`MAX_ATTEMPTS`], and timeouts, so that an endpoint that accepts a request and never
//! answers fails the attempt, which is retried, instead of holding the caller for ever.

use std::time::Duration;

/// Attempts per request, first try included.
pub const MAX_ATTEMPTS: u32 = 5;
/// How long a connection may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(3_100);

/// The configuration with `read_timeout`: the longest wait, from sending a request, for the
/// first byte of its answer.
pub async fn load_config(read_timeout: Duration) -> aws_config::SdkConfig {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(read_timeout)
        .build();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
        .timeout_config(timeouts)
        .load()
        .await
}
