//! What a failed tool call means for recovery: the failure categories, the HTTP semantics of a
//! tool's answer (RFC 9110 §15, RFC 6585 §4), `Retry-After` (RFC 9110 §10.2.3), and which
//! failures are transient. Pure: the runner (`tools.rs`) reads the answer, this decides.

use std::time::SystemTime;

use super::model::ToolFailure;

/// Failure categories recovery tells apart (CONTRACT.md "Recovery of real faults").
pub mod category {
    /// The tool failed; retryable when transient (a timeout, a refused connection, a 5xx, a 429).
    pub const TOOL_ERROR: &str = "tool_error";
    /// The call's parameters are wrong (a 400 or 422, or parameters that break the tool's
    /// `input_schema`: then no call was made).
    pub const PARAMETER_ERROR: &str = "parameter_error";
    /// Credentials or permission (401, 403): never retried.
    pub const EXTERNAL_ERROR: &str = "external_error";
    /// The tool itself is unusable (404, 405, 410, 501): an alternative tool, or stop.
    pub const TOOL_UNAVAILABLE: &str = "tool_unavailable";
    /// A step waited on its tool's open circuit as long as the tool allows: it failed without a
    /// call (no attempt is recorded for it).
    pub const CIRCUIT_OPEN: &str = "circuit_open";
}

/// How an HTTP status classifies a failure when the tool's error body names no `category`
/// or `retryable`: `(category, retryable)`.
pub fn http_class(status: u16) -> (&'static str, bool) {
    use category::*;
    match status {
        408 | 425 | 429 | 500 | 502 | 503 | 504 => (TOOL_ERROR, true),
        401 | 403 => (EXTERNAL_ERROR, false),
        404 | 405 | 410 | 501 => (TOOL_UNAVAILABLE, false),
        400 | 422 => (PARAMETER_ERROR, false),
        // any other server error: the server failed, try again
        500..=599 => (TOOL_ERROR, true),
        _ => (TOOL_ERROR, false),
    }
}

/// A `Retry-After` value in milliseconds: delta-seconds, or an HTTP-date measured against the
/// answer's own `Date` header when it has one (both the server's clock: no skew), else
/// against `now`. A date in the past is 0; an unreadable value is None.
pub fn retry_after_ms(value: &str, date: Option<&str>, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // delta-seconds; absurdly long ones saturate (and are capped by the caller)
        return Some(
            value
                .parse::<u64>()
                .unwrap_or(u64::MAX)
                .saturating_mul(1000),
        );
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let from = date
        .and_then(|d| httpdate::parse_http_date(d.trim()).ok())
        .unwrap_or(now);
    Some(
        at.duration_since(from)
            .map(|d| d.as_millis().min(u128::from(u64::MAX)) as u64)
            .unwrap_or(0),
    )
}

/// A failure that says the tool or its service is down for now (a timeout, a refused or reset
/// connection, a 5xx): what a circuit breaker counts. A 429 is the service asking to slow
/// down, which `Retry-After` handles; it does not count.
pub fn is_outage(f: &ToolFailure) -> bool {
    f.retryable && f.category == category::TOOL_ERROR && f.http_status != Some(429)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_status_has_its_class() {
        for s in 100..=599u16 {
            let (cat, retry) = http_class(s);
            let expected = match s {
                408 | 425 | 429 | 500 | 502 | 503 | 504 => (category::TOOL_ERROR, true),
                401 | 403 => (category::EXTERNAL_ERROR, false),
                404 | 405 | 410 | 501 => (category::TOOL_UNAVAILABLE, false),
                400 | 422 => (category::PARAMETER_ERROR, false),
                500..=599 => (category::TOOL_ERROR, true),
                _ => (category::TOOL_ERROR, false),
            };
            assert_eq!((cat, retry), expected, "status {s}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(retry_after_ms("120", None, now), Some(120_000));
        assert_eq!(retry_after_ms(" 0 ", None, now), Some(0));
        assert_eq!(
            retry_after_ms("99999999999999999999999", None, now),
            Some(u64::MAX)
        );
        // IMF-fixdate, against the local clock
        assert_eq!(
            retry_after_ms("Sun, 06 Nov 1994 08:49:47 GMT", None, now),
            Some(10_000)
        );
        // against the answer's own Date header, whatever the local clock says
        assert_eq!(
            retry_after_ms(
                "Sun, 06 Nov 1994 08:50:37 GMT",
                Some("Sun, 06 Nov 1994 08:50:07 GMT"),
                SystemTime::UNIX_EPOCH
            ),
            Some(30_000)
        );
        // the obsolete forms HTTP-date still allows
        assert_eq!(
            retry_after_ms("Sunday, 06-Nov-94 08:49:57 GMT", None, now),
            Some(20_000)
        );
        assert_eq!(
            retry_after_ms("Sun Nov  6 08:49:38 1994", None, now),
            Some(1_000)
        );
        // in the past: now
        assert_eq!(
            retry_after_ms("Sun, 06 Nov 1994 08:00:00 GMT", None, now),
            Some(0)
        );
        for bad in ["", "soon", "-5", "1.5", "Sun, 32 Nov 1994 08:49:37 GMT"] {
            assert_eq!(retry_after_ms(bad, None, now), None, "{bad:?}");
        }
    }

    #[test]
    fn outages_are_transient_tool_errors_but_throttling() {
        let mut f = ToolFailure::new(category::TOOL_ERROR, "down", true);
        assert!(is_outage(&f));
        f.http_status = Some(503);
        assert!(is_outage(&f));
        f.http_status = Some(429);
        assert!(!is_outage(&f), "a 429 is throttling, not an outage");
        let g = ToolFailure::new(category::EXTERNAL_ERROR, "no", false);
        assert!(!is_outage(&g));
        let h = ToolFailure::new(category::TOOL_ERROR, "bad answer", false);
        assert!(!is_outage(&h));
    }
}
