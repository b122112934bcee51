from http import HTTPStatus
from typing import Any
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.list_waits_kind import ListWaitsKind
from ...models.list_waits_status import ListWaitsStatus
from ...models.wait import Wait
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    tenant: str | Unset = UNSET,
    status: ListWaitsStatus | Unset = UNSET,
    kind: ListWaitsKind | Unset = UNSET,
    task_id: UUID | Unset = UNSET,
    limit: int | Unset = 100,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["tenant"] = tenant

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    json_kind: str | Unset = UNSET
    if not isinstance(kind, Unset):
        json_kind = kind.value

    params["kind"] = json_kind

    json_task_id: str | Unset = UNSET
    if not isinstance(task_id, Unset):
        json_task_id = str(task_id)
    params["task_id"] = json_task_id

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/waits",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | list[Wait] | None:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in _response_200:
            response_200_item = Wait.from_dict(response_200_item_data)

            response_200.append(response_200_item)

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())

        return response_422

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | list[Wait]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    status: ListWaitsStatus | Unset = UNSET,
    kind: ListWaitsKind | Unset = UNSET,
    task_id: UUID | Unset = UNSET,
    limit: int | Unset = 100,
) -> Response[Error | list[Wait]]:
    """The waits, newest first: `?status=open&kind=approval` is the approvals inbox.

    Args:
        tenant (str | Unset):
        status (ListWaitsStatus | Unset):
        kind (ListWaitsKind | Unset):
        task_id (UUID | Unset):
        limit (int | Unset):  Default: 100.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | list[Wait]]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        status=status,
        kind=kind,
        task_id=task_id,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    status: ListWaitsStatus | Unset = UNSET,
    kind: ListWaitsKind | Unset = UNSET,
    task_id: UUID | Unset = UNSET,
    limit: int | Unset = 100,
) -> Error | list[Wait] | None:
    """The waits, newest first: `?status=open&kind=approval` is the approvals inbox.

    Args:
        tenant (str | Unset):
        status (ListWaitsStatus | Unset):
        kind (ListWaitsKind | Unset):
        task_id (UUID | Unset):
        limit (int | Unset):  Default: 100.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | list[Wait]
    """

    return sync_detailed(
        client=client,
        tenant=tenant,
        status=status,
        kind=kind,
        task_id=task_id,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    status: ListWaitsStatus | Unset = UNSET,
    kind: ListWaitsKind | Unset = UNSET,
    task_id: UUID | Unset = UNSET,
    limit: int | Unset = 100,
) -> Response[Error | list[Wait]]:
    """The waits, newest first: `?status=open&kind=approval` is the approvals inbox.

    Args:
        tenant (str | Unset):
        status (ListWaitsStatus | Unset):
        kind (ListWaitsKind | Unset):
        task_id (UUID | Unset):
        limit (int | Unset):  Default: 100.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | list[Wait]]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        status=status,
        kind=kind,
        task_id=task_id,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
    status: ListWaitsStatus | Unset = UNSET,
    kind: ListWaitsKind | Unset = UNSET,
    task_id: UUID | Unset = UNSET,
    limit: int | Unset = 100,
) -> Error | list[Wait] | None:
    """The waits, newest first: `?status=open&kind=approval` is the approvals inbox.

    Args:
        tenant (str | Unset):
        status (ListWaitsStatus | Unset):
        kind (ListWaitsKind | Unset):
        task_id (UUID | Unset):
        limit (int | Unset):  Default: 100.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | list[Wait]
    """

    return (
        await asyncio_detailed(
            client=client,
            tenant=tenant,
            status=status,
            kind=kind,
            task_id=task_id,
            limit=limit,
        )
    ).parsed
