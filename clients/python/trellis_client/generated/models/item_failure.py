from enum import StrEnum


class ItemFailure(StrEnum):
    CONTINUE = "continue"
    FAIL = "fail"

    def __str__(self) -> str:
        return str(self.value)
