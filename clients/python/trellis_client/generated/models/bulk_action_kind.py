from enum import StrEnum


class BulkActionKind(StrEnum):
    CANCEL = "cancel"
    RERUN = "rerun"
    RESUME = "resume"

    def __str__(self) -> str:
        return str(self.value)
