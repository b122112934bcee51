from enum import StrEnum


class ToolMode(StrEnum):
    ASYNC = "async"
    SYNC = "sync"

    def __str__(self) -> str:
        return str(self.value)
