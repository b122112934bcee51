from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
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
        "url": "/metrics",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | str | None:
    if response.status_code == 200:
        response_200 = response.text
        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())

        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | str]:
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
) -> Response[Error | str]:
    """Prometheus metrics.

     Prometheus text: what this process recorded (the request histogram; in `--dev`, the
    in-process worker's histograms and counters too — a worker process serves its own on
    `[worker] metrics_port`), then the gauges of one bounded statement whatever the history
    holds.

    Args:
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | str]
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
) -> Error | str | None:
    """Prometheus metrics.

     Prometheus text: what this process recorded (the request histogram; in `--dev`, the
    in-process worker's histograms and counters too — a worker process serves its own on
    `[worker] metrics_port`), then the gauges of one bounded statement whatever the history
    holds.

    Args:
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | str
    """

    return sync_detailed(
        client=client,
        tenant=tenant,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str | Unset = UNSET,
) -> Response[Error | str]:
    """Prometheus metrics.

     Prometheus text: what this process recorded (the request histogram; in `--dev`, the
    in-process worker's histograms and counters too — a worker process serves its own on
    `[worker] metrics_port`), then the gauges of one bounded statement whatever the history
    holds.

    Args:
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | str]
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
) -> Error | str | None:
    """Prometheus metrics.

     Prometheus text: what this process recorded (the request histogram; in `--dev`, the
    in-process worker's histograms and counters too — a worker process serves its own on
    `[worker] metrics_port`), then the gauges of one bounded statement whatever the history
    holds.

    Args:
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | str
    """

    return (
        await asyncio_detailed(
            client=client,
            tenant=tenant,
        )
    ).parsed
