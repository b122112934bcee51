from enum import StrEnum


class Role(StrEnum):
    ADMIN = "admin"
    OPERATOR = "operator"
    READER = "reader"

    def __str__(self) -> str:
        return str(self.value)
