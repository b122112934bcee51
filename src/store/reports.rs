//! The recovery-statistics views (docs/sql-reporting.md), read as JSON rows.

use serde_json::Value;

use super::{Result, Store};

/// The documented reporting views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportView {
    RecoveryByTool,
    RecoveryByCategory,
    RecoveryByTier,
    RecoveryByAction,
    RecoveryByTemplate,
    TaskOutcomes,
}

impl ReportView {
    pub const ALL: [ReportView; 6] = [
        ReportView::RecoveryByTool,
        ReportView::RecoveryByCategory,
        ReportView::RecoveryByTier,
        ReportView::RecoveryByAction,
        ReportView::RecoveryByTemplate,
        ReportView::TaskOutcomes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReportView::RecoveryByTool => "recovery_by_tool",
            ReportView::RecoveryByCategory => "recovery_by_category",
            ReportView::RecoveryByTier => "recovery_by_tier",
            ReportView::RecoveryByAction => "recovery_by_action",
            ReportView::RecoveryByTemplate => "recovery_by_template",
            ReportView::TaskOutcomes => "task_outcomes",
        }
    }
}

impl Store {
    /// Every row of a reporting view, as JSON objects, in a stable order.
    pub async fn report(&self, view: ReportView) -> Result<Vec<Value>> {
        let sql = match view {
            ReportView::RecoveryByTool => {
                "SELECT to_jsonb(v) FROM recovery_by_tool v ORDER BY day, tool"
            }
            ReportView::RecoveryByCategory => {
                "SELECT to_jsonb(v) FROM recovery_by_category v ORDER BY day, category"
            }
            ReportView::RecoveryByTier => {
                "SELECT to_jsonb(v) FROM recovery_by_tier v ORDER BY day, tier"
            }
            ReportView::RecoveryByAction => {
                "SELECT to_jsonb(v) FROM recovery_by_action v ORDER BY day, tier, action"
            }
            ReportView::RecoveryByTemplate => {
                "SELECT to_jsonb(v) FROM recovery_by_template v ORDER BY day, template, tier, action"
            }
            ReportView::TaskOutcomes => {
                "SELECT to_jsonb(v) FROM task_outcomes v ORDER BY day, status"
            }
        };
        Ok(sqlx::query_scalar(sql).fetch_all(&self.pool).await?)
    }
}
