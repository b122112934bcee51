// An agent step in headless Chromium: drawn as one node that opens into its turns, each with
// its calls (their steps' statuses) and what the model said; its calls are not nodes.
import { check, env, signedIn } from './lib.mjs';

const URL = env('DASHBOARD_URL');
const ADMIN = env('ADMIN_KEY');
const TASK = env('AGENT_TASK');
const TURNS = Number(env('AGENT_TURNS'));
const CALLS = Number(env('AGENT_CALLS'));
const ARTIFACTS = env('ARTIFACTS');

await signedIn(URL, ADMIN, async (page, errors) => {
  await page.goto(`${URL}#/tasks/${TASK}`);
  const node = '#plan-graph g[data-step="research"]';
  await page.waitForSelector(node);
  check(await page.getAttribute(node, 'data-agent') === 'true', 'the agent is one node');
  check(await page.locator('#plan-graph g[data-step^="research."]').count() === 0, 'its calls are not nodes of the graph');
  const box = '[data-agent-turns="research"]';
  check(!(await page.locator(box).evaluate((d) => d.open)), 'its turns are folded at first');
  await page.click(node);
  await page.waitForSelector(`${box} li[data-turn="${TURNS}"]`);
  check(await page.locator(`${box} li[data-turn]`).count() === TURNS, 'clicking the node opens its turns');
  check(await page.locator(`${box} li[data-call]`).count() === CALLS, 'each turn lists its calls');
  check(await page.locator(`${box} li[data-call][data-status="succeeded"]`).count() === CALLS, 'with their steps\' statuses');
  check((await page.textContent(`${box} li[data-call="research.1.1"]`)).includes('lookup'), 'a call names its tool');
  check((await page.textContent(`${box} li[data-turn="${TURNS}"] .agent-said`)).includes('answer'), 'the last turn shows the answer');
  await page.screenshot({ path: `${ARTIFACTS}/agent.png`, fullPage: true });
  check(errors.length === 0, `no console errors (${errors.join('; ')})`);
});
