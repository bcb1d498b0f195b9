// The stateright explorer of each spec, driven in headless Chromium by
// playwright-core (started by `cargo xtask explorer-test`, which writes the
// plan: the Chromium binary, and per spec its explorer's URL, the variables
// and definitions its .tla declares and where its screenshot goes). Per spec:
// the page loads; choosing the initial state shows exactly the spec's
// variables, in their declaration order, and offers only instances of actions
// the spec defines; following one shows the state the server gives for that
// step, under the action's name in the path. Exits 1 when any spec fails.

import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));

// How long a page may take to answer: generous, as the explorer's server
// computes each state's successors on a machine CI may keep busy (10 s once
// timed out on a loaded 2-core machine, the page complete when captured).
const PATIENCE_MS = 30_000;

// The closed network here refuses Chromium's background connections; a
// fresh profile (--user-data-dir) comes with every launch().
const browser = await chromium.launch({
  executablePath: plan.chromium,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});

let failed = 0;
try {
  for (const spec of plan.specs) {
    const started = Date.now();
    // A page that did not answer in time is loaded once more, on a fresh
    // page: in one CI run of 11 a page stayed at "loading..." for 30 s (its
    // explorer answered when the screenshot was taken, and five runs after
    // it passed in under a second each). A check that fails is not retried,
    // and a page that times out twice fails.
    for (let attempt = 1; ; attempt += 1) {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      try {
        const summary = await explore(page, spec);
        console.log(`explorer: ${spec.module}: pass in ${Date.now() - started} ms (${summary})`);
        break;
      } catch (e) {
        const timedOut = e.name === 'TimeoutError' || /^timed out|Timeout \d+ms exceeded/.test(e.message);
        if (timedOut && attempt === 1) {
          console.log(`explorer: ${spec.module}: timed out (${e.message.split('\n')[0]}); once more on a fresh page`);
          continue;
        }
        failed += 1;
        console.log(`explorer: ${spec.module}: FAIL: ${e.message}`);
        await page.screenshot({ path: spec.screenshot, fullPage: true }).catch(() => {});
        break;
      } finally {
        await page.close();
      }
    }
  }
} finally {
  await browser.close();
}
process.exit(failed === 0 ? 0 : 1);

async function explore(page, spec) {
  page.setDefaultTimeout(PATIENCE_MS);
  await page.goto(spec.url);
  const title = await page.title();
  check(title === 'Stateright Explorer', `the page title is ${JSON.stringify(title)}`);
  const model = page.locator('label:text-is("Model:") + span');
  await page.waitForFunction((el) => el.textContent && el.textContent !== 'loading...', await model.elementHandle());
  const current = page.locator('section.main-flex-right .font-small');
  const nextLinks = page.locator('h2:text-is("Next Action Choices") + ul a');
  const path = page.locator('ol.path-list a');

  // Before a choice: no state, the initial states offered as choices.
  await nextLinks.first().waitFor();
  check((await current.textContent()) === 'No state selected', 'a state is shown before any choice');
  const init = nextLinks.filter({ hasText: /^Init \d+$/ }).first();
  await init.click();
  const initial = await waitForText(current, (t) => t.startsWith('/\\ '), 'the initial state');
  sameVariables(initial, spec.variables, 'the initial state');

  // Follow the first action that leads to another state.
  await waitForText(nextLinks.first(), (t) => !/^Init \d+$/.test(t), "the initial state's actions");
  const choices = await nextLinks.evaluateAll((links) =>
    links.map((a) => ({ text: a.textContent, href: a.getAttribute('href'), classes: a.className })),
  );
  for (const { text } of choices) actionInstance(text, spec.definitions);
  const pick = choices.findIndex((c) => c.href && !/is-ignored|is-same-state/.test(c.classes));
  check(pick >= 0, `no action leaves the initial state (choices: ${choices.map((c) => c.text).join(', ')})`);
  const action = choices[pick].text;
  await nextLinks.nth(pick).click();
  const next = await waitForText(current, (t) => t !== initial && t.startsWith('/\\ '), `the state after ${action}`);
  const hash = await page.evaluate(() => window.location.hash);
  check(hash === choices[pick].href, `the address is ${hash} after following ${choices[pick].href}`);
  sameVariables(next, spec.variables, `the state after ${action}`);
  // The explorer selects a step once its successors are fetched: the list
  // below is already the new state's.
  for (const text of await nextLinks.allTextContents()) actionInstance(text, spec.definitions);
  const steps = await path.allTextContents();
  check(steps.at(-1) === action, `the path of actions is [${steps.join(', ')}], not ending in ${action}`);

  // The shown state is the one the explorer's server computes for this step.
  const [, initIndex, actionIndex] = choices[pick].href.split('/').slice(1);
  const server = await page.evaluate(async (p) => (await fetch(p)).json(), `/.states/${initIndex}`);
  const step = server.find((s) => String(s.actionIndex) === actionIndex);
  check(step && (step.outcome ?? step.state) === next, `the state after ${action} is not the server's`);

  await page.screenshot({ path: spec.screenshot });
  return `${spec.variables.length} variables; followed ${action}`;
}

// The variable names of a state printed as `/\ name = value` lines.
function sameVariables(text, expected, what) {
  const shown = text
    .split('\n')
    .filter((line) => line.startsWith('/\\ '))
    .map((line) => line.slice(3).split(' = ')[0]);
  check(
    JSON.stringify(shown) === JSON.stringify(expected),
    `${what} shows the variables [${shown.join(', ')}], the spec declares [${expected.join(', ')}]`,
  );
}

// An action as TLA+ writes an instance of it: a name the spec defines, its
// arguments in TLA+ notation (a Rust value's Debug form, `PendingW { key: k1,
// .. }`, is not).
function actionInstance(text, definitions) {
  const name = text.split('(')[0];
  check(definitions.includes(name), `the action ${text} is not one the spec defines`);
  check(!/\w \{ \w+: /.test(text), `the action ${text} is not in TLA+ notation`);
}

// Polls an element's text until `predicate` holds (knockout renders after
// each fetch from the explorer's server).
async function waitForText(locator, predicate, what) {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const text = await locator.textContent();
    if (predicate(text)) return text;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; shown: ${text.slice(0, 200)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function check(ok, message) {
  if (!ok) throw new Error(message);
}
