from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.tenant import Tenant
from ...models.tenant_input import TenantInput
from ...types import Response


def _get_kwargs(
    tenant: str,
    *,
    body: TenantInput,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/api/v1/tenants/{tenant}".format(
            tenant=quote(str(tenant), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Error | Tenant | None:
    if response.status_code == 200:
        response_200 = Tenant.from_dict(response.json())

        return response_200

    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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
) -> Response[Any | Error | Tenant]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    tenant: str,
    *,
    client: AuthenticatedClient,
    body: TenantInput,
) -> Response[Any | Error | Tenant]:
    """Set a tenant's caps (admin; created or replaced). Neither given: its own caps go, and the
    defaults apply (204).

    Args:
        tenant (str):
        body (TenantInput): `PUT /tenants/{tenant}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error | Tenant]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    tenant: str,
    *,
    client: AuthenticatedClient,
    body: TenantInput,
) -> Any | Error | Tenant | None:
    """Set a tenant's caps (admin; created or replaced). Neither given: its own caps go, and the
    defaults apply (204).

    Args:
        tenant (str):
        body (TenantInput): `PUT /tenants/{tenant}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error | Tenant
    """

    return sync_detailed(
        tenant=tenant,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    tenant: str,
    *,
    client: AuthenticatedClient,
    body: TenantInput,
) -> Response[Any | Error | Tenant]:
    """Set a tenant's caps (admin; created or replaced). Neither given: its own caps go, and the
    defaults apply (204).

    Args:
        tenant (str):
        body (TenantInput): `PUT /tenants/{tenant}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error | Tenant]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    tenant: str,
    *,
    client: AuthenticatedClient,
    body: TenantInput,
) -> Any | Error | Tenant | None:
    """Set a tenant's caps (admin; created or replaced). Neither given: its own caps go, and the
    defaults apply (204).

    Args:
        tenant (str):
        body (TenantInput): `PUT /tenants/{tenant}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error | Tenant
    """

    return (
        await asyncio_detailed(
            tenant=tenant,
            client=client,
            body=body,
        )
    ).parsed
