//! `template.yaml` against the code: every function's binary exists, every environment
//! variable the code reads is set, every IAM action the code's AWS calls need is granted and
//! no other, no wildcard action, a wildcard resource only where AWS requires one; and the
//! declared needs (`permissions.rs`) against the SDK calls and variables the sources use.

use serde_yaml::Value;
use sluice_functions::permissions::{FunctionSpec, API, FUNCTIONS, MISSING_AS_404, QUERY_WORKER};
use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn template() -> Value {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    serde_yaml::from_str(&text).expect("template.yaml is YAML")
}

/// A CloudFormation value with its intrinsic tag removed; for `!If [c, a, b]`, the `a` branch
/// (the one that grants something).
fn untag(v: &Value) -> &Value {
    match v {
        Value::Tagged(t) if t.tag == "!If" => t.value.as_sequence().and_then(|s| s.get(1)).map(untag).unwrap_or(v),
        Value::Tagged(t) => &t.value,
        other => other,
    }
}

/// The template's function `spec.resource`, which must build `spec.binary`.
fn function_resource<'a>(template: &'a Value, spec: &FunctionSpec) -> &'a Value {
    let resource = &template["Resources"][spec.resource];
    assert_eq!(resource["Type"], "AWS::Serverless::Function", "{}", spec.resource);
    assert_eq!(resource["Metadata"]["BuildProperties"]["Binary"], spec.binary, "{}", spec.resource);
    resource
}

/// Every (action, resource) a function's policies grant.
fn grants(function: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for policy in function["Properties"]["Policies"].as_sequence().into_iter().flatten() {
        let policy = untag(policy);
        for statement in policy["Statement"].as_sequence().into_iter().flatten() {
            assert_eq!(statement["Effect"], "Allow", "{statement:?}");
            let actions: Vec<String> = match untag(&statement["Action"]) {
                Value::String(a) => vec![a.clone()],
                Value::Sequence(list) => list.iter().map(|a| a.as_str().expect("action").to_string()).collect(),
                other => panic!("action {other:?}"),
            };
            for a in actions {
                out.push((a, statement["Resource"].clone()));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("source folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(std::fs::read_to_string(&path).expect("source"));
        }
    }
}

/// The sources of every library crate under `shared/`.
fn library_files(out: &mut Vec<String>) {
    for entry in std::fs::read_dir(root().join("shared")).expect("shared/").flatten() {
        if entry.path().join("src").is_dir() {
            rust_files(&entry.path().join("src"), out);
        }
    }
}

/// The IAM actions of the SDK calls the library and the functions make.
fn actions_in_code() -> BTreeSet<String> {
    let mut sources = Vec::new();
    library_files(&mut sources);
    rust_files(&root().join("functions/lambda/src"), &mut sources);
    let calls = [
        (".describe_table()", "dynamodb:DescribeTable"),
        (".get_item()", "dynamodb:GetItem"),
        (".query()", "dynamodb:Query"),
        (".update_item()", "dynamodb:UpdateItem"),
        (".put_item()", "dynamodb:PutItem"),
        (".delete_item()", "dynamodb:DeleteItem"),
        (".transact_write_items()", "dynamodb:TransactWriteItems"),
        (".put_object()", "s3:PutObject"),
        (".create_multipart_upload()", "s3:PutObject"),
        (".upload_part()", "s3:PutObject"),
        (".complete_multipart_upload()", "s3:PutObject"),
        (".abort_multipart_upload()", "s3:AbortMultipartUpload"),
        (".get_object()", "s3:GetObject"),
        (".head_object()", "s3:GetObject"),
        (".list_objects_v2()", "s3:ListBucket"),
        (".delete_object()", "s3:DeleteObject"),
        (".invoke()", "lambda:InvokeFunction"),
        (".get_secret_value()", "secretsmanager:GetSecretValue"),
    ];
    let mut found: BTreeSet<String> = calls
        .iter()
        .filter(|(call, _)| sources.iter().any(|s| s.contains(call)))
        .map(|(_, action)| action.to_string())
        .collect();
    // Lambda itself sends failed asynchronous invocations to the on-failure queue with the
    // function's role: no call in the code, but the role needs it.
    found.insert("sqs:SendMessage".into());
    found
}

#[test]
fn declared_needs_match_the_code() {
    let code = actions_in_code();
    let declared: BTreeSet<String> = FUNCTIONS.iter().flat_map(|f| f.actions.iter().map(|a| a.to_string())).collect();
    assert_eq!(declared, code, "the union of the functions' declared actions is what the code calls");
    // Every SLUICE_ variable the functions' code reads is declared by some function.
    let mut sources = Vec::new();
    rust_files(&root().join("functions/lambda/src"), &mut sources);
    rust_files(&root().join("functions/query-worker/src"), &mut sources);
    rust_files(&root().join("shared/pipeline/src/invoker"), &mut sources);
    rust_files(&root().join("shared/broker/src"), &mut sources);
    let declared_env: BTreeSet<&str> = FUNCTIONS.iter().flat_map(|f| f.env.iter().copied()).collect();
    for source in &sources {
        for (i, _) in source.match_indices("\"SLUICE_") {
            let name: String = source[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            assert!(declared_env.contains(name.as_str()), "{name} is read by the functions' code but declared by none");
        }
    }
}

fn check_function(template: &Value, spec: &FunctionSpec) {
    let binary = spec.binary;
    // The query worker is a crate of its own: it links no Kafka client.
    let source = match binary {
        "query-worker" => "functions/query-worker/src/main.rs".to_string(),
        _ => format!("functions/lambda/src/bin/{binary}.rs"),
    };
    assert!(root().join(source).is_file(), "binary {binary} exists");
    let resource = function_resource(template, spec);
    assert_eq!(resource["Metadata"]["BuildMethod"], "rust-cargolambda", "{binary}");
    let mut env: BTreeSet<String> = BTreeSet::new();
    for vars in [
        &template["Globals"]["Function"]["Environment"]["Variables"],
        &resource["Properties"]["Environment"]["Variables"],
    ] {
        env.extend(vars.as_mapping().into_iter().flatten().map(|(k, _)| k.as_str().expect("name").to_string()));
    }
    for var in spec.env {
        assert!(env.contains(*var), "{binary}: {var} is read but not set by the template");
    }
    let granted = grants(resource);
    let actions: BTreeSet<&str> = granted.iter().map(|(a, _)| a.as_str()).collect();
    let needed: BTreeSet<&str> = spec.actions.iter().chain(spec.kafka_cluster).copied().collect();
    assert_eq!(actions, needed, "{binary}: granted actions are exactly the needed ones");
    if actions.contains("s3:GetObject") {
        assert!(actions.contains("s3:ListBucket"), "{binary}: {MISSING_AS_404}");
    }
    for (action, resource) in &granted {
        assert!(!action.contains('*'), "{binary}: wildcard action {action}");
        let resources: Vec<&Value> = match untag(resource) {
            Value::Sequence(list) => list.iter().collect(),
            one => vec![one],
        };
        for r in resources {
            assert!(untag(r).as_str() != Some("*"), "{binary}: {action} on every resource");
        }
    }
}

/// MSK IAM actions are granted only when the template names a cluster (`HasMsk`), on that
/// cluster's ARN or the topic and group ARNs made from it, each by the action set it needs.
#[test]
fn msk_actions_are_granted_on_the_named_cluster_only() {
    let template = template();
    assert!(!template["Conditions"]["HasMsk"].is_null(), "the template has the HasMsk condition");
    for spec in &FUNCTIONS {
        let resource = function_resource(&template, spec);
        let mut granted = BTreeSet::new();
        for policy in resource["Properties"]["Policies"].as_sequence().into_iter().flatten() {
            let conditional = match policy {
                Value::Tagged(t) if t.tag == "!If" => {
                    t.value.as_sequence().and_then(|s| s.first()).and_then(Value::as_str)
                }
                _ => None,
            };
            for statement in untag(policy)["Statement"].as_sequence().into_iter().flatten() {
                let actions: Vec<&str> = match untag(&statement["Action"]) {
                    Value::String(a) => vec![a.as_str()],
                    Value::Sequence(list) => list.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                for action in actions.into_iter().filter(|a| a.starts_with("kafka-cluster:")) {
                    assert_eq!(conditional, Some("HasMsk"), "{}: {action} only with an MSK cluster", spec.binary);
                    let on = serde_yaml::to_string(&statement["Resource"]).expect("resource");
                    assert!(on.contains("MskClusterArn"), "{}: {action} on {on}", spec.binary);
                    let scope = if on.contains(":topic/") {
                        "topic"
                    } else if on.contains(":group/") {
                        "group"
                    } else {
                        "cluster"
                    };
                    let expected = match action {
                        "kafka-cluster:Connect" | "kafka-cluster:DescribeCluster" => "cluster",
                        "kafka-cluster:DescribeTopic" | "kafka-cluster:ReadData" => "topic",
                        _ => "group",
                    };
                    assert_eq!(scope, expected, "{}: {action} on {on}", spec.binary);
                    granted.insert(action.to_string());
                }
            }
        }
        let needed: BTreeSet<String> = spec.kafka_cluster.iter().map(|a| a.to_string()).collect();
        assert_eq!(granted, needed, "{}", spec.binary);
    }
}

#[test]
fn template_grants_what_each_function_needs_and_nothing_else() {
    let template = template();
    for spec in &FUNCTIONS {
        check_function(&template, spec);
    }
    // Each invoke target is granted by ARN, never by wildcard.
    for spec in &FUNCTIONS {
        let resource = function_resource(&template, spec);
        let invoked: Vec<String> = grants(resource)
            .into_iter()
            .filter(|(a, _)| a == "lambda:InvokeFunction")
            .flat_map(|(_, r)| match untag(&r) {
                Value::Sequence(list) => list.iter().map(|v| format!("{:?}", untag(v))).collect::<Vec<_>>(),
                one => vec![format!("{one:?}")],
            })
            .collect();
        assert_eq!(invoked.len(), spec.invokes.len(), "{}: invokes {:?}", spec.binary, spec.invokes);
        for target in spec.invokes {
            assert!(invoked.iter().any(|r| r.contains(&format!("-{target}"))), "{}: may invoke {target}", spec.binary);
        }
    }
}

/// The query path writes and deletes nothing but the partials workers leave for their callers.
#[test]
fn query_functions_write_and_delete_only_partials() {
    let template = template();
    for spec in [&API, &QUERY_WORKER] {
        for (action, on) in grants(function_resource(&template, spec)) {
            if matches!(action.as_str(), "s3:PutObject" | "s3:AbortMultipartUpload" | "s3:DeleteObject") {
                let on = serde_yaml::to_string(&on).expect("resource");
                assert!(
                    on.trim().ends_with("/sluice/query-partials/*") && on.lines().count() == 1,
                    "{}: {action} on {on}",
                    spec.binary
                );
            }
        }
    }
}

#[test]
fn storage_and_table_are_locked_down() {
    let t = template();
    let r = &t["Resources"];
    let bucket = &r["SegmentBucket"]["Properties"];
    assert!(bucket["BucketEncryption"].is_mapping());
    for k in ["BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"] {
        assert_eq!(bucket["PublicAccessBlockConfiguration"][k], true, "{k}");
    }
    // No rule may expire what the protocol still needs: hydrants of a task waiting to publish,
    // segments. Cleanup deletes hydrants once no attempt can write any more. Only versions
    // made noncurrent by those deletes expire (the bucket is versioned so that a mistaken
    // retention drop can be undone): deleted segments after DeletedSegmentRetentionDays.
    assert_eq!(bucket["VersioningConfiguration"]["Status"], "Enabled");
    let rules = bucket["LifecycleConfiguration"]["Rules"].as_sequence().expect("lifecycle rules");
    // Only what a broker that died left (partials it never read) expires while current.
    let partials = rules.iter().find(|r| r["Prefix"] == "sluice/query-partials/").expect("a rule for query partials");
    assert_eq!(partials["ExpirationInDays"], 1);
    for rule in rules.iter().filter(|r| r["Prefix"] != "sluice/query-partials/") {
        let expires = ["ExpirationInDays", "ExpirationDate", "Transitions", "NoncurrentVersionTransitions"]
            .iter()
            .any(|k| !rule[*k].is_null());
        assert!(!expires, "a lifecycle rule removes or moves current objects: {rule:?}");
    }
    let noncurrent = |prefix: &str| {
        let rule = rules.iter().find(|r| r["Prefix"] == prefix).unwrap_or_else(|| panic!("a rule for {prefix}"));
        untag(&rule["NoncurrentVersionExpiration"]["NoncurrentDays"]).clone()
    };
    assert_eq!(noncurrent("sluice/segments/"), Value::String("DeletedSegmentRetentionDays".into()));
    assert_eq!(noncurrent("sluice/hydrants/"), Value::Number(1.into()));
    let storage = t["Globals"]["Function"]["Environment"]["Variables"]["SLUICE_STORAGE"].clone();
    assert!(format!("{storage:?}").contains("/sluice"), "the rules' prefixes are under SLUICE_STORAGE's: {storage:?}");
    let longest = ["IndexerFunction", "MergerFunction"]
        .iter()
        .map(|f| r[*f]["Properties"]["Timeout"].as_i64().expect("timeout") * 1_000)
        .max()
        .expect("functions");
    assert!(
        longest < sluice_pipeline::supervisor::DEFAULT_CLEANUP_GRACE_MS,
        "cleanup waits until no attempt can still upload a hydrant"
    );
    let policy = &r["SegmentBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][0];
    assert_eq!(policy["Effect"], "Deny");
    assert_eq!(policy["Condition"]["Bool"]["aws:SecureTransport"], "false");
    let table = &r["MetadataTable"]["Properties"];
    assert_eq!(table["BillingMode"], "PAY_PER_REQUEST");
    assert_eq!(table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], true);
    assert_eq!(table["SSESpecification"]["SSEEnabled"], true);
    assert_eq!(table["TimeToLiveSpecification"]["Enabled"], true);
    let ttl = table["TimeToLiveSpecification"]["AttributeName"].as_str().expect("TTL attribute");
    let store = std::fs::read_to_string(root().join("shared/store/src/metadata/dynamodb.rs")).expect("dynamodb.rs");
    assert!(store.contains(&format!("number(\"{ttl}\")")), "the store reads TTL attribute {ttl}");
    // Kafka credentials come from Secrets Manager, never from a plain parameter.
    let params: Vec<String> = t["Parameters"]
        .as_mapping()
        .expect("parameters")
        .keys()
        .map(|k| k.as_str().expect("name").to_lowercase())
        .collect();
    assert!(!params.iter().any(|p| p.contains("password") || p.contains("username")), "{params:?}");
    for function in ["ApiFunction", "OperationsFunction"] {
        assert_eq!(r[function]["Properties"]["FunctionUrlConfig"]["AuthType"], "AWS_IAM", "{function} is never public");
    }
    // Queries and changes are separate permissions: the query function's role writes nothing
    // but deletes the partials its workers left for it (`query_functions_write_and_delete_only_partials`).
    let routes = |function: &str| r[function]["Properties"]["Environment"]["Variables"]["SLUICE_API_ROUTES"].clone();
    assert_eq!((routes("ApiFunction"), routes("OperationsFunction")), ("reads".into(), "writes".into()));
    let reads: Vec<_> = grants(&r["ApiFunction"]).into_iter().filter(|(a, _)| a != "s3:DeleteObject").collect();
    assert!(
        reads.iter().all(|(a, _)| !a.contains("Put")
            && !a.contains("Update")
            && !a.contains("Delete")
            && !a.contains("Transact")),
        "{reads:?}"
    );
}

#[test]
fn cloudwatch_may_use_the_alarm_topics_key() {
    let t = template();
    let r = &t["Resources"];
    let key_ref = untag(&r["AlarmTopic"]["Properties"]["KmsMasterKeyId"]);
    let key = key_ref.as_str().and_then(|name| r.get(name)).unwrap_or_else(|| {
        panic!("the alarm topic's key is not a key of the template (the AWS-managed key cannot grant CloudWatch): {key_ref:?}")
    });
    assert_eq!(key["Type"], "AWS::KMS::Key");
    let statements = key["Properties"]["KeyPolicy"]["Statement"].as_sequence().expect("key policy");
    let cloudwatch = statements
        .iter()
        .find(|s| s["Principal"]["Service"] == "cloudwatch.amazonaws.com" && s["Effect"] == "Allow")
        .expect("a statement for CloudWatch");
    let actions: Vec<&str> =
        cloudwatch["Action"].as_sequence().expect("actions").iter().filter_map(Value::as_str).collect();
    assert!(actions.contains(&"kms:Decrypt") && actions.contains(&"kms:GenerateDataKey*"), "{actions:?}");
}

/// The parameter a `!Ref` names (`None` for anything else).
fn referenced(v: &Value) -> Option<&str> {
    match v {
        Value::Tagged(t) if t.tag == "!Ref" => t.value.as_str(),
        _ => None,
    }
}

/// The condition and parameter of an optional reservation, `!If [C, !Ref P, !Ref AWS::NoValue]`.
fn optional_reservation(v: &Value) -> Option<(&str, &str)> {
    let Value::Tagged(t) = v else { return None };
    let [condition, set, unset] = t.value.as_sequence()?.as_slice() else { return None };
    (t.tag == "!If" && referenced(unset) == Some("AWS::NoValue")).then_some(())?;
    Some((condition.as_str()?, referenced(set)?))
}

/// Whether `condition` is `!Not [!Equals [!Ref parameter, 0]]`: the parameter is not 0.
fn is_not_zero(condition: &Value, parameter: &str) -> bool {
    let Value::Tagged(not) = condition else { return false };
    let Some(Value::Tagged(equals)) = not.value.as_sequence().and_then(|s| s.first()) else { return false };
    let operands = equals.value.as_sequence().map(Vec::as_slice).unwrap_or_default();
    not.tag == "!Not"
        && equals.tag == "!Equals"
        && matches!(operands, [p, zero] if referenced(p) == Some(parameter) && zero.as_i64() == Some(0))
}

/// Capacity by role: the supervisor, indexers, mergers, query workers and the compactor each
/// reserve a parameter's concurrency, which 0 turns off (a condition per function and
/// `AWS::NoValue`: an account whose limit cannot hold the defaults, or a second stack, still
/// deploys); the defaults fit the account's default limit with Lambda's unreserved 100 left;
/// the descriptions and the README say how to size them; batch splits and one query's
/// workers are kept within their functions' reservations, which the functions are told.
#[test]
fn capacity_is_reserved_by_role() {
    /// Lambda's default concurrency limit per account and Region.
    const ACCOUNT_LIMIT: i64 = 1_000;
    /// Concurrency Lambda keeps unreserved at least.
    const UNRESERVED: i64 = 100;
    let t = template();
    let r = &t["Resources"];
    let params = &t["Parameters"];
    let default = |name: &str| -> i64 {
        let p = &params[name];
        assert_eq!(p["Type"], "Number", "{name}");
        p["Default"].as_i64().unwrap_or_else(|| panic!("{name} has a default"))
    };
    let mut reserved = 0;
    for (function, parameter) in [
        ("SupervisorFunction", "SupervisorReservedConcurrency"),
        ("IndexerFunction", "IndexerReservedConcurrency"),
        ("MergerFunction", "MergerReservedConcurrency"),
        ("QueryWorkerFunction", "QueryWorkerReservedConcurrency"),
        ("CompactorFunction", "CompactorReservedConcurrency"),
    ] {
        let set = &r[function]["Properties"]["ReservedConcurrentExecutions"];
        let (condition, reserves) =
            optional_reservation(set).unwrap_or_else(|| panic!("{function} reserves only when asked: {set:?}"));
        assert_eq!(reserves, parameter, "{function}");
        assert!(is_not_zero(&t["Conditions"][condition], parameter), "{condition}: {parameter} is not 0");
        assert_eq!(params[parameter]["MinValue"].as_i64(), Some(0), "{parameter}: 0 reserves nothing");
        let described = params[parameter]["Description"].as_str().expect("description");
        assert!(described.contains("0: no") || described.contains("; 0: none"), "{parameter} says what 0 does");
        let value = default(parameter);
        assert!(value >= 1, "{parameter} reserves by default");
        reserved += value;
    }
    for function in ["ApiFunction", "OperationsFunction"] {
        assert!(r[function]["Properties"]["ReservedConcurrentExecutions"].is_null(), "{function} shares the rest");
    }
    assert!(ACCOUNT_LIMIT - reserved >= UNRESERVED, "{reserved} reserved by default leaves under {UNRESERVED}");
    let sum = format!("= {reserved}");
    let left = format!("{} of the default 1,000", ACCOUNT_LIMIT - reserved);
    let described = params["SupervisorReservedConcurrency"]["Description"].as_str().expect("description");
    assert!(described.contains(&sum) && described.contains(&left), "the arithmetic is {sum}, {left}: {described}");
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    for how in ["aws lambda get-account-settings", "UnreservedConcurrentExecutions", "at least 100", "set to 0"] {
        assert!(readme.contains(how), "the README says how to size the reservations: {how:?}");
    }
    assert!(described.contains("get-account-settings"), "{described}");

    // A throttled tick waits no longer than a period (Lambda's queue keeps it 6 hours else).
    let invoke = &r["SupervisorFunction"]["Properties"]["EventInvokeConfig"];
    assert_eq!(
        (invoke["MaximumRetryAttempts"].as_i64(), invoke["MaximumEventAgeInSeconds"].as_i64()),
        (Some(0), Some(60))
    );
    assert!(!described.contains("does not retry"), "{described}");

    // Batch splits: a cap within the indexers' reservation, both set through the environment.
    let splits = default("BatchMaxConcurrentSplits");
    assert!(splits < default("IndexerReservedConcurrency"), "the stream keeps indexers beside {splits} splits");
    let env = &t["Globals"]["Function"]["Environment"]["Variables"];
    assert_eq!(referenced(&env[sluice_pipeline::batch::MAX_SPLITS_ENV]), Some("BatchMaxConcurrentSplits"));
    assert_eq!(referenced(&env[sluice_pipeline::batch::INDEXER_RESERVED_ENV]), Some("IndexerReservedConcurrency"));
    assert_eq!(
        sluice_pipeline::batch::DEFAULT_MAX_SPLITS as i64,
        splits,
        "a deployment without the variable caps batch splits as the template does"
    );
    for spec in [&sluice_functions::permissions::SUPERVISOR, &sluice_functions::permissions::INDEXER] {
        for var in [sluice_pipeline::batch::MAX_SPLITS_ENV, sluice_pipeline::batch::INDEXER_RESERVED_ENV] {
            assert!(spec.env.contains(&var), "{} drives batch splits: {var}", spec.binary);
        }
    }

    // One query's workers: lowered to what the query workers' reservation runs at once.
    let api_env = &r["ApiFunction"]["Properties"]["Environment"]["Variables"];
    let query_reserved = sluice_functions::capacity::QUERY_WORKER_RESERVED_ENV;
    assert_eq!(referenced(&api_env[query_reserved]), Some("QueryWorkerReservedConcurrency"));
    assert!(API.env.contains(&query_reserved));
    let (workers, reservation) = (default("QueryWorkers") as usize, default("QueryWorkerReservedConcurrency") as usize);
    assert!(sluice_functions::capacity::peak_workers(workers, 128) <= reservation, "the default query fits");
    let most = params["QueryWorkers"]["MaxValue"].as_u64().expect("a maximum") as usize;
    let within = sluice_functions::capacity::batches_within(most, 128, reservation);
    let described = params["QueryWorkers"]["Description"].as_str().expect("description");
    assert!(described.contains(&format!("({within} of {reservation})")), "{described}");
}

/// Batch input is never the deployment's own deep storage: the code refuses it (it reads the
/// segment bucket from `SLUICE_STORAGE`) and the bucket's policy denies the indexer's role any
/// read of it, whatever `BatchInputBucket` names.
#[test]
fn deep_storage_is_no_batch_input() {
    let t = template();
    let r = &t["Resources"];
    let storage = &t["Globals"]["Function"]["Environment"]["Variables"]["SLUICE_STORAGE"];
    assert!(format!("{storage:?}").contains("SegmentBucket"), "the functions know their deep storage: {storage:?}");
    let statements =
        r["SegmentBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"].as_sequence().expect("policy");
    let denied = statements
        .iter()
        .find(|s| s["Effect"] == "Deny" && s["Action"] == "s3:GetObject")
        .expect("a statement denying reads of deep storage");
    let principal = serde_yaml::to_string(&denied["Principal"]["AWS"]).expect("principal");
    assert!(principal.contains("IndexerFunctionRole.Arn"), "{principal}");
    let on = serde_yaml::to_string(&denied["Resource"]).expect("resource");
    assert!(on.trim().ends_with("${SegmentBucket.Arn}/*") && denied["Condition"].is_null(), "{on}");
    assert!(r["IndexerFunctionRole"].is_null(), "SAM names the indexer's role IndexerFunctionRole");
    assert!(r["IndexerFunction"]["Properties"]["Role"].is_null(), "the indexer's role is the one SAM makes");
}
