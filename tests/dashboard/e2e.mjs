// The dashboard end to end, in headless Chromium driven by playwright-core. Started by
// tests/dashboard.rs, which runs the API, a worker and the tasks this script looks at, and
// passes them in the environment. Screenshots go to $ARTIFACTS. Any failed check or console
// error exits non-zero with the reason.
import { chromium } from 'playwright-core';

const env = (k) => { const v = process.env[k]; if (!v) throw new Error(`${k} is not set`); return v; };
const URL = env('DASHBOARD_URL');
const ADMIN = env('ADMIN_KEY');
const READER = env('READER_KEY');
const TENANT = env('TENANT_KEY');
const RECOVERED = env('RECOVERED_TASK');
const RECOVERED_STEP = env('RECOVERED_STEP');
const RUNNING = env('RUNNING_TASK');
const BROKEN = env('BROKEN_TASK');
const DOOMED = env('DOOMED_TASK');
const BULK_TARGET = env('BULK_TARGET');
const ARTIFACTS = env('ARTIFACTS');
const check = (ok, what) => { if (!ok) throw new Error(`check failed: ${what}`); console.log(`ok - ${what}`); };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const errors = [];
const requests = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => requests.push(r.url()));
  let loads = 0;
  page.on('load', () => { loads += 1; });

  // sign in: one password field
  await page.goto(URL);
  await page.waitForSelector('#signin:not([hidden])');
  check(await page.locator('#signin input').count() === 1 && await page.locator('#key').getAttribute('type') === 'password', 'the sign-in form has one password field');
  await page.fill('#key', ADMIN);
  await page.click('#signin button[type=submit]');
  await page.waitForSelector('#nav:not([hidden])');
  check((await page.textContent('#who')).includes('admin'), 'signed in as admin');
  check(await page.evaluate(() => sessionStorage.getItem('trellis.key') !== null), 'the key is kept in session storage');
  await page.waitForSelector('#activity');
  check(await page.locator('#activity rect.bar.succeeded').count() >= 1, 'the overview charts the last hour\'s attempts');
  check(/\d+\.\d s/.test(await page.textContent('#queue-lag')), 'the overview shows the queue lag');
  check(/^\d+ s$/.test(await page.textContent('#oldest-transaction')), 'the overview shows the age of the oldest open transaction');
  const keys = await page.$$eval('#queue-by-key tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  check(keys.some((k) => k[0] === 'acme' && Number(k[1]) + Number(k[2]) >= 1), `the overview shows the queue per concurrency key (${JSON.stringify(keys)})`);
  const tenants = await page.$$eval('#queue-by-tenant tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  check(tenants.some((k) => k[0] === 'default' && Number(k[1]) + Number(k[2]) >= 1), `the overview shows the queue per tenant (${JSON.stringify(tenants)})`);
  const counts = async (id) => page.$$eval(`#${id} [data-count-of]`, (cards) => Object.fromEntries(cards.map((c) => [c.dataset.countOf, Number(c.querySelector('b').textContent.replace(/,/g, ''))])));
  const recent = await counts('recent-tasks');
  const total = (c) => Object.values(c).reduce((a, b) => a + b, 0);
  check(total(recent) === 5 && recent.succeeded >= 1 && 'cancelled' in recent, `the overview counts the last hour's five tasks by status (${JSON.stringify(recent)})`);
  const unfinished = await counts('unfinished-tasks');
  check(total(unfinished) >= 1 && !('succeeded' in unfinished), `the overview counts the unfinished tasks (${JSON.stringify(unfinished)})`);
  await page.screenshot({ path: `${ARTIFACTS}/overview.png`, fullPage: true });
  // the overview redraws itself without a reload
  const stamp = await page.getAttribute('#updated', 'data-at');
  const loadsAtOverview = loads;
  await page.waitForFunction((at) => document.querySelector('#updated')?.dataset.at !== at, stamp, { timeout: 20000 });
  check(loads === loadsAtOverview && await page.locator('#activity').count() === 1, 'the overview refreshes itself without a reload');

  // filter the list by text: only the task whose description matches
  await page.goto(`${URL}#/tasks`);
  await page.waitForSelector('#task-list');
  await page.fill('#text-filter', 'FLAKY step');
  await page.press('#text-filter', 'Enter');
  await page.waitForFunction(() => location.hash.includes('q='));
  // the list holds both tasks; the filtered one, only the matching task
  const filtered = await page.waitForFunction((id) => {
    const rows = document.querySelectorAll('#task-list tbody tr');
    return rows.length === 1 && rows[0].dataset.task === id;
  }, RECOVERED, { timeout: 10000 }).then(() => true, () => false);
  check(filtered, 'a text filter leaves only the matching task');

  // keyboard: the navigation is reachable with Tab (from the top of the page)
  await page.evaluate(() => document.activeElement?.blur());
  await page.mouse.click(3, 3);
  let reached = false;
  for (let i = 0; i < 12 && !reached; i += 1) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.getAttribute('href') === '#/tasks');
  }
  check(reached, 'the navigation is reachable with the keyboard');

  // bulk cancel from the list
  await page.goto(`${URL}#/tasks?status=running`);
  await page.waitForSelector(`#task-list tr[data-task="${DOOMED}"]`);
  await page.check(`#task-list tr[data-task="${DOOMED}"] input[type=checkbox]`);
  await page.click('#view button:has-text("Cancel selected")');
  await page.waitForSelector(`#task-list tr[data-task="${DOOMED}"]`, { state: 'detached' });
  await page.goto(`${URL}#/tasks?status=cancelled`);
  const cancelled = await page.waitForSelector(`#task-list tr[data-task="${DOOMED}"] .status[data-status="cancelled"]`, { timeout: 10000 })
    .then(() => true, () => false);
  check(cancelled, 'a selected task is cancelled from the list');
  // every task a filter matches, rerun through one bulk action: a dry run's count, then its progress
  await page.goto(`${URL}#/tasks?q=bulk%20target`);
  await page.waitForSelector(`#task-list tr[data-task="${BULK_TARGET}"]`);
  await page.click('button[data-bulk="rerun"]');
  await page.waitForSelector('#bulk-confirm button[data-bulk-confirm="rerun"]');
  check((await page.textContent('#bulk-confirm')).startsWith('1 task(s) match'), 'a bulk rerun counts the matching tasks first');
  await page.click('#bulk-confirm button[data-bulk-confirm="rerun"]');
  await page.waitForSelector('#bulk-progress[data-status="done"]', { timeout: 20000 });
  check(/rerun: 1 of 1 done/.test(await page.textContent('#bulk-progress')), 'the bulk rerun shows its progress to the end');
  const events = await (await fetch(new globalThis.URL(`api/v1/tasks/${BULK_TARGET}/events?limit=1000`, URL), { headers: { Authorization: `Bearer ${ADMIN}` } })).json();
  check(events.some((e) => e.kind === 'task_rerun' && e.payload.bulk_action_id), 'the rerun event names the bulk action');
  await page.goto(`${URL}#/tasks/${BULK_TARGET}`);
  await page.waitForSelector('#task-cost');
  check((await page.getAttribute('#task-cost', 'data-cost')) === '0', 'the task page shows its cost');
  await page.goto(`${URL}#/bulk`);
  await page.waitForSelector('#bulk-actions [data-state="done"]');
  check(await page.locator('#bulk-actions [data-bulk-action]').count() === 2, 'the bulk actions page lists the cancel and the rerun');

  // find the recovered task in the list and open it
  await page.goto(`${URL}#/tasks`);
  const row = page.locator(`#task-list tr[data-task="${RECOVERED}"]`);
  await row.waitFor();
  await row.locator('a').click();
  await page.waitForSelector('#plan-graph');
  const node = page.locator(`#plan-graph g[data-step="${RECOVERED_STEP}"]`);
  check(await node.getAttribute('data-status') === 'succeeded', 'the plan graph draws the recovered step as succeeded');
  check(await page.locator('#plan-graph path.edge').count() >= 1, 'the plan graph draws its dependencies');
  const first = page.locator(`#attempts tr[data-step="${RECOVERED_STEP}"][data-attempt="1"] .status`);
  const retry = page.locator(`#attempts tr[data-step="${RECOVERED_STEP}"][data-attempt="2"] .status`);
  check(await first.getAttribute('data-status') === 'failed', 'its first attempt failed');
  check(await retry.getAttribute('data-status') === 'succeeded', 'its retry succeeded');
  check(await page.locator(`#gantt rect.bar[data-step="${RECOVERED_STEP}"]`).count() === 2, 'the timeline shows both attempts');
  const link = page.locator(`#recovery-chain > li[data-step="${RECOVERED_STEP}"]`);
  const chainText = await link.textContent();
  check(await link.getAttribute('data-outcome') === 'succeeded' && chainText.includes('reflection: tool_error') && chainText.includes('tier 1: retry as attempt 2'),
    `the recovery chain shows the failure, its reflection, the tier-1 retry and the outcome (${chainText})`);
  check(await page.locator('#actions').count() === 1, 'an admin sees the task actions');
  await page.screenshot({ path: `${ARTIFACTS}/recovered-task.png`, fullPage: true });

  // a failure no retry can fix: the chain climbs to tier 3 (a reflection on the whole task)
  await page.goto(`${URL}#/tasks/${BROKEN}`);
  await page.waitForSelector(`h1[data-task="${BROKEN}"]`);
  const escalated = await page.textContent('#recovery-chain');
  check(escalated.includes('tier 3: reflection on the whole task'), `the recovery chain of an unfixable step reaches tier 3 (${escalated})`);
  check(!escalated.includes('[object') && await page.locator('#recovery-chain > li[data-outcome="needs_intervention"]').count() === 1,
    'the last failure ends in needs_intervention, each strategy named');
  await page.screenshot({ path: `${ARTIFACTS}/escalated-task.png`, fullPage: true });

  // watch a running task finish without a reload
  await page.goto(`${URL}#/tasks/${RUNNING}`);
  const loadsBefore = loads;
  await page.waitForSelector(`h1[data-task="${RUNNING}"]`);
  const head = page.locator('main h1 + .toolbar .status');
  const before = await head.getAttribute('data-status');
  check(!['succeeded', 'failed', 'cancelled'].includes(before), `the running task is shown unfinished (${before})`);
  await page.waitForSelector('main h1 + .toolbar .status[data-status="succeeded"]', { timeout: 60000 });
  check(loads === loadsBefore, 'it finished on screen without a reload');
  check(await page.locator('#plan-graph g[data-status="succeeded"]').count() === 2, 'both its steps are drawn succeeded');
  await page.screenshot({ path: `${ARTIFACTS}/finished-live.png`, fullPage: true });

  // rerun the recovered task from its flaky step with edited parameters: a new plan version,
  // whose changes from the first are shown, and which runs to the end on screen
  await page.goto(`${URL}#/tasks/${RECOVERED}`);
  await page.waitForSelector(`h1[data-task="${RECOVERED}"]`);
  await page.selectOption('#actions select', RECOVERED_STEP);
  await page.fill('#actions textarea', '{"fail_times": 0}');
  await page.click('#actions button:has-text("Rerun from step")');
  await page.waitForSelector('#version');
  check(await page.locator('#version option').count() === 2, 'the rerun is a second plan version, with a selector for both');
  const changed = await page.textContent('#version-changes');
  check(changed.includes(`~ ${RECOVERED_STEP}`) && changed.includes('parameters changed'), `the changes from v1 name the edited step (${changed})`);
  await page.waitForSelector('main h1 + .toolbar .status[data-status="succeeded"]', { timeout: 60000 });
  check(await page.locator(`#plan-graph g[data-step="${RECOVERED_STEP}"][data-status="succeeded"]`).count() === 1, 'the rerun step succeeded on screen');

  // the recovery page
  await page.click('nav a[href="#/recovery"]');
  await page.waitForSelector('table[data-view="recovery_by_tool"]');
  check((await page.textContent('table[data-view="recovery_by_tool"]')).includes('flaky'), 'the recovery page lists the flaky tool');
  check(await page.locator('#by-tool rect.bar').count() >= 2 && await page.locator('#by-tier rect.bar').count() >= 2, 'the recovery page charts by tool and by tier');
  const byAction = await page.textContent('#by-action');
  check(byAction.includes('retry_with_params') && byAction.includes('replan:'), `the recovery page charts by action and replanning strategy (${byAction})`);
  const costRows = await page.$$eval('#recovery-cost tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  check(costRows.some((r) => r[0] === '1' && r[1] === 'retry_with_params' && r[6] === '1'), `the recovery page shows what recovery cost against the tasks it saved (${JSON.stringify(costRows)})`);
  await page.screenshot({ path: `${ARTIFACTS}/recovery.png`, fullPage: true });

  // tools and templates
  await page.click('nav a[href="#/tools"]');
  await page.waitForSelector('#tools');
  check((await page.textContent('#tools')).includes('flaky') && (await page.textContent('#templates')).includes('greet'), 'the tools page lists the tools and the templates');
  const flakyRow = await page.locator('#tools tr:has([data-tool="flaky"])').textContent();
  check(await page.locator('#tools tr:has([data-tool="flaky"]) [data-circuit="closed"]').count() === 1, `the tools page shows each tool's circuit (${flakyRow})`);
  check(/\d+ \(1 failed\), \d+ \/ \d+ ms/.test(flakyRow), `the tools page shows the last hour's attempts and latency (${flakyRow})`);
  // hold a tool's steps, and release them
  await page.click('button[data-pause="flaky"]');
  await page.waitForSelector('#tools tr:has([data-tool="flaky"]) [data-paused="true"]');
  check((await (await fetch(new globalThis.URL('api/v1/tools/flaky', URL), { headers: { Authorization: `Bearer ${ADMIN}` } })).json()).paused === true, 'the tools page pauses a tool');
  await page.click('button[data-pause="flaky"]');
  await page.waitForSelector('#tools tr:has([data-tool="flaky"]) [data-paused="false"]', { state: 'attached' });
  check((await (await fetch(new globalThis.URL('api/v1/tools/flaky', URL), { headers: { Authorization: `Bearer ${ADMIN}` } })).json()).paused === false, 'the tools page resumes it');

  // a phone-width screen: nothing wider than the screen
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${URL}#/tasks/${RECOVERED}`);
  await page.waitForSelector(`h1[data-task="${RECOVERED}"]`);
  check(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), 'the task page fits a phone-width screen');
  await page.screenshot({ path: `${ARTIFACTS}/phone.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });

  // a reader: no buttons it cannot use, and the API refuses what it could still send
  await page.click('#signout');
  await page.waitForSelector('#signin:not([hidden])');
  await page.fill('#key', READER);
  await page.click('#signin button[type=submit]');
  await page.waitForSelector('#nav:not([hidden])');
  await page.goto(`${URL}#/tasks`);
  await page.waitForSelector('#task-list');
  check(await page.locator('#view button').count() === 0, 'a reader sees no button on the task list');
  await page.goto(`${URL}#/tasks/${RECOVERED}`);
  await page.waitForSelector(`h1[data-task="${RECOVERED}"]`);
  check(await page.locator('#actions').count() === 0 && await page.locator('#view button').count() === 0, 'a reader sees no task action');
  for (const [action, body] of [['cancel', '{}'], ['resume', '{}'], ['rerun', '{"from_step":"shaky"}']]) {
    const refused = (await fetch(new globalThis.URL(`api/v1/tasks/${RUNNING}/${action}`, URL), {
      method: 'POST', headers: { Authorization: `Bearer ${READER}`, 'Content-Type': 'application/json' }, body,
    })).status;
    check(refused === 403, `the API refuses a reader's ${action} (${refused})`);
  }
  const bulk = (await fetch(new globalThis.URL('api/v1/tasks', URL), { headers: { Authorization: `Bearer ${READER}` } })).status;
  check(bulk === 200, 'a reader may still read');

  // only this server was asked for anything
  const origin = new globalThis.URL(URL).origin;
  const foreign = requests.filter((r) => !r.startsWith(origin) && !r.startsWith('data:'));
  check(foreign.length === 0, `every request stays on the server (${foreign.join(', ')})`);
  check(errors.length === 0, `no console errors (${errors.join(' | ')})`);

  // another tenant's reader: none of these tasks, anywhere (the browser logs the 404s it meets)
  await page.click('#signout');
  await page.waitForSelector('#signin:not([hidden])');
  await page.fill('#key', TENANT);
  await page.click('#signin button[type=submit]');
  await page.waitForSelector('#nav:not([hidden])');
  await page.goto(`${URL}#/`);
  await page.waitForSelector('#activity');
  const theirs = await page.$$eval('#queue-by-tenant tbody tr', (rows) => rows.map((r) => r.cells[0].textContent));
  check(!theirs.includes('default') && !(await page.textContent('#view')).includes('acme'), `another tenant's overview shows none of this tenant's queue (${JSON.stringify(theirs)})`);
  await page.goto(`${URL}#/tasks`);
  await page.waitForSelector('#task-list');
  check(await page.locator('#task-list tbody tr[data-task]').count() === 0, 'another tenant\'s task list is empty');
  await page.goto(`${URL}#/tasks/${RECOVERED}`);
  await page.waitForSelector('#view .error');
  check(await page.locator(`h1[data-task="${RECOVERED}"]`).count() === 0 && (await page.textContent('#view .error')).includes('not found'), 'another tenant\'s task page is not found');
  await page.screenshot({ path: `${ARTIFACTS}/other-tenant.png`, fullPage: true });
} finally {
  await browser.close();
}
