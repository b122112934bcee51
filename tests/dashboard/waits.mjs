// The approvals and schedules pages in headless Chromium: approve a gated call with an edited
// parameter from the page (the Rust side then checks the tool ran with it), pause a schedule.
import { check, env, signedIn } from './lib.mjs';

const URL = env('DASHBOARD_URL');
const ADMIN = env('ADMIN_KEY');
const WAIT = env('WAIT_ID');
const TASK = env('GATED_TASK');
const SCHEDULE = env('SCHEDULE_ID');
const ARTIFACTS = env('ARTIFACTS');

await signedIn(URL, ADMIN, async (page, errors) => {
  await page.click('#nav a[href="#/approvals"]');
  const card = `[data-wait="${WAIT}"]`;
  await page.waitForSelector(card);
  check((await page.textContent(card)).includes('deploy'), 'the approval names the gated tool');
  const edit = `${card} textarea`;
  const shown = JSON.parse(await page.inputValue(edit));
  check(shown.env === 'staging', 'the parameters the call would run with are shown');
  await page.screenshot({ path: `${ARTIFACTS}/approvals.png`, fullPage: true });
  await page.fill(edit, JSON.stringify({ ...shown, env: 'production' }));
  await page.fill(`${card} [data-comment]`, 'ship it');
  await page.click(`${card} [data-approve]`);
  await page.waitForSelector(card, { state: 'detached' });
  check(true, 'approved from the page: the approval left the inbox');
  await page.goto(`${URL}#/tasks/${TASK}`);
  await page.waitForFunction(() => document.querySelector('[data-status="succeeded"]') !== null, null, { timeout: 20000 });
  check(true, 'the task ran on to succeeded');

  await page.goto(`${URL}#/schedules`);
  const row = `[data-next="${SCHEDULE}"] li`;
  await page.waitForSelector(row);
  check(await page.locator(row).count() === 5, 'the schedule shows its next five ticks');
  await page.screenshot({ path: `${ARTIFACTS}/schedules.png`, fullPage: true });
  await page.click(`[data-toggle="${SCHEDULE}"]`);
  await page.waitForSelector('[data-enabled="false"]');
  check(await page.locator(row).count() === 0, 'paused from the page: no next tick');
  check(errors.length === 0, `no console errors (${errors.join('; ')})`);
});
