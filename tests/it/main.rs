//! Every integration test of the core crate, as one test binary (matklad, "Delete Cargo
//! Integration Tests"): one process, so one throwaway PostgreSQL cluster for all of them
//! (`trellis::testkit`), and one link instead of one per file. Each module was a file of
//! `tests/` before; the helpers they share are `trellis::testkit`.

mod agent;
mod api;
mod architecture;
mod bulk_submit;
mod children;
mod dashboard;
mod depth;
mod durability;
mod events;
mod exactly_once;
mod execution;
mod fairness;
mod invariants;
mod llm_brain;
mod llm_client;
mod maps;
mod mcp;
mod metrics;
mod operations;
mod protocol_model;
mod queue;
mod recovery_answers;
mod recovery_faults;
mod reporting;
mod retention;
mod scenarios;
mod schedules;
mod scheduling;
mod security;
mod state_table;
mod tenants;
mod waits;
mod webhooks;
