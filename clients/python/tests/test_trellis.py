"""The Python client against a running Trellis (`TRELLIS_URL`, `TRELLIS_API_KEY`): started by
`clients/test.sh` as `trellis-api --dev` with its in-process worker."""

import os
import time
import uuid

import pytest

from trellis_client import Trellis, TrellisError

URL = os.environ.get("TRELLIS_URL", "http://127.0.0.1:8080")
KEY = os.environ.get("TRELLIS_API_KEY")


@pytest.fixture(scope="module")
def t() -> Trellis:
    return Trellis(URL, api_key=KEY)


def plan(*steps):
    return {"steps": list(steps)}


def test_submit_a_plan_and_wait_for_its_result(t):
    task_id = t.submit(
        {
            "description": "python client",
            "metadata": {"who": "python", "nested": {"any": [1, "two", None]}},
            "plan": plan(
                {"id": "greet", "tool": "echo", "parameters": {"text": "hello ${metadata.who}"}},
                {"id": "repeat", "tool": "echo", "parameters": {"said": "${greet}"}, "dependencies": ["greet"]},
            ),
        }
    )
    result = t.wait(task_id, timeout=60)
    assert result["status"] == "succeeded", result
    assert result["outputs"]["greet"] == {"text": "hello python"}
    assert result["outputs"]["repeat"] == {"said": {"text": "hello python"}}


def test_submit_by_template(t):
    name = f"py-{uuid.uuid4().hex[:8]}"
    import httpx

    r = httpx.post(
        f"{URL}/api/v1/templates",
        headers={"Authorization": f"Bearer {KEY}"} if KEY else {},
        json={
            "id": name,
            "description": "greets",
            "input_schema": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]},
            "plan": plan({"id": "hi", "tool": "echo", "parameters": {"to": "${input.who}"}}),
        },
    )
    assert r.status_code == 201, r.text
    task_id = t.submit({"template": name, "input": {"who": "ada"}})
    assert t.wait(task_id)["outputs"]["hi"] == {"to": "ada"}


def test_batch_submit(t):
    ids = t.submit_batch(
        [{"description": f"batch {i}", "plan": plan({"id": "e", "tool": "echo", "parameters": {"i": i}})} for i in range(5)]
    )
    assert len(ids) == 5
    for i, task_id in enumerate(ids):
        assert t.wait(task_id)["outputs"]["e"] == {"i": i}


def test_events_stream_and_resume(t):
    task_id = t.submit({"description": "events", "plan": plan({"id": "a", "tool": "echo"}, {"id": "b", "tool": "echo", "dependencies": ["a"]})})
    seen = list(t.events(task_id, timeout=60))
    kinds = [e["kind"] for e in seen]
    assert kinds[0] == "task_submitted" and kinds[-1] == "task_succeeded", kinds
    assert [e["seq"] for e in seen] == sorted(e["seq"] for e in seen)
    # resumed after the third event: the rest, and nothing before
    rest = list(t.events(task_id, after=seen[2]["seq"], timeout=60))
    assert [e["seq"] for e in rest] == [e["seq"] for e in seen[3:]]


def test_register_a_tool_and_cancel(t):
    tool = f"py-tool-{uuid.uuid4().hex[:8]}"
    record = t.register_tool({"id": tool, "endpoint": "http://127.0.0.1:9/never", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}})
    assert record["id"] == tool
    assert record["input_schema"]["properties"]["q"] == {"type": "string"}
    task_id = t.submit({"description": "long", "plan": plan({"id": "s", "tool": "sleep", "parameters": {"ms": 60000}})})
    assert t.cancel(task_id) == "cancelled"
    assert t.wait(task_id)["status"] == "cancelled"


def test_a_bulk_cancel_by_ids(t):
    marker = f"py-bulk-{uuid.uuid4().hex[:8]}"
    ids = [
        t.submit({"description": f"{marker} {i}", "plan": plan({"id": "s", "tool": "sleep", "parameters": {"ms": 60000}})})
        for i in range(3)
    ]
    dry = t.bulk({"action": "cancel", "filter": {"q": marker}, "dry_run": True})
    assert dry["matched"] == 3 and dry["bulk_action_id"] is None, dry
    made = t.bulk({"action": "cancel", "ids": ids, "name": marker})
    assert made["matched"] == 3, made
    deadline = time.monotonic() + 60
    while (b := t.bulk_action(made["bulk_action_id"]))["status"] == "running":
        assert time.monotonic() < deadline, b
        time.sleep(0.2)
    assert (b["status"], b["done"], b["failed"], b["action"]) == ("done", 3, 0, "cancel"), b
    for task_id in ids:
        assert t.wait(task_id)["status"] == "cancelled"
    with pytest.raises(TrellisError) as e:
        t.abort_bulk(made["bulk_action_id"])
    assert e.value.status == 409


def test_the_price_map(t):
    from trellis_client.generated.api.system import list_model_prices, put_model_price
    from trellis_client.generated.models import PriceInput

    model = f"py-model-{uuid.uuid4().hex[:8]}"
    body = PriceInput.from_dict({"model": model, "input_per_mtok": 0.15, "output_per_mtok": 0.6})
    stored = put_model_price.sync(client=t.api, body=body)
    assert stored.model == model and stored.cached_input_per_mtok is None, stored
    listed = [p for p in list_model_prices.sync(client=t.api) if p.model == model]
    assert [p.output_per_mtok for p in listed] == [0.6]


def test_a_steps_agent_turns_are_typed(t):
    from trellis_client.generated.api.tasks import agent_turns

    task_id = t.submit({"description": "no agent", "plan": plan({"id": "e", "tool": "echo"})})
    assert t.wait(task_id, timeout=60)["status"] == "succeeded"
    # a step that is not an agent has no turns; a step that is not there is a 404
    assert agent_turns.sync(client=t.api, id=uuid.UUID(task_id), step_id="e") == []
    missing = agent_turns.sync_detailed(client=t.api, id=uuid.UUID(task_id), step_id="nope")
    assert missing.status_code == 404


def test_an_error_is_a_typed_error(t):
    with pytest.raises(TrellisError) as e:
        t.submit({"description": "bad", "plan": plan({"id": "x", "tool": "no-such-tool"})})
    assert e.value.status == 422
    assert "no-such-tool" in e.value.message
    with pytest.raises(TrellisError) as e:
        t.get(str(uuid.uuid4()))
    assert e.value.status == 404
    assert e.value.code == "not_found"


@pytest.mark.skipif(not os.environ.get("TRELLIS_MCP_TOOL"), reason="clients/test.sh registers an MCP server")
def test_a_tool_list_with_an_mcp_tool_parses(t):
    from trellis_client.generated.models import ToolKind

    tools = t.tools()
    kinds = {tool.id: tool.kind for tool in tools}
    assert kinds[os.environ["TRELLIS_MCP_TOOL"]] == ToolKind.MCP, kinds
    assert kinds["echo"] == ToolKind.BUILTIN, kinds
