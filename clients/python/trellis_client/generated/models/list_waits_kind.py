from enum import StrEnum


class ListWaitsKind(StrEnum):
    APPROVAL = "approval"
    CALLBACK = "callback"
    CHILD = "child"
    EVENT = "event"
    SLEEP = "sleep"
    VALUE_0 = ""

    def __str__(self) -> str:
        return str(self.value)
