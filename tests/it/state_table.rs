//! One test per row of the state table in seed 000 ("状态变量变化总览"): each drives the store's
//! transitions with an explicit brain answer and asserts the current step, the four counters,
//! the plan version, kept/cleared outputs and runtime metadata afterwards.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use trellis::api::views::PlanView;
use trellis::brain::{self, Answer, Brain, BrainError, BrainFuture, DecisionContext, Planned};
use trellis::config::Settings;
use trellis::domain::Limits;
use trellis::domain::decision::DecisionOutcome;
use trellis::domain::recovery::{
    Evaluation, OverallReflection, StepAction, StepReflection, Strategy,
};
use trellis::domain::{PlanSpec, StepSpec, ToolFailure};
use trellis::store::Store;
use trellis::store::decision_queue::{ClaimedDecision, Lease};
use trellis::store::step_queue::{Claim, ClaimedStep, FailurePolicy, StepFailure, StepSuccess};
use trellis::store::submit::NewTask;
use trellis::testkit::{TestDb, fresh_db};
use uuid::Uuid;

const POLICY: FailurePolicy = FailurePolicy::fixed(0, 3, 30.0);

struct H {
    store: Store,
    task: Uuid,
    worker: Uuid,
    /// Keeps the test database alive (it is dropped with the last handle).
    _db: TestDb,
}

/// What the state table tracks.
#[derive(Debug, PartialEq)]
struct Snap {
    status: String,
    current_step: Option<String>,
    step_retry_count: i32,
    single_step_repair_count: i32,
    task_replan_count: i32,
    consecutive_failures: i32,
    plan_version: i32,
    outputs: BTreeMap<String, Value>,
    runtime_metadata: Value,
}

async fn setup(max_step_retries: i32) -> H {
    let db = fresh_db().await;
    let mut limits = Limits::from_settings(&Settings::default());
    limits.max_step_retries = max_step_retries;
    let plan: PlanSpec = serde_json::from_value(json!({"steps": [
        {"id": "step_1", "tool": "echo", "parameters": {"v": 1}},
        {"id": "step_2", "tool": "flaky", "dependencies": ["step_1"], "parameters": {"x": 1}},
        {"id": "step_3", "tool": "echo", "dependencies": ["step_2"]}
    ]}))
    .unwrap();
    let t = db
        .store
        .submit_task(&NewTask {
            description: "state table".into(),
            metadata: json!({"m": 1}),
            context: json!({}),
            priority: 0,
            idempotency_key: None,
            limits,
            plan: Some(plan),
            template: None,
            start: Default::default(),
            webhook: None,
            parent: None,
            concurrency_key: None,
            tenant: trellis::domain::tenant::DEFAULT.into(),
        })
        .await
        .unwrap();
    H {
        store: db.store.clone(),
        task: t.task_id,
        worker: Uuid::now_v7(),
        _db: db,
    }
}

impl H {
    fn lease(&self) -> Lease {
        Lease {
            worker_id: self.worker,
            lease_secs: 30.0,
        }
    }

    async fn claim(&self, key: &str) -> ClaimedStep {
        let claimed = self
            .store
            .claim_steps(&Claim {
                worker_id: self.worker,
                limit: 1,
                lease_secs: 30.0,
                max_running_tasks: 0,
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1, "expected {key} to be claimable");
        assert_eq!(claimed[0].step_key, key);
        claimed[0].clone()
    }

    async fn succeed(
        &self,
        s: &ClaimedStep,
        output: Value,
        params: Value,
    ) -> Option<ClaimedDecision> {
        let output_params: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
        self.store
            .complete_step(
                &StepSuccess {
                    cost: None,
                    fence: s.fence(),
                    worker_id: self.worker,
                    tool: s.tool.clone(),
                    parameters: s.parameters.clone(),
                    output,
                    output_params,
                    idempotency_key: None,
                },
                30.0,
            )
            .await
            .unwrap()
    }

    async fn fail(&self, s: &ClaimedStep) -> ClaimedDecision {
        let out = self
            .store
            .fail_step(
                &StepFailure {
                    fence: s.fence(),
                    worker_id: self.worker,
                    tool: s.tool.clone(),
                    parameters: s.parameters.clone(),
                    failure: ToolFailure::new("tool_error", "boom", true),
                    idempotency_key: None,
                },
                POLICY,
            )
            .await
            .unwrap();
        out.decision.expect("a failure starts a step reflection")
    }

    async fn apply(&self, d: &ClaimedDecision, o: DecisionOutcome) -> Option<ClaimedDecision> {
        self.store
            .apply_decision(&d.fence(), &o, &POLICY, self.lease())
            .await
            .unwrap()
    }

    /// step_1 succeeds with an output param; step_2 is claimed and fails once.
    async fn first_failure(&self) -> ClaimedDecision {
        let s1 = self.claim("step_1").await;
        assert!(
            self.succeed(&s1, json!({"v": 1}), json!({"tok": "t1"}))
                .await
                .is_none()
        );
        let s2 = self.claim("step_2").await;
        self.fail(&s2).await
    }

    async fn snap(&self) -> Snap {
        let t = self.store.get_task(self.task).await.unwrap();
        let steps: Vec<_> = self
            .store
            .list_steps(self.task)
            .await
            .unwrap()
            .into_iter()
            .filter(|s| s.plan_version == t.plan_version && s.status != "superseded")
            .collect();
        let focus = steps
            .iter()
            .find(|s| ["failed", "running", "ready"].contains(&s.status.as_str()));
        Snap {
            status: t.status.to_string(),
            current_step: focus.map(|s| s.step_key.clone()),
            step_retry_count: focus.map(|s| s.retry_count).unwrap_or(0),
            single_step_repair_count: t.single_step_repair_count,
            task_replan_count: t.task_replan_count,
            consecutive_failures: t.consecutive_failures,
            plan_version: t.plan_version,
            outputs: steps
                .iter()
                .filter(|s| s.status == "succeeded")
                .map(|s| (s.step_key.clone(), s.output.clone().unwrap()))
                .collect(),
            runtime_metadata: t.runtime_metadata,
        }
    }
}

fn reflection(action: StepAction, recoverable: bool) -> DecisionOutcome {
    DecisionOutcome::StepReflection {
        reflection: StepReflection {
            root_cause_category: "tool_error".into(),
            root_cause: "boom".into(),
            analysis: String::new(),
            confidence: 80.0,
            is_recoverable: recoverable,
            alternative_solutions: vec![],
            suggested_action: action,
        },
        raw: None,
        fallback: false,
    }
}

fn overall(should_replan: bool, strategy: Option<Strategy>) -> DecisionOutcome {
    DecisionOutcome::Overall {
        reflection: OverallReflection {
            should_replan,
            root_causes: vec!["boom".into()],
            incorrect_assumptions: vec![],
            alternative_approaches: vec![],
            lessons_learned: vec![],
            stop_reason: "a human must fix the tool".into(),
            optimization_suggestions: vec![],
            replanning_strategy: strategy,
        },
        raw: None,
        fallback: false,
    }
}

fn outputs(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn snap(
    status: &str,
    step: Option<&str>,
    counters: [i32; 4],
    version: i32,
    out: &[(&str, Value)],
    md: Value,
) -> Snap {
    Snap {
        status: status.into(),
        current_step: step.map(String::from),
        step_retry_count: counters[0],
        single_step_repair_count: counters[1],
        task_replan_count: counters[2],
        consecutive_failures: counters[3],
        plan_version: version,
        outputs: outputs(out),
        runtime_metadata: md,
    }
}

fn current_plan_with_tool(h_steps: &[(&str, &str, &[&str])]) -> PlanSpec {
    PlanSpec {
        steps: h_steps
            .iter()
            .map(|(id, tool, deps)| {
                serde_json::from_value::<StepSpec>(json!({"id": id, "tool": tool, "dependencies": deps,
                    "parameters": if *id == "step_1" { json!({"v": 1}) } else if *id == "step_2" { json!({"x": 1}) } else { json!({}) }}))
                .unwrap()
            })
            .collect(),
        reasoning: "test".into(),
        estimated_duration: None,
    }
}

// Row: 正常成功 — step_index +1, counters unchanged, output and runtime metadata appended.
#[tokio::test]
async fn row_success() {
    let h = setup(3).await;
    let s1 = h.claim("step_1").await;
    assert!(
        h.succeed(&s1, json!({"v": 1}), json!({"tok": "t1"}))
            .await
            .is_none()
    );
    assert_eq!(
        h.snap().await,
        snap(
            "running",
            Some("step_2"),
            [0, 0, 0, 0],
            1,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
}

// Row: 初次失败 — same step, step_retry_count +1, nothing appended.
#[tokio::test]
async fn row_first_failure() {
    let h = setup(3).await;
    let d = h.first_failure().await;
    assert_eq!(d.kind, "step_reflection");
    assert_eq!(
        h.snap().await,
        snap(
            "running",
            Some("step_2"),
            [1, 0, 0, 1],
            1,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
}

// Rows: 参数重试成功 / 参数重试仍失败.
#[tokio::test]
async fn row_param_retry_ok_and_fail() {
    let h = setup(3).await;
    let d = h.first_failure().await;
    let adjusted = BTreeMap::from([("x".to_string(), json!(2))]);
    assert!(
        h.apply(
            &d,
            reflection(StepAction::RetryWithParams(adjusted.clone()), true)
        )
        .await
        .is_none()
    );
    let retry = h.claim("step_2").await;
    assert_eq!(retry.param_overrides, json!({"x": 2}));
    assert_eq!(retry.attempt, 2);
    // fails again: same step, retry count 2
    let d2 = h.fail(&retry).await;
    assert_eq!(
        h.snap().await,
        snap(
            "running",
            Some("step_2"),
            [2, 0, 0, 2],
            1,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
    // adjusted again, and this time it works: index +1, retry count kept on the step
    h.apply(&d2, reflection(StepAction::RetryWithParams(adjusted), true))
        .await;
    let retry = h.claim("step_2").await;
    assert!(
        h.succeed(&retry, json!({"x": 2}), json!({}))
            .await
            .is_none()
    );
    let s = h.snap().await;
    assert_eq!(
        s,
        snap(
            "running",
            Some("step_3"),
            [0, 0, 0, 0],
            1,
            &[("step_1", json!({"v": 1})), ("step_2", json!({"x": 2}))],
            json!({"tok": "t1"})
        )
    );
    let step_2 = h
        .store
        .list_steps(h.task)
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.step_key == "step_2")
        .unwrap();
    assert_eq!(step_2.retry_count, 2, "kept at its value (>0)");
}

// Rows: 备选工具重试成功 / 备选工具重试仍失败.
#[tokio::test]
async fn row_alternative_tool_ok_and_fail() {
    let h = setup(3).await;
    let d = h.first_failure().await;
    h.apply(
        &d,
        reflection(StepAction::RetryWithTool("echo".into()), true),
    )
    .await;
    let retry = h.claim("step_2").await;
    assert_eq!(retry.tool, "echo", "the override tool runs");
    let d2 = h.fail(&retry).await;
    assert_eq!(
        h.snap().await,
        snap(
            "running",
            Some("step_2"),
            [2, 0, 0, 2],
            1,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
    h.apply(
        &d2,
        reflection(StepAction::RetryWithTool("echo".into()), true),
    )
    .await;
    let retry = h.claim("step_2").await;
    h.succeed(&retry, json!({"alt": true}), json!({})).await;
    assert_eq!(
        h.snap().await,
        snap(
            "running",
            Some("step_3"),
            [0, 0, 0, 0],
            1,
            &[
                ("step_1", json!({"v": 1})),
                ("step_2", json!({"alt": true}))
            ],
            json!({"tok": "t1"})
        )
    );
    let plan = h.store.list_steps(h.task).await.unwrap();
    let step_2 = plan.iter().find(|s| s.step_key == "step_2").unwrap();
    assert_eq!(
        (step_2.tool.as_str(), step_2.tool_override.as_deref()),
        ("flaky", Some("echo")),
        "plan unchanged, override recorded"
    );
}

// Row: 单步修复成功 — retries exhausted → repair: same index, retry count 0, repairs +1,
// plan version N+1 (origin `repair`) with the step replaced, earlier outputs kept.
#[tokio::test]
async fn row_repair_ok() {
    let h = setup(1).await;
    let d = h.first_failure().await;
    let repair = h
        .apply(
            &d,
            reflection(StepAction::RetryWithParams(BTreeMap::new()), true),
        )
        .await
        .unwrap();
    assert_eq!(
        repair.kind, "step_repair",
        "retries exhausted and recoverable → tier 2"
    );
    let spec: StepSpec = serde_json::from_value(json!({"id": "step_2", "tool": "echo", "dependencies": ["step_1"], "parameters": {"fixed": true}})).unwrap();
    assert!(
        h.apply(&repair, DecisionOutcome::Repair(Ok(Answer::plain(spec))))
            .await
            .is_none()
    );
    assert_eq!(
        h.snap().await,
        snap(
            "running",
            Some("step_2"),
            [0, 1, 0, 1],
            2,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
    let s2 = h.claim("step_2").await;
    assert_eq!(
        (s2.tool.as_str(), s2.parameters.clone(), s2.attempt),
        ("echo", json!({"fixed": true}), 2)
    );
    let rows: Vec<_> = h
        .store
        .list_steps(h.task)
        .await
        .unwrap()
        .into_iter()
        .filter(|s| s.step_key == "step_2")
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].status.as_str(), rows[0].plan_version),
        ("superseded", 1),
        "the old definition is kept as history, in the version it ran in"
    );
    assert_eq!(
        (rows[1].status.as_str(), rows[1].plan_version),
        ("running", 2)
    );
    let plans: Vec<PlanView> = h.store.list_plans(h.task).await.unwrap();
    let origins: Vec<(i32, &str)> = plans
        .iter()
        .map(|p| (p.version, p.origin.as_str()))
        .collect();
    assert_eq!(origins, [(1, "initial"), (2, "repair")]);

    // the repaired step fails again: the tools it ran with before the repair (version 1) still
    // count as tried, so no brain offers them as untried alternatives
    let again = h.fail(&s2).await;
    let ctx = h.store.decision_context(&again, 3).await.unwrap();
    assert_eq!(ctx.repaired_versions, [1]);
    let mut tried: Vec<String> = ctx.tried_tools().into_iter().collect();
    tried.sort();
    assert_eq!(tried, ["echo", "flaky"]);
}

// Row: 单步修复失败 — repairs +1, retry count kept, plan unchanged → overall reflection.
#[tokio::test]
async fn row_repair_fail() {
    let h = setup(1).await;
    let d = h.first_failure().await;
    let repair = h
        .apply(
            &d,
            reflection(StepAction::RetryWithParams(BTreeMap::new()), true),
        )
        .await
        .unwrap();
    let next = h
        .apply(
            &repair,
            DecisionOutcome::Repair(Err("no alternative".into())),
        )
        .await
        .unwrap();
    assert_eq!(next.kind, "overall_reflection");
    assert_eq!(
        h.snap().await,
        snap(
            "reflecting",
            Some("step_2"),
            [1, 1, 0, 1],
            1,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
}

async fn to_replan(h: &H, strategy: Strategy) -> ClaimedDecision {
    let d = h.first_failure().await;
    let overall_d = h
        .apply(
            &d,
            reflection(
                StepAction::TriggerOverallReflection("escalate".into()),
                false,
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        overall_d.kind, "overall_reflection",
        "not recoverable → straight to tier 3"
    );
    let replan = h
        .apply(&overall_d, overall(true, Some(strategy)))
        .await
        .unwrap();
    assert_eq!(replan.kind, "replan");
    assert_eq!(h.snap().await.status, "replanning");
    replan
}

// Row: 任务级重规划成功 (replan_from_step) — new plan version, replans +1, step counters reset,
// results before the step kept (not run again).
#[tokio::test]
async fn row_replan_from_step_ok() {
    let h = setup(3).await;
    let strategy = Strategy::ReplanFromStep {
        step_id: "step_2".into(),
        reason: "r".into(),
    };
    let replan = to_replan(&h, strategy).await;
    let plan = current_plan_with_tool(&[
        ("step_1", "echo", &[]),
        ("step_2", "echo", &["step_1"]),
        ("step_3", "echo", &["step_2"]),
    ]);
    assert!(
        h.apply(
            &replan,
            DecisionOutcome::Replan(Ok(Answer::plain(Planned::single_stage(plan))))
        )
        .await
        .is_none()
    );
    assert_eq!(
        h.snap().await,
        snap(
            "running",
            Some("step_2"),
            [0, 0, 1, 0],
            2,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
    // the kept step is not claimable again; step_2 runs as the next attempt number
    let s2 = h.claim("step_2").await;
    assert_eq!(s2.attempt, 2);
    let plans: Vec<trellis::api::views::PlanView> = h.store.list_plans(h.task).await.unwrap();
    assert_eq!(
        plans.iter().map(|p| p.origin.as_str()).collect::<Vec<_>>(),
        ["initial", "replan:replan_from_step"]
    );
}

// Row: 任务级重规划成功 (full_replan) — fresh context: outputs and runtime metadata cleared.
#[tokio::test]
async fn row_full_replan_ok() {
    let h = setup(3).await;
    let replan = to_replan(&h, Strategy::FullReplan).await;
    let plan = current_plan_with_tool(&[
        ("step_1", "echo", &[]),
        ("step_2", "echo", &["step_1"]),
        ("step_3", "echo", &["step_2"]),
    ]);
    h.apply(
        &replan,
        DecisionOutcome::Replan(Ok(Answer::plain(Planned::single_stage(plan)))),
    )
    .await;
    assert_eq!(
        h.snap().await,
        snap("running", Some("step_1"), [0, 0, 1, 0], 2, &[], json!({}))
    );
}

// Row: 任务级重规划失败 — the replan itself fails: the task fails, nothing else changes.
#[tokio::test]
async fn row_replan_fail() {
    let h = setup(3).await;
    let replan = to_replan(&h, Strategy::FullReplan).await;
    h.apply(
        &replan,
        DecisionOutcome::Replan(Err("the model gave no plan".into())),
    )
    .await;
    let s = h.snap().await;
    assert_eq!(
        s,
        snap(
            "failed",
            Some("step_2"),
            [1, 0, 0, 1],
            1,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
    let t = h.store.get_task(h.task).await.unwrap();
    assert!(
        t.error.unwrap()["reason"]
            .as_str()
            .unwrap()
            .contains("replanning failed")
    );
    // an invalid plan from the brain fails the same way
    let h = setup(3).await;
    let replan = to_replan(&h, Strategy::FullReplan).await;
    let bad = current_plan_with_tool(&[("step_1", "no_such_tool", &[])]);
    h.apply(
        &replan,
        DecisionOutcome::Replan(Ok(Answer::plain(Planned::single_stage(bad)))),
    )
    .await;
    assert_eq!(h.snap().await.status, "failed");
}

// Row: StopExecution — overall reflection decides to stop: needs_intervention, nothing changes.
#[tokio::test]
async fn row_stop() {
    let h = setup(3).await;
    let d = h.first_failure().await;
    let o = h
        .apply(
            &d,
            reflection(StepAction::TriggerOverallReflection("x".into()), false),
        )
        .await
        .unwrap();
    assert!(h.apply(&o, overall(false, None)).await.is_none());
    assert_eq!(
        h.snap().await,
        snap(
            "needs_intervention",
            Some("step_2"),
            [1, 0, 0, 1],
            1,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
    let t = h.store.get_task(h.task).await.unwrap();
    assert_eq!(t.stop_reason.as_deref(), Some("a human must fix the tool"));
}

/// A brain whose every call fails.
#[derive(Debug)]
struct BrokenBrain;

impl Brain for BrokenBrain {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn plan<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        Box::pin(async { Err(BrainError::NoAnswer("garbage".into())) })
    }
    fn reflect_step<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, StepReflection> {
        Box::pin(async { Err(BrainError::NoAnswer("unparseable answer".into())) })
    }
    fn repair_step<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, StepSpec> {
        Box::pin(async { Err(BrainError::NoAnswer("garbage".into())) })
    }
    fn reflect_overall<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, OverallReflection> {
        Box::pin(async { Err(BrainError::NoAnswer("garbage".into())) })
    }
    fn replan<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        Box::pin(async { Err(BrainError::NoAnswer("garbage".into())) })
    }
    fn evaluate<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, Evaluation> {
        Box::pin(async { Err(BrainError::NoAnswer("garbage".into())) })
    }
}

// Row: 反思失败降级 — the step reflection fails: fallback reflection (reflection_error, not
// recoverable) → straight to overall reflection (no repair, though one is left), counters kept.
#[tokio::test]
async fn row_reflection_failure_fallback() {
    let h = setup(3).await;
    let d = h.first_failure().await;
    let ctx = h.store.decision_context(&d, 3).await.unwrap();
    let outcome = brain::decide(&BrokenBrain, &ctx, d.kind, false).await;
    let next = h.apply(&d, outcome).await.unwrap();
    assert_eq!(next.kind, "overall_reflection");
    assert_eq!(
        h.snap().await,
        snap(
            "reflecting",
            Some("step_2"),
            [1, 0, 0, 1],
            1,
            &[("step_1", json!({"v": 1}))],
            json!({"tok": "t1"})
        )
    );
    let refl: Vec<trellis::api::views::ReflectionView> = h
        .store
        .list_reflections(h.task, trellis::store::Page::ALL)
        .await
        .unwrap();
    assert_eq!(refl.len(), 1);
    assert!(refl[0].is_fallback);
    assert_eq!(refl[0].body["root_cause_category"], "reflection_error");
    assert_eq!(refl[0].body["is_recoverable"], false);
    // the overall reflection fails too: its fallback stops for a human — never a loop
    let ctx = h.store.decision_context(&next, 3).await.unwrap();
    let outcome = brain::decide(&BrokenBrain, &ctx, next.kind, false).await;
    assert!(h.apply(&next, outcome).await.is_none());
    assert_eq!(h.snap().await.status, "needs_intervention");
}

/// A decision is applied once: a second apply with the same lease is fenced, and a decision
/// made stale by a cancel changes nothing.
#[tokio::test]
async fn decisions_apply_once_and_never_when_stale() {
    let h = setup(3).await;
    let d = h.first_failure().await;
    let o = reflection(StepAction::RetryWithParams(BTreeMap::new()), true);
    h.apply(&d, o.clone()).await;
    let again = h
        .store
        .apply_decision(&d.fence(), &o, &POLICY, h.lease())
        .await;
    assert!(matches!(again, Err(trellis::store::StoreError::Fenced)));
    let retry = h.claim("step_2").await;
    let d2 = h.fail(&retry).await;
    h.store.cancel_task(h.task).await.unwrap();
    let before = h.snap().await;
    let r = h
        .store
        .apply_decision(&d2.fence(), &o, &POLICY, h.lease())
        .await;
    assert!(
        matches!(r, Err(trellis::store::StoreError::Fenced)),
        "cancel revoked the lease"
    );
    assert_eq!(before, h.snap().await);
}
