//! Credentials in parameters: an `http_request` step may carry an `Authorization` header, a
//! tool's parameters an API key. They are stored (the step needs them to run) but never shown:
//! every API answer and event passes its parameters through [`redacted`].

use serde_json::Value;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Keys whose values are credentials wherever they appear (compared case-insensitively, with
/// `-` and `_` taken as the same).
const SECRET_KEYS: [&str; 12] = [
    "authorization",
    "proxy_authorization",
    "cookie",
    "set_cookie",
    "x_api_key",
    "api_key",
    "apikey",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "x_auth_token",
];

/// Whether a key names a credential.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEYS.contains(&k.as_str())
        || k.ends_with("_secret")
        || k.ends_with("_password")
        || k.ends_with("_api_key")
        || k == "access_token"
        || k == "refresh_token"
}

/// `v` with the value of every credential key replaced by [`REDACTED`].
pub fn redacted(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = if is_secret_key(k) && !x.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        redacted(x)
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redacted).collect()),
        other => other.clone(),
    }
}

/// The text values held under credential keys anywhere in `v` (at least 4 characters: shorter
/// ones would redact ordinary words).
pub fn secret_values(v: &Value) -> Vec<String> {
    fn walk(v: &Value, under_secret: bool, out: &mut Vec<String>) {
        match v {
            Value::String(s) if under_secret && s.chars().count() >= 4 => out.push(s.clone()),
            Value::Object(m) => {
                for (k, x) in m {
                    walk(x, under_secret || is_secret_key(k), out);
                }
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, under_secret, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, false, &mut out);
    out
}

/// `text` with every occurrence of each of `secrets` replaced by [`REDACTED`].
pub fn scrub(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .fold(text.to_string(), |t, s| t.replace(s.as_str(), REDACTED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_values_are_found_at_any_depth_and_scrubbed_from_text() {
        let v = serde_json::json!({"api_key": "sk-123456", "auth": {"password": "hunter22"},
            "name": "ada", "creds": [{"client_secret": "cs-9999"}], "token": "no"});
        let mut found = secret_values(&v);
        found.sort();
        assert_eq!(found, ["cs-9999", "hunter22", "sk-123456"]);
        assert_eq!(
            scrub("key sk-123456 and hunter22 for ada", &found),
            "key [redacted] and [redacted] for ada"
        );
    }
    use serde_json::json;

    #[test]
    fn credentials_are_redacted_at_any_depth() {
        let p = json!({
            "url": "https://api.example.com",
            "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k", "Accept": "json"},
            "nested": [{"client_secret": "s", "db_password": "p", "name": "n"}],
            "token_count": 3
        });
        let r = redacted(&p);
        let text = r.to_string();
        for secret in ["Bearer abc", "\"k\"", "\"s\"", "\"p\""] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert_eq!(r["headers"]["Accept"], "json");
        assert_eq!(r["nested"][0]["name"], "n");
        assert_eq!(r["token_count"], 3);
        assert_eq!(r["headers"]["Authorization"], REDACTED);
    }
}
