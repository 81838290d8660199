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

/// A spec's consumer properties for MSK IAM at `address`.
fn msk_iam_properties(address: &str) -> std::collections::BTreeMap<String, String> {
    [
        ("bootstrap.servers", address),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "AWS_MSK_IAM"),
        ("sluice.msk.region", "eu-west-3"),
        ("request.timeout.ms", "4000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A consumer of `sasl.mechanism` `AWS_MSK_IAM` offers the broker the token Sluice signs, from
/// the credentials in the environment, for the cluster's region, at the time it connects.
#[tokio::test(flavor = "multi_thread")]
async fn consumers_offer_the_signed_token_over_sasl_oauthbearer() {
    use base64::Engine;
    let listener = sluice_integration::kafka_sasl::SaslListener::start().await;
    let properties = msk_iam_properties(&listener.address);
    // The deployment's secret names the brokers its tokens are for, and how to reach them (the
    // listener speaks no TLS); the spec names the same brokers.
    let spec = properties.iter().filter(|(k, _)| *k == "bootstrap.servers").map(|(k, v)| (k.clone(), v.clone()));
    let deployment = sluice_kafka::KafkaDeployment { properties: Some(&properties), brokers: None };
    let settings = sluice_kafka::ConsumerSettings::under(&spec.collect(), &deployment).expect("settings");
    let failed =
        tokio::task::spawn_blocking(move || sluice_kafka::partition_watermarks(&settings, "t")).await.expect("joined");
    assert!(failed.is_err(), "the listener refuses every token");
    let tokens = listener.tokens();
    let token = tokens.first().expect("the consumer offered a token");
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).expect("base64url");
    let url = String::from_utf8(url).expect("a URL");
    assert!(url.starts_with("https://kafka.eu-west-3.amazonaws.com/?Action=kafka-cluster%3AConnect&"), "{url}");
    // The same credentials, region and signing time give the same bytes.
    let date = url.split('&').find_map(|p| p.strip_prefix("X-Amz-Date=")).expect("signing time");
    let at = chrono::NaiveDateTime::parse_from_str(date, "%Y%m%dT%H%M%SZ").expect("date").and_utc().timestamp();
    let credentials = AwsCredentials::from_env().expect("credentials in the environment");
    let at = UNIX_EPOCH + Duration::from_secs(at as u64);
    let (expected, _) = auth_token("eu-west-3", &credentials, at, sluice_kafka::msk_iam::USER_AGENT).expect("token");
    assert_eq!(token, &expected);
}

/// A spec that names brokers other than the deployment's, or asks for MSK IAM where the
/// deployment names no brokers, is refused before any consumer exists, so no token signed with
/// the function's role can reach the broker it names.
#[tokio::test(flavor = "multi_thread")]
async fn no_token_reaches_a_broker_the_deployment_does_not_name() {
    let listener = sluice_integration::kafka_sasl::SaslListener::start().await;
    let properties = msk_iam_properties(&listener.address);
    let elsewhere = sluice_kafka::KafkaDeployment {
        properties: None,
        brokers: Some(["b-1.cluster.kafka.eu-west-3.amazonaws.com:9098".to_string()].into_iter().collect()),
    };
    for (deployment, key) in [
        (elsewhere, "consumerProperties.bootstrap.servers"),
        (sluice_kafka::KafkaDeployment::default(), "consumerProperties.sasl.mechanism"),
    ] {
        let err = sluice_kafka::ConsumerSettings::under(&properties, &deployment).expect_err("refused").to_string();
        assert!(err.starts_with(key) && !err.contains(&listener.address), "{err}");
    }
}
