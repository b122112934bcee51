//! Bulk actions' vocabulary: what they do, the time bounds of their filter (bound once, at
//! creation), and the step a rerun starts from.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};

use super::status::StepStatus;

/// What a bulk action does to each task it matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkKind {
    Cancel,
    Resume,
    Rerun,
}

impl BulkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BulkKind::Cancel => "cancel",
            BulkKind::Resume => "resume",
            BulkKind::Rerun => "rerun",
        }
    }
}

impl fmt::Display for BulkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BulkKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cancel" => Ok(BulkKind::Cancel),
            "resume" => Ok(BulkKind::Resume),
            "rerun" => Ok(BulkKind::Rerun),
            _ => Err(format!("action {s:?} is none of cancel, resume and rerun")),
        }
    }
}

/// A filter's `since` or `until`: an instant, or a span before the creation (`2h`, `30m`,
/// `7d`), which the database's clock binds when the action is created.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeBound {
    At(DateTime<Utc>),
    /// Seconds before the creation.
    Ago(f64),
}

/// The longest span a relative bound may name (a year: what retention could have kept).
pub const MAX_SPAN_SECS: f64 = 366.0 * 86_400.0;

/// Without a time bound, a filter covers the last 7 days.
pub const DEFAULT_SPAN_SECS: f64 = 7.0 * 86_400.0;

impl FromStr for TimeBound {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(at) = DateTime::parse_from_rfc3339(s) {
            return Ok(TimeBound::At(at.with_timezone(&Utc)));
        }
        let span = humantime::parse_duration(s).map_err(|_| {
            format!("{s:?} is neither an RFC 3339 time nor a span such as 2h, 30m or 7d")
        })?;
        let secs = span.as_secs_f64();
        if secs > MAX_SPAN_SECS {
            return Err(format!("{s:?} reaches back more than a year"));
        }
        Ok(TimeBound::Ago(secs))
    }
}

impl TimeBound {
    /// (the instant, the seconds before now): one of them set, for the statement.
    pub fn split(b: Option<Self>) -> (Option<DateTime<Utc>>, Option<f64>) {
        match b {
            None => (None, None),
            Some(TimeBound::At(t)) => (Some(t), None),
            Some(TimeBound::Ago(s)) => (None, Some(s)),
        }
    }
}

/// Where a bulk rerun starts: the first failed step, or a named one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromStep {
    FirstFailed,
    Key(String),
}

impl FromStep {
    pub fn parse(s: &str) -> Self {
        if s == "first_failed" {
            FromStep::FirstFailed
        } else {
            FromStep::Key(s.to_string())
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            FromStep::FirstFailed => "first_failed",
            FromStep::Key(k) => k,
        }
    }

    /// The step to rerun from among the live steps (in plan order): the named one, or the
    /// first that failed, else the first that did not succeed (a cancelled task's); `None`
    /// when every step succeeded or the named one is not there.
    pub fn pick<'a>(&self, steps: &'a [(String, StepStatus)]) -> Option<&'a str> {
        let key = |s: &'a (String, StepStatus)| s.0.as_str();
        match self {
            FromStep::Key(k) => steps.iter().find(|s| &s.0 == k).map(key),
            FromStep::FirstFailed => steps
                .iter()
                .find(|s| s.1 == StepStatus::Failed)
                .or_else(|| steps.iter().find(|s| s.1 != StepStatus::Succeeded))
                .map(key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_others_are_refused() {
        for k in [BulkKind::Cancel, BulkKind::Resume, BulkKind::Rerun] {
            assert_eq!(k.as_str().parse::<BulkKind>(), Ok(k));
        }
        assert!("replay".parse::<BulkKind>().unwrap_err().contains("replay"));
    }

    #[test]
    fn time_bounds_are_instants_or_spans() {
        assert_eq!("2h".parse::<TimeBound>(), Ok(TimeBound::Ago(7200.0)));
        assert_eq!("30m".parse::<TimeBound>(), Ok(TimeBound::Ago(1800.0)));
        assert_eq!("7d".parse::<TimeBound>(), Ok(TimeBound::Ago(604_800.0)));
        let at = "2026-11-27T10:00:00Z".parse::<TimeBound>().unwrap();
        assert!(matches!(at, TimeBound::At(t) if t.to_rfc3339() == "2026-11-27T10:00:00+00:00"));
        assert!("yesterday".parse::<TimeBound>().is_err());
        assert!("".parse::<TimeBound>().is_err());
        assert!("400d".parse::<TimeBound>().unwrap_err().contains("year"));
        assert_eq!(
            TimeBound::split(Some(TimeBound::Ago(5.0))),
            (None, Some(5.0))
        );
    }

    #[test]
    fn a_rerun_starts_at_the_first_failed_step() {
        use StepStatus::*;
        let steps = |v: &[(&str, StepStatus)]| -> Vec<(String, StepStatus)> {
            v.iter().map(|(k, s)| (k.to_string(), *s)).collect()
        };
        let ff = FromStep::parse("first_failed");
        let s = steps(&[
            ("a", Succeeded),
            ("b", Skipped),
            ("c", Failed),
            ("d", Failed),
        ]);
        assert_eq!(ff.pick(&s), Some("c"));
        let s = steps(&[("a", Succeeded), ("b", Skipped), ("c", Blocked)]);
        assert_eq!(ff.pick(&s), Some("b"));
        let s = steps(&[("a", Succeeded)]);
        assert_eq!(ff.pick(&s), None);
        assert_eq!(FromStep::parse("a").pick(&s), Some("a"));
        assert_eq!(FromStep::parse("z").pick(&s), None);
        assert_eq!(FromStep::parse("a").as_str(), "a");
    }
}
