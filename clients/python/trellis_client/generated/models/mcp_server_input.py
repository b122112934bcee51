from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.mcp_server_input_headers import McpServerInputHeaders


T = TypeVar("T", bound="McpServerInput")


@_attrs_define
class McpServerInput:
    """`POST /mcp-servers`.

    Attributes:
        endpoint (str): The server's streamable HTTP endpoint.
        id (str):
        headers (McpServerInputHeaders | Unset): Headers of every request to it: literal, or `${secret.NAME}`.
    """

    endpoint: str
    id: str
    headers: McpServerInputHeaders | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        endpoint = self.endpoint

        id = self.id

        headers: dict[str, Any] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = self.headers.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "endpoint": endpoint,
                "id": id,
            }
        )
        if headers is not UNSET:
            field_dict["headers"] = headers

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.mcp_server_input_headers import McpServerInputHeaders

        d = dict(src_dict)
        endpoint = d.pop("endpoint")

        id = d.pop("id")

        _headers = d.pop("headers", UNSET)
        headers: McpServerInputHeaders | Unset
        if isinstance(_headers, Unset):
            headers = UNSET
        else:
            headers = McpServerInputHeaders.from_dict(_headers)

        mcp_server_input = cls(
            endpoint=endpoint,
            id=id,
            headers=headers,
        )

        return mcp_server_input
