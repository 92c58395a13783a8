// End-to-end tests of `taskq serve` in a real browser: Debian's chromium
// driven by playwright-core, axe-core injected into each page, run by
// `node --test` (tests/web/run sets TASKQ, TASKQ_DB and TASKQ_WEB_SHOTS).
//
// A database with tasks in several states and queues is made with the
// built taskq; `taskq serve --allow-actions` serves it; each check reads
// what a page shows, or does what an operator does, and compares it with
// what the taskq CLI says of the database (list/show/stats -o json).
'use strict';

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { expect as baseExpect } from 'playwright/test';

const TASKQ = process.env.TASKQ;
const SHOTS = process.env.TASKQ_WEB_SHOTS;
const BROWSER = process.env.TASKQ_WEB_CHROMIUM || '/usr/bin/chromium';
if (!TASKQ || !process.env.TASKQ_DB || !SHOTS) {
  throw new Error('run through tests/web/run (TASKQ, TASKQ_DB, TASKQ_WEB_SHOTS)');
}
mkdirSync(SHOTS, { recursive: true });
// Auto-waiting expectations; the bound is for a loaded CI machine, a
// passing check returns as soon as its condition holds.
const expect = baseExpect.configure({ timeout: 10_000 });
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// --- the taskq CLI ---------------------------------------------------------

const env = { ...process.env, NO_COLOR: '1' };
delete env.TASKQ_NOW;
const tq = (...args) => execFileSync(TASKQ, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
// A command whose exit status is not the point (run exits 6 after a failure).
const tqAny = (...args) => {
  try { return tq(...args); } catch (e) { return String(e.stdout || '').trim(); }
};
const jsonLines = (text) => text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
const list = (...args) => jsonLines(tq('list', '-o', 'json', '--wide', ...args));
const show = (id) => JSON.parse(tq('show', String(id), '-o', 'json'));
const stats = () => jsonLines(tq('stats', '-o', 'json')).flatMap((x) => (Array.isArray(x) ? x : [x]));
// The state as the view shows it (running/frozen: a runnable task leased now).
const shownState = (t) => {
  if (t.state === 'runnable' && t.lease && Date.parse(t.lease.expires_at) > Date.now()) {
    return t.lease.frozen ? 'frozen' : 'running';
  }
  return t.state;
};
const add = (...args) => Number(tq('add', ...args));
// taskq ARGS with its clock at AT (TASKQ_NOW), INPUT on its stdin.
const tqAt = (at, input, ...args) => {
  try {
    return execFileSync(TASKQ, args, { env: { ...env, TASKQ_NOW: at }, input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) { return String(e.stdout || ''); } // run exits 6 after a failure
};
// Polls a CLI condition (another process acts on the database: a worker).
const until = async (what, cond, ms = 15_000) => {
  const end = Date.now() + ms;
  for (;;) {
    const v = cond();
    if (v) { return v; }
    if (Date.now() > end) { throw new Error(`timed out waiting for ${what}`); }
    await new Promise((r) => setTimeout(r, 50));
  }
};
const webEvent = (id, message) => show(id).events.find((e) => e.message === message && /^web:/.test(e.actor || ''));

// --- processes -------------------------------------------------------------

const children = [];
// taskq serve ARGS: resolves to its URL (the first line it prints).
const serve = async (...args) => {
  const proc = spawn(TASKQ, ['serve', '--listen', '127.0.0.1:0', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(proc);
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) { resolve(out.split('\n')[0].trim()); }
    });
    proc.on('exit', (code) => reject(new Error(`taskq serve exited ${code}: ${err}`)));
  });
  return { proc, url: url.replace(/\/$/, ''), stderr: () => err };
};
const stop = async (proc) => {
  if (proc.exitCode !== null || proc.signalCode !== null) { return proc.exitCode; }
  const gone = once(proc, 'exit');
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
  const [code, signal] = await gone;
  clearTimeout(timer);
  return signal ? signal : code;
};
const listen = (server, host) => new Promise((resolve) => server.listen(0, host, () => resolve(server.address().port)));
const servers = [];

// --- the browser -----------------------------------------------------------

let browser;
let main; // { url, proc } of taskq serve --allow-actions
const ids = {};

// A page of a fresh context (light unless told), closed by the caller.
const open = async (opts = {}) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light', ...opts });
  const page = await context.newPage();
  page.close = async () => { await context.close(); };
  return page;
};

// No serious or critical axe-core violation, in light and dark; a
// screenshot of each.
const audit = async (page, name) => {
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.evaluate(axeSource); // by the driver: the page's CSP allows no inline script
    const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
    const bad = res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    assert.deepEqual(
      bad.map((v) => `${v.id} (${v.impact}): ${v.help}; ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`),
      [], `axe on ${name} (${scheme})`);
    await page.screenshot({ path: path.join(SHOTS, `${name}-${scheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
};

// The rows of the tasks table: [{id, state}] as shown.
const tableRows = (page) => page.locator('table.tasks tbody tr').evaluateAll((rows) => rows.map((r) => ({
  id: Number(r.dataset.id), state: r.querySelector('.state').textContent.trim(),
})));

// --- the database ------------------------------------------------------------

before(async () => {
  // newsletters: an hour of history (batches run 55 to 5 minutes ago, with
  // the clock set back), so the overview's charts and errors have some.
  tq('queue', 'set', 'newsletters', '--max-errors', '1');
  for (const [ago, n] of [[55, 3], [45, 5], [35, 4], [25, 6], [15, 3], [5, 5]]) {
    const at = new Date(Date.now() - ago * 60e3).toISOString();
    const lines = Array.from({ length: n }, (_, i) => `issue ${ago}-${i + 1}`).join('\n');
    tqAt(at, `${lines}\n`, 'add', 'newsletters', '--lines', '-',
      '--sh', 'grep -q -- "-4" && { echo "timeout: smtp.example.com did not answer in 30s" >&2; exit 1; }; echo sent');
    tqAt(at, '', 'run', 'newsletters', '--until-empty', '-q', '--worker', 'newsletter-1');
  }
  // emails: one failed for good, three completed (a worker ran them), one
  // ready, one delayed.
  ids.failed = add('emails', '--max-errors', '1', '--label', 'team=mail',
    '--sh', 'echo "SMTP 550: mailbox unavailable" >&2; exit 3');
  ids.done = [1, 2, 3].map((i) => add('emails', '--payload', JSON.stringify({ to: `user${i}@example.com` }), '--sh', 'echo sent'));
  tqAny('run', 'emails', '--until-empty', '--worker', 'mailer-1');
  ids.ready = add('emails', '--label', 'team=mail', '--payload', JSON.stringify({ to: 'ops@example.com', subject: 'weekly digest' }), '--sh', 'send-digest --weekly');
  ids.delayed = add('emails', '--delay', '1h', '--payload', JSON.stringify({ to: 'later@example.com' }), '--sh', 'send-reminder');
  // thumbs: six ready (bulk actions), one paused, one sleeping, one killed.
  ids.thumbs = [1, 2, 3, 4, 5, 6].map((i) => add('thumbs', '--label', 'kind=image',
    '--payload', JSON.stringify({ file: `img-${i}.png` }), '--', 'make-thumb', '--width', '200'));
  ids.paused = add('thumbs', '--label', 'kind=image', '--', 'make-thumb', 'big.png');
  tq('pause', String(ids.paused));
  ids.sleeping = add('thumbs', '--label', 'kind=image', '--', 'make-thumb', 'huge.png');
  tq('sleep', String(ids.sleeping), '--for', '2h');
  ids.killed = add('thumbs', '--', 'make-thumb', 'broken.png');
  tq('kill', String(ids.killed));
  // reports: one running (a live handler of a worker that runs on).
  ids.running = add('reports', '--label', 'kind=nightly', '--sh', 'sleep 600');
  // exports: no worker; one for the live update, one for the proxy.
  ids.live = add('exports', '--payload', JSON.stringify({ month: '2026-11' }), '--sh', 'export-month');
  ids.proxied = add('exports', '--sh', 'export-month --quarter');
  const worker = spawn(TASKQ, ['run', 'reports', '--worker', 'reporter-1', '--for', '2m', '--grace', '1s'],
    { env, stdio: 'ignore' });
  children.push(worker);
  ids.workerPid = worker.pid;
  await until('the worker to lease the report', () => show(ids.running).lease);

  main = await serve('--allow-actions');
  browser = await chromium.launch({
    executablePath: BROWSER,
    // As root (CI) chromium needs --no-sandbox; the network is closed:
    // nothing in the background may reach out.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
});

after(async () => {
  if (browser) { await browser.close(); }
  for (const s of servers) { s.closeAllConnections?.(); s.close(); }
  for (const c of children) { await stop(c); }
});

// --- the pages -----------------------------------------------------------------

describe('pages show the database', () => {
  it('overview: counts per queue as taskq stats, the error group, the worker', async () => {
    const page = await open();
    await page.goto(`${main.url}/`);
    await expect(page.locator('h1')).toHaveText('Overview');
    const want = stats();
    assert.deepEqual(want.map((s) => s.queue).sort(), ['emails', 'exports', 'newsletters', 'reports', 'thumbs']);
    for (const s of want) {
      const cells = await page.locator('table.queues tbody tr').filter({ has: page.locator('th').getByText(s.queue, { exact: true }) })
        .locator('td').allTextContents();
      // ready, running, delayed, sleeping, paused, completed, failed, killed
      assert.deepEqual(cells.slice(0, 8).map(Number),
        [s.ready, s.running, s.delayed, s.sleeping, s.paused, s.completed, s.failed, s.killed], `overview row ${s.queue}`);
    }
    // and those counts are the tasks list shows
    const all = list();
    const emails = all.filter((t) => t.queue === 'emails');
    assert.equal(want.find((s) => s.queue === 'emails').completed, emails.filter((t) => t.state === 'completed').length);
    assert.equal(want.find((s) => s.queue === 'thumbs').paused, all.filter((t) => t.queue === 'thumbs' && t.state === 'paused').length);
    // the failed task's error, grouped, linking to it
    const group = page.locator('table.errors tbody tr').filter({ hasText: 'SMTP 550: mailbox unavailable' });
    await expect(group).toHaveCount(1);
    await expect(group.locator(`a[href="/tasks/${ids.failed}"]`)).toBeVisible();
    // the worker holding the report's lease
    const w = page.locator('table.workers tbody tr').filter({ hasText: 'reporter-1' });
    await expect(w.locator(`a[href="/tasks/${ids.running}"]`)).toBeVisible();
    await audit(page, 'overview');
    // The README's picture: 1280x800, light.
    await page.screenshot({ path: path.join(SHOTS, 'serve.png') });
    await page.close();
  });

  it('tasks: every task with its state, as taskq list', async () => {
    const page = await open();
    await page.goto(`${main.url}/tasks`);
    await expect(page.locator('h1')).toHaveText('Tasks');
    const want = list().map((t) => ({ id: t.id, state: shownState(t) })).sort((a, b) => b.id - a.id);
    assert.deepEqual(await tableRows(page), want);
    await audit(page, 'tasks');
    await page.close();
  });

  it('a filtered /tasks URL: the same tasks as taskq list with those filters', async () => {
    const page = await open();
    await page.goto(`${main.url}/tasks?queue=thumbs&state=runnable,paused&match=kind%3Dimage`);
    const want = list('--queue', 'thumbs', '--state', 'runnable,paused', '--match', 'kind=image')
      .map((t) => ({ id: t.id, state: t.state })).sort((a, b) => b.id - a.id);
    assert.ok(want.length >= 7, 'the filter matches the six ready thumbs and the paused one');
    assert.deepEqual(await tableRows(page), want);
    // the filters stay in the form
    await expect(page.locator('form.filters input[name=queue]')).toHaveValue('thumbs');
    await expect(page.locator('form.filters input[name=match]')).toHaveValue('kind=image');
    await audit(page, 'tasks-filtered');
    await page.close();
  });

  it('a failed task: state, why, command, errors, output, events, revision, as taskq show', async () => {
    const page = await open();
    const t = show(ids.failed);
    await page.goto(`${main.url}/tasks/${ids.failed}`);
    await expect(page.locator('h1')).toContainText(`Task ${ids.failed}`);
    await expect(page.locator('h1 .state')).toHaveText(t.state);
    const facts = page.locator('dl.facts');
    await expect(facts.locator('dt:text-is("queue") + dd')).toHaveText(t.queue);
    await expect(facts.locator('dt:text-is("command") + dd')).toHaveText(`sh: ${t.command[2]}`);
    await expect(facts.locator('dt:text-is("revision") + dd')).toHaveText(String(t.rev));
    await expect(facts.locator('dt:text-is("attempts") + dd')).toHaveText(String(t.attempts));
    await expect(facts.locator('dt:text-is("labels") + dd')).toHaveText('team=mail');
    await expect(page.locator('ol.errors > li')).toHaveCount(t.errors.length);
    for (const e of t.errors) {
      await expect(page.locator('ol.errors')).toContainText(e.error);
    }
    await expect(page.locator('ol.events > li')).toHaveCount(t.events.length);
    await expect(page.locator('pre.output')).toContainText('SMTP 550: mailbox unavailable');
    // a failed task offers retry, and neither pause nor kill
    await expect(page.locator('button.act-retry')).toBeVisible();
    await expect(page.locator('button.act-pause, button.act-kill')).toHaveCount(0);
    await audit(page, 'task-failed');
    await page.close();
  });

  it('a running task: its lease and worker, freeze offered', async () => {
    const page = await open();
    const t = show(ids.running);
    await page.goto(`${main.url}/tasks/${ids.running}`);
    await expect(page.locator('h1 .state')).toHaveText('running');
    await expect(page.locator('dl.facts dt:text-is("lease") + dd')).toContainText(`held by ${t.lease.worker}`);
    await expect(page.locator('button.act-freeze')).toBeVisible();
    await expect(page.locator('button.act-release')).toBeVisible();
    await expect(page.locator('button.act-continue')).toHaveCount(0);
    await audit(page, 'task-running');
    await page.close();
  });

  it('queues: every queue, paused or active, as taskq', async () => {
    const page = await open();
    await page.goto(`${main.url}/queues`);
    await expect(page.locator('h1')).toHaveText('Queues');
    const names = [...new Set(list().map((t) => t.queue))].sort();
    const rows = await page.locator('table.queues tbody th').allTextContents();
    assert.deepEqual(rows.map((s) => s.trim()).sort(), names);
    await expect(page.locator('table.queues tbody tr').filter({ hasText: 'thumbs' }).locator('td').first()).toHaveText('active');
    await audit(page, 'queues');
    await page.close();
  });

  it('/tasks/bulk?state=paused&bulk=resume: counts as taskq list --state paused; pause counts none of them', async () => {
    const page = await open();
    await page.goto(`${main.url}/tasks/bulk?state=paused&bulk=resume`);
    const n = list('--state', 'paused').length;
    assert.ok(n >= 1);
    await expect(page.locator('p.count strong')).toHaveText(`${n} tasks match`);
    await expect(page.locator('main button[type=submit]')).toHaveText(`resume ${n} tasks`);
    await audit(page, 'bulk');
    // A bulk action counts the tasks it acts on: pause acts on no paused one.
    await page.goto(`${main.url}/tasks/bulk?state=paused&bulk=pause`);
    await expect(page.locator('p.count strong')).toHaveText('0 tasks match');
    await expect(page.locator('main button[type=submit]')).toHaveCount(0);
    await page.close();
  });
});

describe('the checks can fail', () => {
  it('axe-core, as injected, finds a planted serious violation', async () => {
    const page = await open();
    await page.goto(`${main.url}/assets/taskq.css`); // our origin, our CSP
    await page.setContent('<!doctype html><html><body><button></button><img src="x.png"></body></html>');
    await page.evaluate(axeSource);
    const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
    const ids = res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
    assert.ok(ids.includes('button-name') && ids.includes('image-alt'), `found: ${ids.join(', ')}`);
    await page.close();
  });
});

// --- what may not change -----------------------------------------------------

describe('refused', () => {
  it('read-only: no action buttons, and a POST gets 403 and changes nothing', async () => {
    const ro = await serve();
    const page = await open();
    const before = show(ids.ready);
    await page.goto(`${ro.url}/tasks/${ids.ready}`);
    await expect(page.locator('section.actions code.cli').first()).toBeVisible(); // the CLI twins stay
    await expect(page.locator('section.actions button[type=submit]')).toHaveCount(0);
    await page.goto(`${ro.url}/tasks`);
    await expect(page.locator('table.tasks tbody tr').first()).toBeVisible();
    await expect(page.locator('main input[type=checkbox][name=id], main select[name=action], main select[name=bulk]')).toHaveCount(0);
    await page.goto(`${ro.url}/queues`);
    await expect(page.locator('table.queues code.cli').first()).toBeVisible();
    await expect(page.locator('main form button')).toHaveCount(0);
    // a POST from the view's own page (same origin): 403 each
    const statuses = await page.evaluate(async ([id, rev]) => {
      const post = (u, body) => fetch(u, { method: 'POST', body, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } })
        .then((r) => r.status);
      return [await post(`/tasks/${id}/pause`, `rev=${rev}`), await post('/tasks/bulk', `action=kill&id=${id}`),
        await post('/queues/emails/pause', '')];
    }, [ids.ready, before.rev]);
    assert.deepEqual(statuses, [403, 403, 403]);
    const now = show(ids.ready);
    assert.equal(now.rev, before.rev);
    assert.equal(now.state, 'runnable');
    assert.ok(!jsonLines(tq('queue', 'list', '-o', 'json')).some((q) => q.paused), 'no queue paused');
    await page.close();
    assert.equal(await stop(ro.proc), 0, 'read-only serve exits 0 on SIGTERM');
  });

  it('a cross-site POST (a form on another origin posting to the view) is refused 403 and changes nothing', async () => {
    const before = show(ids.ready);
    const evil = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(`<!doctype html><title>elsewhere</title><form method="post" action="${main.url}/tasks/${ids.ready}/kill">`
        + `<input type="hidden" name="rev" value="${before.rev}"></form><script>document.forms[0].submit()</script>`);
    });
    servers.push(evil);
    const port = await listen(evil, '127.0.0.1');
    const page = await open();
    // cross-site (localhost is another site than 127.0.0.1), then same-site
    // but another origin (another port)
    for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`]) {
      const posted = page.waitForResponse((r) => r.url() === `${main.url}/tasks/${ids.ready}/kill` && r.request().method() === 'POST');
      await page.goto(`${origin}/`);
      const r = await posted;
      assert.equal(r.status(), 403, `a POST from ${origin}`);
      await expect(page.locator('body')).toContainText('refused: a cross-site request may not change anything');
    }
    const now = show(ids.ready);
    assert.equal(now.state, 'runnable');
    assert.equal(now.rev, before.rev);
    await page.close();
  });
});

// --- actions -----------------------------------------------------------------------

// The answer to the form's POST (an error), or the page a POST's 303
// led to (the GET after it).
const posted = (page) => page.waitForResponse((r) => r.request().method() === 'POST');
const landed = (page) => page.waitForResponse((r) => r.request().redirectedFrom()?.method() === 'POST');
const click = async (page, locator) => (await Promise.all([landed(page), locator.click()]))[0];

// Clicks the task page's button for ACTION (the sleep form's duration
// first when given), and waits for the page it redirects to.
const act = async (page, id, action, fill) => {
  await page.goto(`${main.url}/tasks/${id}`);
  const form = page.locator('section.actions form').filter({ has: page.locator(`button.act-${action}`) });
  if (fill) { await form.locator('input[name=for]').fill(fill); }
  return click(page, form.locator(`button.act-${action}`));
};

describe('actions change the database', () => {
  it('pause, resume, sleep, kill and retry on a task', async () => {
    const page = await open();
    const id = ids.ready;
    await act(page, id, 'pause');
    await expect(page.locator('h1 .state')).toHaveText('paused');
    assert.equal(show(id).state, 'paused');
    assert.ok(webEvent(id, 'pause'), 'the pause is in the event log with a web: actor');

    await act(page, id, 'resume');
    await expect(page.locator('h1 .state')).toHaveText('runnable');
    assert.equal(show(id).state, 'runnable');

    const t0 = Date.now();
    await act(page, id, 'sleep', '45m');
    await expect(page.locator('h1 .state')).toHaveText('sleeping');
    const slept = show(id);
    assert.equal(slept.state, 'sleeping');
    const wake = Date.parse(slept.run_at) - t0;
    assert.ok(wake > 44 * 60e3 && wake < 47 * 60e3, `sleeps about 45m (run_at in ${wake} ms)`);

    await act(page, id, 'kill');
    await expect(page.locator('h1 .state')).toHaveText('killed');
    assert.equal(show(id).state, 'killed');

    const res = await act(page, id, 'retry');
    const retried = Number(new URL(res.url()).pathname.match(/\/tasks\/(\d+)$/)[1]);
    await expect(page).toHaveURL(`${main.url}/tasks/${retried}`);
    assert.notEqual(retried, id, 'retry shows the new task');
    const t = show(retried);
    assert.equal(t.retry_of, id);
    assert.equal(t.state, 'runnable');
    await expect(page.locator('h1 .state')).toHaveText('runnable');
    await page.close();
  });

  it('a stale page: an action from an old revision is refused 409 and changes nothing', async () => {
    // without script: a live page would have fetched the new revision
    const page = await open({ javaScriptEnabled: false });
    const id = ids.thumbs[5];
    await page.goto(`${main.url}/tasks/${id}`);
    tq('pause', String(id));
    tq('resume', String(id));
    const before = show(id);
    const [r] = await Promise.all([posted(page), page.locator('button.act-kill').click()]);
    assert.equal(r.status(), 409);
    await expect(page.locator('p.error')).toContainText('changed since you looked');
    assert.equal(show(id).rev, before.rev);
    assert.equal(show(id).state, 'runnable');
    await page.close();
  });

  it('freeze, continue and release a running task (its handler stopped and let go on)', async () => {
    const page = await open();
    const id = ids.running;
    const handlerState = () => {
      try {
        return execFileSync('ps', ['-o', 'stat=', '--ppid', String(ids.workerPid)], { encoding: 'utf8' }).trim();
      } catch { return ''; }
    };
    await act(page, id, 'freeze');
    await expect(page.locator('h1 .state')).toHaveText('frozen');
    assert.equal(show(id).lease.frozen, true);
    await until('the worker to stop the handler (SIGSTOP)', () => /^T/.test(handlerState()));

    await act(page, id, 'continue');
    await expect(page.locator('h1 .state')).toHaveText('running');
    assert.equal(show(id).lease.frozen, false);
    await until('the handler to go on (SIGCONT)', () => /^[SR]/.test(handlerState()));

    await act(page, id, 'release');
    assert.ok(webEvent(id, 'release'), 'the release is in the event log with a web: actor');
    await page.close();
  });

  it('bulk on ticked tasks: pause two', async () => {
    const page = await open();
    const [a, b] = ids.thumbs;
    await page.goto(`${main.url}/tasks?queue=thumbs&state=runnable`);
    await page.locator(`input[name=id][value="${a}"]`).check();
    await page.locator(`input[name=id][value="${b}"]`).check();
    await page.locator('#ticked select[name=action]').selectOption('pause');
    const [r] = await Promise.all([posted(page), page.locator('#ticked button[type=submit]').click()]);
    assert.equal(r.status(), 200);
    await expect(page.locator('p.count')).toHaveText('pause: 2 tasks changed.');
    assert.deepEqual([show(a).state, show(b).state], ['paused', 'paused']);
    const untouched = ids.thumbs.slice(2).map((i) => show(i).state);
    assert.deepEqual(untouched, untouched.map(() => 'runnable'));
    await page.close();
  });

  it('bulk on every match: counted first, kill needs the typed count', async () => {
    const page = await open();
    await page.goto(`${main.url}/tasks?queue=thumbs&state=runnable`);
    const matching = list('--queue', 'thumbs', '--state', 'runnable').map((t) => t.id);
    assert.equal(matching.length, 4);
    await page.locator('form.bulk select[name=bulk]').selectOption('kill');
    await Promise.all([page.waitForURL(/\/tasks\/bulk\?/), page.locator('form.bulk button[type=submit]').click()]);
    await expect(page.locator('p.count strong')).toHaveText(`${matching.length} tasks match`);
    // a wrong count is refused, nothing killed
    await page.locator('input[name=confirm]').fill(String(matching.length - 1));
    const [bad] = await Promise.all([posted(page), page.locator('main button[type=submit]').click()]);
    assert.equal(bad.status(), 400);
    await expect(page.locator('p.error')).toContainText(`type ${matching.length} to kill them`);
    assert.equal(list('--queue', 'thumbs', '--state', 'runnable').length, matching.length);
    await page.goBack();
    await page.locator('input[name=confirm]').fill(String(matching.length));
    const [ok] = await Promise.all([posted(page), page.locator('main button[type=submit]').click()]);
    assert.equal(ok.status(), 200);
    await expect(page.locator('p.count')).toHaveText(`kill: ${matching.length} tasks changed.`);
    assert.deepEqual(matching.map((i) => show(i).state), matching.map(() => 'killed'));
    assert.equal(show(ids.thumbs[0]).state, 'paused', 'a task outside the filter is untouched');
    await page.close();
  });

  it('queues: pause and resume a queue', async () => {
    const page = await open();
    const paused = () => jsonLines(tq('queue', 'list', '-o', 'json')).find((q) => q.queue === 'thumbs')?.paused;
    await page.goto(`${main.url}/queues`);
    const row = page.locator('table.queues tbody tr').filter({ hasText: 'thumbs' });
    await click(page, row.locator('button', { hasText: 'pause' }));
    await expect(row.locator('td').first()).toHaveText('paused');
    assert.equal(paused(), true);
    await click(page, row.locator('button', { hasText: 'resume' }));
    await expect(row.locator('td').first()).toHaveText('active');
    assert.equal(paused(), false);
    await page.close();
  });
});

// --- live, prefix, no script ---------------------------------------------------

describe('the view', () => {
  it('a live update arrives without a reload', async () => {
    const page = await open();
    await page.goto(`${main.url}/tasks/${ids.live}`);
    await expect(page.locator('h1 .state')).toHaveText('runnable');
    await expect(page.locator('#live')).toHaveText('live');
    await page.evaluate(() => { window.notReloaded = true; });
    tq('pause', String(ids.live));
    await expect(page.locator('h1 .state')).toHaveText('paused');
    assert.equal(await page.evaluate(() => window.notReloaded), true, 'the page was not reloaded');
    await page.close();
  });

  it('a choice made in a form holds live updates: the form stays as the reader left it', async () => {
    // A bulk action chosen and left, its button not pressed: a fresh
    // <main> would put the form back to its first action, and the button
    // would send that (seen once in CI: a kill chosen, a pause sent).
    const page = await open();
    await page.goto(`${main.url}/tasks?queue=thumbs`);
    await expect(page.locator('#live')).toHaveText('live');
    await page.locator('form.bulk select[name=bulk]').selectOption('kill');
    await page.locator('h1').click(); // the select left
    const added = add('thumbs', '--', 'make-thumb', 'held.png'); // a row a fresh page would show
    // The change heard: the page either held (data-held) or was replaced.
    await page.waitForFunction((id) => document.body.dataset.held === 'yes'
      || document.querySelector(`a[href$="/tasks/${id}"]`) !== null, added);
    assert.equal(await page.locator('form.bulk select[name=bulk]').inputValue(), 'kill', 'the choice kept');
    assert.equal(await page.locator(`a[href$="/tasks/${added}"]`).count(), 0, 'the page not replaced');
    await expect(page.locator('#live')).toHaveText('live: held while you use this page');
    await page.close();
  });

  it('a running task\'s output arrives on its open page, appended to its <pre>, without a reload', async () => {
    // A handler that prints a line, waits for a file, prints a second line
    // and waits for another (each wait bounded at a minute), leased by a
    // worker of its own queue that keeps output.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'taskq-web-follow-'));
    const first = 'tail: first line';
    const second = 'tail: second line';
    const waitFor = (f) => `i=0; until [ -e '${dir}/${f}' ] || [ $i -ge 1200 ]; do sleep 0.05; i=$((i+1)); done`;
    const id = add('tails', '--sh', `echo '${first}'; ${waitFor('go')}; echo '${second}'; ${waitFor('end')}`);
    const worker = spawn(TASKQ, ['run', 'tails', '--worker', 'tailer-1', '--keep-output', '1M', '--for', '2m', '--grace', '1s'],
      { env, stdio: 'ignore' });
    children.push(worker);
    const page = await open();
    try {
      // Stored before the page is opened: a running task's page shows an
      // output stream (and follows it) once something of it is stored.
      await until('the first line stored', () => tq('logs', String(id)).includes(first));
      // The page's <main> as loaded: the live channel's first change
      // event replaces it (a refresh) before the <pre> is marked below.
      await page.addInitScript(() => {
        document.addEventListener('DOMContentLoaded', () => { window.loadedMain = document.getElementById('main'); });
      });
      await page.goto(`${main.url}/tasks/${id}`);
      await expect(page.locator('h1 .state')).toHaveText('running');
      const pre = page.locator(`pre.output[data-follow^="/tasks/${id}/output?attempt=1&stream=stdout"]`);
      await expect(pre).toHaveText(first);
      await expect.poll(() => page.evaluate(() => document.getElementById('main') !== window.loadedMain)).toBe(true);
      // A reader typing in the page's form holds off refreshes (a later
      // change event, as the live channel catches up with the lease, would
      // bring the new line in a new <main>): the line can only come by
      // following.
      await page.locator('section.actions input[name=for]').focus();
      await pre.evaluate((el) => { window.notReloaded = true; window.followed = el; });
      const followed = page.waitForResponse(async (r) => r.url().includes(`/tasks/${id}/output?`)
        && r.ok() && (await r.json()).data.includes(second));
      writeFileSync(path.join(dir, 'go'), '');
      const answer = await (await followed).json();
      assert.equal(answer.running, true, 'the task runs on while it is followed');
      await expect(pre).toContainText(second);
      assert.equal(await pre.evaluate((el) => el.textContent), `${first}\n${second}\n`, 'each line once, in order');
      assert.deepEqual(await page.evaluate(() => [window.notReloaded, window.followed === document.querySelector('pre.output[data-follow]')]),
        [true, true], 'the page was not reloaded and the line appended to the same <pre>');
      writeFileSync(path.join(dir, 'end'), '');
      await until('the task to complete', () => show(id).state === 'completed');
    } finally {
      await page.close();
      await stop(worker);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--prefix /taskq behind a proxy that strips it: links, assets, live and forms work', async () => {
    const pre = await serve('--allow-actions', '--prefix', '/taskq');
    const upstream = new URL(pre.url);
    const proxy = http.createServer((req, res) => {
      if (!req.url.startsWith('/taskq/') && req.url !== '/taskq') {
        res.writeHead(404, { 'Content-Type': 'text/plain' });
        res.end('not under /taskq');
        return;
      }
      const up = http.request({
        host: upstream.hostname, port: upstream.port, method: req.method,
        path: req.url.slice('/taskq'.length) || '/', headers: req.headers,
      }, (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
      up.on('error', () => { res.destroy(); });
      req.pipe(up);
    });
    servers.push(proxy);
    const port = await listen(proxy, '127.0.0.1');
    const base = `http://127.0.0.1:${port}/taskq`;
    const page = await open();
    await page.goto(`${base}/`);
    await expect(page.locator('h1')).toHaveText('Overview');
    await expect(page.locator('#tz')).toBeVisible(); // the script ran (from /taskq/assets)
    expect(await page.evaluate(() => document.styleSheets[0].cssRules.length)).toBeGreaterThan(0);
    await expect(page.locator('#live')).toHaveText('live'); // /taskq/live
    const hrefs = await page.locator('a[href]').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(hrefs.filter((h) => !h.startsWith('/taskq/')), [], 'every link under /taskq');
    await page.locator('nav a', { hasText: 'Tasks' }).click();
    await expect(page).toHaveURL(`${base}/tasks`);
    await page.locator(`table.tasks a:text-is("${ids.proxied}")`).click();
    await expect(page).toHaveURL(`${base}/tasks/${ids.proxied}`);
    await click(page, page.locator('button.act-pause'));
    await expect(page).toHaveURL(`${base}/tasks/${ids.proxied}`);
    await expect(page.locator('h1 .state')).toHaveText('paused');
    assert.equal(show(ids.proxied).state, 'paused');
    // the filter form stays under the prefix
    await page.goto(`${base}/tasks`);
    await page.locator('form.filters input[name=queue]').fill('reports');
    await page.locator('form.filters button[type=submit]').click();
    await expect(page).toHaveURL(/\/taskq\/tasks\?queue=reports/);
    assert.deepEqual((await tableRows(page)).map((r) => r.id).sort(), list('--queue', 'reports').map((t) => t.id).sort());
    await page.close();
    assert.equal(await stop(pre.proc), 0, 'serve --prefix exits 0 on SIGTERM');
  });

  it('with JavaScript off: pages render and a form action works', async () => {
    const page = await open({ javaScriptEnabled: false });
    for (const [p, h] of [['/', 'Overview'], ['/tasks', 'Tasks'], ['/queues', 'Queues'], [`/tasks/${ids.failed}`, `Task ${ids.failed}`]]) {
      await page.goto(`${main.url}${p}`);
      await expect(page.locator('h1')).toContainText(h);
    }
    await expect(page.locator('#tz')).toBeHidden(); // no script ran
    await page.goto(`${main.url}/tasks/${ids.proxied}`);
    await expect(page.locator('h1 .state')).toHaveText('paused');
    await click(page, page.locator('button.act-resume'));
    await expect(page.locator('h1 .state')).toHaveText('runnable');
    assert.equal(show(ids.proxied).state, 'runnable');
    await page.close();
  });

  it('serve exits 0 on SIGTERM with a live page open', async () => {
    const page = await open();
    await page.goto(`${main.url}/`);
    await expect(page.locator('#live')).toHaveText('live');
    assert.equal(await stop(main.proc), 0);
    await page.close();
  });
});
