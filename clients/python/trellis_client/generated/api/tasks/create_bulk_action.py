from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.bulk_accepted import BulkAccepted
from ...models.bulk_action_request import BulkActionRequest
from ...models.error import Error
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: BulkActionRequest,
    tenant: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["tenant"] = tenant

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/bulk-actions",
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> BulkAccepted | Error | None:
    if response.status_code == 202:
        response_202 = BulkAccepted.from_dict(response.json())

        return response_202

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
) -> Response[BulkAccepted | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: BulkActionRequest,
    tenant: str | Unset = UNSET,
) -> Response[BulkAccepted | Error]:
    """Start a bulk action (operator): the tasks are matched now (202 with the count), and the
    workers apply it in batches. `dry_run`: only the count (no id; nothing is created).

    Args:
        tenant (str | Unset):
        body (BulkActionRequest): `POST /bulk-actions`: a filter or ids, not both.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BulkAccepted | Error]
    """

    kwargs = _get_kwargs(
        body=body,
        tenant=tenant,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: BulkActionRequest,
    tenant: str | Unset = UNSET,
) -> BulkAccepted | Error | None:
    """Start a bulk action (operator): the tasks are matched now (202 with the count), and the
    workers apply it in batches. `dry_run`: only the count (no id; nothing is created).

    Args:
        tenant (str | Unset):
        body (BulkActionRequest): `POST /bulk-actions`: a filter or ids, not both.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BulkAccepted | Error
    """

    return sync_detailed(
        client=client,
        body=body,
        tenant=tenant,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: BulkActionRequest,
    tenant: str | Unset = UNSET,
) -> Response[BulkAccepted | Error]:
    """Start a bulk action (operator): the tasks are matched now (202 with the count), and the
    workers apply it in batches. `dry_run`: only the count (no id; nothing is created).

    Args:
        tenant (str | Unset):
        body (BulkActionRequest): `POST /bulk-actions`: a filter or ids, not both.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BulkAccepted | Error]
    """

    kwargs = _get_kwargs(
        body=body,
        tenant=tenant,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: BulkActionRequest,
    tenant: str | Unset = UNSET,
) -> BulkAccepted | Error | None:
    """Start a bulk action (operator): the tasks are matched now (202 with the count), and the
    workers apply it in batches. `dry_run`: only the count (no id; nothing is created).

    Args:
        tenant (str | Unset):
        body (BulkActionRequest): `POST /bulk-actions`: a filter or ids, not both.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BulkAccepted | Error
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            tenant=tenant,
        )
    ).parsed
