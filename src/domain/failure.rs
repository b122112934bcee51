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
    /// A `task` call would start a child deeper than `[limits] max_child_depth`.
    pub const CHILD_DEPTH_EXCEEDED: &str = "child_depth_exceeded";
    /// A `task` call would start more than `[limits] max_descendants` tasks under one root.
    pub const DESCENDANTS_EXCEEDED: &str = "descendants_exceeded";
}

/// A failure no tier can heal: a tree of child tasks at its limit, or an agent step that ran
/// out of turns, could not give a valid answer or spent its `max_cost`. The task stops at once with the category as
/// its stop reason, and so does every ancestor waiting on it: a retry, a repair or a replan
/// would only start the same child (or the same model's loop) again.
pub fn stops_task(category: &str) -> bool {
    matches!(
        category,
        category::CHILD_DEPTH_EXCEEDED
            | category::DESCENDANTS_EXCEEDED
            | super::agent::STOP_MAX_TURNS
            | super::agent::STOP_OUTPUT_INVALID
            | super::agent::STOP_COST
    )
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
/// connection, a 5xx): what a circuit breaker counts. A 429 (or a rate-limited 403) is the
/// service asking to slow down, which its rate-limit headers handle; it does not count.
pub fn is_outage(f: &ToolFailure) -> bool {
    f.retryable && f.category == category::TOOL_ERROR && !matches!(f.http_status, Some(429 | 403))
}

/// An epoch-seconds reset this small is a delta in seconds (servers use both in
/// `X-RateLimit-Reset`): 10^9 s is 2001.
const EPOCH_SECONDS_FROM: u64 = 1_000_000_000;

/// When an answer says to come back, in milliseconds from the answer, by every convention
/// public APIs use (headers by lower-case name through `get`):
///
/// - `Retry-After` (seconds or an HTTP date), which wins when present;
/// - the IETF `RateLimit` field, structured (`"default";r=0;t=30`: the policies with no
///   requests left, the longest reset) or as a dictionary (`remaining=0, reset=30`);
/// - `RateLimit-Remaining: 0` with `RateLimit-Reset` (seconds);
/// - `X-RateLimit-Remaining: 0` with `X-RateLimit-Reset` (epoch seconds, GitHub's form, or
///   seconds when small) or `X-RateLimit-Reset-After` (seconds, fractions allowed).
///
/// `limited`: the answer itself says the caller is over its limit (a 429, a rate-limited 403),
/// so a reset counts even without a `Remaining: 0`. Dates and epochs are measured against the
/// answer's own `Date` when it has one (the server's clock), else `now`. None: no convention
/// says to wait.
pub fn come_back_ms<'a>(
    get: impl Fn(&str) -> Option<&'a str>,
    limited: bool,
    now: SystemTime,
) -> Option<u64> {
    let date = get("date");
    if let Some(ms) = get("retry-after").and_then(|v| retry_after_ms(v, date, now)) {
        return Some(ms);
    }
    let server_now = date
        .and_then(|d| httpdate::parse_http_date(d.trim()).ok())
        .unwrap_or(now);
    let exhausted = |remaining: Option<&str>| {
        limited || remaining.is_some_and(|r| r.trim().parse::<f64>().is_ok_and(|n| n <= 0.0))
    };
    let mut waits = Vec::new();
    if let Some(field) = get("ratelimit") {
        waits.extend(structured_reset_ms(field, limited));
    }
    if exhausted(get("ratelimit-remaining"))
        && let Some(s) = get("ratelimit-reset").and_then(seconds)
    {
        waits.push(reset_ms(s, server_now));
    }
    if exhausted(get("x-ratelimit-remaining")) {
        if let Some(s) = get("x-ratelimit-reset").and_then(seconds) {
            waits.push(reset_ms(s, server_now));
        }
        if let Some(s) = get("x-ratelimit-reset-after").and_then(seconds) {
            waits.push((s * 1000.0).ceil() as u64);
        }
    }
    waits.into_iter().max()
}

/// The pace at which calls may come back after a hold, in ms between calls, as the answer
/// announced its rate: the IETF `RateLimit-Policy` (`"default";q=100;w=60`: the window over the
/// quota, the slowest policy's), else a limit per window (`RateLimit-Limit`,
/// `X-RateLimit-Limit`) spread over the `hold_ms` until its reset; a tenth slower than that
/// ([`PACE_MARGIN`]), so that calls a little late on their way do not bunch into one window.
/// None: no rate announced.
pub fn announced_pace_ms<'a>(get: impl Fn(&str) -> Option<&'a str>, hold_ms: u64) -> Option<u64> {
    use sfv::{BareItem, ListEntry, Parser};
    let num = |b: Option<&BareItem>| match b {
        Some(BareItem::Integer(i)) => Some(i64::from(*i) as f64),
        Some(BareItem::Decimal(d)) => Some(f64::from(*d)),
        _ => None,
    };
    let policies = get("ratelimit-policy")
        .and_then(|v| Parser::new(v).parse::<sfv::List>().ok())
        .unwrap_or_default();
    let paces = policies.iter().filter_map(|e| {
        let params = match e {
            ListEntry::Item(i) => &i.params,
            ListEntry::InnerList(l) => &l.params,
        };
        let (q, w) = (num(params.get("q"))?, num(params.get("w"))?);
        (q > 0.0 && w > 0.0).then(|| (w * 1000.0 / q * PACE_MARGIN).round() as u64)
    });
    if let Some(p) = paces.max() {
        return Some(p);
    }
    let limit = get("ratelimit-limit")
        .or_else(|| get("x-ratelimit-limit"))
        .and_then(|v| v.split([',', ';']).next())
        .and_then(seconds)
        .filter(|n| *n >= 1.0)?;
    (hold_ms > 0).then(|| (hold_ms as f64 / limit * PACE_MARGIN).round() as u64)
}

/// The announced pace is kept a tenth slower: a sliding window of exactly the announced rate
/// refuses a call that comes a few ms early.
pub const PACE_MARGIN: f64 = 1.1;

/// A non-negative number of seconds (fractions allowed).
fn seconds(v: &str) -> Option<f64> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
}

/// A reset in seconds: epoch seconds when large (measured from `now`), else a delta.
fn reset_ms(s: f64, now: SystemTime) -> u64 {
    if s >= EPOCH_SECONDS_FROM as f64 {
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs_f64(s);
        return at
            .duration_since(now)
            .map(|d| d.as_millis().min(u128::from(u64::MAX)) as u64)
            .unwrap_or(0);
    }
    (s * 1000.0).ceil() as u64
}

/// The IETF `RateLimit` field: a list of policies (`"default";r=0;t=30`, the current draft), or
/// a dictionary (`limit=10, remaining=0, reset=30`, an earlier one). The resets of the policies
/// with nothing remaining, in ms, each read on its own: a burst policy that is used up beside a
/// daily one with requests left holds for the burst's reset only. When `limited` and no policy
/// says it is used up, every policy's reset counts.
fn structured_reset_ms(field: &str, limited: bool) -> Vec<u64> {
    use sfv::{BareItem, ListEntry, Parser};
    let int = |b: Option<&BareItem>| match b {
        Some(BareItem::Integer(i)) => Some(i64::from(*i)),
        Some(BareItem::Decimal(d)) => Some(f64::from(*d) as i64),
        _ => None,
    };
    let pick = |remaining: Option<i64>, reset: Option<i64>| match reset {
        Some(t) if t >= 0 && (limited || remaining.is_some_and(|r| r <= 0)) => {
            Some(t as u64 * 1000)
        }
        _ => None,
    };
    if let Ok(list) = Parser::new(field).parse::<sfv::List>() {
        let policies: Vec<(Option<i64>, Option<i64>)> = list
            .iter()
            .map(|e| {
                let params = match e {
                    ListEntry::Item(i) => &i.params,
                    ListEntry::InnerList(l) => &l.params,
                };
                (int(params.get("r")), int(params.get("t")))
            })
            .collect();
        let used_up: Vec<u64> = policies
            .iter()
            .filter(|(r, _)| r.is_some_and(|r| r <= 0))
            .filter_map(|(_, t)| t.filter(|t| *t >= 0).map(|t| t as u64 * 1000))
            .collect();
        if !used_up.is_empty() {
            return used_up;
        }
        // limited, and no policy says it is used up: every reset counts
        let found: Vec<u64> = policies.iter().filter_map(|(r, t)| pick(*r, *t)).collect();
        if !found.is_empty() {
            return found;
        }
    }
    if let Ok(dict) = Parser::new(field).parse::<sfv::Dictionary>() {
        let member = |k: &str| match dict.get(k) {
            Some(ListEntry::Item(i)) => int(Some(&i.bare_item)),
            _ => None,
        };
        return pick(member("remaining"), member("reset"))
            .into_iter()
            .collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Every rate-limit convention says when to come back; Retry-After wins; a reset without
    /// `Remaining: 0` counts only on an answer that says it is limited.
    #[test]
    fn every_rate_limit_convention_says_when_to_come_back() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let at = |h: &[(&'static str, &'static str)], limited: bool| {
            let h = h.to_vec();
            come_back_ms(
                move |name| h.iter().find(|(k, _)| *k == name).map(|(_, v)| *v),
                limited,
                now,
            )
        };
        // GitHub: epoch seconds with Remaining 0, on a 403 or a 200
        let gh = [
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1700000030"),
        ];
        assert_eq!(at(&gh, false), Some(30_000));
        // measured against the answer's Date (the server's clock), not ours
        let gh_dated = [
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1700000030"),
            ("date", "Tue, 14 Nov 2023 22:13:40 GMT"), // 1_700_000_020
        ];
        assert_eq!(at(&gh_dated, false), Some(10_000));
        // a small reset is a delta
        assert_eq!(
            at(
                &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "7")],
                false
            ),
            Some(7_000)
        );
        assert_eq!(
            at(
                &[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset-after", "1.25")
                ],
                false
            ),
            Some(1_250)
        );
        // requests left: nothing to wait for, unless the answer is a 429
        let left = [("x-ratelimit-remaining", "3"), ("x-ratelimit-reset", "9")];
        assert_eq!(at(&left, false), None);
        assert_eq!(at(&left, true), Some(9_000));
        assert_eq!(at(&[("x-ratelimit-reset", "9")], true), Some(9_000));
        // IETF fields, separate (older drafts)
        assert_eq!(
            at(
                &[("ratelimit-remaining", "0"), ("ratelimit-reset", "12")],
                false
            ),
            Some(12_000)
        );
        // IETF structured: the policies with nothing left, the longest reset
        assert_eq!(
            at(
                &[(
                    "ratelimit",
                    r#""burst";r=0;t=4, "day";r=0;t=60, "hour";r=5;t=600"#
                )],
                false
            ),
            Some(60_000)
        );
        assert_eq!(at(&[("ratelimit", r#""default";r=3;t=30"#)], false), None);
        // a 429 under two policies, one used up: its reset alone, not the daily one's
        assert_eq!(
            at(
                &[("ratelimit", r#""burst";r=0;t=2, "day";r=900;t=40000"#)],
                true
            ),
            Some(2_000)
        );
        assert_eq!(
            at(&[("ratelimit", r#""default";r=3;t=30"#)], true),
            Some(30_000)
        );
        // IETF as a dictionary (an earlier draft)
        assert_eq!(
            at(&[("ratelimit", "limit=100, remaining=0, reset=50")], false),
            Some(50_000)
        );
        // Retry-After wins over the rest
        let both = [
            ("retry-after", "2"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1700000030"),
        ];
        assert_eq!(at(&both, false), Some(2_000));
        // a reset in the past: come back now; nonsense: nothing
        assert_eq!(
            at(
                &[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1600000000")
                ],
                false
            ),
            Some(0)
        );
        for junk in ["soon", "-3", "NaN", ""] {
            let h = [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", junk)];
            assert_eq!(at(&h, false), None, "{junk:?}");
        }
        assert_eq!(at(&[("ratelimit", "((((")], true), None);
        assert_eq!(at(&[], true), None);
    }

    #[test]
    fn the_announced_rate_paces_the_release() {
        let at = |h: &[(&str, &str)], hold: u64| {
            let map: std::collections::HashMap<String, String> = h
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            announced_pace_ms(|k| map.get(k).map(String::as_str), hold)
        };
        assert_eq!(
            at(&[("ratelimit-policy", r#""default";q=100;w=60"#)], 0),
            Some(660)
        );
        // the slowest of several policies
        let two = r#""burst";q=10;w=1, "day";q=86400;w=86400"#;
        assert_eq!(at(&[("ratelimit-policy", two)], 0), Some(1100));
        assert_eq!(at(&[("ratelimit-policy", r#""x";q=3;w=1"#)], 0), Some(367));
        // a limit per window, spread over the wait until its reset
        assert_eq!(at(&[("x-ratelimit-limit", "5000")], 1_800_000), Some(396));
        assert_eq!(at(&[("ratelimit-limit", "10, 10;w=1")], 2_000), Some(220));
        // nothing, nonsense, or no wait: no pace announced
        assert_eq!(at(&[], 1000), None);
        assert_eq!(at(&[("ratelimit-policy", "((")], 1000), None);
        assert_eq!(at(&[("ratelimit-policy", r#""x";q=0;w=1"#)], 1000), None);
        assert_eq!(at(&[("x-ratelimit-limit", "0")], 1000), None);
        assert_eq!(at(&[("x-ratelimit-limit", "10")], 0), None);
    }

    #[test]
    fn rate_limits_are_not_outages() {
        for status in [429, 403] {
            let mut f = ToolFailure::new(category::TOOL_ERROR, "slow down", true);
            f.http_status = Some(status);
            assert!(!is_outage(&f), "{status}");
        }
    }

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
