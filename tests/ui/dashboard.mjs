// dashboard.mjs -- the dashboard as a person uses it, in Debian's chromium
// driven by playwright-core (run.sh starts the server and sets the env):
//
//   KPLANE_DASHBOARD_URL  https://127.0.0.1:PORT/ui/#token=ADMIN (kplane server's line)
//   KPLANE_OUT            where screenshots go
//   CHROMIUM              the browser (/usr/bin/chromium)
//
// Steps: the login page; a bad token refused; the admin's token pasted; a
// Deployment made (fetch, as the page's user) and watched on the page from 1
// to 5 ready replicas and 5 ready pods; the history, controllers and nodes
// pages; the `exercise` lab run from the lab page until its table's rows
// appear (skipped, saying so, when this kplane has no such lab); the link
// with #token= logging in and leaving no token in the address bar. Any
// script error on the page fails the test.
import { chromium } from 'playwright-core';

const url = process.env.KPLANE_DASHBOARD_URL;
const out = process.env.KPLANE_OUT || '.';
const base = url.replace(/\/ui\/#.*$/, '');
const token = decodeURIComponent(url.split('#token=')[1]);
const errors = [];
let shot = 0;

function log(msg) {
  console.log(new Date().toISOString().slice(11, 19) + ' ' + msg);
}

async function screenshot(page, name) {
  shot++;
  const path = `${out}/${String(shot).padStart(2, '0')}-${name}.png`;
  await page.screenshot({ path, fullPage: true });
  log('screenshot ' + path);
}

function watchErrors(page) {
  page.on('pageerror', (e) => errors.push('page error: ' + e.message));
  page.on('console', (m) => {
    // A refused request the page handles (401 at login) is logged by the
    // browser as a console error: only the page's own errors count.
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push('console: ' + m.text());
  });
}

async function apiCall(page, method, path, body, ctype) {
  return page.evaluate(async ([t, method, path, body, ctype]) => {
    const r = await fetch(path, {
      method,
      headers: { Authorization: 'Bearer ' + t, 'Content-Type': ctype || 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: r.status, text: await r.text() };
  }, [token, method, path, body, ctype]);
}

async function goto(page, hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox'],
});
try {
  const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  watchErrors(page);

  // The login page: nothing is shown without a token.
  await page.goto(base + '/ui/');
  await page.waitForSelector('#login:not([hidden])');
  await screenshot(page, 'login');
  await page.fill('#token', 'not-a-token');
  await page.click('#login-button');
  await page.waitForFunction(() => /401/.test(document.querySelector('#login-error').textContent));
  log('a bad token is refused: ' + await page.textContent('#login-error'));

  await page.fill('#token', token);
  await page.click('#login-button');
  await page.waitForSelector('#objects');
  const who = await page.textContent('#who');
  log('logged in as ' + who);
  if (!/kubernetes-admin|admin/.test(who)) throw new Error('who am I: ' + who);

  // A Deployment of 1, watched to its ready replica.
  const made = await apiCall(page, 'POST', '/apis/apps/v1/namespaces/default/deployments', {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
    spec: { replicas: 1, selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'nginx' }] } } },
  });
  if (made.status !== 201) throw new Error('create deployment: ' + made.status + ' ' + made.text);
  const readyIs = (want) => page.waitForFunction((w) => {
    const td = document.querySelector('#objects tr[data-name="default/web"] td[data-col="Ready"]');
    return td && td.textContent === w;
  }, want, { timeout: 180000 });
  await readyIs('1/1');
  log('the page shows web 1/1');
  await screenshot(page, 'deployment-1');

  // Scaled to 5: the page follows through its watch, with no reload.
  const scaled = await apiCall(page, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/web/scale',
    { spec: { replicas: 5 } }, 'application/merge-patch+json');
  if (scaled.status !== 200) throw new Error('scale: ' + scaled.status + ' ' + scaled.text);
  await readyIs('5/5');
  log('the page shows web 5/5');
  await screenshot(page, 'deployment-5');

  await goto(page, '#/objects/pods');
  await page.waitForFunction(() => [...document.querySelectorAll('#objects[data-kind=pods] tbody tr')]
    .filter((tr) => tr.dataset.name.startsWith('default/web-') &&
      tr.querySelector('td[data-col="Ready"]').textContent === '1/1').length === 5, null, { timeout: 120000 });
  log('the page shows 5 ready pods of web');
  await screenshot(page, 'pods');

  // Every other resource, from discovery: the two system PriorityClasses
  // (a resource with a group: its id names it), and a CRD made now.
  await goto(page, '#/objects/priorityclasses.scheduling.k8s.io');
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('#objects[data-kind="priorityclasses.scheduling.k8s.io"] tbody tr')]
      .map((tr) => tr.dataset.name);
    return rows.includes('system-cluster-critical') && rows.includes('system-node-critical');
  }, null, { timeout: 30000 });
  const more = await page.$$eval('#more-kinds option', (os) => os.map((o) => o.value));
  for (const want of ['priorityclasses.scheduling.k8s.io', 'secrets', 'customresourcedefinitions.apiextensions.k8s.io'])
    if (!more.includes(want)) throw new Error('the resource menu lacks ' + want + ': ' + more.join(' '));
  if (more.includes('pods') || more.includes('tokenreviews.authentication.k8s.io'))
    throw new Error('the menu repeats a featured kind or lists one that cannot be watched: ' + more.join(' '));
  const crd = await apiCall(page, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
    spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
      versions: [{ name: 'v1', served: true, storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] } });
  if (crd.status !== 201) throw new Error('create CRD: ' + crd.status + ' ' + crd.text);
  let widget;
  for (let i = 0; i < 100; i++) { /* served once Established */
    widget = await apiCall(page, 'POST', '/apis/example.com/v1/namespaces/default/widgets',
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1' } });
    if (widget.status !== 404) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (widget.status !== 201) throw new Error('create widget: ' + widget.status + ' ' + widget.text);
  await page.reload(); /* discovery is asked once per page load */
  await goto(page, '#/objects/widgets.example.com');
  await page.waitForSelector('#objects[data-kind="widgets.example.com"] tbody tr[data-name="default/w1"]',
    { timeout: 30000 });
  log('the resource menu: ' + more.length + ' resources from discovery; a CRD\'s widgets listed');
  await screenshot(page, 'discovered');

  // The history: writes in revision order, with who wrote them.
  await goto(page, '#/history');
  await page.waitForFunction(() => document.querySelectorAll('#timeline li[data-rv]').length >= 10, null,
    { timeout: 60000 });
  // A write of ours, as field manager dashboard-test, lands on top.
  const cm = await apiCall(page, 'POST', '/api/v1/namespaces/default/configmaps?fieldManager=dashboard-test',
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hello' }, data: { a: '1' } });
  if (cm.status !== 201) throw new Error('create configmap: ' + cm.status + ' ' + cm.text);
  const cmRv = Number(JSON.parse(cm.text).metadata.resourceVersion);
  await page.waitForFunction((rv) => {
    const li = document.querySelector('#timeline li[data-manager=dashboard-test]');
    return li && Number(li.dataset.rv) === rv;
  }, cmRv, { timeout: 30000 });
  const rvs = await page.$$eval('#timeline li[data-rv]', (lis) => lis.map((li) => Number(li.dataset.rv)));
  for (let i = 1; i < rvs.length; i++) if (rvs[i] > rvs[i - 1]) throw new Error('history out of order: ' + rvs.slice(0, 20));
  const managers = await page.$$eval('#timeline li[data-rv]', (lis) => [...new Set(lis.map((li) => li.dataset.manager))]);
  log('history: ' + rvs.length + ' writes, managers ' + managers.join(', '));
  if (managers.filter((m) => m).length < 2) throw new Error('history names fewer than 2 managers: ' + managers);
  await screenshot(page, 'history');

  // Controllers: queue depth and a sync rate once two polls are in.
  await goto(page, '#/controllers');
  await page.waitForFunction(() => {
    const td = document.querySelector('#controllers tr[data-name=deployment] td[data-col=rate]');
    return td && td.textContent !== '…';
  }, null, { timeout: 30000 });
  log('controllers: ' + (await page.$$('#controllers tbody tr')).length + ' rows');
  await screenshot(page, 'controllers');

  // Nodes with their heartbeats.
  await goto(page, '#/nodes');
  await page.waitForFunction(() => document.querySelectorAll('#nodes tbody tr td[data-col=heartbeat] .badge.ok').length === 3,
    null, { timeout: 60000 });
  log('nodes: 3 with a fresh heartbeat');
  await screenshot(page, 'nodes');

  // The lab page.
  await goto(page, '#/lab');
  await page.waitForSelector('#labs thead');
  const labs = await page.$$eval('#labs tbody tr', (trs) => trs.map((tr) => tr.dataset.lab));
  if (!labs.includes('exercise')) {
    log('SKIPPED the lab step: this kplane has no `exercise` lab yet (labs: ' + (labs.join(', ') || 'none') + ')');
    await screenshot(page, 'lab-none');
  } else {
    await page.click('button[data-run=exercise]');
    await page.waitForFunction(() => document.querySelectorAll('#lab-tables .lab-table tbody tr').length >= 1,
      null, { timeout: 600000 });
    log('the lab\'s table fills in: ' + (await page.$$('#lab-tables .lab-table tbody tr')).length + ' rows');
    await screenshot(page, 'lab-running');
    // Its end, if it comes within the test's time; rows are what it asserts.
    await page.waitForFunction(() => document.querySelector('#lab-verdict').textContent !== '', null,
      { timeout: 300000 }).catch(() => log('the lab was still running'));
    await screenshot(page, 'lab');
  }

  // The printed link: logs in, and the token leaves the address bar.
  const ctx2 = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 900 } });
  const page2 = await ctx2.newPage();
  watchErrors(page2);
  await page2.goto(url);
  await page2.waitForSelector('#objects');
  const where = page2.url();
  if (where.includes('token')) throw new Error('the token stayed in the address bar: ' + where);
  log('the #token= link logged in; the address is now ' + where);
  await ctx2.close();

  // A kubeconfig file: its current user's token logs in; a user with a
  // client certificate is explained, not sent.
  const ctx3 = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 900 } });
  const page3 = await ctx3.newPage();
  watchErrors(page3);
  await page3.goto(base + '/ui/');
  await page3.waitForSelector('#login:not([hidden])');
  const kubeconfig = (user) => [
    'apiVersion: v1', 'kind: Config', 'clusters:', '- cluster:',
    '    certificate-authority-data: LS0tLS1CRUdJTg==', `    server: ${base}`, '  name: kplane',
    'contexts:', '- context:', '    cluster: kplane', '    user: other', '  name: other@kplane',
    '- context:', '    cluster: kplane', `    user: ${user}`, `  name: ${user}@kplane`,
    `current-context: ${user}@kplane`, 'preferences: {}', 'users:',
    '- name: other', '  user:', '    token: "wrong-token"',
    '- name: cert-user', '  user:', '    client-certificate-data: LS0tLS1CRUdJTg==',
    '    client-key-data: LS0tLS1CRUdJTg==',
    '- name: token-user', '  user:', `    token: ${token}`, ''].join('\n');
  await page3.setInputFiles('#kubeconfig', { name: 'kubeconfig', mimeType: 'text/plain',
    buffer: Buffer.from(kubeconfig('cert-user')) });
  await page3.waitForFunction(() => /client certificate/.test(document.querySelector('#login-error').textContent));
  log('a kubeconfig with a client certificate: ' + await page3.textContent('#login-error'));
  await page3.setInputFiles('#kubeconfig', { name: 'kubeconfig2', mimeType: 'text/plain',
    buffer: Buffer.from(kubeconfig('token-user')) });
  await page3.waitForSelector('#objects');
  log('a kubeconfig with a token logged in as ' + await page3.textContent('#who'));
  await ctx3.close();

  // Another user sees what RBAC lets them: with the ClusterRole view bound,
  // the objects; not the lab endpoints (403, said on the page).
  const viewer = process.env.KPLANE_VIEWER_TOKEN;
  if (viewer) {
    const bound = await apiCall(page, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'viewer-view' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'viewer' }] });
    if (bound.status !== 201) throw new Error('bind view: ' + bound.status + ' ' + bound.text);
    const ctx4 = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 900 } });
    const page4 = await ctx4.newPage();
    watchErrors(page4);
    await page4.goto(base + '/ui/#token=' + viewer);
    await page4.waitForFunction(() => {
      const td = document.querySelector('#objects tr[data-name="default/web"] td[data-col="Ready"]');
      return td && td.textContent === '5/5';
    }, null, { timeout: 60000 });
    log('viewer (ClusterRole view) sees web 5/5 as ' + await page4.textContent('#who'));
    await goto(page4, '#/lab');
    await page4.waitForFunction(() => /403/.test(document.querySelector('main p.error') ?
      document.querySelector('main p.error').textContent : ''), null, { timeout: 30000 });
    log('viewer on the lab page: ' + await page4.textContent('main p.error'));
    await screenshot(page4, 'viewer-lab-403');
    await ctx4.close();
  }

  if (errors.length) throw new Error('errors on the page:\n' + errors.join('\n'));
  log('PASS');
} catch (e) {
  console.error('FAIL: ' + (e && e.stack || e));
  for (const p of browser.contexts().flatMap((c) => c.pages())) {
    await p.screenshot({ path: `${out}/failure-${Date.now()}.png`, fullPage: true }).catch(() => {});
  }
  process.exitCode = 1;
} finally {
  await browser.close();
}
