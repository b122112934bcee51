from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.activity_view import ActivityView
from ...models.error import Error
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    tenant: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["tenant"] = tenant

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/stats/activity",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ActivityView | Error | None:
    if response.status_code == 200:
        response_200 = ActivityView.from_dict(response.json())

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
) -> Response[ActivityView | Error]:
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
) -> Response[ActivityView | Error]:
    """The last hour's work and the queue now.

     Attempts finished per minute over the last hour (succeeded and failed), each tool's attempts,
    failures and durations over that hour, ready and running steps per tool with the oldest
    ready step's wait, the live workers with what they hold, unfinished tasks by status, and
    the tasks submitted in the last hour by status (each count stops above `recent_cap`).
    Its cost follows the last hour's work and the live queue, not the history.

    Args:
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ActivityView | Error]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
) -> ActivityView | Error | None:
    """The last hour's work and the queue now.

     Attempts finished per minute over the last hour (succeeded and failed), each tool's attempts,
    failures and durations over that hour, ready and running steps per tool with the oldest
    ready step's wait, the live workers with what they hold, unfinished tasks by status, and
    the tasks submitted in the last hour by status (each count stops above `recent_cap`).
    Its cost follows the last hour's work and the live queue, not the history.

    Args:
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ActivityView | Error
    """

    return sync_detailed(
        client=client,
        tenant=tenant,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
) -> Response[ActivityView | Error]:
    """The last hour's work and the queue now.

     Attempts finished per minute over the last hour (succeeded and failed), each tool's attempts,
    failures and durations over that hour, ready and running steps per tool with the oldest
    ready step's wait, the live workers with what they hold, unfinished tasks by status, and
    the tasks submitted in the last hour by status (each count stops above `recent_cap`).
    Its cost follows the last hour's work and the live queue, not the history.

    Args:
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ActivityView | Error]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
) -> ActivityView | Error | None:
    """The last hour's work and the queue now.

     Attempts finished per minute over the last hour (succeeded and failed), each tool's attempts,
    failures and durations over that hour, ready and running steps per tool with the oldest
    ready step's wait, the live workers with what they hold, unfinished tasks by status, and
    the tasks submitted in the last hour by status (each count stops above `recent_cap`).
    Its cost follows the last hour's work and the live queue, not the history.

    Args:
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ActivityView | Error
    """

    return (
        await asyncio_detailed(
            client=client,
            tenant=tenant,
        )
    ).parsed
