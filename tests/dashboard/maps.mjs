// A map step in headless Chromium: drawn as one node with its progress (N of M items done)
// that opens into its items, each with its status; the items are not nodes of the graph.
import { check, env, signedIn } from './lib.mjs';

const URL = env('DASHBOARD_URL');
const ADMIN = env('ADMIN_KEY');
const TASK = env('MAP_TASK');
const ITEMS = Number(env('MAP_ITEMS'));
const GIVEN_UP = Number(env('MAP_GIVEN_UP'));
const ARTIFACTS = env('ARTIFACTS');

await signedIn(URL, ADMIN, async (page, errors) => {
  await page.goto(`${URL}#/tasks/${TASK}`);
  const node = '#plan-graph g[data-step="m"]';
  await page.waitForSelector(node);
  check(await page.getAttribute(node, 'data-map') === `${ITEMS} of ${ITEMS} done`, 'the map is one node with its progress');
  check((await page.textContent(node)).includes(`${ITEMS} of ${ITEMS} done`), 'the node says how many items are done');
  check(await page.locator('#plan-graph g[data-step^="m["]').count() === 0, 'its items are not nodes of the graph');
  check(await page.locator('#plan-graph path.edge').count() === 2, 'the map sits between its producer and its consumer');
  const list = '[data-map-items="m"]';
  check(!(await page.locator(list).evaluate((d) => d.open)), 'the items are folded at first');
  await page.click(node);
  await page.waitForFunction((sel) => document.querySelector(sel).open, list);
  check(await page.locator(`${list} li[data-item]`).count() === ITEMS, 'clicking the node opens its items');
  check(await page.locator(`${list} li[data-status="skipped"]`).count() === GIVEN_UP, 'the items given up are shown as such');
  check(await page.locator(`${list} li[data-status="succeeded"]`).count() === ITEMS - GIVEN_UP, 'the others succeeded');
  check((await page.textContent(`${list} li[data-item="m[1]"]`)).includes('flaky failure'), 'an item given up shows its error');
  await page.screenshot({ path: `${ARTIFACTS}/map.png`, fullPage: true });

  // a parent and its child task, linked both ways
  const PARENT = env('PARENT_TASK');
  const CHILD = env('CHILD_TASK');
  await page.goto(`${URL}#/tasks/${PARENT}`);
  const kid = `#child-tasks li[data-child="${CHILD}"]`;
  await page.waitForSelector(kid);
  check((await page.textContent(kid)).includes('succeeded'), 'the parent lists its child with its status');
  await page.click(`${kid} a[data-task-link="${CHILD}"]`);
  await page.waitForSelector(`h1[data-task="${CHILD}"]`);
  check((await page.textContent('#parent-task')).includes(PARENT), 'the child links back to its parent');
  await page.screenshot({ path: `${ARTIFACTS}/child-task.png`, fullPage: true });
  check(errors.length === 0, `no console errors (${errors.join('; ')})`);
});
