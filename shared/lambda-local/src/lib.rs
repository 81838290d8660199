//! The Lambda service on 127.0.0.1, for running the real function binaries without Docker:
//! the Runtime API each function process polls (one listener per function, given to the
//! process as `AWS_LAMBDA_RUNTIME_API`) and the Invoke API the AWS SDK calls (point
//! `AWS_ENDPOINT_URL_LAMBDA` at [`LambdaService::invoke_url`]).
//!
//! As Lambda does: an asynchronous invocation (`X-Amz-Invocation-Type: Event`) is queued and
//! answered 202; one that fails is retried up to the function's retry count, then kept as a
//! dead letter (the on-failure destination). A synchronous one waits for the function's
//! answer, with `X-Amz-Function-Error: Unhandled` when it failed. A function may run several
//! processes (its concurrency: [`LambdaService::start`] once per process), each taking one
//! invocation at a time from the function's queue. An invocation not answered within the
//! function's timeout fails as Lambda's does ("Task timed out"). A process that exits while it
//! holds an invocation fails it at once, as Lambda does (`Runtime.ExitError`), and is started
//! again, as Lambda starts a new sandbox (one that exits before its first poll, a failed
//! initialisation, is not). The time from a function's first start to its first poll is its
//! cold-start initialisation.
//!
//! Every listener answers only requests that name it as a loopback host (`Host:
//! 127.0.0.1:PORT` or `localhost:PORT`, so that a page whose name a DNS server points at
//! 127.0.0.1 cannot reach it) under a path prefix of 128 random bits the service was started
//! with (so that another local process cannot take invocations or post answers): the prefix is
//! part of [`LambdaService::invoke_url`] and of the `AWS_LAMBDA_RUNTIME_API` each process is
//! given (`http://127.0.0.1:PORT/PREFIX`), which the AWS SDK and the Lambda runtime client put
//! before every path.
//!
//! `sluice query --workers N` runs its query workers here; the tests run every function
//! binary here.

use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, watch, Notify};

/// What a function answered to one invocation.
#[derive(Debug, Clone)]
pub enum Answer {
    /// The response payload.
    Response(Value),
    /// The error the runtime reported (`errorType`, `errorMessage`).
    Error(Value),
}

/// How a function is run.
#[derive(Debug, Clone)]
pub struct FunctionConfig {
    /// Function name (what the Invoke API is called with).
    pub name: String,
    /// The `bootstrap` executable.
    pub binary: PathBuf,
    /// Environment of the process, beside the Lambda variables.
    pub env: Vec<(String, String)>,
    /// Retries of a failed asynchronous invocation (the template's `MaximumRetryAttempts`).
    pub max_retries: u32,
    /// Invocation timeout (the deadline given to the function).
    pub timeout: Duration,
    /// Memory size in MB (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`).
    pub memory_mb: u32,
    /// Arguments of the executable (none for a `bootstrap`).
    pub args: Vec<String>,
}

struct Invocation {
    function: String,
    payload: Bytes,
    attempt: u32,
    reply: Option<oneshot::Sender<Answer>>,
    /// The process holding it (once taken).
    process: Option<usize>,
}

#[derive(Default)]
struct FunctionState {
    queue: VecDeque<Invocation>,
    max_retries: u32,
    timeout: Duration,
    started: Option<Instant>,
    cold_start: Option<Duration>,
    init_error: Option<Value>,
    answers: Vec<(Value, Answer)>,
}

#[derive(Default)]
struct ServiceState {
    functions: BTreeMap<String, FunctionState>,
    in_flight: HashMap<String, Invocation>,
    dead_letters: Vec<(String, Value, Value)>,
    next_id: u64,
    /// Processes that polled since they were last started.
    polled: HashSet<usize>,
    /// Processes started so far (each one's number).
    processes: usize,
}

struct Shared {
    state: Mutex<ServiceState>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ServiceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One function process, watched: its exits, and how to stop it.
struct Process {
    name: String,
    exited: watch::Receiver<Option<std::process::ExitStatus>>,
    /// Dropped with the service: the process is killed.
    _stop: oneshot::Sender<()>,
}

/// A running Lambda service and its function processes (killed when dropped).
pub struct LambdaService {
    shared: Arc<Shared>,
    invoke_addr: SocketAddr,
    /// The path prefix every request must carry.
    secret: Arc<str>,
    processes: Vec<Process>,
    logs: PathBuf,
    servers: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for LambdaService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LambdaService")
            .field("invoke_addr", &self.invoke_addr)
            .field("processes", &self.processes.len())
            .finish()
    }
}

impl Drop for LambdaService {
    fn drop(&mut self) {
        // Dropping the processes' stop senders kills them.
        self.processes.clear();
        for server in &self.servers {
            server.abort();
        }
    }
}

fn json_text(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

impl LambdaService {
    /// Starts the Invoke API; functions are added with [`LambdaService::start`]. Process logs
    /// (standard error) go to files under `logs`.
    pub async fn new(logs: &FsPath) -> std::io::Result<Self> {
        let shared = Arc::new(Shared { state: Mutex::new(ServiceState::default()), changed: Notify::new() });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let invoke_addr = listener.local_addr()?;
        let secret = new_secret()?;
        let app =
            Router::new().route("/2015-03-31/functions/{name}/invocations", post(invoke)).with_state(shared.clone());
        let server = tokio::spawn(serve(listener, app, secret.clone()));
        Ok(Self { shared, invoke_addr, secret, processes: Vec::new(), logs: logs.to_path_buf(), servers: vec![server] })
    }

    /// The Invoke API endpoint, for `AWS_ENDPOINT_URL_LAMBDA`: its path prefix is the secret
    /// every request must carry.
    pub fn invoke_url(&self) -> String {
        format!("http://{}/{}", self.invoke_addr, self.secret)
    }

    /// Starts a process of `config.binary` as function `config.name`, with its own Runtime
    /// API listener; started again under the same name, it adds a process taking the same
    /// function's invocations.
    pub async fn start(&mut self, config: FunctionConfig) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let runtime_addr = listener.local_addr()?;
        let name = config.name.clone();
        let secret = self.secret.clone();
        let instance = self.processes.iter().filter(|p| p.name == name).count();
        let process = {
            let mut state = self.shared.lock();
            state.processes += 1;
            let f = state.functions.entry(name.clone()).or_default();
            f.max_retries = config.max_retries;
            f.timeout = config.timeout;
            f.started.get_or_insert_with(Instant::now);
            state.processes
        };
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state((self.shared.clone(), name.clone(), process));
        self.servers.push(tokio::spawn(serve(listener, app, self.secret.clone())));
        let log = self.logs.join(log_name(&name, instance));
        std::fs::File::create(&log)?;
        let command = move || -> std::io::Result<Child> {
            let log = std::fs::OpenOptions::new().append(true).open(&log)?;
            let mut command = command_for(&config.binary);
            command
                .args(&config.args)
                .envs(config.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .env("AWS_LAMBDA_RUNTIME_API", format!("http://{runtime_addr}/{secret}"))
                .env("AWS_LAMBDA_FUNCTION_NAME", &config.name)
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", config.memory_mb.to_string())
                .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
                .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{}", config.name))
                .env("AWS_LAMBDA_LOG_STREAM_NAME", format!("local-{instance}"))
                .stdin(std::process::Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .kill_on_drop(true);
            command
                .spawn()
                .map_err(|e| std::io::Error::new(e.kind(), format!("start {}: {e}", config.binary.display())))
        };
        let child = command()?;
        let (stop, stopped) = oneshot::channel();
        let (exits, exited) = watch::channel(None);
        self.servers.push(tokio::spawn(watch_process(self.shared.clone(), process, child, command, stopped, exits)));
        self.processes.push(Process { name, exited, _stop: stop });
        Ok(())
    }

    /// Invokes function `name` synchronously with `payload`, as the Invoke API does without
    /// the HTTP round trip: its answer, or `None` when no such function was started.
    pub async fn invoke(&self, name: &str, payload: Vec<u8>) -> Option<Answer> {
        let (reply, answer) = oneshot::channel();
        let invocation = Invocation {
            function: name.to_string(),
            payload: payload.into(),
            attempt: 0,
            reply: Some(reply),
            process: None,
        };
        enqueue(&self.shared, invocation).ok()?;
        answer.await.ok()
    }

    /// The standard error of function `name`'s processes so far, one after another.
    pub fn logs(&self, name: &str) -> String {
        let instances = self.processes.iter().filter(|p| p.name == name).count().max(1);
        (0..instances).map(|i| std::fs::read_to_string(self.logs.join(log_name(name, i))).unwrap_or_default()).collect()
    }

    /// Time from the start of function `name`'s process to its first poll for work.
    pub fn cold_start(&self, name: &str) -> Option<Duration> {
        self.shared.lock().functions.get(name).and_then(|f| f.cold_start)
    }

    /// The error a function reported at initialisation, if any.
    pub fn init_error(&self, name: &str) -> Option<Value> {
        self.shared.lock().functions.get(name).and_then(|f| f.init_error.clone())
    }

    /// Every (event, answer) of function `name` so far, in order.
    pub fn answers(&self, name: &str) -> Vec<(Value, Answer)> {
        self.shared.lock().functions.get(name).map(|f| f.answers.clone()).unwrap_or_default()
    }

    /// Asynchronous invocations that failed after every retry: (function, event, last error).
    pub fn dead_letters(&self) -> Vec<(String, Value, Value)> {
        self.shared.lock().dead_letters.clone()
    }

    /// Waits for the (latest) exit of function `name`'s first process: one that failed its
    /// initialisation, or one that died and was started again.
    pub async fn exit_status(&mut self, name: &str, within: Duration) -> Option<std::process::ExitStatus> {
        let mut exited = self.processes.iter().find(|p| p.name == name)?.exited.clone();
        let status = tokio::time::timeout(within, exited.wait_for(Option::is_some)).await.ok()?.ok()?;
        *status
    }

    /// Waits until no invocation is queued or running; false if `within` passes first.
    pub async fn wait_idle(&self, within: Duration) -> bool {
        let until = Instant::now() + within;
        loop {
            let notified = self.shared.changed.notified();
            {
                let state = self.shared.lock();
                if state.in_flight.is_empty() && state.functions.values().all(|f| f.queue.is_empty()) {
                    return true;
                }
            }
            if tokio::time::timeout_at(until.into(), notified).await.is_err() {
                return false;
            }
        }
    }
}

/// 128 random bits, in hex: the path prefix of every listener of one service.
fn new_secret() -> std::io::Result<Arc<str>> {
    let mut bits = [0u8; 16];
    getrandom::fill(&mut bits).map_err(std::io::Error::other)?;
    Ok(bits.iter().map(|b| format!("{b:02x}")).collect::<String>().into())
}

/// Serves `app` on `listener` under the path prefix `secret`, to loopback hosts only.
async fn serve(listener: tokio::net::TcpListener, app: Router, secret: Arc<str>) {
    let Ok(addr) = listener.local_addr() else { return };
    let hosts: Arc<[String]> = [format!("127.0.0.1:{}", addr.port()), format!("localhost:{}", addr.port())].into();
    let app = Router::new()
        .nest(&format!("/{secret}"), app)
        .layer(middleware::from_fn(move |r, next| loopback_host_only(hosts.clone(), r, next)));
    let _ = axum::serve(listener, app).await;
}

/// Refuses (403) a request whose `Host` is not one of `hosts`: a page whose name resolves to
/// 127.0.0.1 sends its own name.
async fn loopback_host_only(hosts: Arc<[String]>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|h| hosts.iter().any(|ok| h.eq_ignore_ascii_case(ok))) {
        return (StatusCode::FORBIDDEN, "this service answers requests to 127.0.0.1 only").into_response();
    }
    next.run(request).await
}

/// The log file of process `instance` of function `name`.
fn log_name(name: &str, instance: usize) -> String {
    if instance == 0 {
        format!("{name}.log")
    } else {
        format!("{name}.{instance}.log")
    }
}

fn enqueue(shared: &Shared, invocation: Invocation) -> Result<(), Invocation> {
    let mut state = shared.lock();
    match state.functions.get_mut(&invocation.function) {
        Some(f) => f.queue.push_back(invocation),
        None => return Err(invocation),
    }
    drop(state);
    shared.changed.notify_waiters();
    Ok(())
}

/// `POST /2015-03-31/functions/{name}/invocations`: the Invoke API.
async fn invoke(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // A function is named by its name or its ARN (`arn:aws:lambda:REGION:ACCOUNT:function:NAME`).
    let function = name.rsplit(':').next().unwrap_or(&name).to_string();
    let asynchronous = headers.get("x-amz-invocation-type").is_some_and(|v| v == "Event");
    let (reply, answer) = oneshot::channel();
    let reply = if asynchronous { None } else { Some(reply) };
    let invocation = Invocation { function, payload: body, attempt: 0, reply, process: None };
    if let Err(rejected) = enqueue(&shared, invocation) {
        let body = json!({"Type": "User", "message": format!("Function not found: {}", rejected.function)});
        let mut out = (StatusCode::NOT_FOUND, body.to_string()).into_response();
        out.headers_mut().insert("x-amzn-errortype", HeaderValue::from_static("ResourceNotFoundException"));
        return out;
    }
    if asynchronous {
        return StatusCode::ACCEPTED.into_response();
    }
    let mut out = match answer.await {
        Ok(Answer::Response(v)) => (StatusCode::OK, v.to_string()).into_response(),
        Ok(Answer::Error(v)) => {
            let mut out = (StatusCode::OK, v.to_string()).into_response();
            out.headers_mut().insert("x-amz-function-error", HeaderValue::from_static("Unhandled"));
            out
        }
        Err(_) => return (StatusCode::INTERNAL_SERVER_ERROR, "the invocation was dropped").into_response(),
    };
    out.headers_mut().insert("x-amz-executed-version", HeaderValue::from_static("$LATEST"));
    out
}

/// `GET /2018-06-01/runtime/invocation/next`: long-polls for the function's next invocation.
async fn next(State((shared, name, process)): State<(Arc<Shared>, String, usize)>) -> Response {
    loop {
        let notified = shared.changed.notified();
        {
            let mut state = shared.lock();
            let state = &mut *state;
            state.polled.insert(process);
            let f = state.functions.get_mut(&name).expect("a started function");
            if f.cold_start.is_none() {
                f.cold_start = f.started.map(|s| s.elapsed());
            }
            if let Some(mut invocation) = f.queue.pop_front() {
                invocation.process = Some(process);
                state.next_id += 1;
                let id = format!("{name}-{:06}", state.next_id);
                let deadline = chrono::Utc::now().timestamp_millis() + f.timeout.as_millis() as i64;
                let payload = invocation.payload.clone();
                state.in_flight.insert(id.clone(), invocation);
                let (timeout, watched, id_late) = (f.timeout, shared.clone(), id.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(timeout).await;
                    let message = format!("Task timed out after {:.2} seconds", timeout.as_secs_f64());
                    finish(
                        &watched,
                        &id_late,
                        Answer::Error(json!({"errorType": "Sandbox.Timedout", "errorMessage": message})),
                    );
                });
                let mut out = (StatusCode::OK, payload).into_response();
                let h = out.headers_mut();
                let header = |v: String| HeaderValue::from_str(&v).expect("header value");
                h.insert("lambda-runtime-aws-request-id", header(id));
                h.insert("lambda-runtime-deadline-ms", header(deadline.to_string()));
                h.insert(
                    "lambda-runtime-invoked-function-arn",
                    header(format!("arn:aws:lambda:us-east-1:123456789012:function:{name}")),
                );
                h.insert(
                    "lambda-runtime-trace-id",
                    HeaderValue::from_static("Root=1-00000000-000000000000000000000000"),
                );
                return out;
            }
        }
        notified.await;
    }
}

fn finish(shared: &Shared, id: &str, answer: Answer) -> StatusCode {
    let mut state = shared.lock();
    let Some(mut invocation) = state.in_flight.remove(id) else {
        return StatusCode::NOT_FOUND;
    };
    let event = json_text(&invocation.payload);
    let f = state.functions.get_mut(&invocation.function).expect("a started function");
    f.answers.push((event.clone(), answer.clone()));
    match (invocation.reply.take(), &answer) {
        (Some(reply), _) => {
            let _ = reply.send(answer);
        }
        (None, Answer::Error(e)) if invocation.attempt < f.max_retries => {
            invocation.attempt += 1;
            eprintln!("lambda service: retry {} of {} after {e}", invocation.attempt, invocation.function);
            f.queue.push_back(invocation);
        }
        (None, Answer::Error(e)) => {
            let e = e.clone();
            state.dead_letters.push((invocation.function.clone(), event, e));
        }
        (None, Answer::Response(_)) => {}
    }
    drop(state);
    shared.changed.notify_waiters();
    StatusCode::ACCEPTED
}

/// `POST /2018-06-01/runtime/invocation/{id}/response`.
async fn response(
    State((shared, ..)): State<(Arc<Shared>, String, usize)>,
    Path(id): Path<String>,
    body: Bytes,
) -> StatusCode {
    finish(&shared, &id, Answer::Response(json_text(&body)))
}

/// `POST /2018-06-01/runtime/invocation/{id}/error`.
async fn error(
    State((shared, ..)): State<(Arc<Shared>, String, usize)>,
    Path(id): Path<String>,
    body: Bytes,
) -> StatusCode {
    finish(&shared, &id, Answer::Error(json_text(&body)))
}

/// `POST /2018-06-01/runtime/init/error`.
async fn init_error(State((shared, name, _)): State<(Arc<Shared>, String, usize)>, body: Bytes) -> StatusCode {
    if let Some(f) = shared.lock().functions.get_mut(&name) {
        f.init_error = Some(json_text(&body));
    }
    shared.changed.notify_waiters();
    StatusCode::ACCEPTED
}

/// Waits on process number `process` of a function: when it exits, the invocation it held
/// fails (`Runtime.ExitError`), and a process that had polled is started again by `command`;
/// one that never polled (its initialisation failed) is not. `stop` kills it.
async fn watch_process(
    shared: Arc<Shared>,
    process: usize,
    mut child: Child,
    command: impl Fn() -> std::io::Result<Child> + Send + 'static,
    mut stop: oneshot::Receiver<()>,
    exits: watch::Sender<Option<std::process::ExitStatus>>,
) {
    loop {
        let status = tokio::select! {
            status = child.wait() => status.ok(),
            _ = &mut stop => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return;
            }
        };
        let exit = status.map_or_else(|| "unknown status".to_string(), |s| s.to_string());
        let (held, polled) = {
            let mut state = shared.lock();
            let held: Vec<String> =
                state.in_flight.iter().filter(|(_, i)| i.process == Some(process)).map(|(id, _)| id.clone()).collect();
            (held, state.polled.remove(&process))
        };
        for id in held {
            let message = format!("RequestId: {id} Error: Runtime exited with error: {exit}");
            finish(&shared, &id, Answer::Error(json!({"errorType": "Runtime.ExitError", "errorMessage": message})));
        }
        let _ = exits.send(status);
        if !polled {
            return;
        }
        match command() {
            Ok(again) => child = again,
            Err(e) => {
                eprintln!("lambda service: could not start process {process} again: {e}");
                return;
            }
        }
    }
}

/// ELF's machine number of 64-bit ARM.
const EM_AARCH64: u16 = 183;

/// The command running `binary`: itself, or under qemu-user when it is an arm64 binary (the
/// template's default architecture) and this host is not (`SLUICE_QEMU_AARCH64`, default
/// `qemu-aarch64-static`, with Debian's arm64 cross libraries as its root).
fn command_for(binary: &FsPath) -> Command {
    use std::io::Read;
    let mut header = [0u8; 20];
    let read = std::fs::File::open(binary).and_then(|mut f| f.read_exact(&mut header));
    let arm64 =
        read.is_ok() && header[..4] == *b"\x7fELF" && u16::from_le_bytes([header[18], header[19]]) == EM_AARCH64;
    if !arm64 || std::env::consts::ARCH == "aarch64" {
        return Command::new(binary);
    }
    let qemu = std::env::var("SLUICE_QEMU_AARCH64").unwrap_or_else(|_| "qemu-aarch64-static".into());
    let mut command = Command::new(qemu);
    command.arg("-L").arg("/usr/aarch64-linux-gnu").arg(binary);
    command
}
