//! Tool definitions cached per worker. A claim returns `tool_registry.version` as of the claim;
//! when it is newer than the cached copy, the registry is read again before the step runs, so a
//! step never runs with a definition older than the one committed before its claim — on every
//! worker of the fleet, with no message between them.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::domain::tool::ToolDef;
use crate::store::{Store, StoreError};

#[derive(Clone, Default)]
pub(super) struct ToolCache {
    inner: Arc<RwLock<Snapshot>>,
    /// One reload at a time (steps claimed together wait for the same read).
    reload: Arc<tokio::sync::Mutex<()>>,
}

#[derive(Default)]
struct Snapshot {
    /// 0: never loaded (the registry starts at 1).
    version: i64,
    tools: HashMap<String, ToolDef>,
}

impl ToolCache {
    /// The definitions of `ids` as of `version` or later (unknown ids are left out).
    pub(super) async fn get(
        &self,
        store: &Store,
        version: i64,
        ids: &[&str],
    ) -> Result<HashMap<String, ToolDef>, StoreError> {
        if self.read().version < version {
            let _one = self.reload.lock().await;
            if self.read().version >= version {
                return Ok(self.pick(ids));
            }
            let (v, tools) = store.tool_registry().await?;
            let mut w = self.inner.write().expect("tool cache lock");
            if v > w.version {
                w.version = v;
                w.tools = tools
                    .into_iter()
                    .map(|mut t| {
                        if let Err(e) = t.compile_checks() {
                            tracing::warn!(tool = %t.id, error = %e, "a stored tool schema does not compile; not checked");
                        }
                        (t.id.clone(), t)
                    })
                    .collect();
            }
        }
        Ok(self.pick(ids))
    }

    fn pick(&self, ids: &[&str]) -> HashMap<String, ToolDef> {
        let r = self.read();
        ids.iter()
            .filter_map(|id| r.tools.get(*id).map(|t| (t.id.clone(), t.clone())))
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Snapshot> {
        self.inner.read().expect("tool cache lock")
    }
}
