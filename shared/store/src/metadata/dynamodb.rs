//! The DynamoDB metadata store: items keyed by `pk`/`sk` with `version` (number), `body`
//! (JSON text) and `expires_at` (the table's TTL attribute). Conditional writes are
//! `UpdateItem` with a condition expression; transactions are `TransactWriteItems`, whose
//! cancellation reasons name the failed action.

use super::{check_item, check_transaction, holds, Condition, Item, MetaError, MetadataStore, SkRange, TxOp};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;
use std::time::Duration;

/// How long a request waits for DynamoDB's answer to begin (DynamoDB answers in
/// milliseconds; an emulator under load in seconds).
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A metadata store on a DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    url: String,
    client: Client,
    table: String,
    endpoint: String,
}

type Attrs = HashMap<String, AttributeValue>;

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

fn key(pk: &str, sk: &str) -> Attrs {
    HashMap::from([("pk".to_string(), s(pk)), ("sk".to_string(), s(sk))])
}

fn decode(attrs: &Attrs) -> Option<Item> {
    let text = |k: &str| attrs.get(k).and_then(|v| v.as_s().ok()).cloned();
    let number = |k: &str| attrs.get(k).and_then(|v| v.as_n().ok()).and_then(|n| n.parse::<i64>().ok());
    Some(Item {
        pk: text("pk")?,
        sk: text("sk")?,
        version: number("version").unwrap_or(0) as u64,
        body: text("body").and_then(|b| serde_json::from_str(&b).ok()).unwrap_or(serde_json::Value::Null),
        expires_at: number("expires_at"),
    })
}

/// A condition as a DynamoDB expression, with the values it uses.
fn condition_expression(c: Condition) -> Option<(String, Option<AttributeValue>)> {
    match c {
        Condition::None => None,
        Condition::Absent => Some(("attribute_not_exists(pk)".into(), None)),
        Condition::Exists => Some(("attribute_exists(pk)".into(), None)),
        Condition::Version(v) => Some(("#v = :expected".into(), Some(AttributeValue::N(v.to_string())))),
    }
}

impl DynamoStore {
    /// Connects with the standard AWS configuration and checks that the table exists.
    pub async fn connect(url: &str, table: &str) -> Result<Self, MetaError> {
        let config = crate::aws::load_config(READ_TIMEOUT).await;
        let endpoint = config.endpoint_url().unwrap_or("AWS DynamoDB").to_string();
        let store = Self::with_client(url, Client::new(&config), table, &endpoint);
        store
            .client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| store.classify("describe_table", e))?;
        Ok(store)
    }

    /// A store over an existing client (tests use mocked clients).
    pub fn with_client(url: &str, client: Client, table: &str, endpoint: &str) -> Self {
        Self { url: url.into(), client, table: table.into(), endpoint: endpoint.into() }
    }

    fn classify<E>(
        &self,
        operation: &'static str,
        err: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
    ) -> MetaError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        if matches!(err, SdkError::DispatchFailure(_) | SdkError::TimeoutError(_)) {
            return MetaError::Unavailable {
                url: self.url.clone(),
                reason: format!(
                    "cannot reach DynamoDB at {} ({}); for local tests start the emulators with `eval \"$(localstack/up.sh)\"`",
                    self.endpoint,
                    DisplayErrorContext(&err)
                ),
            };
        }
        match err.code() {
            Some("ResourceNotFoundException") => MetaError::Unavailable {
                url: self.url.clone(),
                reason: format!(
                    "table {:?} does not exist at {}; create it (localstack/up.sh creates the test table)",
                    self.table, self.endpoint
                ),
            },
            Some(
                code @ ("UnrecognizedClientException"
                | "InvalidSignatureException"
                | "AccessDeniedException"
                | "ExpiredTokenException"),
            ) => MetaError::Unavailable {
                url: self.url.clone(),
                reason: format!(
                    "credentials refused by {} ({code}); check AWS_ACCESS_KEY_ID / AWS_PROFILE and the IAM policy",
                    self.endpoint
                ),
            },
            _ => MetaError::Failed { url: self.url.clone(), operation, message: DisplayErrorContext(&err).to_string() },
        }
    }

    fn update(
        &self,
        item: &Item,
        condition: Condition,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        let (expr, names, values) = update_parts(item, condition);
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(&item.pk, &item.sk)))
            .update_expression(expr.0)
            .set_condition_expression(expr.1)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
    }
}

/// The update and condition expressions of a put, with their names and values.
fn update_parts(item: &Item, condition: Condition) -> ((String, Option<String>), HashMap<String, String>, Attrs) {
    let names = HashMap::from([
        ("#b".to_string(), "body".to_string()),
        ("#v".to_string(), "version".to_string()),
        ("#e".to_string(), "expires_at".to_string()),
    ]);
    let mut values: Attrs = HashMap::from([
        (":b".to_string(), s(&item.body.to_string())),
        (":one".to_string(), AttributeValue::N("1".into())),
    ]);
    let set = match item.expires_at {
        Some(t) => {
            values.insert(":e".into(), AttributeValue::N(t.to_string()));
            "SET #b = :b, #e = :e ADD #v :one"
        }
        None => "SET #b = :b REMOVE #e ADD #v :one",
    };
    let cond = condition_expression(condition).map(|(expr, value)| {
        if let Some(v) = value {
            values.insert(":expected".into(), v);
        }
        expr
    });
    ((set.to_string(), cond), names, values)
}

#[async_trait]
impl MetadataStore for DynamoStore {
    fn url(&self) -> &str {
        &self.url
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.classify("get", e))?;
        Ok(out.item().and_then(decode))
    }

    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError> {
        let mut q =
            self.client.query().table_name(&self.table).consistent_read(true).expression_attribute_values(":pk", s(pk));
        q = if sk_prefix.is_empty() {
            q.key_condition_expression("pk = :pk")
        } else {
            q.key_condition_expression("pk = :pk AND begins_with(sk, :p)")
                .expression_attribute_values(":p", s(sk_prefix))
        };
        let mut pages = q.into_paginator().send();
        let mut out = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| self.classify("query", e))?;
            out.extend(page.items().iter().filter_map(decode));
        }
        out.sort_by(|a, b| a.sk.cmp(&b.sk));
        Ok(out)
    }

    async fn query_range(&self, pk: &str, range: &SkRange) -> Result<Vec<Item>, MetaError> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        // One sort-key condition: BETWEEN is inclusive, so the item at `to` (at most one) is
        // read and dropped here.
        let mut out = Vec::new();
        let mut start: Option<Attrs> = None;
        loop {
            let wanted = range.limit.map(|n| n - out.len());
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(pk))
                .expression_attribute_values(":from", s(&range.from))
                .expression_attribute_values(":to", s(&range.to))
                .scan_index_forward(!range.descending)
                .set_limit(wanted.map(|n| i32::try_from(n.saturating_add(1)).unwrap_or(i32::MAX)))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| self.classify("query", e))?;
            out.extend(page.items().iter().filter_map(decode).filter(|i| i.sk != range.to));
            if let Some(n) = range.limit {
                out.truncate(n);
                if out.len() == n {
                    break;
                }
            }
            match page.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => break,
            }
        }
        Ok(out)
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError> {
        check_item(&item)?;
        let result = self
            .update(&item, condition)
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => Ok(out
                .attributes()
                .and_then(|a| a.get("version"))
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                let current = match e.err() {
                    aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                        c.item().and_then(decode)
                    }
                    _ => None,
                };
                // Emulators may omit the old item: read it so the caller can decide.
                let current = match current {
                    Some(c) => Some(c),
                    None => self.get(&item.pk, &item.sk).await?,
                };
                Err(MetaError::ConditionFailed { pk: item.pk, sk: item.sk, condition, current: current.map(Box::new) })
            }
            Err(e) => Err(self.classify("put", e)),
        }
    }

    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError> {
        let mut d = self.client.delete_item().table_name(&self.table).set_key(Some(key(pk, sk)));
        if let Some((expr, value)) = condition_expression(condition) {
            d = d.condition_expression(expr);
            if let Some(v) = value {
                d = d.expression_attribute_names("#v", "version").expression_attribute_values(":expected", v);
            }
        }
        match d.send().await {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                let current = self.get(pk, sk).await?;
                Err(MetaError::ConditionFailed {
                    pk: pk.into(),
                    sk: sk.into(),
                    condition,
                    current: current.map(Box::new),
                })
            }
            Err(e) => Err(self.classify("delete", e)),
        }
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError> {
        check_transaction(&ops)?;
        let invalid = |e: aws_sdk_dynamodb::error::BuildError| MetaError::Invalid(e.to_string());
        let mut items = Vec::with_capacity(ops.len());
        for op in &ops {
            let cond = condition_expression(op.condition());
            let (expr, value) = match &cond {
                Some((e, v)) => (Some(e.clone()), v.clone()),
                None => (None, None),
            };
            let names = value.as_ref().map(|_| HashMap::from([("#v".to_string(), "version".to_string())]));
            let values = value.map(|v| HashMap::from([(":expected".to_string(), v)]));
            let fail = Some(ReturnValuesOnConditionCheckFailure::AllOld);
            items.push(match op {
                TxOp::Put { item, condition } => {
                    let ((set, cond), names, values) = update_parts(item, *condition);
                    let u = Update::builder()
                        .table_name(&self.table)
                        .set_key(Some(key(&item.pk, &item.sk)))
                        .update_expression(set)
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(Some(names))
                        .set_expression_attribute_values(Some(values))
                        .set_return_values_on_condition_check_failure(fail)
                        .build()
                        .map_err(invalid)?;
                    TransactWriteItem::builder().update(u).build()
                }
                TxOp::Delete { pk, sk, .. } => {
                    let d = Delete::builder()
                        .table_name(&self.table)
                        .set_key(Some(key(pk, sk)))
                        .set_condition_expression(expr)
                        .set_expression_attribute_names(names)
                        .set_expression_attribute_values(values)
                        .set_return_values_on_condition_check_failure(fail)
                        .build()
                        .map_err(invalid)?;
                    TransactWriteItem::builder().delete(d).build()
                }
                TxOp::Check { pk, sk, .. } => {
                    let c = ConditionCheck::builder()
                        .table_name(&self.table)
                        .set_key(Some(key(pk, sk)))
                        .condition_expression(
                            expr.unwrap_or_else(|| "attribute_exists(pk) OR attribute_not_exists(pk)".into()),
                        )
                        .set_expression_attribute_names(names)
                        .set_expression_attribute_values(values)
                        .set_return_values_on_condition_check_failure(fail)
                        .build()
                        .map_err(invalid)?;
                    TransactWriteItem::builder().condition_check(c).build()
                }
            });
        }
        match self.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(e))
                if matches!(e.err(), TransactWriteItemsError::TransactionCanceledException(_)) =>
            {
                let reasons = match e.err() {
                    TransactWriteItemsError::TransactionCanceledException(c) => c.cancellation_reasons().to_vec(),
                    _ => Vec::new(),
                };
                let failed = reasons.iter().position(|r| r.code() == Some("ConditionalCheckFailed"));
                // Name the failed action from the reasons, or (when an emulator gives none) by
                // re-reading each item and testing its condition.
                for (index, op) in ops.iter().enumerate() {
                    let (pk, sk) = op.key();
                    let current = match failed {
                        Some(i) if i == index => match reasons[i].item().and_then(decode) {
                            Some(c) => Some(c),
                            None => self.get(pk, sk).await?,
                        },
                        Some(_) => continue,
                        None => self.get(pk, sk).await?,
                    };
                    if failed.is_some() || !holds(op.condition(), current.as_ref()) {
                        return Err(MetaError::transaction_failed(index, op, current));
                    }
                }
                // Cancelled with every condition holding because another transaction wrote one
                // of its items at the same time (`TransactionConflict`), or throttled: a cancelled
                // transaction applied nothing, so the outcome is known and a retry may succeed.
                let retryable = |code: Option<&str>| {
                    matches!(code, None | Some("None" | "TransactionConflict" | "ThrottlingError"))
                };
                if reasons.iter().all(|r| retryable(r.code())) {
                    return Err(MetaError::Conflict { url: self.url.clone(), message: format!("{reasons:?}") });
                }
                Err(MetaError::Failed {
                    url: self.url.clone(),
                    operation: "transact",
                    message: format!("transaction cancelled: {reasons:?}"),
                })
            }
            Err(e) => Err(self.classify("transact", e)),
        }
    }
}
