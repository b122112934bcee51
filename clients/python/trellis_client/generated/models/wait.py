from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.wait_kind import WaitKind
from ..models.wait_status import WaitStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.wait_form_type_0 import WaitFormType0
    from ..models.wait_match_type_0 import WaitMatchType0
    from ..models.wait_parameters_type_0 import WaitParametersType0
    from ..models.wait_resolution_type_0 import WaitResolutionType0


T = TypeVar("T", bound="Wait")


@_attrs_define
class Wait:
    """A wait (`GET /waits`): a step waiting for an approval, an event, a callback or a time.

    Attributes:
        attempt (int):
        created_at (datetime.datetime):
        kind (WaitKind):
        on_timeout (str): `reject` or `approve`: what the approval's timeout means.
        status (WaitStatus):
        step_id (str): The step's key in its plan.
        task_id (UUID):
        wait_id (UUID):
        event_key (None | str | Unset): The key a `wait_event` waits for, and what its payload must contain.
        expires_at (datetime.datetime | None | Unset):
        form (bool | None | Unset | WaitFormType0):
        match (None | Unset | WaitMatchType0):
        parameters (None | Unset | WaitParametersType0):
        prompt (None | str | Unset): What the approver is asked (approvals).
        resolution (None | Unset | WaitResolutionType0): How it was resolved: `{"outcome": "approved" | "rejected" |
            "event" | "completed" |
            "failed" | "slept" | "timeout", …}` (null while open).
        resolved_at (datetime.datetime | None | Unset):
        resolved_by (None | Unset | UUID): The API key that decided (approvals).
        role (None | str | Unset): The least role that may decide (approvals).
        tool (None | str | Unset): A gated call: the tool that runs once approved, and the parameters it would run with.
    """

    attempt: int
    created_at: datetime.datetime
    kind: WaitKind
    on_timeout: str
    status: WaitStatus
    step_id: str
    task_id: UUID
    wait_id: UUID
    event_key: None | str | Unset = UNSET
    expires_at: datetime.datetime | None | Unset = UNSET
    form: bool | None | Unset | WaitFormType0 = UNSET
    match: None | Unset | WaitMatchType0 = UNSET
    parameters: None | Unset | WaitParametersType0 = UNSET
    prompt: None | str | Unset = UNSET
    resolution: None | Unset | WaitResolutionType0 = UNSET
    resolved_at: datetime.datetime | None | Unset = UNSET
    resolved_by: None | Unset | UUID = UNSET
    role: None | str | Unset = UNSET
    tool: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.wait_form_type_0 import WaitFormType0
        from ..models.wait_match_type_0 import WaitMatchType0
        from ..models.wait_parameters_type_0 import WaitParametersType0
        from ..models.wait_resolution_type_0 import WaitResolutionType0

        attempt = self.attempt

        created_at = self.created_at.isoformat()

        kind = self.kind.value

        on_timeout = self.on_timeout

        status = self.status.value

        step_id = self.step_id

        task_id = str(self.task_id)

        wait_id = str(self.wait_id)

        event_key: None | str | Unset
        if isinstance(self.event_key, Unset):
            event_key = UNSET
        else:
            event_key = self.event_key

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        elif isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

        form: bool | dict[str, Any] | None | Unset
        if isinstance(self.form, Unset):
            form = UNSET
        elif isinstance(self.form, WaitFormType0):
            form = self.form.to_dict()
        else:
            form = self.form

        match: dict[str, Any] | None | Unset
        if isinstance(self.match, Unset):
            match = UNSET
        elif isinstance(self.match, WaitMatchType0):
            match = self.match.to_dict()
        else:
            match = self.match

        parameters: dict[str, Any] | None | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        elif isinstance(self.parameters, WaitParametersType0):
            parameters = self.parameters.to_dict()
        else:
            parameters = self.parameters

        prompt: None | str | Unset
        if isinstance(self.prompt, Unset):
            prompt = UNSET
        else:
            prompt = self.prompt

        resolution: dict[str, Any] | None | Unset
        if isinstance(self.resolution, Unset):
            resolution = UNSET
        elif isinstance(self.resolution, WaitResolutionType0):
            resolution = self.resolution.to_dict()
        else:
            resolution = self.resolution

        resolved_at: None | str | Unset
        if isinstance(self.resolved_at, Unset):
            resolved_at = UNSET
        elif isinstance(self.resolved_at, datetime.datetime):
            resolved_at = self.resolved_at.isoformat()
        else:
            resolved_at = self.resolved_at

        resolved_by: None | str | Unset
        if isinstance(self.resolved_by, Unset):
            resolved_by = UNSET
        elif isinstance(self.resolved_by, UUID):
            resolved_by = str(self.resolved_by)
        else:
            resolved_by = self.resolved_by

        role: None | str | Unset
        if isinstance(self.role, Unset):
            role = UNSET
        else:
            role = self.role

        tool: None | str | Unset
        if isinstance(self.tool, Unset):
            tool = UNSET
        else:
            tool = self.tool

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "created_at": created_at,
                "kind": kind,
                "on_timeout": on_timeout,
                "status": status,
                "step_id": step_id,
                "task_id": task_id,
                "wait_id": wait_id,
            }
        )
        if event_key is not UNSET:
            field_dict["event_key"] = event_key
        if expires_at is not UNSET:
            field_dict["expires_at"] = expires_at
        if form is not UNSET:
            field_dict["form"] = form
        if match is not UNSET:
            field_dict["match"] = match
        if parameters is not UNSET:
            field_dict["parameters"] = parameters
        if prompt is not UNSET:
            field_dict["prompt"] = prompt
        if resolution is not UNSET:
            field_dict["resolution"] = resolution
        if resolved_at is not UNSET:
            field_dict["resolved_at"] = resolved_at
        if resolved_by is not UNSET:
            field_dict["resolved_by"] = resolved_by
        if role is not UNSET:
            field_dict["role"] = role
        if tool is not UNSET:
            field_dict["tool"] = tool

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.wait_form_type_0 import WaitFormType0
        from ..models.wait_match_type_0 import WaitMatchType0
        from ..models.wait_parameters_type_0 import WaitParametersType0
        from ..models.wait_resolution_type_0 import WaitResolutionType0

        d = dict(src_dict)
        attempt = d.pop("attempt")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        kind = WaitKind(d.pop("kind"))

        on_timeout = d.pop("on_timeout")

        status = WaitStatus(d.pop("status"))

        step_id = d.pop("step_id")

        task_id = UUID(d.pop("task_id"))

        wait_id = UUID(d.pop("wait_id"))

        def _parse_event_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_key = _parse_event_key(d.pop("event_key", UNSET))

        def _parse_expires_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        expires_at = _parse_expires_at(d.pop("expires_at", UNSET))

        def _parse_form(data: object) -> bool | None | Unset | WaitFormType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                form_type_0 = WaitFormType0.from_dict(data)

                return form_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(bool | None | Unset | WaitFormType0, data)

        form = _parse_form(d.pop("form", UNSET))

        def _parse_match(data: object) -> None | Unset | WaitMatchType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                match_type_0 = WaitMatchType0.from_dict(data)

                return match_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WaitMatchType0, data)

        match = _parse_match(d.pop("match", UNSET))

        def _parse_parameters(data: object) -> None | Unset | WaitParametersType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parameters_type_0 = WaitParametersType0.from_dict(data)

                return parameters_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WaitParametersType0, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))

        def _parse_prompt(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        prompt = _parse_prompt(d.pop("prompt", UNSET))

        def _parse_resolution(data: object) -> None | Unset | WaitResolutionType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                resolution_type_0 = WaitResolutionType0.from_dict(data)

                return resolution_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WaitResolutionType0, data)

        resolution = _parse_resolution(d.pop("resolution", UNSET))

        def _parse_resolved_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                resolved_at_type_0 = datetime.datetime.fromisoformat(data)

                return resolved_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        resolved_at = _parse_resolved_at(d.pop("resolved_at", UNSET))

        def _parse_resolved_by(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                resolved_by_type_0 = UUID(data)

                return resolved_by_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        resolved_by = _parse_resolved_by(d.pop("resolved_by", UNSET))

        def _parse_role(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        role = _parse_role(d.pop("role", UNSET))

        def _parse_tool(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tool = _parse_tool(d.pop("tool", UNSET))

        wait = cls(
            attempt=attempt,
            created_at=created_at,
            kind=kind,
            on_timeout=on_timeout,
            status=status,
            step_id=step_id,
            task_id=task_id,
            wait_id=wait_id,
            event_key=event_key,
            expires_at=expires_at,
            form=form,
            match=match,
            parameters=parameters,
            prompt=prompt,
            resolution=resolution,
            resolved_at=resolved_at,
            resolved_by=resolved_by,
            role=role,
            tool=tool,
        )

        wait.additional_properties = d
        return wait

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
