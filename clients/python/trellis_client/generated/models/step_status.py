from enum import StrEnum


class StepStatus(StrEnum):
    BLOCKED = "blocked"
    FAILED = "failed"
    READY = "ready"
    RUNNING = "running"
    SKIPPED = "skipped"
    SUCCEEDED = "succeeded"
    SUPERSEDED = "superseded"
    WAITING = "waiting"

    def __str__(self) -> str:
        return str(self.value)
