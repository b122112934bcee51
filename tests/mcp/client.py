"""An MCP client built with the official MCP Python SDK, against Trellis's own `/mcp`:
`python client.py URL KEY [TASK_ID]`. Lists the tools, submits a task, waits for it, reads its
result, runs a template tool (when listed) and lists tasks; with TASK_ID, reads that task too.
Prints what it saw as one JSON object."""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


def seen(res):
    return {
        "is_error": bool(res.isError),
        "structured": res.structuredContent,
        "text": [getattr(c, "text", "") for c in res.content],
    }


async def main(url: str, key: str, other: str | None) -> None:
    out = {}
    async with streamablehttp_client(url, headers={"Authorization": f"Bearer {key}"}) as (read, write, _):
        async with ClientSession(read, write) as s:
            await s.initialize()
            out["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
            plan = {"steps": [{"id": "a", "tool": "echo", "parameters": {"x": 1}}]}
            sub = await s.call_tool("submit_task", {"description": "via mcp", "plan": plan})
            out["submit"] = seen(sub)
            if not sub.isError:
                tid = sub.structuredContent["task_id"]
                out["wait"] = seen(await s.call_tool("wait_task", {"task_id": tid, "timeout_secs": 30}))
                out["result"] = seen(await s.call_tool("get_result", {"task_id": tid}))
                if "template.greet" in out["tools"]:
                    out["template"] = seen(await s.call_tool("template.greet", {"who": "mcp"}))
            out["list"] = seen(await s.call_tool("list_tasks", {"limit": 5}))
            if other:
                out["other"] = seen(await s.call_tool("get_task", {"task_id": other}))
    print(json.dumps(out))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
