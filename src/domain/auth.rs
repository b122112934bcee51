//! Access control vocabulary: the roles an API key has, and what each may do.

use std::fmt;
use std::str::FromStr;

/// What an API key may do (CONTRACT.md "Access control"). Ordered: a role allows everything
/// a lower one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Every `GET`.
    Reader,
    /// Submit, cancel, resume, rerun, and every read.
    Operator,
    /// Everything, including the tool and template registries and the keys.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Admin, Role::Operator, Role::Reader];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    /// This role may make a call that needs `required`.
    pub fn allows(self, required: Role) -> bool {
        self >= required
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown role {s:?}; one of admin, operator, reader"))
    }
}

/// The role a call under `/api/v1` needs: `path` is relative to `/api/v1` (`/tasks/…`).
/// Keys are the admin's; the registries (tools, templates) are read by anyone and changed by
/// the admin; every other read is a reader's, every other change an operator's.
pub fn required_role(method: &str, path: &str) -> Role {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    let read = matches!(method, "GET" | "HEAD");
    let second = path.trim_start_matches('/').split('/').nth(2).unwrap_or("");
    match first {
        "keys" | "webhooks" | "secrets" | "key-limits" | "tenants" | "model-prices" => Role::Admin,
        "mcp-servers" if !read => Role::Admin,
        // the wait's own role is checked by the handler (an approval may name reader)
        "waits" if matches!(second, "approve" | "reject") => Role::Reader,
        // pausing a tool is an incident's action: the tool's registry entry is not changed
        "tools" if matches!(second, "pause" | "resume") => Role::Operator,
        _ if read => Role::Reader,
        "tools" | "templates" => Role::Admin,
        _ => Role::Operator,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_round_trip() {
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
            assert!(r.allows(Role::Reader));
        }
        assert!(Role::Admin.allows(Role::Operator));
        assert!(!Role::Operator.allows(Role::Admin));
        assert!(!Role::Reader.allows(Role::Operator));
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn what_each_call_needs() {
        let cases = [
            ("GET", "/tasks", Role::Reader),
            ("GET", "/tasks/x/events", Role::Reader),
            ("POST", "/tasks", Role::Operator),
            ("POST", "/tasks/batch", Role::Operator),
            ("POST", "/tasks/x/cancel", Role::Operator),
            ("POST", "/tasks/x/resume", Role::Operator),
            ("GET", "/tools", Role::Reader),
            ("POST", "/tools", Role::Admin),
            ("DELETE", "/tools/x", Role::Admin),
            ("POST", "/tools/x/pause", Role::Operator),
            ("POST", "/tools/x/resume", Role::Operator),
            ("POST", "/bulk-actions", Role::Operator),
            ("GET", "/model-prices", Role::Admin),
            ("PUT", "/model-prices", Role::Admin),
            ("GET", "/bulk-actions/x", Role::Reader),
            ("POST", "/bulk-actions/x/abort", Role::Operator),
            ("GET", "/keys", Role::Admin),
            ("POST", "/keys", Role::Admin),
            ("DELETE", "/keys/x", Role::Admin),
            ("GET", "/stats", Role::Reader),
            ("POST", "/templates", Role::Admin),
            ("GET", "/waits", Role::Reader),
            ("POST", "/waits/x/approve", Role::Reader),
            ("POST", "/waits/x/reject", Role::Reader),
            ("POST", "/events", Role::Operator),
            ("GET", "/webhooks", Role::Admin),
            ("POST", "/webhooks", Role::Admin),
            ("GET", "/key-limits", Role::Admin),
            ("PUT", "/key-limits/premium-*", Role::Admin),
            ("GET", "/tenants", Role::Admin),
            ("PUT", "/tenants/acme", Role::Admin),
        ];
        for (m, p, want) in cases {
            assert_eq!(required_role(m, p), want, "{m} {p}");
        }
    }
}
