"""Trellis client: the generated API (``trellis_client.generated``: every route, every model,
from the server's OpenAPI document) and a thin hand-written layer, :class:`Trellis`, with
``submit``, ``wait`` and ``events``.

    from trellis_client import Trellis
    t = Trellis("http://127.0.0.1:8080", api_key="trk_…")
    task_id = t.submit({"description": "hi", "plan": {"steps": [{"id": "a", "tool": "echo"}]}})
    print(t.wait(task_id, timeout=60)["status"])
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from .generated import AuthenticatedClient
from .generated.api.tasks import (
    abort_bulk_action,
    cancel_task,
    create_bulk_action,
    get_bulk_action,
    submit_batch,
    submit_task,
    task_result,
    task_status,
)
from .generated.api.tools import create_tool, list_tools
from .generated.models import Error, SubmitTask, TaskStatusView, Tool, ToolInput

__all__ = ["Trellis", "TrellisError", "TERMINAL"]

#: Statuses a task rests in: it will not move again by itself.
TERMINAL = frozenset({"succeeded", "failed", "cancelled", "needs_intervention"})
#: Event kinds after which a task's stream has nothing more to say.
_LAST_EVENTS = frozenset({"task_succeeded", "task_failed", "task_cancelled", "intervention_required"})


class TrellisError(Exception):
    """An error answer of the API: its HTTP status, its ``code`` and ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


def _raise_for(response: Any) -> Any:
    """The parsed body of a 2xx answer; a :class:`TrellisError` for any other."""
    body = response.parsed
    if 200 <= int(response.status_code) < 300 and not isinstance(body, Error):
        return body
    if isinstance(body, Error):
        raise TrellisError(int(response.status_code), body.error.code, body.error.message)
    try:
        err = json.loads(response.content)["error"]
        raise TrellisError(int(response.status_code), err["code"], err["message"])
    except (ValueError, KeyError, TypeError):
        raise TrellisError(int(response.status_code), "http_error", response.content.decode(errors="replace")) from None


class Trellis:
    """A Trellis server at ``base_url``, called with ``api_key`` (a bearer token)."""

    def __init__(self, base_url: str = "http://127.0.0.1:8080", api_key: str | None = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api = AuthenticatedClient(base_url=self.base_url, token=api_key or "", timeout=httpx.Timeout(timeout))
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    # ---- tasks

    def submit(self, task: dict[str, Any] | SubmitTask) -> str:
        """Submit a task (a plan, a template with its input, or a description); its id."""
        body = task if isinstance(task, SubmitTask) else SubmitTask.from_dict(task)
        return str(_raise_for(submit_task.sync_detailed(client=self.api, body=body)).task_id)

    def submit_batch(self, tasks: list[dict[str, Any]]) -> list[str]:
        """Submit up to 1,000 tasks in one request, all or nothing; their ids in order."""
        from .generated.models import SubmitBatch

        body = SubmitBatch.from_dict({"tasks": tasks})
        done = _raise_for(submit_batch.sync_detailed(client=self.api, body=body))
        return [str(t.task_id) for t in done.tasks]

    def get(self, task_id: str) -> TaskStatusView:
        """The task's status, counters and step counts."""
        return _raise_for(task_status.sync_detailed(task_id, client=self.api))

    def result(self, task_id: str) -> dict[str, Any]:
        """The task's result (``status``, ``is_success``, ``outputs``, ``error``…) as JSON."""
        return _raise_for(task_result.sync_detailed(task_id, client=self.api)).to_dict()

    def cancel(self, task_id: str) -> str:
        """Cancel the task; its status after."""
        return str(_raise_for(cancel_task.sync_detailed(task_id, client=self.api)).status)

    def bulk(self, action: dict[str, Any]) -> dict[str, Any]:
        """Start a bulk action: ``{"action": "cancel" | "resume" | "rerun", "filter": {...}}`` or
        ``"ids": [...]``, ``"from_step"``, ``"dry_run"``, ``"name"``. Returns
        ``{"bulk_action_id", "matched", ...}`` (a dry run: no id)."""
        from .generated.models import BulkActionRequest

        body = BulkActionRequest.from_dict(action)
        return _raise_for(create_bulk_action.sync_detailed(client=self.api, body=body)).to_dict()

    def bulk_action(self, bulk_action_id: str) -> dict[str, Any]:
        """A bulk action's progress: ``status`` (running, done, aborted), ``matched``, ``done``,
        ``failed``, and the first ``failures``."""
        return _raise_for(get_bulk_action.sync_detailed(bulk_action_id, client=self.api)).to_dict()

    def abort_bulk(self, bulk_action_id: str) -> dict[str, Any]:
        """Stop a running bulk action (within one batch); its final progress."""
        return _raise_for(abort_bulk_action.sync_detailed(bulk_action_id, client=self.api)).to_dict()

    def wait(self, task_id: str, timeout: float = 60.0, poll: float = 0.2) -> dict[str, Any]:
        """Wait until the task rests (succeeded, failed, cancelled, needs_intervention) and
        return its result; :class:`TimeoutError` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            status = str(self.get(task_id).status)
            if status in TERMINAL:
                return self.result(task_id)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"task {task_id} is still {status} after {timeout} s")
            time.sleep(poll)

    def events(self, task_id: str, after: int = 0, until_end: bool = True, timeout: float | None = None) -> Iterator[dict[str, Any]]:
        """The task's events as they happen (Server-Sent Events), from after ``after``: each
        ``{"seq", "kind", "at", "payload"}``. A dropped stream is resumed from the last event
        seen (``Last-Event-ID``). With ``until_end``, the iterator ends after the event that
        ends the task."""
        last = after
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            headers = {**self._headers, "Accept": "text/event-stream", "Last-Event-ID": str(last)}
            try:
                with httpx.stream("GET", f"{self.base_url}/api/v1/tasks/{task_id}/events", headers=headers, timeout=httpx.Timeout(30.0, read=None)) as r:
                    if r.status_code != 200:
                        r.read()
                        err = json.loads(r.content).get("error", {})
                        raise TrellisError(r.status_code, err.get("code", "http_error"), err.get("message", ""))
                    data: list[str] = []
                    for line in r.iter_lines():
                        if deadline is not None and time.monotonic() > deadline:
                            return
                        if line.startswith("data:"):
                            data.append(line[5:].lstrip())
                        elif line == "" and data:
                            event = json.loads("\n".join(data))
                            data = []
                            last = max(last, int(event["seq"]))
                            yield event
                            if until_end and event["kind"] in _LAST_EVENTS:
                                return
            except (httpx.TransportError, httpx.StreamError):
                pass  # resumed below, from the last event seen
            if deadline is not None and time.monotonic() > deadline:
                return
            time.sleep(0.2)

    # ---- registries

    def tools(self) -> list[Tool]:
        """The tool registry, typed: built-in, HTTP and MCP tools (`kind`)."""
        return _raise_for(list_tools.sync_detailed(client=self.api))

    def register_tool(self, tool: dict[str, Any]) -> dict[str, Any]:
        """Register an HTTP tool (admin key); the registry's record."""
        return _raise_for(create_tool.sync_detailed(client=self.api, body=ToolInput.from_dict(tool))).to_dict()
