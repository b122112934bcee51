// Trellis client: the generated types (./schema.ts, from the server's OpenAPI document by
// openapi-typescript), every call through openapi-fetch (`client.api`), and a thin layer:
// `submit`, `wait` and `events` (an async iterator over the task's Server-Sent Events, resumed
// from the last event seen when the stream drops).
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export type SubmitTask = components["schemas"]["SubmitTask"];
export type TaskStatusView = components["schemas"]["TaskStatusView"];
export type TaskResult = components["schemas"]["TaskResult"];
export type ToolInput = components["schemas"]["ToolInput"];
export type EventView = components["schemas"]["Event"];

/** Statuses a task rests in: it will not move again by itself. */
export const TERMINAL = ["succeeded", "failed", "cancelled", "needs_intervention"] as const;
const LAST_EVENTS = new Set(["task_succeeded", "task_failed", "task_cancelled", "intervention_required"]);

/** An error answer of the API: its HTTP status, `code` and `message`. */
export class TrellisError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${status} ${code}: ${message}`);
    this.name = "TrellisError";
  }
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

function ok<T>(a: Answer<T>): T {
  if (a.data !== undefined && a.response.ok) return a.data;
  const e = (a.error as { error?: { code?: string; message?: string } } | undefined)?.error;
  throw new TrellisError(a.response.status, e?.code ?? "http_error", e?.message ?? a.response.statusText);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Trellis {
  /** Every route of the API, typed (openapi-fetch). */
  readonly api: Client<paths>;
  private readonly headers: Record<string, string>;

  constructor(
    readonly baseUrl = "http://127.0.0.1:8080",
    apiKey?: string,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.headers = apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
    this.api = createClient<paths>({ baseUrl: this.baseUrl, headers: this.headers });
  }

  /** Submit a task (a plan, a template with its input, or a description); its id. */
  async submit(task: SubmitTask): Promise<string> {
    return ok(await this.api.POST("/api/v1/tasks", { body: task })).task_id;
  }

  /** Submit up to 1,000 tasks in one request, all or nothing; their ids in order. */
  async submitBatch(tasks: SubmitTask[]): Promise<string[]> {
    const done = ok(await this.api.POST("/api/v1/tasks/batch", { body: { tasks } }));
    return done.tasks.map((t) => t.task_id);
  }

  async get(id: string): Promise<TaskStatusView> {
    return ok(await this.api.GET("/api/v1/tasks/{id}", { params: { path: { id } } }));
  }

  async result(id: string): Promise<TaskResult> {
    return ok(await this.api.GET("/api/v1/tasks/{id}/result", { params: { path: { id } } }));
  }

  /** Cancel the task; its status after. */
  async cancel(id: string): Promise<string> {
    return ok(await this.api.POST("/api/v1/tasks/{id}/cancel", { params: { path: { id } } })).status;
  }

  /** Start a bulk action (cancel, resume or rerun every task a filter or ids match); a dry run
   * only counts them (no id). */
  async bulk(action: components["schemas"]["BulkActionRequest"]): Promise<components["schemas"]["BulkAccepted"]> {
    return ok(await this.api.POST("/api/v1/bulk-actions", { body: action }));
  }

  /** A bulk action's progress: status (running, done, aborted), matched, done, failed. */
  async bulkAction(id: string): Promise<components["schemas"]["BulkAction"]> {
    return ok(await this.api.GET("/api/v1/bulk-actions/{id}", { params: { path: { id } } }));
  }

  /** Stop a running bulk action (within one batch); its final progress. */
  async abortBulk(id: string): Promise<components["schemas"]["BulkAction"]> {
    return ok(await this.api.POST("/api/v1/bulk-actions/{id}/abort", { params: { path: { id } } }));
  }

  /** Register an HTTP tool (admin key). */
  async registerTool(tool: ToolInput): Promise<components["schemas"]["Tool"]> {
    return ok(await this.api.POST("/api/v1/tools", { body: tool }));
  }

  /** Wait until the task rests (succeeded, failed, cancelled, needs_intervention); its result.
   * Rejects after `timeoutMs`. */
  async wait(id: string, timeoutMs = 60_000, pollMs = 200): Promise<TaskResult> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { status } = await this.get(id);
      if ((TERMINAL as readonly string[]).includes(status)) return this.result(id);
      if (Date.now() >= deadline) throw new Error(`task ${id} is still ${status} after ${timeoutMs} ms`);
      await sleep(pollMs);
    }
  }

  /** The task's events as they happen, from after `after`. A dropped stream is resumed from
   * the last event seen (`Last-Event-ID`); with `untilEnd` the iterator ends after the event
   * that ends the task. */
  async *events(id: string, opts: { after?: number; untilEnd?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<EventView> {
    let last = opts.after ?? 0;
    const untilEnd = opts.untilEnd ?? true;
    for (;;) {
      if (opts.signal?.aborted) return;
      let r: Response;
      try {
        r = await fetch(`${this.baseUrl}/api/v1/tasks/${encodeURIComponent(id)}/events`, {
          headers: { ...this.headers, Accept: "text/event-stream", "Last-Event-ID": String(last) },
          signal: opts.signal,
        });
      } catch (e) {
        if (opts.signal?.aborted) return;
        await sleep(200);
        continue;
      }
      if (!r.ok || !r.body) {
        const body = (await r.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
        throw new TrellisError(r.status, body.error?.code ?? "http_error", body.error?.message ?? r.statusText);
      }
      const decoder = new TextDecoder();
      let buffer = "";
      try {
        for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = block
              .split("\n")
              .filter((l) => l.startsWith("data:"))
              .map((l) => l.slice(5).trimStart())
              .join("\n");
            if (!data) continue;
            const event = JSON.parse(data) as EventView;
            last = Math.max(last, event.seq);
            yield event;
            if (untilEnd && LAST_EVENTS.has(event.kind)) return;
          }
        }
      } catch (e) {
        if (opts.signal?.aborted) return;
      }
      await sleep(200);
    }
  }
}
