from enum import StrEnum


class WaitKind(StrEnum):
    APPROVAL = "approval"
    CALLBACK = "callback"
    CHILD = "child"
    EVENT = "event"
    SLEEP = "sleep"

    def __str__(self) -> str:
        return str(self.value)
