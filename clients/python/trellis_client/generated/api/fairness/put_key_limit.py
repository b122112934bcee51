from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.key_limit import KeyLimit
from ...models.key_limit_input import KeyLimitInput
from ...types import Response


def _get_kwargs(
    pattern: str,
    *,
    body: KeyLimitInput,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/api/v1/key-limits/{pattern}".format(
            pattern=quote(str(pattern), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | KeyLimit | None:
    if response.status_code == 200:
        response_200 = KeyLimit.from_dict(response.json())

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

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

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
) -> Response[Error | KeyLimit]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    pattern: str,
    *,
    client: AuthenticatedClient,
    body: KeyLimitInput,
) -> Response[Error | KeyLimit]:
    """Set a key pattern's weight and max_running (admin; created or replaced).

    Args:
        pattern (str):
        body (KeyLimitInput): `PUT /key-limits/{pattern}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | KeyLimit]
    """

    kwargs = _get_kwargs(
        pattern=pattern,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    pattern: str,
    *,
    client: AuthenticatedClient,
    body: KeyLimitInput,
) -> Error | KeyLimit | None:
    """Set a key pattern's weight and max_running (admin; created or replaced).

    Args:
        pattern (str):
        body (KeyLimitInput): `PUT /key-limits/{pattern}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | KeyLimit
    """

    return sync_detailed(
        pattern=pattern,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    pattern: str,
    *,
    client: AuthenticatedClient,
    body: KeyLimitInput,
) -> Response[Error | KeyLimit]:
    """Set a key pattern's weight and max_running (admin; created or replaced).

    Args:
        pattern (str):
        body (KeyLimitInput): `PUT /key-limits/{pattern}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | KeyLimit]
    """

    kwargs = _get_kwargs(
        pattern=pattern,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    pattern: str,
    *,
    client: AuthenticatedClient,
    body: KeyLimitInput,
) -> Error | KeyLimit | None:
    """Set a key pattern's weight and max_running (admin; created or replaced).

    Args:
        pattern (str):
        body (KeyLimitInput): `PUT /key-limits/{pattern}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | KeyLimit
    """

    return (
        await asyncio_detailed(
            pattern=pattern,
            client=client,
            body=body,
        )
    ).parsed
