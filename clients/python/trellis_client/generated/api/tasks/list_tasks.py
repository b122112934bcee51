import datetime
from http import HTTPStatus
from typing import Any
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.list_tasks_status_type_0 import ListTasksStatusType0
from ...models.task_summary import TaskSummary
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    status: ListTasksStatusType0 | str | Unset = UNSET,
    limit: int | Unset = 50,
    before: datetime.datetime | str | Unset | UUID = UNSET,
    since: datetime.datetime | str | Unset = UNSET,
    q: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_status: str | Unset
    if isinstance(status, Unset):
        json_status = UNSET
    elif isinstance(status, ListTasksStatusType0):
        json_status = status.value
    else:
        json_status = status
    params["status"] = json_status

    params["limit"] = limit

    json_before: str | Unset
    if isinstance(before, Unset):
        json_before = UNSET
    elif isinstance(before, UUID):
        json_before = str(before)
    elif isinstance(before, datetime.datetime):
        json_before = before.isoformat()
    else:
        json_before = before
    params["before"] = json_before

    json_since: str | Unset
    if isinstance(since, Unset):
        json_since = UNSET
    elif isinstance(since, datetime.datetime):
        json_since = since.isoformat()
    else:
        json_since = since
    params["since"] = json_since

    params["q"] = q

    params["tenant"] = tenant

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/tasks",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | list[TaskSummary] | None:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in _response_200:
            response_200_item = TaskSummary.from_dict(response_200_item_data)

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
) -> Response[Error | list[TaskSummary]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    status: ListTasksStatusType0 | str | Unset = UNSET,
    limit: int | Unset = 50,
    before: datetime.datetime | str | Unset | UUID = UNSET,
    since: datetime.datetime | str | Unset = UNSET,
    q: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
) -> Response[Error | list[TaskSummary]]:
    """List tasks, newest first.

    Args:
        status (ListTasksStatusType0 | str | Unset):
        limit (int | Unset):  Default: 50.
        before (datetime.datetime | str | Unset | UUID):
        since (datetime.datetime | str | Unset):
        q (str | Unset):
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | list[TaskSummary]]
    """

    kwargs = _get_kwargs(
        status=status,
        limit=limit,
        before=before,
        since=since,
        q=q,
        tenant=tenant,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    status: ListTasksStatusType0 | str | Unset = UNSET,
    limit: int | Unset = 50,
    before: datetime.datetime | str | Unset | UUID = UNSET,
    since: datetime.datetime | str | Unset = UNSET,
    q: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
) -> Error | list[TaskSummary] | None:
    """List tasks, newest first.

    Args:
        status (ListTasksStatusType0 | str | Unset):
        limit (int | Unset):  Default: 50.
        before (datetime.datetime | str | Unset | UUID):
        since (datetime.datetime | str | Unset):
        q (str | Unset):
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | list[TaskSummary]
    """

    return sync_detailed(
        client=client,
        status=status,
        limit=limit,
        before=before,
        since=since,
        q=q,
        tenant=tenant,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    status: ListTasksStatusType0 | str | Unset = UNSET,
    limit: int | Unset = 50,
    before: datetime.datetime | str | Unset | UUID = UNSET,
    since: datetime.datetime | str | Unset = UNSET,
    q: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
) -> Response[Error | list[TaskSummary]]:
    """List tasks, newest first.

    Args:
        status (ListTasksStatusType0 | str | Unset):
        limit (int | Unset):  Default: 50.
        before (datetime.datetime | str | Unset | UUID):
        since (datetime.datetime | str | Unset):
        q (str | Unset):
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | list[TaskSummary]]
    """

    kwargs = _get_kwargs(
        status=status,
        limit=limit,
        before=before,
        since=since,
        q=q,
        tenant=tenant,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    status: ListTasksStatusType0 | str | Unset = UNSET,
    limit: int | Unset = 50,
    before: datetime.datetime | str | Unset | UUID = UNSET,
    since: datetime.datetime | str | Unset = UNSET,
    q: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
) -> Error | list[TaskSummary] | None:
    """List tasks, newest first.

    Args:
        status (ListTasksStatusType0 | str | Unset):
        limit (int | Unset):  Default: 50.
        before (datetime.datetime | str | Unset | UUID):
        since (datetime.datetime | str | Unset):
        q (str | Unset):
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | list[TaskSummary]
    """

    return (
        await asyncio_detailed(
            client=client,
            status=status,
            limit=limit,
            before=before,
            since=since,
            q=q,
            tenant=tenant,
        )
    ).parsed
