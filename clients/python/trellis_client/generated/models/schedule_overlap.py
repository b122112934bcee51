from enum import StrEnum


class ScheduleOverlap(StrEnum):
    ALLOW = "allow"
    SKIP = "skip"

    def __str__(self) -> str:
        return str(self.value)
