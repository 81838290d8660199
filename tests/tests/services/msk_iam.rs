//! MSK IAM tokens checked byte for byte against AWS's own signer library
//! (`aws-msk-iam-sasl-signer-python`, `tests/msk/signer_token.py`) for the same credentials,
//! region, signing time and user agent.

use serde_json::Value;
use sluice_integration::required_env;
use sluice_kafka::msk_iam::{auth_token, AwsCredentials};
use std::time::{Duration, UNIX_EPOCH};

fn aws_signer(region: &str, c: &AwsCredentials, epoch: u64) -> Value {
    let python = required_env("SLUICE_PYTHON");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/msk/signer_token.py");
    let token = c.session_token.clone().unwrap_or_else(|| "-".into());
    let out = std::process::Command::new(&python)
        .args([script, region, &c.access_key_id, &c.secret_access_key, &token, &epoch.to_string()])
        .output()
        .expect("run AWS's signer");
    assert!(out.status.success(), "signer_token.py: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the signer's answer")
}

#[test]
fn tokens_are_byte_for_byte_those_of_aws_signer_library() {
    let cases = [
        (
            "us-east-1",
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("FwoGZXIvYXdzE+token/with=chars"),
            1_764_590_400,
        ),
        ("eu-west-3", "ASIAQEXAMPLE12345678", "secret+/=key", None, 1_796_000_123),
    ];
    for (region, key, secret, session, epoch) in cases {
        let c = AwsCredentials {
            access_key_id: key.into(),
            secret_access_key: secret.into(),
            session_token: session.map(String::from),
        };
        let theirs = aws_signer(region, &c, epoch);
        let user_agent = theirs["user_agent"].as_str().expect("user agent");
        let (token, expires_ms) =
            auth_token(region, &c, UNIX_EPOCH + Duration::from_secs(epoch), user_agent).expect("a token");
        assert_eq!(token, theirs["token"].as_str().expect("token"), "{region}");
        assert_eq!(expires_ms, theirs["expires_ms"].as_i64().expect("expiry"), "{region}");
    }
}
