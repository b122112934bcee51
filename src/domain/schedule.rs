//! Cron schedules: a cron expression (5 fields, or 6 with seconds first) read in an IANA time
//! zone, parsed by `croner` (DST gaps and overlaps as POSIX cron does them), and which tick a
//! schedule fires now. Pure; the store keeps `next_fire_at` and fires under the row's lock.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;

/// A parsed schedule.
#[derive(Debug, Clone)]
pub struct CronSchedule {
    cron: Cron,
    tz: Tz,
}

impl CronSchedule {
    /// Parse `expr` in `timezone` (an IANA name such as `Europe/Berlin`).
    pub fn parse(expr: &str, timezone: &str) -> Result<Self, String> {
        let tz = Tz::from_str(timezone)
            .map_err(|_| format!("timezone {timezone:?} is not an IANA time zone name"))?;
        let cron = Cron::from_str(expr.trim())
            .map_err(|e| format!("cron {expr:?} is not a cron expression: {e}"))?;
        Ok(Self { cron, tz })
    }

    /// The first tick strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_next_occurrence(&t.with_timezone(&self.tz), false)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }

    /// The last tick at or before `t`.
    pub fn last_at_or_before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_previous_occurrence(&t.with_timezone(&self.tz), true)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }

    /// The next `n` ticks after `t`.
    pub fn upcoming(&self, t: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(n);
        let mut at = t;
        while out.len() < n {
            match self.next_after(at) {
                Some(next) => {
                    out.push(next);
                    at = next;
                }
                None => break,
            }
        }
        out
    }

    /// A schedule whose next tick was `next_fire_at` is looked at `now`: the tick to fire (the
    /// latest one due — ticks missed while no worker ran make one catch-up run, not a storm)
    /// and the next tick after now. `None` to fire: nothing is due yet.
    pub fn due(
        &self,
        next_fire_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
        if next_fire_at > now {
            return (None, Some(next_fire_at));
        }
        let latest = self
            .last_at_or_before(now)
            .filter(|t| *t >= next_fire_at)
            .unwrap_or(next_fire_at);
        (Some(latest), self.next_after(now))
    }
}

/// The idempotency key of a schedule's task for one tick (CONTRACT.md).
pub fn tick_key(schedule_id: &str, tick: DateTime<Utc>) -> String {
    format!(
        "schedule:{schedule_id}:{}",
        tick.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn parses_five_and_six_fields_and_refuses_nonsense() {
        assert!(CronSchedule::parse("*/5 * * * *", "UTC").is_ok());
        assert!(CronSchedule::parse("* * * * * *", "Europe/Berlin").is_ok());
        assert!(CronSchedule::parse("61 * * * *", "UTC").is_err());
        assert!(CronSchedule::parse("every day", "UTC").is_err());
        assert!(CronSchedule::parse("* * * * *", "Mars/Olympus").is_err());
    }

    #[test]
    fn every_second_ticks_every_second() {
        let s = CronSchedule::parse("* * * * * *", "UTC").unwrap();
        let t = at("2026-11-26T10:00:00.500Z");
        assert_eq!(
            s.upcoming(t, 3),
            vec![
                at("2026-11-26T10:00:01Z"),
                at("2026-11-26T10:00:02Z"),
                at("2026-11-26T10:00:03Z")
            ]
        );
    }

    /// Missed ticks make one catch-up run (the latest), and the next tick is after now.
    #[test]
    fn missed_ticks_fire_once() {
        let s = CronSchedule::parse("* * * * * *", "UTC").unwrap();
        let (fire, next) = s.due(at("2026-11-26T10:00:01Z"), at("2026-11-26T10:00:09.2Z"));
        assert_eq!(fire, Some(at("2026-11-26T10:00:09Z")));
        assert_eq!(next, Some(at("2026-11-26T10:00:10Z")));
        let (fire, next) = s.due(at("2026-11-26T10:00:10Z"), at("2026-11-26T10:00:09.9Z"));
        assert_eq!(fire, None);
        assert_eq!(next, Some(at("2026-11-26T10:00:10Z")));
        let (fire, _) = s.due(at("2026-11-26T10:00:10Z"), at("2026-11-26T10:00:10Z"));
        assert_eq!(fire, Some(at("2026-11-26T10:00:10Z")));
    }

    /// 02:30 every day in New York, across both DST changes of 2026 (computed, not waited for):
    /// on 8 March 02:30 does not exist (spring forward) and the tick comes at the jump, 03:00
    /// EDT, as Vixie cron runs a job the gap skipped; on
    /// 1 November the day has 25 hours and 02:30 EST is 07:30 UTC.
    #[test]
    fn time_zones_are_honoured_across_dst() {
        let s = CronSchedule::parse("30 2 * * *", "America/New_York").unwrap();
        let ticks = s.upcoming(at("2026-03-06T12:00:00Z"), 3);
        assert_eq!(ticks[0], at("2026-03-07T07:30:00Z"), "02:30 EST");
        assert_eq!(
            ticks[1],
            at("2026-03-08T07:00:00Z"),
            "the gap: at the jump, 03:00 EDT"
        );
        assert_eq!(ticks[2], at("2026-03-09T06:30:00Z"), "02:30 EDT");
        let ticks = s.upcoming(at("2026-10-31T12:00:00Z"), 2);
        assert_eq!(
            ticks[0],
            at("2026-11-01T07:30:00Z"),
            "02:30 EST, after the fall back"
        );
        assert_eq!(ticks[1], at("2026-11-02T07:30:00Z"));
        // and a zone east of UTC: 09:00 in Berlin is 08:00 UTC in winter, 07:00 in summer
        let b = CronSchedule::parse("0 9 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            b.next_after(at("2026-01-10T00:00:00Z")),
            Some(at("2026-01-10T08:00:00Z"))
        );
        assert_eq!(
            b.next_after(at("2026-07-10T00:00:00Z")),
            Some(at("2026-07-10T07:00:00Z"))
        );
    }

    #[test]
    fn tick_keys_name_the_schedule_and_the_tick() {
        assert_eq!(
            tick_key("nightly", at("2026-11-26T10:00:01Z")),
            "schedule:nightly:2026-11-26T10:00:01Z"
        );
    }
}
