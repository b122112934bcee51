from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.rerun_step_overrides import RerunStepOverrides


T = TypeVar("T", bound="Rerun")


@_attrs_define
class Rerun:
    """Body of `POST /tasks/{id}/rerun`.

    Attributes:
        from_step (str): The step to start from: it and every step downstream of it run again; other succeeded
            steps keep their outputs.
        step_overrides (RerunStepOverrides | Unset): By step id; only `from_step` or its descendants may be named.
    """

    from_step: str
    step_overrides: RerunStepOverrides | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from_step = self.from_step

        step_overrides: dict[str, Any] | Unset = UNSET
        if not isinstance(self.step_overrides, Unset):
            step_overrides = self.step_overrides.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "from_step": from_step,
            }
        )
        if step_overrides is not UNSET:
            field_dict["step_overrides"] = step_overrides

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rerun_step_overrides import RerunStepOverrides

        d = dict(src_dict)
        from_step = d.pop("from_step")

        _step_overrides = d.pop("step_overrides", UNSET)
        step_overrides: RerunStepOverrides | Unset
        if isinstance(_step_overrides, Unset):
            step_overrides = UNSET
        else:
            step_overrides = RerunStepOverrides.from_dict(_step_overrides)

        rerun = cls(
            from_step=from_step,
            step_overrides=step_overrides,
        )

        return rerun
