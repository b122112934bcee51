from enum import StrEnum


class ListWaitsStatus(StrEnum):
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    OPEN = "open"
    RESOLVED = "resolved"
    VALUE_0 = ""

    def __str__(self) -> str:
        return str(self.value)
