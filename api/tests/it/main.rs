//! The API crate's integration tests, as one test binary: the real `trellis-api` binary
//! (`trellis::testkit::procs::DevApi`), its logs, keys and spans.

mod dev;
mod llm_key;
mod logs;
mod otlp;
mod secrets;
