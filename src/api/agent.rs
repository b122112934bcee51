//! `GET /tasks/{id}/steps/{step_id}/turns`: an agent step's turns (the agent issue).

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::Tenancy;
use super::schemas::{BadUri, Guarded, Missing};
use super::{ApiError, ApiPath, AppState};
use crate::store::agent::TurnRead;

/// The `{id}` and `{step_id}` of a task's step (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct StepPath {
    /// A task id.
    id: Uuid,
    /// One of its steps' ids (keys), e.g. `research`.
    step_id: String,
}

/// A tool call the model asked for in a turn.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentToolCallView {
    /// The model's `tool_call_id`.
    pub id: String,
    /// The tool it called (null when the call was refused before it ran).
    pub tool: Option<String>,
    /// Its arguments (null when refused).
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<Value>,
    /// The step it runs as, `<agent step>.<turn>.<n>` (null when refused).
    pub step_id: Option<String>,
    /// Its step's status, or `refused` (the model was told why).
    pub status: String,
    /// Why it was refused (an unknown function, arguments that are not an object, too many
    /// calls in one turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// One turn of an agent step: one LLM call.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentTurnView {
    /// From 1.
    pub turn: i32,
    /// The messages the turn added to the transcript (OpenAI chat messages): the previous
    /// turn's results as `tool` messages (or the opening `system` and `user` ones), then the
    /// model's answer.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
    pub tool_calls: Vec<AgentToolCallView>,
    /// The LLM call's usage: `model`, `requests`, `prompt_tokens`, `completion_tokens`,
    /// `total_tokens`, `cached_tokens`, `latency_ms`.
    #[schema(value_type = Object)]
    pub usage: Value,
    /// What the call cost (null: its model has no price).
    pub cost: Option<f64>,
}

fn call(v: &Value) -> AgentToolCallView {
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    AgentToolCallView {
        id: text("id").unwrap_or_default(),
        tool: text("tool"),
        parameters: v.get("parameters").filter(|p| !p.is_null()).cloned(),
        step_id: text("step_id"),
        status: text("status").unwrap_or_default(),
        refused: text("refused"),
    }
}

fn turn(t: TurnRead) -> AgentTurnView {
    AgentTurnView {
        turn: t.turn,
        messages: match t.messages {
            Value::Array(m) => m,
            _ => Vec::new(),
        },
        tool_calls: t
            .tool_calls
            .as_array()
            .map(|a| a.iter().map(call).collect())
            .unwrap_or_default(),
        usage: t.usage,
        cost: t.cost,
    }
}

/// An agent step's turns, oldest first (empty for a step that is not an agent or has not
/// asked its model yet).
#[utoipa::path(get, path = "/tasks/{id}/steps/{step_id}/turns", tag = "tasks", operation_id = "agent_turns",
    security(("bearer" = [])), params(StepPath),
    responses((status = 200, description = "the step's turns, oldest first", body = Vec<AgentTurnView>), Missing, BadUri, Guarded),
)]
pub(super) async fn turns(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath((raw, step_key)): ApiPath<(String, String)>,
) -> Result<Json<Vec<AgentTurnView>>, ApiError> {
    let id = super::task_id(&raw)?;
    let tenant = st.store.task_tenant(id).await?;
    tenancy.owns(&tenant, format_args!("task {id}"))?;
    match st.store.read_turns(id, &step_key).await? {
        Some(rows) => Ok(Json(rows.into_iter().map(turn).collect())),
        None => Err(ApiError::not_found(format!(
            "task {id} has no step {step_key:?}"
        ))),
    }
}
