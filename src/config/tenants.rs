//! `[tenants]`: the caps each tenant gets by default.

use serde::Deserialize;

use super::{ConfigError, invalid};

/// Tenants (`[tenants]`): the caps each tenant gets unless `PUT /api/v1/tenants/{tenant}` gave
/// it its own.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TenantSettings {
    /// At most this many tasks of one tenant with running steps, across the fleet (0: no cap).
    pub max_running_tasks: u32,
    /// At most this many running steps of one tenant, across the fleet (0: no cap).
    pub max_running_steps: u32,
}

impl TenantSettings {
    pub fn caps(&self) -> crate::domain::tenant::Caps {
        crate::domain::tenant::Caps {
            max_running_tasks: self.max_running_tasks.min(i32::MAX as u32) as i32,
            max_running_steps: self.max_running_steps.min(i32::MAX as u32) as i32,
        }
    }
}

impl TenantSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.max_running_tasks > 1_000_000 || self.max_running_steps > 1_000_000 {
            return invalid(
                "tenants.max_running_tasks and max_running_steps must be at most 1000000",
            );
        }
        Ok(())
    }
}
