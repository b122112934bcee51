//! The worker crate's integration tests, as one test binary (one process, one throwaway
//! PostgreSQL cluster): real `trellis-worker` processes killed, restarted, drained and counted
//! (`trellis::testkit::procs`).

mod breaker;
mod chaos;
mod children;
mod connections;
mod crash;
mod fleet;
mod limits;
mod maps;
mod pooler;
mod schedules;
mod waits;
