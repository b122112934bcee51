//! Tenants: who owns a row. An API key belongs to one; every row its calls create carries it,
//! and every read and action of a non-admin key sees its own tenant's rows only.

/// The tenant of every row and key that names none.
pub const DEFAULT: &str = "default";

/// Which tenants' rows a call sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every tenant's (an admin key without `?tenant=`).
    All,
    /// One tenant's.
    One(String),
}

impl Scope {
    /// The tenant to filter by; `None`: all of them.
    pub fn filter(&self) -> Option<&str> {
        match self {
            Scope::All => None,
            Scope::One(t) => Some(t),
        }
    }

    /// A row of `tenant` is visible in this scope.
    pub fn sees(&self, tenant: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::One(t) => t == tenant,
        }
    }
}

/// The `[tenants]` defaults: per tenant, at most this many tasks with running steps and
/// running steps, across the fleet (0: no cap); a tenant's own row wins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    pub max_running_tasks: i32,
    pub max_running_steps: i32,
}

impl Caps {
    /// Every tenant has a cap.
    pub fn any(&self) -> bool {
        self.max_running_tasks > 0 || self.max_running_steps > 0
    }
}

/// A tenant's name: 1 to 64 of `A-Z a-z 0-9 _ . -` (the database's `trellis_tenant`).
pub fn check(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "tenant {name:?} must be 1 to 64 of A-Z, a-z, 0-9, '_', '.' and '-'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_scopes() {
        for ok in ["default", "acme", "a.b-c_9", &"x".repeat(64)] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "é", "a/b", &"x".repeat(65)] {
            assert!(check(bad).is_err(), "{bad}");
        }
        assert!(Scope::All.sees("acme"));
        assert!(Scope::One("acme".into()).sees("acme"));
        assert!(!Scope::One("acme".into()).sees("other"));
        assert_eq!(Scope::All.filter(), None);
        assert_eq!(Scope::One("a".into()).filter(), Some("a"));
    }
}
