//! `[auth]`: access control of the API (CONTRACT.md "Access control").

use serde::Deserialize;

use super::{ConfigError, invalid};

/// Access control of the API (CONTRACT.md "Access control").
#[derive(Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// When set, this key is an admin key (only its hash is kept in memory).
    pub bootstrap_admin_key: Option<String>,
    /// Run without access control (the API logs a warning at start). Off by default.
    pub disabled: bool,
}

/// The bootstrap key never shows in `Debug` output.
impl std::fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthSettings")
            .field(
                "bootstrap_admin_key",
                &self.bootstrap_admin_key.as_ref().map(|_| "[redacted]"),
            )
            .field("disabled", &self.disabled)
            .finish()
    }
}

impl AuthSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self
            .bootstrap_admin_key
            .as_deref()
            .is_some_and(|k| k.trim().len() < 16)
        {
            return invalid("auth.bootstrap_admin_key must be at least 16 characters");
        }
        Ok(())
    }
}
