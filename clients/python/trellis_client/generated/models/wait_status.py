from enum import StrEnum


class WaitStatus(StrEnum):
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    OPEN = "open"
    RESOLVED = "resolved"

    def __str__(self) -> str:
        return str(self.value)
