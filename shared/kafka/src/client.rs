//! The consumers Sluice creates: librdkafka's own, or, for Amazon MSK's IAM authentication,
//! one whose context signs the SASL/OAUTHBEARER token from the function's AWS credentials and
//! signs it again before it expires. Only MSK settings get that context: librdkafka's own
//! OAUTHBEARER handlers (OIDC, unsecured JWT) stay in place for every other setting.

use super::msk_iam::{auth_token, AwsCredentials, USER_AGENT};
use super::ConsumerSettings;
use rdkafka::client::{ClientContext, OAuthToken};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaResult;
use rdkafka::groups::GroupList;
use rdkafka::message::BorrowedMessage;
use rdkafka::metadata::Metadata;
use rdkafka::TopicPartitionList;
use std::time::{Duration, SystemTime};

/// A consumer with either context.
pub(crate) enum Client {
    Plain(BaseConsumer),
    MskIam(BaseConsumer<MskIamContext>),
}

/// Runs `$body` with `$c` bound to the consumer, whatever its context.
macro_rules! with {
    ($client:expr, $c:ident => $body:expr) => {
        match $client {
            Client::Plain($c) => $body,
            Client::MskIam($c) => $body,
        }
    };
}

impl Client {
    /// A consumer of `config` (from `settings`): an MSK IAM one when the settings say so, its
    /// first token signed before this returns, so that the first request can authenticate.
    pub fn create(settings: &ConsumerSettings, config: &ClientConfig) -> KafkaResult<Self> {
        match settings.msk_iam_region() {
            None => Ok(Client::Plain(config.create()?)),
            Some(region) => {
                let context = MskIamContext { region: region.to_string() };
                let consumer: BaseConsumer<MskIamContext> = config.create_with_context(context)?;
                // librdkafka asks for the first token as it starts; a poll serves the request.
                let _ = consumer.poll(Duration::ZERO);
                Ok(Client::MskIam(consumer))
            }
        }
    }

    pub fn poll(&self, timeout: Duration) -> Option<KafkaResult<BorrowedMessage<'_>>> {
        with!(self, c => c.poll(timeout))
    }

    pub fn fetch_watermarks(&self, topic: &str, partition: i32, timeout: Duration) -> KafkaResult<(i64, i64)> {
        with!(self, c => c.fetch_watermarks(topic, partition, timeout))
    }

    pub fn fetch_metadata(&self, topic: Option<&str>, timeout: Duration) -> KafkaResult<Metadata> {
        with!(self, c => c.fetch_metadata(topic, timeout))
    }

    pub fn assign(&self, assignment: &TopicPartitionList) -> KafkaResult<()> {
        with!(self, c => c.assign(assignment))
    }

    pub fn position(&self) -> KafkaResult<TopicPartitionList> {
        with!(self, c => c.position())
    }

    pub fn fetch_group_list(&self, group: Option<&str>, timeout: Duration) -> KafkaResult<GroupList> {
        with!(self, c => c.fetch_group_list(group, timeout))
    }

    pub fn commit(&self, offsets: &TopicPartitionList) -> KafkaResult<()> {
        with!(self, c => c.commit(offsets, rdkafka::consumer::CommitMode::Sync))
    }
}

/// Signs MSK IAM tokens for `region` when librdkafka asks (as the client starts, then at 80%
/// of each token's 15 minutes), from the AWS credentials in the environment (a Lambda
/// function's role).
pub(crate) struct MskIamContext {
    region: String,
}

impl ClientContext for MskIamContext {
    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn generate_oauth_token(&self, _config: Option<&str>) -> Result<OAuthToken, Box<dyn std::error::Error>> {
        let credentials = AwsCredentials::from_env()?;
        let (token, expires_ms) = auth_token(&self.region, &credentials, SystemTime::now(), USER_AGENT)?;
        Ok(OAuthToken { token, principal_name: credentials.access_key_id, lifetime_ms: expires_ms })
    }
}

impl ConsumerContext for MskIamContext {}
