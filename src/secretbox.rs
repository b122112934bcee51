//! Tool credentials at rest: AES-256-GCM (the RustCrypto `aes-gcm` crate) with the key of
//! `[secrets] key` (32 bytes, base64). A sealed value is a random 96-bit nonce followed by the
//! ciphertext and its tag; the store keeps only that. The API seals (`PUT /secrets/{name}`),
//! workers open at call time; nothing else ever holds a value.

use aes_gcm::aead::{Aead, KeyInit, OsRng};
use aes_gcm::{AeadCore, Aes256Gcm, Nonce};
use base64::Engine;

/// What went wrong with a key or a sealed value.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("no [secrets] key is configured (APP_SECRETS__KEY: 32 bytes, base64)")]
    NoKey,
    #[error("[secrets] key must be 32 bytes, base64")]
    BadKey,
    #[error("a stored secret does not open with this key (was the key changed?)")]
    Unreadable,
}

/// The configured key.
#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(<key>)")
    }
}

impl SecretBox {
    /// The key of `[secrets] key`: base64 of 32 bytes.
    pub fn from_base64(key: &str) -> Result<Self, SecretError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(key.trim())
            .map_err(|_| SecretError::BadKey)?;
        let cipher = Aes256Gcm::new_from_slice(&bytes).map_err(|_| SecretError::BadKey)?;
        Ok(Self { cipher })
    }

    /// The box of the settings, if a key is configured.
    pub fn from_settings(key: Option<&str>) -> Result<Option<Self>, SecretError> {
        key.map(Self::from_base64).transpose()
    }

    /// Seal a value: nonce ‖ ciphertext ‖ tag.
    pub fn seal(&self, value: &str) -> Vec<u8> {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let mut out = nonce.to_vec();
        out.extend(
            self.cipher
                .encrypt(&nonce, value.as_bytes())
                .expect("AES-GCM encrypts any length we store"),
        );
        out
    }

    /// Open a sealed value.
    pub fn open(&self, sealed: &[u8]) -> Result<String, SecretError> {
        if sealed.len() < 12 {
            return Err(SecretError::Unreadable);
        }
        let (nonce, ct) = sealed.split_at(12);
        let nonce: [u8; 12] = nonce.try_into().map_err(|_| SecretError::Unreadable)?;
        let plain = self
            .cipher
            .decrypt(&Nonce::from(nonce), ct)
            .map_err(|_| SecretError::Unreadable)?;
        String::from_utf8(plain).map_err(|_| SecretError::Unreadable)
    }
}

/// Headers ready to send, and the secret values in them.
pub type OpenedHeaders = (Vec<(String, String)>, Vec<String>);

/// Headers as they are sent: every `${secret.NAME}` filled in from `sealed` (the named
/// secrets' stored values, as `Store::sealed_secrets` reads them), opened with `key`; and the
/// secret values used (to redact them from whatever comes back). `Err` names the secret that
/// is not set or does not open, or the missing key.
pub fn open_headers(
    headers: &std::collections::BTreeMap<String, String>,
    key: Option<&SecretBox>,
    sealed: Vec<(String, Vec<u8>)>,
) -> Result<OpenedHeaders, String> {
    let names = referenced(headers);
    let mut opened = std::collections::HashMap::new();
    if !names.is_empty() {
        let b = key.ok_or_else(|| SecretError::NoKey.to_string())?;
        for (name, s) in sealed {
            let v = b.open(&s).map_err(|e| format!("secret {name:?}: {e}"))?;
            opened.insert(name, v);
        }
        if let Some(n) = names.iter().find(|n| !opened.contains_key(**n)) {
            return Err(format!("secret {n:?} is not set (PUT /api/v1/secrets/{n})"));
        }
    }
    let filled = headers
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                fill(v, |n| opened.get(n).cloned()).unwrap_or_default(),
            )
        })
        .collect();
    Ok((
        filled,
        opened.into_values().filter(|v| !v.is_empty()).collect(),
    ))
}

/// Every secret the headers name.
pub fn referenced(headers: &std::collections::BTreeMap<String, String>) -> Vec<&str> {
    headers.values().flat_map(|v| references(v)).collect()
}

/// Headers as they may be shown: `${secret.NAME}` references as written, a literal
/// credential-like value (an `Authorization`, an API key) redacted.
pub fn shown_headers(
    headers: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    headers
        .iter()
        .map(|(k, v)| {
            let shown = if !v.contains("${secret.") && crate::domain::secrets::is_secret_key(k) {
                crate::domain::secrets::REDACTED.to_string()
            } else {
                v.clone()
            };
            (k.clone(), shown)
        })
        .collect()
}

/// The `${secret.NAME}` references of a header value, in order.
pub fn references(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(i) = rest.find("${secret.") {
        let after = &rest[i + "${secret.".len()..];
        let Some(end) = after.find('}') else { break };
        out.push(&after[..end]);
        rest = &after[end + 1..];
    }
    out
}

/// `value` with every `${secret.NAME}` replaced by `lookup(NAME)`.
pub fn fill(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("${secret.") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "${secret.".len()..];
        let end = after.find('}')?;
        out.push_str(&lookup(&after[..end])?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    #[test]
    fn seals_and_opens_and_refuses_a_wrong_key() {
        let b = SecretBox::from_base64(KEY).unwrap();
        let sealed = b.seal("s3cr3t");
        assert!(
            !sealed.windows(6).any(|w| w == b"s3cr3t"),
            "not in the clear"
        );
        assert_eq!(b.open(&sealed).unwrap(), "s3cr3t");
        assert_ne!(b.seal("s3cr3t"), sealed, "a fresh nonce each time");
        let other = SecretBox::from_base64("HwAeHRwbGhkYFxYVFBMSERAPDg0MCwoJCAcGBQQDAgE=").unwrap();
        assert!(other.open(&sealed).is_err());
        assert!(SecretBox::from_base64("c2hvcnQ=").is_err());
    }

    #[test]
    fn references_are_found_and_filled() {
        let v = "Bearer ${secret.api} and ${secret.other}!";
        assert_eq!(references(v), vec!["api", "other"]);
        let filled = fill(v, |n| Some(format!("<{n}>"))).unwrap();
        assert_eq!(filled, "Bearer <api> and <other>!");
        assert_eq!(fill("${secret.gone}", |_| None), None);
        assert_eq!(fill("plain", |_| None).as_deref(), Some("plain"));
    }
}
