from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.mcp_server_headers import McpServerHeaders


T = TypeVar("T", bound="McpServer")


@_attrs_define
class McpServer:
    """An MCP server and the tools imported from it.

    Attributes:
        created_at (datetime.datetime):
        endpoint (str):
        headers (McpServerHeaders):
        id (str):
        refreshed_at (datetime.datetime):
        tenant (str): The tenant whose tools it imports.
        tools (list[str]): Ids of the tools imported from it.
    """

    created_at: datetime.datetime
    endpoint: str
    headers: McpServerHeaders
    id: str
    refreshed_at: datetime.datetime
    tenant: str
    tools: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        endpoint = self.endpoint

        headers = self.headers.to_dict()

        id = self.id

        refreshed_at = self.refreshed_at.isoformat()

        tenant = self.tenant

        tools = self.tools

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "endpoint": endpoint,
                "headers": headers,
                "id": id,
                "refreshed_at": refreshed_at,
                "tenant": tenant,
                "tools": tools,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.mcp_server_headers import McpServerHeaders

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        endpoint = d.pop("endpoint")

        headers = McpServerHeaders.from_dict(d.pop("headers"))

        id = d.pop("id")

        refreshed_at = datetime.datetime.fromisoformat(d.pop("refreshed_at"))

        tenant = d.pop("tenant")

        tools = cast(list[str], d.pop("tools"))

        mcp_server = cls(
            created_at=created_at,
            endpoint=endpoint,
            headers=headers,
            id=id,
            refreshed_at=refreshed_at,
            tenant=tenant,
            tools=tools,
        )

        mcp_server.additional_properties = d
        return mcp_server

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
