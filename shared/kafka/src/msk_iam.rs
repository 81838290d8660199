//! Amazon MSK's IAM authentication: the SASL/OAUTHBEARER token is a SigV4 presigned URL of
//! `kafka-cluster:Connect` on `https://kafka.{region}.amazonaws.com/`, valid 15 minutes,
//! base64url-encoded without padding, as AWS's signer libraries make it
//! (`aws-msk-iam-sasl-signer-python` gives the same bytes for the same credentials, region,
//! time and user agent: `tests/msk/signer_token.py`).

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings};
use aws_sigv4::sign::v4;
use base64::Engine;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a token is valid.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(900);

/// The user agent Sluice's tokens carry (a query parameter after the signature).
pub const USER_AGENT: &str = concat!("sluice/", env!("CARGO_PKG_VERSION"));

/// Why an MSK IAM token could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MskIamError {
    /// No AWS credentials in the environment.
    #[error("MSK IAM needs AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set")]
    NoCredentials,
    /// The signing parameters were refused.
    #[error("MSK IAM signing parameters: {0}")]
    Parameters(#[source] v4::signing_params::BuildError),
    /// The request to sign was refused.
    #[error("MSK IAM request: {0}")]
    Request(#[source] aws_sigv4::http_request::SigningError),
    /// The request could not be signed.
    #[error("MSK IAM signing: {0}")]
    Signing(#[source] aws_sigv4::http_request::SigningError),
    /// The signing time is before the epoch.
    #[error(transparent)]
    Clock(#[from] std::time::SystemTimeError),
}

/// AWS credentials (the function's role: the Lambda runtime sets them in the environment).
#[derive(Clone)]
pub struct AwsCredentials {
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// Session token of temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials").field("access_key_id", &self.access_key_id).finish_non_exhaustive()
    }
}

impl AwsCredentials {
    /// The credentials of `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
    pub fn from_env() -> Result<Self, MskIamError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            (Some(access_key_id), Some(secret_access_key)) => {
                Ok(Self { access_key_id, secret_access_key, session_token: var("AWS_SESSION_TOKEN") })
            }
            _ => Err(MskIamError::NoCredentials),
        }
    }
}

/// The token for `region` signed at `at`, and when it expires (ms since the epoch).
pub fn auth_token(
    region: &str,
    credentials: &AwsCredentials,
    at: SystemTime,
    user_agent: &str,
) -> Result<(String, i64), MskIamError> {
    let identity = Credentials::new(
        &credentials.access_key_id,
        &credentials.secret_access_key,
        credentials.session_token.clone(),
        None,
        "sluice",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(TOKEN_LIFETIME);
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("kafka-cluster")
        .time(at)
        .settings(settings)
        .build()
        .map_err(MskIamError::Parameters)?
        .into();
    let endpoint = format!("https://kafka.{region}.amazonaws.com/");
    let url = format!("{endpoint}?Action=kafka-cluster%3AConnect");
    let request = SignableRequest::new("GET", &url, std::iter::empty(), SignableBody::Bytes(&[]))
        .map_err(MskIamError::Request)?;
    let (instructions, _) = sign(request, &params).map_err(MskIamError::Signing)?.into_parts();
    let (_, signed) = instructions.into_parts();
    // In the order AWS's signers write them: the action, the signing parameters, the
    // signature, then the user agent (not signed).
    const ORDER: [&str; 7] = [
        "X-Amz-Algorithm",
        "X-Amz-Credential",
        "X-Amz-Date",
        "X-Amz-Expires",
        "X-Amz-SignedHeaders",
        "X-Amz-Security-Token",
        "X-Amz-Signature",
    ];
    let mut query = vec![("Action".to_string(), "kafka-cluster:Connect".to_string())];
    for name in ORDER {
        if let Some((_, v)) = signed.iter().find(|(k, _)| *k == name) {
            query.push((name.to_string(), v.to_string()));
        }
    }
    query.push(("User-Agent".into(), user_agent.into()));
    let encoded: Vec<String> = query.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    let presigned = format!("{endpoint}?{}", encoded.join("&"));
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(presigned);
    let signed_at = at.duration_since(UNIX_EPOCH)?.as_secs() as i64;
    Ok((token, (signed_at + TOKEN_LIFETIME.as_secs() as i64) * 1000))
}

/// Percent-encodes all but RFC 3986's unreserved characters, as SigV4 does.
fn encode(s: &str) -> String {
    const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    utf8_percent_encode(s, UNRESERVED).to_string()
}
