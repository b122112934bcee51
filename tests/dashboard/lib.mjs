// What the dashboard scripts share: their settings from the environment, a check that logs
// what it checked, and a signed-in page of headless Chromium whose console errors are kept.
import { chromium } from 'playwright-core';

export const env = (k) => { const v = process.env[k]; if (!v) throw new Error(`${k} is not set`); return v; };
export const check = (ok, what) => { if (!ok) throw new Error(`check failed: ${what}`); console.log(`ok - ${what}`); };

// Run `body(page, errors)` on a page signed in with `key` at `url`, then close the browser
// (console errors are printed when there were any).
export async function signedIn(url, key, body) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const errors = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(url);
    await page.waitForSelector('#signin:not([hidden])');
    await page.fill('#key', key);
    await page.click('#signin button[type=submit]');
    await page.waitForSelector('#nav:not([hidden])');
    await body(page, errors);
  } finally {
    if (errors.length) console.error(`console errors: ${errors.join('; ')}`);
    await browser.close();
  }
}
