from enum import StrEnum


class TaskStatus(StrEnum):
    CANCELLED = "cancelled"
    EVALUATING = "evaluating"
    FAILED = "failed"
    NEEDS_INTERVENTION = "needs_intervention"
    PENDING = "pending"
    PLANNING = "planning"
    REFLECTING = "reflecting"
    REPLANNING = "replanning"
    RUNNING = "running"
    SUCCEEDED = "succeeded"

    def __str__(self) -> str:
        return str(self.value)
