//! `sqlx::migrate!` reads `migrations/` when the crate compiles: a migration added or changed
//! must rebuild it (sqlx's documented build script).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
