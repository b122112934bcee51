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
    RecoveryCostByTier,
    CostByTemplateDay,
    CostByToolDay,
}

impl ReportView {
    pub const ALL: [ReportView; 9] = [
        ReportView::RecoveryByTool,
        ReportView::RecoveryByCategory,
        ReportView::RecoveryByTier,
        ReportView::RecoveryByAction,
        ReportView::RecoveryByTemplate,
        ReportView::TaskOutcomes,
        ReportView::RecoveryCostByTier,
        ReportView::CostByTemplateDay,
        ReportView::CostByToolDay,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReportView::RecoveryByTool => "recovery_by_tool",
            ReportView::RecoveryByCategory => "recovery_by_category",
            ReportView::RecoveryByTier => "recovery_by_tier",
            ReportView::RecoveryByAction => "recovery_by_action",
            ReportView::RecoveryByTemplate => "recovery_by_template",
            ReportView::TaskOutcomes => "task_outcomes",
            ReportView::RecoveryCostByTier => "recovery_cost_by_tier",
            ReportView::CostByTemplateDay => "cost_by_template_day",
            ReportView::CostByToolDay => "cost_by_tool_day",
        }
    }
}

impl Store {
    /// Every row of a reporting view, as JSON objects, in a stable order.
    pub async fn report(&self, view: ReportView) -> Result<Vec<Value>> {
        Ok(sqlx::query_scalar(view.query())
            .fetch_all(&self.pool)
            .await?)
    }

    /// Every reporting view, as [`Store::report`] reads them, counting `tenant`'s work only
    /// (none: every tenant's), in one snapshot. The views count the tenant the transaction
    /// names (`trellis.tenant`, transaction-scoped).
    pub async fn reports(&self, tenant: Option<&str>) -> Result<Vec<(ReportView, Vec<Value>)>> {
        in_tx!(self.pool, |tx| {
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(&mut **tx)
                .await?;
            sqlx::query("SELECT set_config('trellis.tenant', coalesce($1, ''), true)")
                .bind(tenant)
                .execute(&mut **tx)
                .await?;
            let mut out = Vec::with_capacity(ReportView::ALL.len());
            for view in ReportView::ALL {
                let rows = sqlx::query_scalar(view.query())
                    .fetch_all(&mut **tx)
                    .await?;
                out.push((view, rows));
            }
            Ok(out)
        })
    }
}

impl ReportView {
    /// Its rows as JSON objects, in a stable order.
    fn query(self) -> &'static str {
        match self {
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
            ReportView::RecoveryCostByTier => {
                "SELECT to_jsonb(v) FROM recovery_cost_by_tier v ORDER BY tier, strategy"
            }
            ReportView::CostByTemplateDay => {
                "SELECT to_jsonb(v) FROM cost_by_template_day v ORDER BY day, template"
            }
            ReportView::CostByToolDay => {
                "SELECT to_jsonb(v) FROM cost_by_tool_day v ORDER BY day, tool"
            }
        }
    }
}
