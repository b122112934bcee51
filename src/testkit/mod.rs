//! Test support shared by the integration tests of every crate (one place for every helper):
//! one fresh, migrated database per test, on `DATABASE_URL` when it is set, else on a
//! throwaway cluster started once per test process from the local PostgreSQL binaries (a test
//! crate is one process: see `tests/it/main.rs`); the application as `trellis-api` builds it
//! ([`app`]), a scripted tool server ([`faults`]), a tool that keeps its effects exactly once
//! (`idempotent`) and real processes ([`procs`]).

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::devpg::TempPostgres;
use crate::store::Store;

static CLUSTER: OnceLock<Result<TempPostgres, String>> = OnceLock::new();

/// URL of a database we may `CREATE DATABASE` from.
pub fn admin_url() -> String {
    if let Ok(url) = std::env::var("DATABASE_URL")
        && !url.is_empty()
    {
        return url;
    }
    let pg = CLUSTER.get_or_init(|| TempPostgres::start().map_err(|e| e.to_string()));
    match pg {
        Ok(pg) => pg.url(),
        Err(e) => panic!("cannot start a throwaway PostgreSQL for tests: {e}"),
    }
}

/// Replace the database name of a postgres URL.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let authority_end = base[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .unwrap_or(base.len());
    let mut out = format!("{}/{db}", &base[..authority_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// A fresh, migrated database for one test. It is dropped when the last clone of this handle
/// goes (at the end of the test, passed or failed).
#[derive(Debug, Clone)]
pub struct TestDb {
    pub name: String,
    pub url: String,
    pub store: Store,
    _drop: Arc<DropDatabase>,
}

/// Drops the test database; runs on a thread of its own because `Drop` cannot await and the
/// test's runtime may be the one dropping us.
#[derive(Debug)]
struct DropDatabase {
    admin: String,
    name: String,
}

impl Drop for DropDatabase {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let admin = Store::connect(&admin, 1, Duration::from_secs(30))
                    .await
                    .map_err(|e| e.to_string())?;
                let dropped = admin.drop_database(&name).await.map_err(|e| e.to_string());
                admin.pool().close().await;
                dropped
            })
        })
        .join();
        // never panic here: this may run while a failed test unwinds
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

/// A fresh, migrated database on the shared test cluster (or `DATABASE_URL`).
pub async fn fresh_db() -> TestDb {
    fresh_db_on(&admin_url()).await
}

/// A fresh, migrated database on the server of `admin` (a URL we may `CREATE DATABASE` from);
/// a test that restarts its own cluster uses it.
pub async fn fresh_db_on(admin: &str) -> TestDb {
    let admin = admin.to_string();
    let name = format!("trellis_test_{}", uuid::Uuid::new_v4().simple());
    let admin_store = Store::connect(&admin, 2, Duration::from_secs(30))
        .await
        .expect("connect to the admin database");
    admin_store
        .create_database(&name)
        .await
        .expect("create the test database");
    admin_store.pool().close().await;
    let url = with_database(&admin, &name);
    let store = Store::connect(&url, 30, Duration::from_secs(30))
        .await
        .expect("connect to the test database");
    store.migrate().await.expect("migrate the test database");
    TestDb {
        _drop: Arc::new(DropDatabase {
            admin,
            name: name.clone(),
        }),
        name,
        url,
        store,
    }
}

/// Wait until `check` returns `Some`, polling a condition (not a blind sleep) until `limit`.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn replaces_the_database_name() {
        assert_eq!(
            with_database("postgres://u:p@h:5/db?sslmode=disable", "x"),
            "postgres://u:p@h:5/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h:5", "x"), "postgres://u@h:5/x");
        assert_eq!(
            with_database("postgres://u@h/postgres", "x"),
            "postgres://u@h/x"
        );
    }
}

pub mod app;
pub mod faults;
pub mod idempotent;
pub mod procs;

pub use app::*;
pub use procs::DevApi;

/// A PgBouncer in front of the server of a test database, and that database's URL through it.
pub fn pooler_for(
    db: &TestDb,
    config: &crate::devbouncer::BouncerConfig,
) -> (crate::devbouncer::TempBouncer, String) {
    let url = url::Url::parse(&db.url).expect("a test database URL");
    assert!(
        matches!(url.host_str(), Some("127.0.0.1" | "localhost")),
        "the pooler tests need the test server on loopback: {}",
        db.url
    );
    let port = url.port().unwrap_or(5432);
    let bouncer = crate::devbouncer::TempBouncer::start(port, config)
        .unwrap_or_else(|e| panic!("cannot start PgBouncer for the pooler tests: {e}"));
    let pooled = bouncer.url(&db.name);
    (bouncer, pooled)
}
