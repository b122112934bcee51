//! `[secrets]`: tool credentials, sealed at rest.

use serde::Deserialize;

use super::{ConfigError, invalid};

/// Tool credentials (`[secrets]`).
#[derive(Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecretSettings {
    /// 32 bytes, base64 (`APP_SECRETS__KEY`): seals secrets at rest. Without it, `PUT /secrets`
    /// is refused and a tool header naming a secret fails its call.
    pub key: Option<String>,
}

impl std::fmt::Debug for SecretSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretSettings")
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl SecretSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if crate::secretbox::SecretBox::from_settings(self.key.as_deref()).is_err() {
            return invalid("secrets.key must be 32 bytes, base64");
        }
        Ok(())
    }
}
