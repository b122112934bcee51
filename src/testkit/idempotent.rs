//! A tool that keeps its side effects exactly once the way docs/idempotency.md tells tool
//! authors to, and a network that loses answers: a plain HTTP/1.1 server on a TCP socket of
//! its own, so it can reset a connection (`SO_LINGER` 0: an RST, not a FIN) after the effect
//! is made and before the answer is sent, as a load balancer's idle timeout or a deploy does.
//!
//! For each request it reads the `Idempotency-Key`, and fingerprints the call by its `tool`,
//! `parameters` and `feedback` (never the raw body: `attempt` changes with each retry). A key
//! seen before with the same fingerprint gets the stored answer and makes no effect; a new key
//! makes the effect, stores the answer, and (when the script says so) loses it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request the server read.
#[derive(Debug, Clone)]
pub struct Request {
    pub key: Option<String>,
    pub task_id: String,
    pub step_id: String,
    pub attempt: i64,
    pub parameters: Value,
}

/// What the server does with a call it has not seen.
#[derive(Debug, Clone, PartialEq)]
pub enum Fresh {
    /// Make the effect and answer 200.
    Answer,
    /// Make the effect, then reset the connection: the answer is lost.
    MakeAndReset,
    /// Refuse the parameters (a 422 that names the fix in `hints`): no effect, nothing stored.
    Refuse { hints: Value },
    /// Down for now (a 503): no effect, nothing stored.
    Unavailable,
}

/// How the server treats a call it has not seen, from its parameters.
pub type Script = Arc<dyn Fn(&Value) -> Fresh + Send + Sync>;

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    /// Effects made, per key.
    effects: HashMap<String, usize>,
    /// Per key: the call's fingerprint and its stored answer.
    answers: HashMap<String, (Value, Value)>,
    resets: usize,
}

/// The server; cheap to clone.
#[derive(Clone)]
pub struct IdempotentTool {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl IdempotentTool {
    pub async fn start(script: Script) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let state: Arc<Mutex<State>> = Arc::default();
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (state, script) = (shared.clone(), script.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, state, script).await;
                });
            }
        });
        Self { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Effects made, per key.
    pub fn effects(&self) -> HashMap<String, usize> {
        self.state.lock().unwrap().effects.clone()
    }

    /// Connections reset after their effect was made.
    pub fn resets(&self) -> usize {
        self.state.lock().unwrap().resets
    }
}

/// Serve the requests of one connection until it closes (or is reset).
async fn serve(stream: TcpStream, state: Arc<Mutex<State>>, script: Script) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).await?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).await?;
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (status, answer) = match decide(&state, &script, headers.get("idempotency-key"), &body)
        {
            Some(a) => a,
            None => {
                // the effect is made: lose the answer
                let stream = reader.into_inner();
                stream.set_zero_linger()?;
                drop(stream);
                return Ok(());
            }
        };
        let text = answer.to_string();
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            if status == 200 { "OK" } else { "Error" },
            text.len()
        );
        let stream = reader.get_mut();
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(text.as_bytes()).await?;
        stream.flush().await?;
    }
}

/// The answer to one request, or `None`: reset the connection.
fn decide(
    state: &Mutex<State>,
    script: &Script,
    key: Option<&String>,
    body: &Value,
) -> Option<(u16, Value)> {
    let mut s = state.lock().unwrap();
    s.requests.push(Request {
        key: key.cloned(),
        task_id: body["task_id"].as_str().unwrap_or_default().into(),
        step_id: body["step_id"].as_str().unwrap_or_default().into(),
        attempt: body["attempt"].as_i64().unwrap_or(-1),
        parameters: body["parameters"].clone(),
    });
    let Some(key) = key else {
        return Some((
            400,
            json!({"error": {"message": "an Idempotency-Key is required"}}),
        ));
    };
    let fingerprint = json!([body["tool"], body["parameters"], body["feedback"]]);
    if let Some((seen, answer)) = s.answers.get(key) {
        return Some(if *seen == fingerprint {
            (200, answer.clone())
        } else {
            let m = "this Idempotency-Key was used with another request";
            (422, json!({"error": {"message": m, "retryable": false}}))
        });
    }
    match script(&body["parameters"]) {
        Fresh::Unavailable => Some((
            503,
            json!({"error": {"message": "down for maintenance", "retryable": true}}),
        )),
        Fresh::Refuse { hints } => Some((
            422,
            json!({"error": {"category": "parameter_error", "message": "bad parameters",
                             "hints": hints, "retryable": false}}),
        )),
        fresh => {
            *s.effects.entry(key.clone()).or_default() += 1;
            let answer = json!({"output": {"done": body["parameters"]}});
            s.answers.insert(key.clone(), (fingerprint, answer.clone()));
            if fresh == Fresh::MakeAndReset {
                s.resets += 1;
                None
            } else {
                Some((200, answer))
            }
        }
    }
}
