// The README's example bodies, typed by the generated schema: this file must compile under
// `tsc --strict` (free-form objects — metadata, context, parameters, input, a tool's
// input_schema — take any values).
import type { SubmitTask, ToolInput } from "../src/index.js";

export const planTask: SubmitTask = {
  description: "greet twice",
  metadata: { team: "docs", nested: { list: [1, "two", null] } },
  context: { locale: "en" },
  priority: 5,
  idempotency_key: "greet-2026-11-24",
  limits: { max_step_retries: 2, task_timeout_secs: 600 },
  plan: {
    steps: [
      { id: "greet", tool: "echo", parameters: { text: "hello", n: 1, flags: [true, false] } },
      { id: "repeat", tool: "echo", parameters: { said: "${greet}" }, dependencies: ["greet"] },
    ],
  },
};

export const templateTask: SubmitTask = { template: "report", input: { day: "2026-11-24", options: { pdf: true } } };

export const tool: ToolInput = {
  id: "summarize",
  endpoint: "https://tools.example.com/summarize",
  timeout_ms: 30000,
  input_schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  alternatives: ["echo"],
};
