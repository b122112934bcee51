// The TypeScript client against a running Trellis (TRELLIS_URL, TRELLIS_API_KEY): started by
// clients/test.sh as `trellis-api --dev` with its in-process worker.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { Trellis, TrellisError } from "../src/index.js";

const URL = process.env.TRELLIS_URL ?? "http://127.0.0.1:8080";
const KEY = process.env.TRELLIS_API_KEY;
const t = new Trellis(URL, KEY);

test("submit a plan and wait for its result", async () => {
  const id = await t.submit({
    description: "typescript client",
    metadata: { who: "ts", nested: { any: [1, "two", null] } },
    plan: {
      steps: [
        { id: "greet", tool: "echo", parameters: { text: "hello ${metadata.who}" } },
        { id: "repeat", tool: "echo", parameters: { said: "${greet}" }, dependencies: ["greet"] },
      ],
    },
  });
  const r = await t.wait(id);
  assert.equal(r.status, "succeeded");
  assert.deepEqual(r.outputs.greet, { text: "hello ts" });
  assert.deepEqual(r.outputs.repeat, { said: { text: "hello ts" } });
});

test("submit by template", async () => {
  const name = `ts-${randomUUID().slice(0, 8)}`;
  const { error } = await t.api.POST("/api/v1/templates", {
    body: {
      id: name,
      description: "greets",
      input_schema: { type: "object", properties: { who: { type: "string" } }, required: ["who"] },
      plan: { steps: [{ id: "hi", tool: "echo", parameters: { to: "${input.who}" } }] },
    },
  });
  assert.equal(error, undefined);
  const id = await t.submit({ template: name, input: { who: "grace" } });
  assert.deepEqual((await t.wait(id)).outputs.hi, { to: "grace" });
});

test("batch submit", async () => {
  const ids = await t.submitBatch(
    [0, 1, 2, 3].map((i) => ({ description: `batch ${i}`, plan: { steps: [{ id: "e", tool: "echo", parameters: { i } }] } })),
  );
  assert.equal(ids.length, 4);
  for (const [i, id] of ids.entries()) assert.deepEqual((await t.wait(id)).outputs.e, { i });
});

test("stream events, and resume after one", async () => {
  const id = await t.submit({
    description: "events",
    plan: { steps: [{ id: "a", tool: "echo" }, { id: "b", tool: "echo", dependencies: ["a"] }] },
  });
  const seen = [];
  for await (const e of t.events(id)) seen.push(e);
  const kinds = seen.map((e) => e.kind);
  assert.equal(kinds[0], "task_submitted");
  assert.equal(kinds.at(-1), "task_succeeded");
  const rest = [];
  for await (const e of t.events(id, { after: seen[2].seq })) rest.push(e.seq);
  assert.deepEqual(rest, seen.slice(3).map((e) => e.seq));
});

test("register a tool, cancel a task", async () => {
  const tool = `ts-tool-${randomUUID().slice(0, 8)}`;
  const record = await t.registerTool({
    id: tool,
    endpoint: "http://127.0.0.1:9/never",
    input_schema: { type: "object", properties: { q: { type: "string" } } },
  });
  assert.equal(record.id, tool);
  const id = await t.submit({ description: "long", plan: { steps: [{ id: "s", tool: "sleep", parameters: { ms: 30000 } }] } });
  assert.equal(await t.cancel(id), "cancelled");
  assert.equal((await t.wait(id)).status, "cancelled");
});

test("a bulk cancel by ids", async () => {
  const marker = `ts-bulk-${randomUUID().slice(0, 8)}`;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    ids.push(await t.submit({ description: `${marker} ${i}`, plan: { steps: [{ id: "s", tool: "sleep", parameters: { ms: 60000 } }] } }));
  }
  const dry = await t.bulk({ action: "cancel", filter: { q: marker }, dry_run: true });
  assert.equal(dry.matched, 3);
  assert.equal(dry.bulk_action_id ?? null, null);
  const made = await t.bulk({ action: "cancel", ids, name: marker });
  assert.equal(made.matched, 3);
  const id = made.bulk_action_id ?? "";
  const deadline = Date.now() + 60_000;
  let b = await t.bulkAction(id);
  while (b.status === "running") {
    assert.ok(Date.now() < deadline, JSON.stringify(b));
    await new Promise((r) => setTimeout(r, 200));
    b = await t.bulkAction(id);
  }
  assert.deepEqual([b.status, b.done, b.failed, b.action], ["done", 3, 0, "cancel"]);
  for (const task of ids) assert.equal((await t.wait(task)).status, "cancelled");
  await assert.rejects(t.abortBulk(id), (e: unknown) => e instanceof TrellisError && e.status === 409);
});

test("the price map", async () => {
  const model = `ts-model-${randomUUID().slice(0, 8)}`;
  const put = await t.api.PUT("/api/v1/model-prices", { body: { model, input_per_mtok: 0.15, output_per_mtok: 0.6, cached_input_per_mtok: 0.075 } });
  assert.equal(put.error, undefined);
  assert.equal(put.data?.cached_input_per_mtok, 0.075);
  const { data } = await t.api.GET("/api/v1/model-prices");
  assert.deepEqual((data ?? []).filter((p) => p.model === model).map((p) => p.input_per_mtok), [0.15]);
});

test("a step's agent turns are typed", async () => {
  const id = await t.submit({ description: "no agent", plan: { steps: [{ id: "e", tool: "echo" }] } });
  assert.equal((await t.wait(id)).status, "succeeded");
  const path = "/api/v1/tasks/{id}/steps/{step_id}/turns" as const;
  const { data, error } = await t.api.GET(path, { params: { path: { id, step_id: "e" } } });
  assert.equal(error, undefined);
  assert.deepEqual(data, []);
  const missing = await t.api.GET(path, { params: { path: { id, step_id: "nope" } } });
  assert.equal(missing.response.status, 404);
});

test("an error is a typed error", async () => {
  await assert.rejects(
    t.submit({ description: "bad", plan: { steps: [{ id: "x", tool: "no-such-tool" }] } }),
    (e: unknown) => e instanceof TrellisError && e.status === 422 && e.message.includes("no-such-tool"),
  );
  await assert.rejects(t.get(randomUUID()), (e: unknown) => e instanceof TrellisError && e.status === 404 && e.code === "not_found");
});

test("a tool list with an MCP tool is typed", { skip: !process.env.TRELLIS_MCP_TOOL }, async () => {
  const { data, error } = await t.api.GET("/api/v1/tools");
  assert.equal(error, undefined);
  const tools = data ?? [];
  // `kind` is the document's ToolKind: "mcp" must be one of its values for this to compile
  const mcp = tools.filter((tool) => tool.kind === "mcp").map((tool) => tool.id);
  assert.ok(mcp.includes(process.env.TRELLIS_MCP_TOOL ?? ""), JSON.stringify(tools.map((tool) => [tool.id, tool.kind])));
});
