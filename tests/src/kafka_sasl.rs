//! A Kafka listener for the MSK IAM tests: it speaks just enough of the protocol (ApiVersions,
//! SaslHandshake, SaslAuthenticate) for a client to offer its SASL/OAUTHBEARER token, keeps
//! the token, and refuses it, so that a test sees what a consumer sends an MSK broker.

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Largest request read.
const MAX_REQUEST_BYTES: usize = 1 << 20;

const API_VERSIONS: i16 = 18;
const SASL_HANDSHAKE: i16 = 17;
const SASL_AUTHENTICATE: i16 = 36;

/// A running listener; it stops with the test's runtime.
pub struct SaslListener {
    /// `host:port` to give as `bootstrap.servers`.
    pub address: String,
    tokens: Arc<Mutex<Vec<String>>>,
}

impl SaslListener {
    /// Starts a listener on a free port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the SASL listener");
        let address = listener.local_addr().expect("address").to_string();
        let tokens = Arc::new(Mutex::new(Vec::new()));
        let kept = tokens.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, kept.clone()));
            }
        });
        Self { address, tokens }
    }

    /// The OAUTHBEARER tokens clients offered, in order.
    pub fn tokens(&self) -> Vec<String> {
        self.tokens.lock().expect("tokens").clone()
    }
}

async fn serve(mut stream: TcpStream, tokens: Arc<Mutex<Vec<String>>>) {
    loop {
        let Ok(size) = stream.read_i32().await else { return };
        let Ok(size) = usize::try_from(size) else { return };
        if !(8..=MAX_REQUEST_BYTES).contains(&size) {
            return;
        }
        let mut request = vec![0; size];
        if stream.read_exact(&mut request).await.is_err() {
            return;
        }
        let (api_key, version) =
            (i16::from_be_bytes([request[0], request[1]]), i16::from_be_bytes([request[2], request[3]]));
        let mut response = request[4..8].to_vec(); // the correlation id
        match api_key {
            API_VERSIONS => {
                // Only version 0, in version 0's format: a client asking a later one retries with 0.
                response.extend_from_slice(&(if version > 0 { 35i16 } else { 0 }).to_be_bytes());
                let supported: [(i16, i16, i16); 3] =
                    [(API_VERSIONS, 0, 0), (SASL_HANDSHAKE, 0, 1), (SASL_AUTHENTICATE, 0, 1)];
                response.extend_from_slice(&(supported.len() as i32).to_be_bytes());
                for (key, min, max) in supported {
                    for v in [key, min, max] {
                        response.extend_from_slice(&v.to_be_bytes());
                    }
                }
            }
            SASL_HANDSHAKE => {
                response.extend_from_slice(&0i16.to_be_bytes());
                response.extend_from_slice(&1i32.to_be_bytes());
                response.extend_from_slice(&(b"OAUTHBEARER".len() as i16).to_be_bytes());
                response.extend_from_slice(b"OAUTHBEARER");
            }
            SASL_AUTHENTICATE => {
                if let Some(token) = offered_token(&request) {
                    tokens.lock().expect("tokens").push(token);
                }
                // SASL_AUTHENTICATION_FAILED: the test has what it came for.
                let message = b"token kept by the test listener";
                response.extend_from_slice(&58i16.to_be_bytes());
                response.extend_from_slice(&(message.len() as i16).to_be_bytes());
                response.extend_from_slice(message);
                response.extend_from_slice(&0i32.to_be_bytes());
                if version >= 1 {
                    response.extend_from_slice(&0i64.to_be_bytes());
                }
            }
            _ => return,
        }
        let mut framed = (response.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(&response);
        if stream.write_all(&framed).await.is_err() {
            return;
        }
    }
}

/// The token of a SaslAuthenticate request: after the header (key, version, correlation id,
/// client id), the auth bytes `n,,\x01auth=Bearer TOKEN\x01...`.
fn offered_token(request: &[u8]) -> Option<String> {
    let client_id_len = i16::from_be_bytes([*request.get(8)?, *request.get(9)?]).max(0) as usize;
    let body = request.get(10 + client_id_len..)?;
    let len = i32::from_be_bytes(body.get(..4)?.try_into().ok()?) as usize;
    let auth = std::str::from_utf8(body.get(4..4 + len)?).ok()?;
    let bearer = auth.split('\u{1}').find_map(|part| part.strip_prefix("auth=Bearer "))?;
    Some(bearer.to_string())
}
