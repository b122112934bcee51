"""An MCP server built with the official MCP Python SDK (FastMCP), over streamable HTTP, for
Trellis's tests: `python server.py PORT API_KEY`. Tools: `add` (structured int result),
`forecast` (an output schema), `broken` (always an isError result), `secret_data` (needs the
X-Api-Key header to be API_KEY), `call_key` (the idempotency key its call carried in `_meta`)."""

import sys

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

port, api_key = int(sys.argv[1]), sys.argv[2]
mcp = FastMCP("trellis-test", host="127.0.0.1", port=port, log_level="WARNING")


class Forecast(BaseModel):
    city: str
    celsius: float


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's forecast for a city."""
    return Forecast(city=city, celsius=21.5)


@mcp.tool()
def broken(a: int, b: int) -> int:
    """Always fails."""
    raise ValueError("the broken tool is broken")


@mcp.tool()
def secret_data(ctx: Context) -> str:
    """Needs the X-Api-Key header."""
    got = ctx.request_context.request.headers.get("x-api-key")
    if got != api_key:
        raise PermissionError(f"wrong key {got}")
    return "classified"


@mcp.tool()
def call_key(ctx: Context) -> str:
    """The idempotency key the call carried in params._meta (Trellis's, under its prefix)."""
    meta = ctx.request_context.meta
    extra = (meta.model_extra or {}) if meta is not None else {}
    return extra.get("dev.trellis/idempotency-key", "")


mcp.run(transport="streamable-http")
