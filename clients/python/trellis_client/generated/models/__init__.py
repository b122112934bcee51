"""Contains all the data models used in inputs/outputs"""

from .accepted import Accepted
from .action import Action
from .action_parameters import ActionParameters
from .activity_view import ActivityView
from .activity_view_recent_tasks import ActivityViewRecentTasks
from .activity_view_unfinished_tasks import ActivityViewUnfinishedTasks
from .agent_tool_call_view import AgentToolCallView
from .agent_tool_call_view_parameters_type_0 import AgentToolCallViewParametersType0
from .agent_turn_view import AgentTurnView
from .agent_turn_view_messages_item import AgentTurnViewMessagesItem
from .agent_turn_view_usage import AgentTurnViewUsage
from .approve import Approve
from .approve_parameters_type_0 import ApproveParametersType0
from .attempt import Attempt
from .attempt_error_type_0 import AttemptErrorType0
from .attempt_parameters import AttemptParameters
from .attempt_status import AttemptStatus
from .bulk_accepted import BulkAccepted
from .bulk_action import BulkAction
from .bulk_action_filter_type_0 import BulkActionFilterType0
from .bulk_action_kind import BulkActionKind
from .bulk_action_request import BulkActionRequest
from .bulk_failure import BulkFailure
from .bulk_filter_input import BulkFilterInput
from .bulk_filter_input_metadata_type_0 import BulkFilterInputMetadataType0
from .callback_accepted import CallbackAccepted
from .callback_complete import CallbackComplete
from .callback_complete_output import CallbackCompleteOutput
from .callback_fail import CallbackFail
from .callback_fail_error import CallbackFailError
from .callback_heartbeat import CallbackHeartbeat
from .child_task import ChildTask
from .circuit import Circuit
from .circuit_breaker import CircuitBreaker
from .circuit_state import CircuitState
from .counters_view import CountersView
from .delivery_status import DeliveryStatus
from .error import Error
from .error_error import ErrorError
from .evaluation import Evaluation
from .event import Event
from .event_payload import EventPayload
from .events_resolved import EventsResolved
from .failure_rule import FailureRule
from .health import Health
from .item_failure import ItemFailure
from .key import Key
from .key_input import KeyInput
from .key_limit import KeyLimit
from .key_limit_input import KeyLimitInput
from .key_queue_view import KeyQueueView
from .limits import Limits
from .list_tasks_status_type_0 import ListTasksStatusType0
from .list_waits_kind import ListWaitsKind
from .list_waits_status import ListWaitsStatus
from .llm_usage_view import LlmUsageView
from .map_progress import MapProgress
from .mcp_server import McpServer
from .mcp_server_headers import McpServerHeaders
from .mcp_server_input import McpServerInput
from .mcp_server_input_headers import McpServerInputHeaders
from .minute_view import MinuteView
from .model_price import ModelPrice
from .openapi_response_200 import OpenapiResponse200
from .plan import Plan
from .plan_step_view import PlanStepView
from .plan_step_view_actions_item import PlanStepViewActionsItem
from .plan_step_view_error_type_0 import PlanStepViewErrorType0
from .plan_step_view_param_overrides import PlanStepViewParamOverrides
from .plan_step_view_parameters import PlanStepViewParameters
from .plan_version import PlanVersion
from .plan_view import PlanView
from .post_event import PostEvent
from .post_event_payload_type_0 import PostEventPayloadType0
from .price_input import PriceInput
from .queue_view import QueueView
from .recovery_stats_view import RecoveryStatsView
from .recovery_stats_view_cost_by_template_day_item import (
    RecoveryStatsViewCostByTemplateDayItem,
)
from .recovery_stats_view_cost_by_tool_day_item import (
    RecoveryStatsViewCostByToolDayItem,
)
from .recovery_stats_view_recovery_by_action_item import (
    RecoveryStatsViewRecoveryByActionItem,
)
from .recovery_stats_view_recovery_by_category_item import (
    RecoveryStatsViewRecoveryByCategoryItem,
)
from .recovery_stats_view_recovery_by_template_item import (
    RecoveryStatsViewRecoveryByTemplateItem,
)
from .recovery_stats_view_recovery_by_tier_item import (
    RecoveryStatsViewRecoveryByTierItem,
)
from .recovery_stats_view_recovery_by_tool_item import (
    RecoveryStatsViewRecoveryByToolItem,
)
from .recovery_stats_view_recovery_cost_by_tier_item import (
    RecoveryStatsViewRecoveryCostByTierItem,
)
from .recovery_stats_view_task_outcomes_item import RecoveryStatsViewTaskOutcomesItem
from .reflection import Reflection
from .reflection_body import ReflectionBody
from .reject import Reject
from .rerun import Rerun
from .rerun_step_overrides import RerunStepOverrides
from .reschedule import Reschedule
from .resume import Resume
from .resume_step_overrides import ResumeStepOverrides
from .retry_policy import RetryPolicy
from .role import Role
from .schedule import Schedule
from .schedule_input import ScheduleInput
from .schedule_input_input_type_0 import ScheduleInputInputType0
from .schedule_input_type_0 import ScheduleInputType0
from .schedule_limits import ScheduleLimits
from .schedule_overlap import ScheduleOverlap
from .schedule_patch import SchedulePatch
from .schedule_patch_input_type_0 import SchedulePatchInputType0
from .schedule_plan_type_0 import SchedulePlanType0
from .secret import Secret
from .secret_input import SecretInput
from .stats_view import StatsView
from .stats_view_steps import StatsViewSteps
from .stats_view_tasks import StatsViewTasks
from .step import Step
from .step_counts_view import StepCountsView
from .step_map import StepMap
from .step_override import StepOverride
from .step_override_parameters_type_0 import StepOverrideParametersType0
from .step_parameters import StepParameters
from .step_status import StepStatus
from .submit_batch import SubmitBatch
from .submit_task import SubmitTask
from .submit_task_context_type_0 import SubmitTaskContextType0
from .submit_task_input_type_0 import SubmitTaskInputType0
from .submit_task_metadata_type_0 import SubmitTaskMetadataType0
from .submitted import Submitted
from .submitted_batch import SubmittedBatch
from .task_limits_view import TaskLimitsView
from .task_result import TaskResult
from .task_result_error_type_0 import TaskResultErrorType0
from .task_result_outputs import TaskResultOutputs
from .task_status import TaskStatus
from .task_status_view import TaskStatusView
from .task_status_view_context import TaskStatusViewContext
from .task_status_view_error_type_0 import TaskStatusViewErrorType0
from .task_status_view_metadata import TaskStatusViewMetadata
from .task_status_view_runtime_metadata import TaskStatusViewRuntimeMetadata
from .task_summary import TaskSummary
from .template import Template
from .template_input import TemplateInput
from .template_input_input_schema_type_0 import TemplateInputInputSchemaType0
from .template_input_plan import TemplateInputPlan
from .template_input_plan_steps_item import TemplateInputPlanStepsItem
from .template_input_schema import TemplateInputSchema
from .template_plan import TemplatePlan
from .tenant import Tenant
from .tenant_input import TenantInput
from .tool import Tool
from .tool_activity_view import ToolActivityView
from .tool_headers import ToolHeaders
from .tool_input import ToolInput
from .tool_input_headers import ToolInputHeaders
from .tool_input_input_schema_type_0 import ToolInputInputSchemaType0
from .tool_input_output_schema_type_0 import ToolInputOutputSchemaType0
from .tool_input_schema import ToolInputSchema
from .tool_kind import ToolKind
from .tool_mode import ToolMode
from .tool_output_schema_type_0 import ToolOutputSchemaType0
from .triggered import Triggered
from .usage import Usage
from .wait import Wait
from .wait_form_type_0 import WaitFormType0
from .wait_kind import WaitKind
from .wait_match_type_0 import WaitMatchType0
from .wait_parameters_type_0 import WaitParametersType0
from .wait_resolution_type_0 import WaitResolutionType0
from .wait_status import WaitStatus
from .webhook import Webhook
from .webhook_delivery import WebhookDelivery
from .webhook_delivery_log_item import WebhookDeliveryLogItem
from .webhook_input import WebhookInput
from .who_am_i import WhoAmI
from .worker import Worker

__all__ = (
    "Accepted",
    "Action",
    "ActionParameters",
    "ActivityView",
    "ActivityViewRecentTasks",
    "ActivityViewUnfinishedTasks",
    "AgentToolCallView",
    "AgentToolCallViewParametersType0",
    "AgentTurnView",
    "AgentTurnViewMessagesItem",
    "AgentTurnViewUsage",
    "Approve",
    "ApproveParametersType0",
    "Attempt",
    "AttemptErrorType0",
    "AttemptParameters",
    "AttemptStatus",
    "BulkAccepted",
    "BulkAction",
    "BulkActionFilterType0",
    "BulkActionKind",
    "BulkActionRequest",
    "BulkFailure",
    "BulkFilterInput",
    "BulkFilterInputMetadataType0",
    "CallbackAccepted",
    "CallbackComplete",
    "CallbackCompleteOutput",
    "CallbackFail",
    "CallbackFailError",
    "CallbackHeartbeat",
    "ChildTask",
    "Circuit",
    "CircuitBreaker",
    "CircuitState",
    "CountersView",
    "DeliveryStatus",
    "Error",
    "ErrorError",
    "Evaluation",
    "Event",
    "EventPayload",
    "EventsResolved",
    "FailureRule",
    "Health",
    "ItemFailure",
    "Key",
    "KeyInput",
    "KeyLimit",
    "KeyLimitInput",
    "KeyQueueView",
    "Limits",
    "ListTasksStatusType0",
    "ListWaitsKind",
    "ListWaitsStatus",
    "LlmUsageView",
    "MapProgress",
    "McpServer",
    "McpServerHeaders",
    "McpServerInput",
    "McpServerInputHeaders",
    "MinuteView",
    "ModelPrice",
    "OpenapiResponse200",
    "Plan",
    "PlanStepView",
    "PlanStepViewActionsItem",
    "PlanStepViewErrorType0",
    "PlanStepViewParamOverrides",
    "PlanStepViewParameters",
    "PlanVersion",
    "PlanView",
    "PostEvent",
    "PostEventPayloadType0",
    "PriceInput",
    "QueueView",
    "RecoveryStatsView",
    "RecoveryStatsViewCostByTemplateDayItem",
    "RecoveryStatsViewCostByToolDayItem",
    "RecoveryStatsViewRecoveryByActionItem",
    "RecoveryStatsViewRecoveryByCategoryItem",
    "RecoveryStatsViewRecoveryByTemplateItem",
    "RecoveryStatsViewRecoveryByTierItem",
    "RecoveryStatsViewRecoveryByToolItem",
    "RecoveryStatsViewRecoveryCostByTierItem",
    "RecoveryStatsViewTaskOutcomesItem",
    "Reflection",
    "ReflectionBody",
    "Reject",
    "Rerun",
    "RerunStepOverrides",
    "Reschedule",
    "Resume",
    "ResumeStepOverrides",
    "RetryPolicy",
    "Role",
    "Schedule",
    "ScheduleInput",
    "ScheduleInputInputType0",
    "ScheduleInputType0",
    "ScheduleLimits",
    "ScheduleOverlap",
    "SchedulePatch",
    "SchedulePatchInputType0",
    "SchedulePlanType0",
    "Secret",
    "SecretInput",
    "StatsView",
    "StatsViewSteps",
    "StatsViewTasks",
    "Step",
    "StepCountsView",
    "StepMap",
    "StepOverride",
    "StepOverrideParametersType0",
    "StepParameters",
    "StepStatus",
    "SubmitBatch",
    "SubmitTask",
    "SubmitTaskContextType0",
    "SubmitTaskInputType0",
    "SubmitTaskMetadataType0",
    "Submitted",
    "SubmittedBatch",
    "TaskLimitsView",
    "TaskResult",
    "TaskResultErrorType0",
    "TaskResultOutputs",
    "TaskStatus",
    "TaskStatusView",
    "TaskStatusViewContext",
    "TaskStatusViewErrorType0",
    "TaskStatusViewMetadata",
    "TaskStatusViewRuntimeMetadata",
    "TaskSummary",
    "Template",
    "TemplateInput",
    "TemplateInputInputSchemaType0",
    "TemplateInputPlan",
    "TemplateInputPlanStepsItem",
    "TemplateInputSchema",
    "TemplatePlan",
    "Tenant",
    "TenantInput",
    "Tool",
    "ToolActivityView",
    "ToolHeaders",
    "ToolInput",
    "ToolInputHeaders",
    "ToolInputInputSchemaType0",
    "ToolInputOutputSchemaType0",
    "ToolInputSchema",
    "ToolKind",
    "ToolMode",
    "ToolOutputSchemaType0",
    "Triggered",
    "Usage",
    "Wait",
    "WaitFormType0",
    "WaitKind",
    "WaitMatchType0",
    "WaitParametersType0",
    "WaitResolutionType0",
    "WaitStatus",
    "Webhook",
    "WebhookDelivery",
    "WebhookDeliveryLogItem",
    "WebhookInput",
    "WhoAmI",
    "Worker",
)
