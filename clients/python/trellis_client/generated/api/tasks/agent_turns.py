from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.agent_turn_view import AgentTurnView
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    id: UUID,
    step_id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/tasks/{id}/steps/{step_id}/turns".format(
            id=quote(str(id), safe=""),
            step_id=quote(str(step_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | list[AgentTurnView] | None:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in _response_200:
            response_200_item = AgentTurnView.from_dict(response_200_item_data)

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
) -> Response[Error | list[AgentTurnView]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: UUID,
    step_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Error | list[AgentTurnView]]:
    """An agent step's turns, oldest first (empty for a step that is not an agent or has not
    asked its model yet).

    Args:
        id (UUID):
        step_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | list[AgentTurnView]]
    """

    kwargs = _get_kwargs(
        id=id,
        step_id=step_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    step_id: str,
    *,
    client: AuthenticatedClient,
) -> Error | list[AgentTurnView] | None:
    """An agent step's turns, oldest first (empty for a step that is not an agent or has not
    asked its model yet).

    Args:
        id (UUID):
        step_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | list[AgentTurnView]
    """

    return sync_detailed(
        id=id,
        step_id=step_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    step_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Error | list[AgentTurnView]]:
    """An agent step's turns, oldest first (empty for a step that is not an agent or has not
    asked its model yet).

    Args:
        id (UUID):
        step_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | list[AgentTurnView]]
    """

    kwargs = _get_kwargs(
        id=id,
        step_id=step_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    step_id: str,
    *,
    client: AuthenticatedClient,
) -> Error | list[AgentTurnView] | None:
    """An agent step's turns, oldest first (empty for a step that is not an agent or has not
    asked its model yet).

    Args:
        id (UUID):
        step_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | list[AgentTurnView]
    """

    return (
        await asyncio_detailed(
            id=id,
            step_id=step_id,
            client=client,
        )
    ).parsed
