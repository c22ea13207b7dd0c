import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { chromium, type Browser, type FrameLocator, type Locator, type Page } from 'playwright-core';
import { startTemporal, startTestPlatform, webUiUrl, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';
import { describeIf } from '../helpers/skip';

/**
 * What an operator sees in the dev server's Web UI (issue 12): the list tells a good deployment from a rejected one,
 * the ForgeKind filter narrows it to deployments, and a run's page shows its summary and its stages. Driven in a real
 * headless Chromium (Debian's `chromium`, which .ci/run installs) through playwright-core; Playwright's own browser
 * downloads are never used.
 */

/** FORGE_CHROMIUM names a browser explicitly (and must then exist); otherwise Debian's and Ubuntu's usual paths. */
function findChromium(): { executable?: string; reason?: string } {
  const explicit = process.env.FORGE_CHROMIUM;
  if (explicit) return { executable: explicit };
  const candidates = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
  const executable = candidates.find((p) => existsSync(p));
  return executable ? { executable } : { reason: `no Chromium at ${candidates.join(' or ')} and FORGE_CHROMIUM is not set (apt-get install chromium)` };
}

const { executable, reason } = findChromium();
const OUTPUT_DIR = path.resolve(__dirname, '..', '..', 'test-output', 'web-ui');
const NAMESPACE = 'default';
/** Long enough for the UI's first load on a busy 2-core machine; a pass takes well under a second per step. */
const UI_TIMEOUT_MS = 20_000;

const goodTool = adderTool('good', 'web_ui_adder');
// Compiles, then throws in its sandbox test: rejected at the `test` stage, after `validate` and `compile` passed.
const rejectedTool = adderTool('bad', 'web_ui_divider').replace(
  'async execute({ a, b }: { a: number; b: number }) {',
  '$& throw new Error(`division by zero`);',
);

/** Polls the visible text of `scope` until every pattern matches; the error names what is missing and shows the text. */
async function expectText(scope: Locator, patterns: (string | RegExp)[], what: string): Promise<string> {
  const deadline = Date.now() + UI_TIMEOUT_MS;
  let text = '';
  for (;;) {
    text = await scope.innerText({ timeout: UI_TIMEOUT_MS }).catch(() => '');
    const missing = patterns.filter((p) => (typeof p === 'string' ? !text.includes(p) : !p.test(text)));
    if (missing.length === 0) return text;
    if (Date.now() > deadline) {
      throw new Error(`${what}: did not show ${missing.map(String).join(', ')} within ${UI_TIMEOUT_MS} ms; it showed:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The list's row of one workflow, by its ID as the row shows it. */
function rowOf(page: Page, workflowId: string): Locator {
  return page.getByRole('row').filter({ has: page.getByRole('link', { name: workflowId, exact: true }) });
}

/**
 * The text of the first status badge in `scope` (a list row, or a run's page, whose header badge comes first):
 * "Completed", "Failed", ... The UI upper-cases it on screen; compared case-blind so that a restyling of the badge
 * does not read as a change of status.
 */
async function statusOf(scope: Locator): Promise<string> {
  await scope.waitFor({ timeout: UI_TIMEOUT_MS });
  const badge = scope.getByText(/^(completed|failed|running|terminated|canceled|timed ?out|continued ?as ?new)$/i).first();
  await badge.waitFor({ timeout: UI_TIMEOUT_MS });
  return (await badge.innerText()).trim().toLowerCase();
}

/** Opens the workflow list, with a visibility query when given, and waits until the rows of `expected` are there. */
async function openList(page: Page, ui: string, expected: string[], query?: string): Promise<void> {
  const url = `${ui}/namespaces/${NAMESPACE}/workflows${query ? `?query=${encodeURIComponent(query)}` : ''}`;
  await page.goto(url);
  // Visibility can trail a run's close by a moment; the list is loaded again until every expected row is there. Each
  // load is let finish first (its requests answered): on a busy machine a load can take longer than any fixed wait,
  // and a reload while it is still under way only starts it over (a CI run on 2 cores saw "0 Workflows" for 20 s).
  const deadline = Date.now() + UI_TIMEOUT_MS;
  for (;;) {
    await page.waitForLoadState('networkidle', { timeout: Math.max(1, deadline - Date.now()) }).catch(() => undefined);
    const found = await Promise.all(
      expected.map((id) =>
        rowOf(page, id)
          .waitFor({ timeout: 2_000 })
          .then(
            () => true,
            () => false,
          ),
      ),
    );
    if (found.every(Boolean)) return;
    if (Date.now() > deadline) {
      const missing = expected.filter((_, i) => !found[i]);
      throw new Error(
        `the list at ${url} did not show ${missing.join(', ')}; it showed:\n${await page
          .locator('main')
          .innerText()
          .catch(() => '')}`,
      );
    }
    await page.reload();
  }
}

/** Each markdown block of the User Metadata tab is rendered in its own iframe (Web UI 2.54); these are their ids. */
function metadataFrame(page: Page, block: 'summary' | 'details' | 'current-details'): FrameLocator {
  return page.frameLocator(`iframe#user-metadata-${block}`);
}

// Skipped only where no Chromium can be had (.ci/run installs it, so CI always runs this); the reason is printed.
if (!executable) console.warn(`the Web UI browser test is skipped: ${reason}`);

describeIf(executable, reason ?? 'no Chromium')('the Web UI shows Forge runs to an operator', () => {
  let env: TestWorkflowEnvironment;
  let platform: TestPlatform;
  let browser: Browser;
  let page: Page;
  let ui: string;
  const runs = { good: '', rejected: '', migration: '' };

  /** Runs one step of the walk-through and saves what the page looked like at its end, passed or not. */
  async function step(name: string, body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } finally {
      await page.screenshot({ path: path.join(OUTPUT_DIR, `${name}.png`), fullPage: true }).catch(() => undefined);
    }
  }

  beforeAll(async () => {
    rmSync(OUTPUT_DIR, { recursive: true, force: true });
    mkdirSync(OUTPUT_DIR, { recursive: true });
    console.log(`Web UI screenshots: ${OUTPUT_DIR}`);
    env = await startTemporal({ ui: true });
    ui = webUiUrl(env)!;
    platform = await startTestPlatform(env);
    browser = await chromium.launch({
      executablePath: executable,
      headless: true,
      // Chromium refuses to start as root with its sandbox on; /dev/shm is small in containers.
      args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-dev-shm-usage'],
    });
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });

    const [good, rejected, migration] = await Promise.all([
      platform.forge.deployTool({ name: 'web_ui_adder', source: goodTool, testInput: { a: 1, b: 2 } }),
      platform.forge.deployTool({ name: 'web_ui_divider', source: rejectedTool, testInput: { a: 1, b: 2 } }),
      platform.forge.migrateSchema({ name: 'web_ui_notes', sql: 'CREATE TABLE agent_web_ui_notes (id int PRIMARY KEY);' }),
    ]);
    // What the SDK says, so that a failure below is about the UI and not about the runs.
    expect(good).toMatchObject({ status: 'active', version: 1 });
    expect(rejected).toMatchObject({ status: 'rejected', diagnostics: { stage: 'test' } });
    expect(migration).toMatchObject({ status: 'applied' });
    runs.good = good.workflowId;
    runs.rejected = rejected.workflowId;
    runs.migration = migration.workflowId;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await platform?.teardown();
    await env?.teardown();
  });

  test('the list tells the good deployment (Completed) from the rejected one (Failed)', async () => {
    await step('1-list', async () => {
      await openList(page, ui, [runs.good, runs.rejected, runs.migration]);
      expect(await statusOf(rowOf(page, runs.good))).toBe('completed');
      expect(await statusOf(rowOf(page, runs.rejected))).toBe('failed');
    });
  });

  test('the filter ForgeKind = "deploy" shows both deployments and not the migration', async () => {
    await step('2-filter-deploy', async () => {
      await openList(page, ui, [runs.good, runs.rejected], 'ForgeKind="deploy"');
      // The filter is in force on the page (not just in the address), as the operator sees it above the list.
      await expectText(page.locator('main'), [/ForgeKind\s*=\s*"deploy"/], 'the list filtered by ForgeKind');
      expect(await statusOf(rowOf(page, runs.good))).toBe('completed');
      expect(await statusOf(rowOf(page, runs.rejected))).toBe('failed');
      // Rendered from the same answer as the two rows above, so its absence is not a matter of timing.
      expect(await rowOf(page, runs.migration).count()).toBe(0);
      expect(
        await page
          .getByRole('row')
          .filter({ hasText: /schema-migrate\// })
          .count(),
      ).toBe(0);
    });
  });

  test("the rejected run's page shows why, its summary, its details and its stages", async () => {
    await step('3-detail-history', async () => {
      await openList(page, ui, [runs.rejected], 'ForgeKind="deploy"');
      await rowOf(page, runs.rejected).getByRole('link', { name: runs.rejected, exact: true }).first().click();
      await page.getByRole('heading', { name: runs.rejected }).waitFor({ timeout: UI_TIMEOUT_MS });
      // The header badge, and the failure message an operator reads first: the verdict, not a stack trace.
      expect(await statusOf(page.locator('main'))).toBe('failed');
      await expectText(page.locator('main'), [/web_ui_divider rejected at test \(failed\)/, /division by zero/], 'the rejected run (event history)');
    });
    await step('4-detail-user-metadata', async () => {
      await page.getByRole('tab', { name: 'User Metadata' }).click();
      await expectText(metadataFrame(page, 'summary').locator('body'), ['Deploy tool web_ui_divider'], 'the staticSummary');
      await expectText(metadataFrame(page, 'details').locator('body'), [/tool:\s*web_ui_divider/, /content hash:/], 'the staticDetails');
      // The current details (src/workflows/progress.ts): one line per stage with its mark, and the outcome.
      await expectText(
        metadataFrame(page, 'current-details').locator('body'),
        [/✓ validate/, /✓ compile \(\d+ ms\)/, /✗ test \(\d+ ms\)/, /– commit/, /– notify/, /outcome:\s*rejected/],
        'the stage details (current details)',
      );
    });
  });

  test("the good run's page shows every stage done and the outcome", async () => {
    await step('5-good-user-metadata', async () => {
      const { runId } = await env.client.workflow.getHandle(runs.good).describe();
      await page.goto(`${ui}/namespaces/${NAMESPACE}/workflows/${encodeURIComponent(runs.good)}/${runId}/user-metadata`);
      expect(await statusOf(page.locator('main'))).toBe('completed');
      await expectText(metadataFrame(page, 'summary').locator('body'), ['Deploy tool web_ui_adder'], 'the staticSummary');
      await expectText(
        metadataFrame(page, 'current-details').locator('body'),
        ['✓ validate', '✓ compile', '✓ test', '✓ commit', '✓ notify', /outcome:\s*active/],
        'the stage details (current details)',
      );
    });
  });
});
