//! Outbound HTTP helpers shared by the tool runners and the LLM client (no database, no
//! domain logic).

/// What went wrong with a request that got no HTTP answer, in a few words.
pub fn transport_error_kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    }
}
