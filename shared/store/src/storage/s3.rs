//! The S3 store (aws-sdk-s3): conditional create with `If-None-Match: *`, multipart upload for
//! large objects, ranged reads (of one version with `If-Match` on its ETag), paginated listing. Retries (throttling, 5xx, timeouts) are the
//! SDK's standard strategy with exponential backoff, bounded to
//! [`MAX_ATTEMPTS`](crate::aws::MAX_ATTEMPTS); an attempt waits at most [`READ_TIMEOUT`] for
//! the answer to begin.

use super::{check_key, ObjectMeta, ObjectStore, StorageError};
use async_trait::async_trait;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use bytes::Bytes;
use std::ops::Range;
use std::time::Duration;

/// How long a request waits for S3's answer to begin: an upload of one part included.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Objects larger than this are uploaded in parts of this size.
pub const MULTIPART_PART_BYTES: usize = 8 << 20;

/// A store on an S3 bucket, under a key prefix.
#[derive(Debug, Clone)]
pub struct S3Store {
    url: String,
    client: Client,
    bucket: String,
    prefix: String,
    endpoint: String,
}

impl S3Store {
    /// Connects with the standard AWS configuration (`AWS_ENDPOINT_URL`, region, credentials)
    /// and checks that the bucket exists and is reachable.
    pub async fn connect(url: &str, bucket: &str, prefix: &str) -> Result<Self, StorageError> {
        let config = crate::aws::load_config(READ_TIMEOUT).await;
        let endpoint = config.endpoint_url().unwrap_or("AWS S3").to_string();
        // Emulators (LocalStack, moto) serve buckets by path, not by virtual host.
        let s3 = aws_sdk_s3::config::Builder::from(&config).force_path_style(config.endpoint_url().is_some()).build();
        let store = Self::with_client(url, Client::from_conf(s3), bucket, prefix, &endpoint);
        store.client.head_bucket().bucket(bucket).send().await.map_err(|e| store.classify("head_bucket", "", e))?;
        Ok(store)
    }

    /// A store over an existing client (tests use mocked clients).
    pub fn with_client(url: &str, client: Client, bucket: &str, prefix: &str, endpoint: &str) -> Self {
        Self { url: url.into(), client, bucket: bucket.into(), prefix: prefix.into(), endpoint: endpoint.into() }
    }

    fn full_key(&self, key: &str) -> Result<String, StorageError> {
        check_key(key)?;
        Ok(if self.prefix.is_empty() { key.to_string() } else { format!("{}/{key}", self.prefix) })
    }

    fn classify<E>(
        &self,
        operation: &'static str,
        key: &str,
        err: SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
    ) -> StorageError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        if matches!(err, SdkError::DispatchFailure(_) | SdkError::TimeoutError(_)) {
            return StorageError::Unavailable {
                url: self.url.clone(),
                reason: format!(
                    "cannot reach S3 at {} ({}); for local tests start the emulators with `eval \"$(localstack/up.sh)\"`",
                    self.endpoint,
                    DisplayErrorContext(&err)
                ),
            };
        }
        let status = err.raw_response().map(|r| r.status().as_u16());
        match (err.code(), status) {
            (Some("NoSuchKey" | "NotFound"), _) | (_, Some(404)) if operation != "head_bucket" => {
                StorageError::NotFound { url: self.url.clone(), key: key.into() }
            }
            (Some("NoSuchBucket"), _) | (_, Some(404)) => StorageError::Unavailable {
                url: self.url.clone(),
                reason: format!(
                    "bucket {:?} does not exist at {}; create it (localstack/up.sh creates the test bucket)",
                    self.bucket, self.endpoint
                ),
            },
            (Some("PreconditionFailed" | "ConditionalRequestConflict"), _) | (_, Some(412)) => {
                StorageError::AlreadyExists { url: self.url.clone(), key: key.into() }
            }
            (
                Some(
                    code @ ("InvalidAccessKeyId"
                    | "SignatureDoesNotMatch"
                    | "AccessDenied"
                    | "ExpiredToken"
                    | "InvalidToken"),
                ),
                _,
            )
            | (Some(code), Some(403)) => StorageError::Unavailable {
                url: self.url.clone(),
                reason: format!(
                    "credentials refused by {} ({code}); check AWS_ACCESS_KEY_ID / AWS_PROFILE and the bucket policy",
                    self.endpoint
                ),
            },
            _ => StorageError::Failed {
                url: self.url.clone(),
                operation,
                key: key.into(),
                message: DisplayErrorContext(&err).to_string(),
            },
        }
    }

    async fn put_multipart(&self, key: &str, full: &str, bytes: Bytes, if_absent: bool) -> Result<(), StorageError> {
        let upload = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(full)
            .send()
            .await
            .map_err(|e| self.classify("create_multipart_upload", key, e))?;
        let upload_id = upload.upload_id().unwrap_or_default().to_string();
        let result = async {
            let mut parts = Vec::new();
            for (i, chunk) in bytes.chunks(MULTIPART_PART_BYTES).enumerate() {
                let n = i as i32 + 1;
                let part = self
                    .client
                    .upload_part()
                    .bucket(&self.bucket)
                    .key(full)
                    .upload_id(&upload_id)
                    .part_number(n)
                    .body(ByteStream::from(bytes.slice_ref(chunk)))
                    .send()
                    .await
                    .map_err(|e| self.classify("upload_part", key, e))?;
                parts.push(CompletedPart::builder().part_number(n).set_e_tag(part.e_tag().map(str::to_string)).build());
            }
            let mut complete = self
                .client
                .complete_multipart_upload()
                .bucket(&self.bucket)
                .key(full)
                .upload_id(&upload_id)
                .multipart_upload(CompletedMultipartUpload::builder().set_parts(Some(parts)).build());
            if if_absent {
                complete = complete.if_none_match("*");
            }
            complete.send().await.map_err(|e| self.classify("complete_multipart_upload", key, e))?;
            Ok(())
        }
        .await;
        if result.is_err() {
            // Best effort: an abandoned upload is also removed by the bucket's lifecycle rule.
            let _ =
                self.client.abort_multipart_upload().bucket(&self.bucket).key(full).upload_id(&upload_id).send().await;
        }
        result
    }

    async fn put_object(&self, key: &str, bytes: Bytes, if_absent: bool) -> Result<(), StorageError> {
        let full = self.full_key(key)?;
        if bytes.len() > MULTIPART_PART_BYTES {
            return self.put_multipart(key, &full, bytes, if_absent).await;
        }
        let mut put = self.client.put_object().bucket(&self.bucket).key(&full).body(ByteStream::from(bytes));
        if if_absent {
            put = put.if_none_match("*");
        }
        put.send().await.map_err(|e| self.classify(if if_absent { "put_if_absent" } else { "put" }, key, e))?;
        Ok(())
    }

    async fn read(&self, key: &str, range: Option<Range<u64>>, version: Option<&str>) -> Result<Bytes, StorageError> {
        let full = self.full_key(key)?;
        let mut get = self.client.get_object().bucket(&self.bucket).key(&full).set_if_match(version.map(String::from));
        if let Some(r) = &range {
            if r.end <= r.start {
                return Ok(Bytes::new());
            }
            get = get.range(format!("bytes={}-{}", r.start, r.end - 1));
        }
        let out = match get.send().await {
            Ok(out) => out,
            // A range starting at or past the end reads nothing, as from a file.
            Err(e) if range.is_some() && e.raw_response().map(|r| r.status().as_u16()) == Some(416) => {
                return Ok(Bytes::new())
            }
            // If-Match failed: the object was replaced (a write's 412 is a conflict instead).
            Err(e) if version.is_some() && e.raw_response().map(|r| r.status().as_u16()) == Some(412) => {
                return Err(StorageError::Changed { url: self.url.clone(), key: key.into() })
            }
            Err(e) => return Err(self.classify("get", key, e)),
        };
        let body = out.body.collect().await.map_err(|e| StorageError::Failed {
            url: self.url.clone(),
            operation: "get",
            key: key.into(),
            message: e.to_string(),
        })?;
        Ok(body.into_bytes())
    }
}

#[async_trait]
impl ObjectStore for S3Store {
    fn url(&self) -> &str {
        &self.url
    }

    async fn put(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        self.put_object(key, bytes, false).await
    }

    async fn put_if_absent(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        self.put_object(key, bytes, true).await
    }

    async fn get(&self, key: &str) -> Result<Bytes, StorageError> {
        self.read(key, None, None).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StorageError> {
        self.read(key, Some(range), None).await
    }

    async fn get_range_if(&self, key: &str, range: Range<u64>, version: &str) -> Result<Bytes, StorageError> {
        self.read(key, Some(range), Some(version)).await
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StorageError> {
        let full = self.full_key(key)?;
        match self.client.head_object().bucket(&self.bucket).key(&full).send().await {
            Ok(out) => Ok(Some(ObjectMeta {
                key: key.into(),
                size: out.content_length().unwrap_or(0).max(0) as u64,
                version: out.e_tag().map(String::from),
            })),
            Err(e) => match self.classify("head", key, e) {
                StorageError::NotFound { .. } => Ok(None),
                other => Err(other),
            },
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StorageError> {
        let base = if self.prefix.is_empty() { String::new() } else { format!("{}/", self.prefix) };
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(format!("{base}{prefix}"))
            .into_paginator()
            .send();
        let mut out = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| self.classify("list", prefix, e))?;
            for obj in page.contents() {
                let Some(key) = obj.key().and_then(|k| k.strip_prefix(&base)) else { continue };
                out.push(ObjectMeta {
                    key: key.to_string(),
                    size: obj.size().unwrap_or(0).max(0) as u64,
                    version: obj.e_tag().map(String::from),
                });
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    async fn delete(&self, key: &str) -> Result<(), StorageError> {
        let full = self.full_key(key)?;
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(&full)
            .send()
            .await
            .map_err(|e| self.classify("delete", key, e))?;
        Ok(())
    }
}
