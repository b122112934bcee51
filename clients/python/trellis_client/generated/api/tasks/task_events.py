from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.event import Event
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: UUID,
    *,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = str(last_event_id)

    params: dict[str, Any] = {}

    params["after"] = after

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/tasks/{id}/events".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | list[Event] | None:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in _response_200:
            response_200_item = Event.from_dict(response_200_item_data)

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

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

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
) -> Response[Error | list[Event]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Response[Error | list[Event]]:
    """Events after a sequence number; live Server-Sent Events with Accept: text/event-stream (resumable
    with Last-Event-ID)

    Args:
        id (UUID):
        after (int | Unset):
        limit (int | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | list[Event]]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
        limit=limit,
        last_event_id=last_event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Error | list[Event] | None:
    """Events after a sequence number; live Server-Sent Events with Accept: text/event-stream (resumable
    with Last-Event-ID)

    Args:
        id (UUID):
        after (int | Unset):
        limit (int | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | list[Event]
    """

    return sync_detailed(
        id=id,
        client=client,
        after=after,
        limit=limit,
        last_event_id=last_event_id,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Response[Error | list[Event]]:
    """Events after a sequence number; live Server-Sent Events with Accept: text/event-stream (resumable
    with Last-Event-ID)

    Args:
        id (UUID):
        after (int | Unset):
        limit (int | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | list[Event]]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
        limit=limit,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Error | list[Event] | None:
    """Events after a sequence number; live Server-Sent Events with Accept: text/event-stream (resumable
    with Last-Event-ID)

    Args:
        id (UUID):
        after (int | Unset):
        limit (int | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | list[Event]
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            after=after,
            limit=limit,
            last_event_id=last_event_id,
        )
    ).parsed
