//! The HTTP side: one client with the key, the API's JSON errors turned into [`CliError`].

use reqwest::{Method, StatusCode};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The API answered with an error (`{"error": {"code", "message"}}`).
    #[error("{status}: {code}: {message}")]
    Api {
        status: StatusCode,
        code: String,
        message: String,
    },
    /// No answer: the server is not reachable, or the connection broke.
    #[error("cannot reach {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// Bad input given to the command (a file that cannot be read or parsed).
    #[error("{0}")]
    Usage(String),
    /// The server answered something that is not the API's JSON.
    #[error("unexpected answer from {url}: {detail}")]
    Protocol { url: String, detail: String },
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Api { .. } => 1,
            CliError::Connect { .. } | CliError::Usage(_) | CliError::Protocol { .. } => 2,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    key: Option<String>,
    http: reqwest::Client,
}

impl Client {
    pub fn new(base: &str, key: Option<String>) -> Result<Self, CliError> {
        let base = base.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(CliError::Usage(format!(
                "TRELLIS_URL must start with http:// or https:// (got {base:?})"
            )));
        }
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| CliError::Usage(format!("cannot build an HTTP client: {e}")))?;
        Ok(Self { base, key, http })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request to `path` with the key.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, self.url(path));
        match &self.key {
            Some(k) => r.bearer_auth(k),
            None => r,
        }
    }

    pub async fn get(&self, path: &str) -> Result<Value, CliError> {
        self.send(self.request(Method::GET, path), path).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        self.send(self.request(Method::POST, path).json(body), path)
            .await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        self.send(self.request(Method::PUT, path).json(body), path)
            .await
    }

    pub async fn delete(&self, path: &str) -> Result<Value, CliError> {
        self.send(self.request(Method::DELETE, path), path).await
    }

    /// Sends and reads the answer: JSON (or null for an empty body) on 2xx, the API's error
    /// otherwise.
    pub async fn send(&self, req: reqwest::RequestBuilder, path: &str) -> Result<Value, CliError> {
        let url = self.url(path);
        let res = req.send().await.map_err(|source| CliError::Connect {
            url: url.clone(),
            source,
        })?;
        let status = res.status();
        let text = res.text().await.map_err(|source| CliError::Connect {
            url: url.clone(),
            source,
        })?;
        if status.is_success() {
            if text.trim().is_empty() {
                return Ok(Value::Null);
            }
            return serde_json::from_str(&text).map_err(|e| CliError::Protocol {
                url,
                detail: format!("not JSON ({e})"),
            });
        }
        Err(api_error(status, &text))
    }
}

/// The API's `{"error": {"code", "message"}}`, or the status and the text of the body.
pub fn api_error(status: StatusCode, text: &str) -> CliError {
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let code = v["error"]["code"].as_str().unwrap_or("error").to_string();
    let message = v["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| text.chars().take(300).collect());
    CliError::Api {
        status,
        code,
        message,
    }
}
