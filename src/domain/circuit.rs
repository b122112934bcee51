//! A tool's fleet-wide circuit breaker and `Retry-After` hold, as pure functions of its row
//! (`tool_circuits`) and the database's `now()`. The store locks the row, asks these, and
//! writes the answer in the same transaction.
//!
//! - **closed**: calls go through; each outage ([`super::failure::is_outage`]) counts, any
//!   success resets the count.
//! - **open**: `failure_threshold` outages in a row, fleet-wide, open it for `cool_down`:
//!   steps of the tool wait (or switch to an alternative tool), no call is made, no attempt
//!   is recorded; a step that has waited as long as its tool allows stops ([`after_wait`]).
//! - **half open**: the cool-down is over; one step is let through as a probe (a lease of the
//!   tool's timeout, so a lost probe is replaced); the others wait. The probe's success closes
//!   the circuit, its outage opens it again.
//! - **held**: independently of the above, a `Retry-After` holds the whole tool until then.
//! - **paced**: a hold's end, and a probe's success that closes the circuit, release the steps
//!   that waited one per `pace_ms` (the rate the service announced, else [`DEFAULT_PACE_MS`]),
//!   never as one burst: each waiting step is given its own release slot, and a step that calls
//!   in its slot and is refused with a 429 again is held, not charged an attempt.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// A tool's circuit breaker (the tool field `circuit_breaker`): each part optional, the
/// workers' `[worker]` defaults apply to the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CircuitBreaker)]
pub struct BreakerSpec {
    /// Outages in a row, fleet-wide, that open the circuit (timeouts, refused connections,
    /// 5xx); 0 turns the breaker off (default `[worker] circuit_failure_threshold`, 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 10000)]
    pub failure_threshold: Option<i32>,
    /// How long the circuit stays open before one probe (default `[worker]
    /// circuit_cool_down_secs`, 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0, maximum = 86400)]
    pub cool_down_secs: Option<f64>,
    /// A step's own outages in a row that confirm the service is down before the threshold
    /// may open the circuit (default `[worker] circuit_confirm_failures`, 3; 1 for a tool with
    /// an alternative). 3 keeps the circuit closed for a service whose calls fail once or
    /// twice and then pass on their own retry (per-call flakiness), which many callers at once
    /// would otherwise add up to an open circuit; 1 counts every outage at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100)]
    pub confirm_failures: Option<i32>,
}

impl BreakerSpec {
    /// What is out of range, if anything.
    pub fn problem(&self) -> Option<String> {
        if self
            .failure_threshold
            .is_some_and(|n| !(0..=10_000).contains(&n))
        {
            return Some("circuit_breaker.failure_threshold must be between 0 and 10000".into());
        }
        if self
            .cool_down_secs
            .is_some_and(|s| !(s.is_finite() && s > 0.0 && s <= 86_400.0))
        {
            return Some("circuit_breaker.cool_down_secs must be above 0 and at most 86400".into());
        }
        if self
            .confirm_failures
            .is_some_and(|n| !(1..=100).contains(&n))
        {
            return Some("circuit_breaker.confirm_failures must be between 1 and 100".into());
        }
        None
    }
}

/// A breaker's settings with the defaults applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Breaker {
    /// 0: off.
    pub failure_threshold: i32,
    pub cool_down_ms: i64,
    /// A step's own outages in a row that confirm one (1: each counts at once).
    pub confirm_failures: i32,
}

impl Breaker {
    /// `spec` over these defaults, for a tool with or without an alternative. A tool with one
    /// confirms each outage at once unless its spec says otherwise: its callers leave it for the
    /// alternative after one outage (their own streak never grows), and an open circuit costs
    /// them nothing but sends the next ones there at once.
    pub fn with(self, spec: Option<&BreakerSpec>, has_alternative: bool) -> Breaker {
        let confirm = match has_alternative {
            true => 1,
            false => self.confirm_failures,
        };
        let Some(s) = spec else {
            return Breaker {
                confirm_failures: confirm,
                ..self
            };
        };
        Breaker {
            failure_threshold: s.failure_threshold.unwrap_or(self.failure_threshold),
            confirm_failures: s.confirm_failures.unwrap_or(confirm),
            cool_down_ms: s
                .cool_down_secs
                .map(|s| (s * 1000.0) as i64)
                .unwrap_or(self.cool_down_ms),
        }
    }
}

/// A `tool_circuits` row.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct Circuit {
    pub consecutive_failures: i32,
    /// Set while open or half open: the end of the cool-down.
    pub open_until: Option<DateTime<Utc>>,
    /// A probe's lease while half open.
    pub probe_until: Option<DateTime<Utc>>,
    /// `Retry-After`: no call before this time, whatever the breaker says; after it, while
    /// steps are released at `pace_ms`, the time their slots count from.
    pub held_until: Option<DateTime<Utc>>,
    /// After the hold, one call per this many ms (0: all at once).
    pub pace_ms: i32,
    /// The next release slot not yet given to a step (none: `held_until`'s).
    pub next_slot: Option<DateTime<Utc>>,
    /// While a release goes on: when its last call was let through. No two go closer than
    /// `pace_ms`, however late their claims come (a slot is a time; this makes it a token).
    pub last_release: Option<DateTime<Utc>>,
}

/// A hold a service asked for: no call for `ms`, then one per `pace_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    pub ms: u64,
    pub pace_ms: u64,
}

/// The pace of a release when the service announced no rate: 20 calls a second.
pub const DEFAULT_PACE_MS: u64 = 50;

/// The slowest pace a release refused again learns on its own: two calls a second.
pub const MAX_LEARNED_PACE_MS: u64 = 500;

/// The slowest pace a service's announced rate may set: a call a minute.
pub const MAX_PACE_MS: u64 = 60_000;

/// What clients see (`GET /tools/{id}` `circuit.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Closed,
    Open,
    HalfOpen,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
        }
    }
}

/// What a step about to call the tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Call it.
    Call,
    /// Call it: released in its slot after a hold, not the first (a 429 now is the release
    /// coming faster than the service takes, so the step is held again, not charged an
    /// attempt; the first slot's call is the service's first after the hold, and charged).
    Paced,
    /// Call it as the half-open circuit's probe.
    Probe,
    /// Do not call it before this time.
    Wait(DateTime<Utc>, Why),
}

/// How much sooner than a whole pace after the release's last call a released step may still
/// call (at most a tenth of the pace): the jitter of a claim's own latency, which would
/// otherwise send every other step of a release to the back of the line.
pub const RELEASE_JITTER_MS: i64 = 5;

/// The longest a tool is held for a `Retry-After` or a rate limit's reset: a day (a daily
/// quota). A hold is the time the service announced, not the workers' cap on a step's own
/// retry delay: a step whose wait limit ends before the hold does stops at once
/// ([`after_wait`]), and none calls before the reset.
pub const MAX_HOLD_MS: u64 = 24 * 3600 * 1000;

/// Why a step waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A `Retry-After` holds the tool.
    Held,
    /// The circuit is open.
    Open,
    /// Half open, and another step is the probe.
    Probing,
    /// Released in its slot after a hold and refused with a 429 again: held anew (at most
    /// [`MAX_FREE_REFUSALS`] times a step, then its 429 is charged as any).
    Refused,
}

/// How many times a step released in its slot may be refused again without an attempt spent;
/// the next refusal is charged as any failure (so a service that refuses every released call
/// ends its steps by their attempts, not only by their wait limit).
pub const MAX_FREE_REFUSALS: i64 = 3;

impl Why {
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Held => "retry_after",
            Why::Open => "circuit_open",
            Why::Probing => "circuit_probe",
            Why::Refused => "release_refused",
        }
    }
}

/// How long a step told to wait while a probe is out waits before it asks again (the probe's
/// success should not leave the others waiting for its whole lease).
pub const PROBE_RECHECK_MS: i64 = 1000;

impl Circuit {
    pub fn state(&self, now: DateTime<Utc>) -> State {
        match self.open_until {
            None => State::Closed,
            Some(t) if t > now => State::Open,
            Some(_) => State::HalfOpen,
        }
    }

    /// Whether a worker must ask [`Circuit::gate`] before calling the tool: open, half open,
    /// or held. A closed, unheld circuit costs the steps nothing.
    pub fn gated(&self) -> bool {
        self.open_until.is_some() || self.held_until.is_some()
    }

    /// After a failed call: an outage counts (and opens the circuit at the threshold, or again
    /// after a failed probe); a `Retry-After` holds the tool until then. `streak`: the failing
    /// step's own failures in a row, this one included. The threshold opens the circuit only
    /// once some step has failed `confirm_failures` times in a row (3 by default; 1: at once):
    /// with 3, outages of different calls that each heal on their own retry (a flaky service)
    /// add up without opening it.
    pub fn after_failure(
        &self,
        b: Breaker,
        outage: bool,
        streak: i32,
        hold: Option<Hold>,
        now: DateTime<Utc>,
    ) -> Circuit {
        let mut c = self.clone();
        if outage {
            c.consecutive_failures = c.consecutive_failures.saturating_add(1);
            let probe_failed = c.state(now) == State::HalfOpen;
            let tripped = b.failure_threshold > 0
                && c.consecutive_failures >= b.failure_threshold
                && streak >= b.confirm_failures;
            if (tripped && c.open_until.is_none()) || probe_failed {
                c.open_until = Some(now + Duration::milliseconds(b.cool_down_ms));
                c.probe_until = None;
            }
        }
        if let Some(h) = hold {
            c = c.hold(h.ms, h.pace_ms, now);
        }
        c
    }

    /// No call before `ms` from `now` (a `Retry-After`, a rate limit's reset), at most
    /// [`MAX_HOLD_MS`]; a longer hold already in place stays. After it, the waiting steps go one
    /// per `pace_ms` (the slower of this and a pace already set; at most [`MAX_PACE_MS`]).
    pub fn hold(&self, ms: u64, pace_ms: u64, now: DateTime<Utc>) -> Circuit {
        let mut c = self.clone();
        if ms > 0 {
            let until = now + Duration::milliseconds(ms.min(MAX_HOLD_MS) as i64);
            let held = c.held_until.map_or(until, |h| h.max(until));
            // a new end: the slots count from it again, at the pace now known; the same end
            // keeps the slots already given on their pace (a new one would take them away)
            if c.held_until != Some(held) || c.next_slot.is_none() {
                c.held_until = Some(held);
                c.next_slot = None;
                c.last_release = None;
                c.pace_ms = c.pace_ms.max(pace_ms.min(MAX_PACE_MS) as i32);
            }
        }
        c
    }

    /// A call released in its slot was refused again for `ms` (the service takes less than
    /// the release gave it): held again, and released at least twice as slowly as before (up
    /// to [`MAX_LEARNED_PACE_MS`]), or at `pace_ms` when that is slower (when the hold's end
    /// moves: slots already given for the same end keep their pace). A service that never
    /// says its rate is so paced at what it takes after a few refusals.
    pub fn refused_release(&self, ms: u64, pace_ms: u64, now: DateTime<Utc>) -> Circuit {
        let doubled = (self.pace_ms.max(0) as u64).saturating_mul(2);
        self.hold(ms, pace_ms.max(doubled.min(MAX_LEARNED_PACE_MS)), now)
    }

    /// After a successful call: closed, nothing counted. A hold stays until it ends. A success
    /// that closes an open circuit (its probe's) releases the steps that waited at `pace_ms`.
    pub fn after_success(&self, pace_ms: u64, now: DateTime<Utc>) -> Circuit {
        let mut c = Circuit {
            consecutive_failures: 0,
            open_until: None,
            probe_until: None,
            ..self.clone()
        };
        if self.open_until.is_some() && c.held_until.is_none_or(|h| h < now) && pace_ms > 0 {
            c.held_until = Some(now);
            c.next_slot = None;
            c.last_release = None;
            c.pace_ms = pace_ms.min(MAX_PACE_MS) as i32;
        }
        c
    }

    /// May a step call the tool now? A half-open circuit lets one probe through for
    /// `probe_lease_ms`; a hold that has passed is cleared.
    pub fn gate(&self, now: DateTime<Utc>, probe_lease_ms: i64) -> (Gate, Circuit) {
        self.gate_for(now, probe_lease_ms, true, None)
    }

    /// [`Circuit::gate`] for a step that may or may not be the probe (`may_probe`: a step
    /// that has waited as long as its tool allows may not: its call would come too late), and
    /// that woke at `woke_at` (its `run_after`: a release slot this gate gave it, or not).
    pub fn gate_for(
        &self,
        now: DateTime<Utc>,
        probe_lease_ms: i64,
        may_probe: bool,
        woke_at: Option<DateTime<Utc>>,
    ) -> (Gate, Circuit) {
        let mut c = self.clone();
        let mut paced = false;
        if let Some(h) = c.held_until {
            let pace = Duration::milliseconds(i64::from(c.pace_ms.max(0)));
            let slot = c.next_slot.unwrap_or(h).max(h);
            if h > now {
                // held: a slot of its own after the end (every waiter the same end unpaced)
                if c.pace_ms > 0 {
                    c.next_slot = Some(slot + pace);
                    return (Gate::Wait(slot, Why::Held), c);
                }
                return (Gate::Wait(h, Why::Held), c);
            }
            // a call of this release went out less than a pace ago (a claim that came late
            // under load calls late, and the next on time would follow it too soon; several
            // late ones would go together): this one takes the next free slot a whole pace
            // after it. A slot is a time; the last call makes it a token too, so any q + 1
            // calls in a row span q paces (less a claim's jitter, `RELEASE_JITTER_MS`), which
            // the announced pace's margin covers
            let jitter = Duration::milliseconds(RELEASE_JITTER_MS.min(i64::from(c.pace_ms) / 10));
            let too_close = c.last_release.filter(|l| now + jitter < *l + pace);
            if let Some(w) = woke_at.filter(|w| too_close.is_none() && c.is_slot(*w, now)) {
                // its slot: the first one's call is the service's first after the hold (its
                // 429 is the service's own); a later one's 429 is the release coming too soon
                paced = w > h;
                c.last_release = Some(now);
            } else if c.pace_ms > 0
                && (slot + pace > now || too_close.is_some() || c.last_release.is_none())
            {
                // the release goes on (or starts: the steps that met the hold may all come
                // late together, their claims slowed): the next free slot, now or later
                let slot = too_close.map_or(slot, |l| slot.max(c.grid_at_or_after(l + pace)));
                c.next_slot = Some(slot + pace);
                if slot > now {
                    return (Gate::Wait(slot, Why::Held), c);
                }
                c.last_release = Some(now);
            } else {
                // passed, and no call for a whole pace after the release's last: over
                c.held_until = None;
                c.pace_ms = 0;
                c.next_slot = None;
                c.last_release = None;
            }
        }
        match c.state(now) {
            State::Closed if paced => (Gate::Paced, c),
            State::Closed => (Gate::Call, c),
            State::Open => (Gate::Wait(c.open_until.expect("open"), Why::Open), c),
            State::HalfOpen => match c.probe_until {
                Some(p) if p > now => {
                    let soon = now + Duration::milliseconds(PROBE_RECHECK_MS);
                    (Gate::Wait(p.min(soon), Why::Probing), c)
                }
                _ if !may_probe => (Gate::Wait(now, Why::Probing), c),
                _ => {
                    c.probe_until = Some(now + Duration::milliseconds(probe_lease_ms));
                    (Gate::Probe, c)
                }
            },
        }
    }

    /// The first release slot (the hold's end plus whole paces) at or after `t`.
    fn grid_at_or_after(&self, t: DateTime<Utc>) -> DateTime<Utc> {
        let (Some(h), pace_us) = (self.held_until, i64::from(self.pace_ms.max(1)) * 1000) else {
            return t;
        };
        // within a day's hold and a minute's pace: no overflow
        let from_end = (t - h).num_microseconds().unwrap_or(0).max(0);
        let k = (from_end as u64).div_ceil(pace_us as u64) as i64;
        h + Duration::microseconds(k.saturating_mul(pace_us))
    }

    /// Is `woke_at` a release slot this hold gave out (the hold's end plus whole paces, up to
    /// the next free one) that has come?
    fn is_slot(&self, woke_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
        let (Some(h), pace) = (self.held_until, i64::from(self.pace_ms)) else {
            return false;
        };
        let next = self.next_slot.unwrap_or(h);
        let from_end = (woke_at - h).num_microseconds();
        pace > 0
            && woke_at <= now
            && woke_at < next
            && from_end.is_some_and(|us| us >= 0 && us % (pace * 1000) == 0)
    }
}

/// What a step that its tool's circuit or hold keeps from calling does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterWait {
    /// Given back until the time the gate named: no attempt, no retry spent, no tier.
    Defer,
    /// It has waited as long as its tool allows: the step fails, without a call.
    Stop { reason: String },
}

/// A step told to wait for `tool` (`why`) has waited `waited_ms` since its first failure or its
/// first wait, whichever came first; `limit_ms` is the tool's `retry.max_elapsed_secs`, or the
/// workers' default. It defers while under the limit (so a dead tool ends its tasks within the
/// limit and one cool-down), and stops at it. A rate limit's hold is a known end (`left_ms`
/// from now): one that ends past the step's limit stops the step at once, since waiting could
/// only end in the same stop (a daily quota used up, a `Retry-After` of hours).
pub fn after_wait(tool: &str, why: Why, waited_ms: u64, limit_ms: u64, left_ms: u64) -> AfterWait {
    let held = matches!(why, Why::Held | Why::Refused);
    if held && waited_ms.saturating_add(left_ms) > limit_ms {
        return AfterWait::Stop {
            reason: format!(
                "tool {tool:?} is held by the rate limit it answered for {:.1} s more, past this step's wait limit ({:.1} s, {:.1} s used): no call was made",
                left_ms as f64 / 1000.0,
                limit_ms as f64 / 1000.0,
                waited_ms as f64 / 1000.0
            ),
        };
    }
    if waited_ms < limit_ms {
        return AfterWait::Defer;
    }
    let what = match why {
        Why::Held | Why::Refused => "held by the rate limit it answered",
        Why::Open => "behind its open circuit",
        Why::Probing => "behind its circuit's probe",
    };
    AfterWait::Stop {
        reason: format!(
            "tool {tool:?} is still {what} after {:.1} s (its limit is {:.1} s): no call was made",
            waited_ms as f64 / 1000.0,
            limit_ms as f64 / 1000.0
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Breaker = Breaker {
        failure_threshold: 3,
        cool_down_ms: 10_000,
        confirm_failures: 1,
    };

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::milliseconds(ms)
    }

    #[test]
    fn the_threshold_opens_a_cool_down_then_one_probe() {
        let mut c = Circuit::default();
        for i in 1..=2 {
            c = c.after_failure(B, true, 9, None, at(i));
            assert_eq!(c.state(at(i)), State::Closed);
            assert!(!c.gated());
        }
        c = c.after_failure(B, true, 9, None, at(3));
        assert_eq!(c.state(at(3)), State::Open);
        assert!(c.gated());
        assert_eq!(c.gate(at(5), 500).0, Gate::Wait(at(10_003), Why::Open));
        // calls in flight when it opened fail too: the cool-down does not move
        c = c.after_failure(B, true, 9, None, at(6));
        assert_eq!(c.open_until, Some(at(10_003)));
        // half open: one probe, the others wait a little
        let (g, c2) = c.gate(at(10_003), 500);
        assert_eq!(g, Gate::Probe);
        assert_eq!(c2.state(at(10_003)), State::HalfOpen);
        let (g, c3) = c2.gate(at(10_100), 500);
        assert_eq!(g, Gate::Wait(at(10_503), Why::Probing));
        assert_eq!(c3, c2);
        // a lost probe is replaced once its lease is over
        assert_eq!(c2.gate(at(10_503), 500).0, Gate::Probe);
        // the probe fails: open again for a whole cool-down
        let c4 = c2.after_failure(B, true, 9, None, at(10_200));
        assert_eq!(c4.state(at(10_200)), State::Open);
        assert_eq!(c4.open_until, Some(at(20_200)));
        assert_eq!(c4.probe_until, None);
        // the next probe succeeds: closed
        let c5 = c4.after_success(0, at(20_300));
        assert_eq!(c5.state(at(20_300)), State::Closed);
        assert_eq!(c5.consecutive_failures, 0);
        assert!(!c5.gated());
    }

    #[test]
    fn a_success_resets_the_count() {
        let c = Circuit::default()
            .after_failure(B, true, 9, None, at(1))
            .after_failure(B, true, 9, None, at(2))
            .after_success(0, at(2))
            .after_failure(B, true, 9, None, at(3))
            .after_failure(B, true, 9, None, at(4));
        assert_eq!(c.state(at(4)), State::Closed);
    }

    #[test]
    fn outages_of_calls_that_each_heal_on_a_retry_do_not_open_it() {
        // forty calls fail once, then again (each its second failure): a flaky service
        let b = Breaker {
            confirm_failures: 3,
            ..B
        };
        let mut c = Circuit::default();
        for streak in [1, 2] {
            for i in 0..40 {
                c = c.after_failure(b, true, streak, None, at(i));
                assert_eq!(c.state(at(i)), State::Closed, "{streak} {i}");
            }
        }
        // a call that fails a third time in a row confirms an outage
        c = c.after_failure(b, true, 3, None, at(50));
        assert_eq!(c.state(at(50)), State::Open);
        // and a success of any call resets the count
        let healed = Circuit::default()
            .after_failure(b, true, 2, None, at(1))
            .after_success(0, at(2));
        assert_eq!(healed.consecutive_failures, 0);
    }

    #[test]
    fn only_outages_count_and_zero_turns_it_off() {
        let mut c = Circuit::default();
        for i in 0..10 {
            c = c.after_failure(B, false, 9, None, at(i));
        }
        assert_eq!(c.state(at(10)), State::Closed);
        let off = Breaker {
            failure_threshold: 0,
            ..B
        };
        for i in 0..10 {
            c = c.after_failure(off, true, 9, None, at(i));
        }
        assert_eq!(c.state(at(10)), State::Closed);
        assert!(!c.gated());
    }

    #[test]
    fn retry_after_holds_the_tool_and_then_clears() {
        let c = Circuit::default().after_failure(
            B,
            false,
            1,
            Some(Hold {
                ms: 5_000,
                pace_ms: 0,
            }),
            at(0),
        );
        assert!(c.gated());
        assert_eq!(c.state(at(0)), State::Closed);
        assert_eq!(c.gate(at(1_000), 500).0, Gate::Wait(at(5_000), Why::Held));
        // a shorter Retry-After does not shorten the hold
        let c = c.after_failure(
            B,
            false,
            1,
            Some(Hold {
                ms: 1_000,
                pace_ms: 0,
            }),
            at(1_000),
        );
        assert_eq!(c.held_until, Some(at(5_000)));
        let (g, after) = c.gate(at(5_000), 500);
        assert_eq!(g, Gate::Call);
        assert!(!after.gated(), "a passed hold is cleared");
        // a success keeps a hold that has not passed
        assert_eq!(c.after_success(0, at(1_000)).held_until, Some(at(5_000)));
    }

    /// Ask the gate as a step that woke at `woke` (None: a fresh one).
    fn ask(c: &mut Circuit, now: i64, woke: Option<i64>) -> Gate {
        let (g, next) = c.gate_for(at(now), 500, true, woke.map(at));
        *c = next;
        g
    }

    #[test]
    fn a_hold_releases_its_waiters_one_per_pace() {
        let hold = Hold {
            ms: 1_000,
            pace_ms: 100,
        };
        let mut c = Circuit::default().after_failure(B, false, 1, Some(hold), at(0));
        // four steps arrive during the hold: each its own slot after the end
        let slots: Vec<Gate> = (0..4).map(|i| ask(&mut c, 10 + i, None)).collect();
        let want: Vec<Gate> = [1_000, 1_100, 1_200, 1_300]
            .map(|t| Gate::Wait(at(t), Why::Held))
            .to_vec();
        assert_eq!(slots, want);
        // each calls in its slot, late or not; a step that did not wait queues behind them
        assert_eq!(ask(&mut c, 1_000, Some(1_000)), Gate::Call);
        assert_eq!(ask(&mut c, 1_150, Some(1_100)), Gate::Paced);
        assert_eq!(
            ask(&mut c, 1_150, Some(900)),
            Gate::Wait(at(1_400), Why::Held)
        );
        // a wake time off the slots, or a slot not yet come, is no slot
        assert_eq!(
            ask(&mut c, 1_160, Some(1_150)),
            Gate::Wait(at(1_500), Why::Held)
        );
        assert_eq!(
            ask(&mut c, 1_160, Some(1_300)),
            Gate::Wait(at(1_600), Why::Held)
        );
        assert_eq!(ask(&mut c, 1_600, Some(1_600)), Gate::Paced);
        assert!(c.gated());
        // no one waited for a whole pace after the last slot: over, and cleared
        assert_eq!(ask(&mut c, 1_800, None), Gate::Call);
        assert!(!c.gated());
        assert_eq!(c.pace_ms, 0);
    }

    #[test]
    fn a_fresh_step_just_after_the_end_takes_the_next_slot() {
        let hold = Hold {
            ms: 1_000,
            pace_ms: 100,
        };
        let mut c = Circuit::default().after_failure(B, false, 1, Some(hold), at(0));
        // it did not wait for a slot: its call is charged as any
        assert_eq!(ask(&mut c, 1_020, None), Gate::Call);
        // the next a whole pace after that call, on the slots
        assert_eq!(ask(&mut c, 1_030, None), Gate::Wait(at(1_200), Why::Held));
        assert_eq!(ask(&mut c, 1_200, Some(1_200)), Gate::Paced);
        // unpaced (a service that asked for nothing but a wait, at pace 0): all at the end
        let mut burst = Circuit::default().hold(1_000, 0, at(0));
        for i in 0..3 {
            assert_eq!(ask(&mut burst, i, None), Gate::Wait(at(1_000), Why::Held));
        }
        assert_eq!(ask(&mut burst, 1_000, None), Gate::Call);
        assert!(!burst.gated());
    }

    #[test]
    fn slot_holders_claimed_late_together_still_go_one_per_pace() {
        let mut c = Circuit::default().hold(1_000, 100, at(0));
        for i in 0..4 {
            ask(&mut c, i, None);
        }
        // a busy fleet claims the first three only at 1 250, all at once: the first calls,
        // the others take the next free slots, a whole pace after it and after each other
        assert_eq!(ask(&mut c, 1_250, Some(1_000)), Gate::Call);
        assert_eq!(
            ask(&mut c, 1_250, Some(1_100)),
            Gate::Wait(at(1_400), Why::Held)
        );
        assert_eq!(
            ask(&mut c, 1_251, Some(1_200)),
            Gate::Wait(at(1_500), Why::Held)
        );
        // the fourth, late in its own slot, is a whole pace after the first: it calls; the
        // next on time would follow it too soon, so it takes the next free slot; a claim's
        // own few milliseconds are no bunch
        assert_eq!(ask(&mut c, 1_350, Some(1_300)), Gate::Paced);
        assert_eq!(
            ask(&mut c, 1_400, Some(1_400)),
            Gate::Wait(at(1_600), Why::Held)
        );
        assert_eq!(ask(&mut c, 1_500, Some(1_500)), Gate::Paced);
        assert_eq!(ask(&mut c, 1_600, Some(1_600)), Gate::Paced);
        // a step on time a whole pace after the last call is never held back
        let mut on_time = Circuit::default().hold(1_000, 100, at(0));
        for i in 0..3 {
            ask(&mut on_time, i, None);
        }
        // (the second 4 ms late: the third, on time, follows it by 96 ms, within a claim's
        // jitter)
        let gates: Vec<Gate> = [(1_000, 1_000), (1_104, 1_100), (1_200, 1_200)]
            .map(|(now, slot)| ask(&mut on_time, now, Some(slot)))
            .to_vec();
        assert_eq!(gates, vec![Gate::Call, Gate::Paced, Gate::Paced]);
        assert_eq!(on_time.last_release, Some(at(1_200)));
        // over once no one came for a whole pace: the token goes with it
        assert_eq!(ask(&mut on_time, 1_400, None), Gate::Call);
        assert_eq!((on_time.held_until, on_time.last_release), (None, None));
    }

    #[test]
    fn the_steps_that_met_the_hold_coming_late_together_go_one_per_pace() {
        // the first wave's 429s were charged and their retries come back on their own
        // times (not release slots), all late together under load
        let hold = Hold {
            ms: 1_000,
            pace_ms: 100,
        };
        let mut c = Circuit::default();
        for t in [0, 2, 3] {
            c = c.after_failure(B, false, 1, Some(hold), at(t));
        }
        assert_eq!(ask(&mut c, 3_400, Some(1_000)), Gate::Call);
        assert_eq!(
            ask(&mut c, 3_401, Some(1_002)),
            Gate::Wait(at(3_503), Why::Held)
        );
        assert_eq!(
            ask(&mut c, 3_402, Some(1_003)),
            Gate::Wait(at(3_603), Why::Held)
        );
        assert_eq!(ask(&mut c, 3_503, Some(3_503)), Gate::Paced);
        // a new hold starts a new release: its first call is not held back by the old one's
        c = c.hold(1_000, 100, at(3_510));
        assert_eq!(c.last_release, None);
        assert_eq!(ask(&mut c, 4_800, Some(4_510)), Gate::Call);
    }

    #[test]
    fn a_new_hold_during_the_release_starts_the_slots_again() {
        let mut c = Circuit::default().hold(1_000, 100, at(0));
        for i in 0..3 {
            ask(&mut c, i, None);
        }
        assert_eq!(ask(&mut c, 1_100, Some(1_100)), Gate::Paced);
        // the released call is refused again: held for two seconds more, at the slower pace
        c = c.hold(2_000, 200, at(1_050));
        assert_eq!(c.held_until, Some(at(3_050)));
        assert_eq!(c.pace_ms, 200);
        // the old slots are no slots now: their steps wait for new ones
        assert_eq!(
            ask(&mut c, 1_100, Some(1_000)),
            Gate::Wait(at(3_050), Why::Held)
        );
        assert_eq!(
            ask(&mut c, 1_200, Some(1_200)),
            Gate::Wait(at(3_250), Why::Held)
        );
        assert_eq!(ask(&mut c, 3_250, Some(3_250)), Gate::Paced);
        // a shorter hold moves neither the end nor the slots given, nor their pace
        let same = c.hold(10, 500, at(2_000));
        assert_eq!(same.pace_ms, 200);
        assert_eq!(
            (same.held_until, same.next_slot),
            (c.held_until, c.next_slot)
        );
        // the pace has a ceiling
        assert_eq!(
            Circuit::default().hold(1, u64::MAX, at(0)).pace_ms as u64,
            MAX_PACE_MS
        );
    }

    #[test]
    fn a_refused_release_slows_the_next_one() {
        let mut c = Circuit::default().hold(1_000, 50, at(0));
        for (i, want) in [100, 200, 400, 500, 500].into_iter().enumerate() {
            c = c.refused_release(1_000, 50, at(2_000 * (i as i64 + 1)));
            assert_eq!(c.pace_ms, want);
        }
        // an announced pace slower than that wins
        assert_eq!(c.refused_release(1_000, 5_000, at(20_000)).pace_ms, 5_000);
        // after the release is over, the next hold starts from the pace it is given
        assert_eq!(Circuit::default().hold(1_000, 50, at(0)).pace_ms, 50);
    }

    #[test]
    fn a_probe_that_closes_the_circuit_releases_the_waiters_at_the_pace() {
        let mut c = Circuit::default();
        for i in 0..3 {
            c = c.after_failure(B, true, 9, None, at(i));
        }
        let (g, probing) = c.gate(at(10_002), 500);
        assert_eq!(g, Gate::Probe);
        let mut c = probing.after_success(100, at(10_100));
        assert_eq!(c.state(at(10_100)), State::Closed);
        assert!(c.gated());
        // the steps that waited on the probe come back together: one per pace
        assert_eq!(ask(&mut c, 10_150, Some(10_050)), Gate::Call);
        // (the first called 50 ms after its slot: the next slot a whole pace after it)
        assert_eq!(
            ask(&mut c, 10_150, Some(10_050)),
            Gate::Wait(at(10_300), Why::Held)
        );
        assert_eq!(
            ask(&mut c, 10_150, Some(10_050)),
            Gate::Wait(at(10_400), Why::Held)
        );
        // a success of a closed circuit starts no release; nor does pace 0
        let closed = Circuit::default().after_success(100, at(0));
        assert!(!closed.gated());
        assert!(!probing.after_success(0, at(10_100)).gated());
        // a hold still running is kept as it is
        let held = probing.hold(5_000, 100, at(10_050));
        assert_eq!(
            held.after_success(100, at(10_100)).held_until,
            held.held_until
        );
    }

    #[test]
    fn a_step_that_may_not_probe_leaves_the_probe_to_another() {
        let c = Circuit::default()
            .after_failure(B, true, 9, None, at(0))
            .after_failure(B, true, 9, None, at(1))
            .after_failure(B, true, 9, None, at(2));
        let half_open = at(10_002);
        let (g, same) = c.gate_for(half_open, 500, false, None);
        assert_eq!(g, Gate::Wait(half_open, Why::Probing));
        assert_eq!(same, c, "no probe was granted");
        assert_eq!(c.gate_for(half_open, 500, true, None).0, Gate::Probe);
        // open, or closed: the same answer either way
        for now in [at(5), at(3)] {
            assert_eq!(
                c.gate_for(now, 500, false, None),
                c.gate_for(now, 500, true, None)
            );
        }
        let closed = Circuit::default();
        assert_eq!(closed.gate_for(at(0), 500, false, None).0, Gate::Call);
    }

    #[test]
    fn a_step_waits_until_its_limit_then_stops() {
        for why in [Why::Held, Why::Open, Why::Probing, Why::Refused] {
            for (waited, limit) in [(0, 1), (999, 1_000), (0, 300_000)] {
                assert_eq!(after_wait("t", why, waited, limit, 1), AfterWait::Defer);
            }
            for (waited, limit) in [(1_000, 1_000), (5_000, 1_000), (0, 0)] {
                let AfterWait::Stop { reason } = after_wait("t", why, waited, limit, 0) else {
                    panic!("{waited} of {limit} ms must stop");
                };
                assert!(reason.contains("\"t\"") && reason.contains("no call was made"));
            }
        }
    }

    #[test]
    fn a_hold_that_ends_past_the_limit_stops_at_once() {
        // a daily quota: the hold ends in an hour, the step may wait five minutes
        let AfterWait::Stop { reason } = after_wait("t", Why::Held, 0, 300_000, 3_600_000) else {
            panic!("must stop at once");
        };
        assert!(reason.contains("3600.0 s more"), "{reason}");
        // within the limit it waits, counting what it has waited already
        assert_eq!(
            after_wait("t", Why::Held, 100_000, 300_000, 200_000),
            AfterWait::Defer
        );
        assert!(matches!(
            after_wait("t", Why::Held, 100_001, 300_000, 200_000),
            AfterWait::Stop { .. }
        ));
        // an open circuit's end is a probe, not a promise: it waits up to its limit
        for why in [Why::Open, Why::Probing] {
            assert_eq!(
                after_wait("t", why, 0, 300_000, 3_600_000),
                AfterWait::Defer
            );
        }
    }

    #[test]
    fn a_spec_overrides_the_defaults() {
        let spec = BreakerSpec {
            failure_threshold: Some(0),
            cool_down_secs: None,
            confirm_failures: Some(3),
        };
        assert_eq!(
            B.with(Some(&spec), true),
            Breaker {
                failure_threshold: 0,
                cool_down_ms: 10_000,
                confirm_failures: 3,
            }
        );
        assert_eq!(B.with(None, false), B);
        // a tool with an alternative confirms each outage at once, unless its spec says
        let confirming = Breaker {
            confirm_failures: 3,
            ..B
        };
        assert_eq!(confirming.with(None, false), confirming);
        assert_eq!(confirming.with(None, true), B);
        let threshold = BreakerSpec {
            failure_threshold: Some(2),
            cool_down_secs: None,
            confirm_failures: None,
        };
        assert_eq!(confirming.with(Some(&threshold), true).confirm_failures, 1);
        assert_eq!(confirming.with(Some(&threshold), false).confirm_failures, 3);
        assert_eq!(confirming.with(Some(&spec), true).confirm_failures, 3);
    }
}
