//! What the background loops work with: the store and the configuration (`Sweep`), how they
//! wake the claim loop (`Wake`), and how a fleet spreads its sweeps (`Pace`). A leaf under
//! `maintenance` and `webhooks`, the loops that run on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::WorkerConfig;
use crate::store::Store;

/// What a background loop works with.
pub(super) struct Sweep {
    pub store: Store,
    pub cfg: WorkerConfig,
    pub wake: Wake,
    pub pace: Pace,
    pub stop: CancellationToken,
}

impl Sweep {
    /// Sleep `base` (stretched by the fleet's size) plus `jitter`; false when stopped.
    pub(super) async fn pause(&self, base: Duration, jitter: Duration) -> bool {
        tokio::select! {
            _ = self.stop.cancelled() => false,
            _ = tokio::time::sleep(self.pace.of(base) + jitter) => true,
        }
    }
}

/// How many workers share the fleet-wide sweeps (due waits, rescues, the ring, schedules,
/// webhook deliveries, retention): any one worker's sweep serves the whole fleet, so each
/// worker sweeps `live / SWEEPERS` times less often once more than [`SWEEPERS`] are alive,
/// and the fleet's sweeps cost the database the same at 4 workers or 400 (each found by the
/// heartbeat loop, every `lease / 3`).
#[derive(Clone)]
pub(super) struct Pace {
    live: Arc<std::sync::atomic::AtomicU32>,
}

/// Workers that sweep at the configured intervals; a larger fleet spreads them.
pub(super) const SWEEPERS: u32 = 4;

impl Default for Pace {
    fn default() -> Self {
        Self {
            live: Arc::new(std::sync::atomic::AtomicU32::new(1)),
        }
    }
}

impl Pace {
    /// `base`, stretched by the fleet's size.
    pub(super) fn of(&self, base: Duration) -> Duration {
        base * self.live.load(Ordering::Relaxed).div_ceil(SWEEPERS).max(1)
    }

    pub(super) fn set(&self, live: i64) {
        self.live
            .store(live.clamp(1, i64::from(u32::MAX)) as u32, Ordering::Relaxed);
    }
}

/// How the background loops wake the claim loop: `notify` for ready steps, and `decisions`
/// set when a decision may be pending (the claim loop asks for decisions only then, or at its
/// poll interval).
#[derive(Clone, Default)]
pub(super) struct Wake {
    pub notify: Arc<Notify>,
    pub decisions: Arc<AtomicBool>,
}

impl Wake {
    pub(super) fn decisions(&self) {
        self.decisions.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}
