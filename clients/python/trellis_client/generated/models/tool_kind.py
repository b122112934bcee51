from enum import StrEnum


class ToolKind(StrEnum):
    BUILTIN = "builtin"
    HTTP = "http"

    def __str__(self) -> str:
        return str(self.value)
