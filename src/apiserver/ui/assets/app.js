/*
 * app.js -- kplane's dashboard: plain DOM, no framework, no build step.
 *
 * Every figure on the page comes from the normal API, asked with the user's
 * bearer token (kept in sessionStorage), so RBAC applies as for kubectl:
 * objects through list + watch (fetch with a streaming body), history from
 * the watched objects' managedFields and resourceVersions (kplane's global
 * revision), controllers from /metrics and the Leases in kube-system, nodes
 * with their Leases in kube-node-lease, and the lab page from /ui/api/labs.
 */
'use strict';

(function () {
  const TOKEN_KEY = 'kplane.token';
  let token = null;
  let page = null; // the current page: {stop()}

  // ---- small DOM helpers ----

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'data') Object.assign(e.dataset, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  const $ = (sel, root) => (root || document).querySelector(sel);
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function status(text) {
    $('#status').textContent = text || '';
  }

  function age(ts) {
    if (!ts) return '';
    const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
    if (s < 120) return s + 's';
    if (s < 7200) return Math.round(s / 60) + 'm';
    if (s < 172800) return Math.round(s / 3600) + 'h';
    return Math.round(s / 86400) + 'd';
  }

  function badge(text, kind) {
    return el('span', { class: 'badge' + (kind ? ' ' + kind : ''), text });
  }

  // Run fn at most every `ms` (the last call wins): renders after bursts of
  // watch events without redrawing per event.
  function throttle(fn, ms) {
    let timer = null;
    let pending = false;
    return function () {
      pending = true;
      if (timer) return;
      timer = setTimeout(function tick() {
        timer = null;
        if (!pending) return;
        pending = false;
        fn();
        timer = setTimeout(tick, ms);
      }, 0);
    };
  }

  // ---- the API ----

  class ApiError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  async function api(path, opts) {
    opts = opts || {};
    const headers = Object.assign({ Accept: 'application/json' }, opts.headers || {});
    headers.Authorization = 'Bearer ' + token;
    const res = await fetch(path, Object.assign({}, opts, { headers, cache: 'no-store' }));
    if (res.status === 401) {
      logout('The server did not accept the token (401 Unauthorized): log in again.');
      throw new ApiError(401, 'Unauthorized');
    }
    if (!res.ok) {
      let msg = res.status + ' ' + res.statusText;
      try {
        const j = await res.json();
        if (j && j.message) msg = j.message;
      } catch (e) {
        /* not a Status */
      }
      throw new ApiError(res.status, msg);
    }
    return res;
  }

  async function getJSON(path) {
    return (await api(path)).json();
  }

  function keyOf(o) {
    const m = o.metadata || {};
    return (m.namespace ? m.namespace + '/' : '') + m.name;
  }

  // A list, then a watch from its resourceVersion (again when the server
  // ends it), the list again after 410 Gone: Kubernetes' informer in a page.
  class Informer {
    constructor(path, onChange) {
      this.path = path;
      this.onChange = onChange;
      this.items = new Map();
      this.stopped = false;
      this.ctrl = null;
      this.error = null;
      this.synced = false;
    }
    start() {
      this.loop();
      return this;
    }
    stop() {
      this.stopped = true;
      if (this.ctrl) this.ctrl.abort();
    }
    async loop() {
      let rv = null;
      let backoff = 500;
      while (!this.stopped) {
        try {
          if (rv === null) {
            this.ctrl = new AbortController();
            const res = await api(this.path, { signal: this.ctrl.signal });
            const list = await res.json();
            this.items.clear();
            for (const o of list.items || []) this.items.set(keyOf(o), o);
            rv = list.metadata.resourceVersion;
            this.error = null;
            this.synced = true;
            this.onChange('LIST', null, this, list.items || []);
          }
          rv = await this.watch(rv);
          backoff = 500;
        } catch (e) {
          if (this.stopped || e.code === 401) return;
          if (e.code === 410) {
            rv = null;
            continue;
          }
          this.error = e;
          this.onChange('ERROR', null, this);
          await sleep(backoff);
          backoff = Math.min(backoff * 2, 10000);
          if (e.code === 403 || e.code === 404) rv = null;
        }
      }
    }
    async watch(rv) {
      this.ctrl = new AbortController();
      const sep = this.path.includes('?') ? '&' : '?';
      const res = await api(this.path + sep + 'watch=1&allowWatchBookmarks=true&resourceVersion=' +
        encodeURIComponent(rv), { signal: this.ctrl.signal });
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return rv;
        buf += dec.decode(value, { stream: true });
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const ev = JSON.parse(line);
          const o = ev.object || {};
          if (ev.type === 'ERROR') throw new ApiError(o.code || 500, o.message || 'watch error');
          if (o.metadata && o.metadata.resourceVersion) rv = o.metadata.resourceVersion;
          if (ev.type === 'BOOKMARK') continue;
          if (ev.type === 'DELETED') this.items.delete(keyOf(o));
          else this.items.set(keyOf(o), o);
          this.onChange(ev.type, o, this);
        }
      }
    }
  }

  // ---- login ----

  function takeFragmentToken() {
    const m = location.hash.match(/^#token=([^&]+)/);
    if (!m) return;
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    // The token leaves the address bar (and the history) at once.
    history.replaceState(null, '', location.pathname + location.search + '#/objects');
  }

  function showLogin(message) {
    if (page) page.stop();
    page = null;
    $('#main').hidden = true;
    $('#nav').hidden = true;
    $('#logout').hidden = true;
    $('#who').textContent = '';
    $('#login').hidden = false;
    $('#login-error').textContent = message || '';
    $('#token').focus();
  }

  function logout(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    token = null;
    showLogin(message);
  }

  async function login(t) {
    t = (t || '').trim();
    if (!t) {
      $('#login-error').textContent = 'Paste a token first.';
      return;
    }
    token = t;
    try {
      // Who the token is (SelfSubjectReview, kubectl auth whoami).
      const res = await api('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
      });
      const review = await res.json();
      const u = (review.status && review.status.userInfo) || {};
      sessionStorage.setItem(TOKEN_KEY, t);
      $('#who').textContent = u.username || '';
    } catch (e) {
      if (e.code === 401) return; // logout() said why
      // Another refusal: the token works, this user may not ask that.
      sessionStorage.setItem(TOKEN_KEY, t);
    }
    enter();
  }

  // A small YAML reader for kubeconfig files (block maps and sequences,
  // plain and quoted scalars, flow JSON): enough for what kubectl writes.
  function parseYaml(text) {
    const lines = text.split(/\r?\n/)
      .filter((l) => l.trim() && !/^\s*#/.test(l) && l.trim() !== '---');
    let i = 0;
    const indentOf = (l) => l.match(/^ */)[0].length;
    const isItem = (t) => t === '-' || t.startsWith('- ');
    function scalar(s) {
      s = s.trim();
      if (s.startsWith('"') && s.endsWith('"') && s.length > 1) return JSON.parse(s);
      if (s.startsWith("'") && s.endsWith("'") && s.length > 1) return s.slice(1, -1).replace(/''/g, "'");
      if (s === '' || s === '~' || s === 'null') return null;
      if (s.startsWith('{') || s.startsWith('[')) {
        try {
          return JSON.parse(s);
        } catch (e) {
          return s;
        }
      }
      return s.replace(/\s+#.*$/, '');
    }
    function block() {
      const l = lines[i];
      return isItem(l.trim()) ? seq(indentOf(l)) : map(indentOf(l));
    }
    function map(ind) {
      const o = {};
      while (i < lines.length) {
        const l = lines[i];
        const d = indentOf(l);
        const t = l.trim();
        if (d < ind || (d === ind && isItem(t))) break;
        if (d > ind) throw new Error('bad indentation: ' + t);
        const m = t.match(/^("(?:[^"\\]|\\.)*"|'[^']*'|[^:]+?):(?:\s+(.*))?$/);
        if (!m) throw new Error('not a kubeconfig line: ' + t.slice(0, 40));
        const key = scalar(m[1]);
        i++;
        if (m[2] !== undefined && m[2].trim() !== '') o[key] = scalar(m[2]);
        else if (i < lines.length && (indentOf(lines[i]) > ind ||
          (indentOf(lines[i]) === ind && isItem(lines[i].trim())))) o[key] = block();
        else o[key] = null;
      }
      return o;
    }
    function seq(ind) {
      const a = [];
      while (i < lines.length) {
        const l = lines[i];
        const t = l.trim();
        if (indentOf(l) !== ind || !isItem(t)) break;
        const rest = t === '-' ? '' : t.slice(2).trim();
        if (!rest) {
          i++;
          a.push(i < lines.length && indentOf(lines[i]) > ind ? block() : null);
        } else if (/^("(?:[^"\\]|\\.)*"|'[^']*'|[^"'{[][^:]*):(\s|$)/.test(rest)) {
          lines[i] = ' '.repeat(ind + 2) + rest; // "- key: v": a map at ind + 2
          a.push(map(ind + 2));
        } else {
          a.push(scalar(rest));
          i++;
        }
      }
      return a;
    }
    return lines.length ? block() : {};
  }

  function kubeconfigToken(text) {
    let kc;
    try {
      kc = JSON.parse(text);
    } catch (e) {
      kc = parseYaml(text);
    }
    const find = (list, name) => (list || []).find((x) => x && x.name === name);
    const ctx = find(kc.contexts, kc['current-context']);
    if (!ctx || !ctx.context) throw new Error('no current-context in this kubeconfig');
    const user = find(kc.users, ctx.context.user);
    if (!user || !user.user) throw new Error('no user "' + ctx.context.user + '" in this kubeconfig');
    if (user.user.token) return user.user.token;
    if (user.user['client-certificate-data'] || user.user['client-certificate'])
      throw new Error('this kubeconfig\'s user "' + ctx.context.user + '" signs in with a client ' +
        'certificate, which a page cannot use: paste a token instead (the data dir\'s admin-token)');
    throw new Error('this kubeconfig\'s user "' + ctx.context.user + '" has no token');
  }

  function setupLogin() {
    $('#login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      login($('#token').value);
    });
    $('#kubeconfig').addEventListener('change', async (ev) => {
      const f = ev.target.files[0];
      if (!f) return;
      try {
        login(kubeconfigToken(await f.text()));
      } catch (e) {
        $('#login-error').textContent = e.message;
      }
    });
    $('#logout').addEventListener('click', () => logout('Logged out.'));
  }

  // ---- pages ----

  const KINDS = [
    { id: 'deployments', path: '/apis/apps/v1/deployments', cols: [
      ['Ready', (o) => (o.status && o.status.readyReplicas || 0) + '/' + ((o.spec || {}).replicas ?? 1)],
      ['Up-to-date', (o) => (o.status && o.status.updatedReplicas) || 0],
      ['Available', (o) => (o.status && o.status.availableReplicas) || 0]] },
    { id: 'replicasets', path: '/apis/apps/v1/replicasets', cols: [
      ['Desired', (o) => (o.spec || {}).replicas ?? 1],
      ['Current', (o) => (o.status && o.status.replicas) || 0],
      ['Ready', (o) => (o.status && o.status.readyReplicas) || 0]] },
    { id: 'pods', path: '/api/v1/pods', cols: [
      ['Ready', podReady],
      ['Status', podStatus],
      ['Node', (o) => (o.spec && o.spec.nodeName) || ''],
      ['Restarts', (o) => ((o.status && o.status.containerStatuses) || [])
        .reduce((n, c) => n + (c.restartCount || 0), 0)]] },
    { id: 'nodes', path: '/api/v1/nodes', cols: [
      ['Status', (o) => nodeReady(o)],
      ['Taints', (o) => ((o.spec && o.spec.taints) || []).map(taintText).join(', ')]] },
    { id: 'services', path: '/api/v1/services', cols: [
      ['Type', (o) => (o.spec && o.spec.type) || ''],
      ['Cluster-IP', (o) => (o.spec && o.spec.clusterIP) || '']] },
    { id: 'jobs', path: '/apis/batch/v1/jobs', cols: [
      ['Completions', (o) => ((o.status && o.status.succeeded) || 0) + '/' + ((o.spec && o.spec.completions) ?? 1)],
      ['Active', (o) => (o.status && o.status.active) || 0]] },
    { id: 'statefulsets', path: '/apis/apps/v1/statefulsets', cols: [
      ['Ready', (o) => ((o.status && o.status.readyReplicas) || 0) + '/' + ((o.spec || {}).replicas ?? 1)]] },
    { id: 'daemonsets', path: '/apis/apps/v1/daemonsets', cols: [
      ['Desired', (o) => (o.status && o.status.desiredNumberScheduled) || 0],
      ['Ready', (o) => (o.status && o.status.numberReady) || 0]] },
    { id: 'configmaps', path: '/api/v1/configmaps', cols: [
      ['Data', (o) => Object.keys(o.data || {}).length]] },
    { id: 'namespaces', path: '/api/v1/namespaces', cols: [
      ['Status', (o) => (o.status && o.status.phase) || '']] },
    { id: 'leases', path: '/apis/coordination.k8s.io/v1/leases', cols: [
      ['Holder', (o) => (o.spec && o.spec.holderIdentity) || ''],
      ['Renewed', (o) => age(o.spec && o.spec.renewTime)]] },
    { id: 'events', path: '/api/v1/events', cols: [
      ['Type', (o) => o.type || ''],
      ['Reason', (o) => o.reason || ''],
      ['Object', (o) => o.involvedObject ? o.involvedObject.kind + '/' + o.involvedObject.name : ''],
      ['Message', (o) => o.message || '']] },
  ];

  function podReady(o) {
    const cs = (o.status && o.status.containerStatuses) || [];
    const n = ((o.spec && o.spec.containers) || []).length;
    return cs.filter((c) => c.ready).length + '/' + n;
  }
  function podStatus(o) {
    if (o.metadata && o.metadata.deletionTimestamp) return 'Terminating';
    const cs = (o.status && o.status.containerStatuses) || [];
    for (const c of cs) if (c.state && c.state.waiting && c.state.waiting.reason) return c.state.waiting.reason;
    return (o.status && o.status.phase) || 'Pending';
  }
  function condition(o, type) {
    return ((o.status && o.status.conditions) || []).find((c) => c.type === type);
  }
  function nodeReady(o) {
    const c = condition(o, 'Ready');
    if (!c) return 'Unknown';
    return c.status === 'True' ? 'Ready' : c.status === 'False' ? 'NotReady' : 'Unknown';
  }
  function taintText(t) {
    return t.key + (t.value ? '=' + t.value : '') + ':' + t.effect;
  }

  // Every other listable, watchable resource the server serves, from
  // discovery (the built-ins and the CustomResourceDefinitions' resources),
  // as kubectl finds them: /api/v1, then each group's preferred version.
  // Each gets the generic columns; an id is the resource, with its group
  // when it has one ("priorityclasses.scheduling.k8s.io"), as kubectl's
  // resource.group names it. Asked once per page load.
  let discovered = null;
  function discover() {
    if (discovered) return discovered;
    const fromList = (gv, list) => (list.resources || [])
      .filter((r) => !r.name.includes('/') && (r.verbs || []).includes('list') &&
        (r.verbs || []).includes('watch'))
      .map((r) => {
        const group = gv.includes('/') ? gv.split('/')[0] : '';
        return { id: group ? r.name + '.' + group : r.name,
          path: (group ? '/apis/' : '/api/') + gv + '/' + r.name, cols: [] };
      });
    discovered = (async () => {
      const found = fromList('v1', await getJSON('/api/v1'));
      const groups = (await getJSON('/apis')).groups || [];
      const lists = await Promise.all(groups.map((g) => {
        const gv = (g.preferredVersion || g.versions[0]).groupVersion;
        return getJSON('/apis/' + gv).then((l) => fromList(gv, l), () => []);
      }));
      for (const l of lists) found.push(...l);
      const featured = new Set(KINDS.map((k) => k.path));
      return found.filter((k) => !featured.has(k.path)).sort((a, b) => a.id.localeCompare(b.id));
    })();
    discovered.catch(() => { discovered = null; }); /* asked again next time */
    return discovered;
  }

  // Objects by kind, as they change, shown once discovery has answered (the
  // menu is made from it; a featured kind shows even if it fails).
  function objectsPage(main, arg) {
    let inner = null, stopped = false;
    const known = KINDS.find((k) => k.id === arg);
    const show = (kind, more) => {
      if (!stopped) inner = objectsOf(main, kind, more);
    };
    discover().then((more) => show(known || more.find((k) => k.id === arg) || KINDS[0], more),
      () => show(known || KINDS[0], []));
    return { stop() { stopped = true; if (inner) inner.stop(); } };
  }

  function objectsOf(main, kind, more) {
    const flashed = new Map(); // key -> time of its last change
    const count = el('span', { class: 'count', id: 'count' });
    const filter = el('input', { type: 'search', placeholder: 'filter by name or namespace', id: 'filter' });
    const table = el('table', { class: 'grid', id: 'objects', data: { kind: kind.id } });
    const err = el('p', { class: 'error' });
    const others = el('select', { id: 'more-kinds', class: more.includes(kind) ? 'active' : '',
      onchange: () => { if (others.value) location.hash = '#/objects/' + others.value; } },
    el('option', { value: '', text: 'more: ' + more.length + ' resources' }),
    more.map((k) => el('option', { value: k.id, text: k.id, selected: k === kind ? '' : undefined })));
    main.append(
      el('div', { class: 'kinds' }, KINDS.map((k) =>
        el('button', { class: k === kind ? 'active' : '', type: 'button', data: { kind: k.id },
          onclick: () => { location.hash = '#/objects/' + k.id; } }, k.id)), others),
      el('div', { class: 'toolbar' }, el('h1', { text: kind.id }), count, filter), err, table);
    const render = throttle(() => {
      const f = filter.value.trim();
      const rows = [...inf.items.values()]
        .filter((o) => !f || keyOf(o).includes(f))
        .sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
      count.textContent = rows.length + ' ' + kind.id;
      count.dataset.n = rows.length;
      const now = Date.now();
      table.replaceChildren(
        el('thead', {}, el('tr', {}, ['Namespace', 'Name', ...kind.cols.map((c) => c[0]), 'Age', 'RV']
          .map((h) => el('th', { text: h })))),
        el('tbody', {}, rows.map((o) => {
          const m = o.metadata || {};
          const tr = el('tr', { data: { name: keyOf(o) } },
            el('td', { text: m.namespace || '' }),
            el('td', { text: m.name }),
            kind.cols.map((c) => el('td', { data: { col: c[0] }, text: String(c[1](o)) })),
            el('td', { text: age(m.creationTimestamp) }),
            el('td', { class: 'mono', text: m.resourceVersion || '' }));
          if (now - (flashed.get(keyOf(o)) || 0) < 600) tr.className = 'flash';
          return tr;
        })));
      err.textContent = inf.error ? 'watch: ' + inf.error.message + ' (retrying)' : '';
    }, 200);
    const inf = new Informer(kind.path, (type, o) => {
      if (o) flashed.set(keyOf(o), Date.now());
      render();
    }).start();
    filter.addEventListener('input', render);
    const tick = setInterval(render, 5000);
    return { stop() { inf.stop(); clearInterval(tick); } };
  }

  // The history: every write the watches see, newest first, as the
  // cluster's one sequence of revisions. Who wrote is the managedFields
  // entry with the latest time (its manager, operation and subresource).
  const HISTORY_KINDS = ['deployments', 'replicasets', 'pods', 'services', 'jobs', 'statefulsets',
    'daemonsets', 'configmaps', 'namespaces'];
  const HEARTBEAT_KINDS = ['nodes', 'leases'];
  const HISTORY_MAX = 2000;

  function lastWriter(o) {
    const mf = (o.metadata && o.metadata.managedFields) || [];
    let best = null;
    for (const e of mf) if (!best || (e.time || '') >= (best.time || '')) best = e;
    return best;
  }

  function historyPage(main) {
    const entries = []; // newest first
    const seen = new Set(); // kind + rv + key
    const list = el('ul', { class: 'timeline', id: 'timeline' });
    const mgrSel = el('select', {}, el('option', { value: '', text: 'every manager' }));
    const beats = el('input', { type: 'checkbox', id: 'beats' });
    const count = el('span', { class: 'count' });
    main.append(el('h1', { text: 'History' }),
      el('p', { class: 'muted', text: 'Each write the watches see, newest first: its resourceVersion ' +
        '(kplane\'s global revision: one ordered history), the field manager that wrote it and how ' +
        '(from metadata.managedFields), and the object.' }),
      el('div', { class: 'toolbar' }, mgrSel,
        el('label', {}, beats, ' node heartbeats (nodes, leases)'), count), list);
    const managers = new Set();
    let infs = [];

    function add(kind, type, o, listed) {
      const m = o.metadata || {};
      const rv = Number(m.resourceVersion || 0);
      const id = kind + '/' + keyOf(o) + '@' + rv + type;
      if (seen.has(id)) return;
      seen.add(id);
      const w = lastWriter(o) || {};
      const e = { rv, type: listed ? 'LISTED' : type, kind, key: keyOf(o), manager: w.manager || '',
        operation: w.operation || '', sub: w.subresource || '', time: w.time || m.creationTimestamp || '',
        mf: m.managedFields || [] };
      if (e.manager && !managers.has(e.manager)) {
        managers.add(e.manager);
        mgrSel.append(el('option', { value: e.manager, text: e.manager }));
      }
      // Insert in revision order (events of different watches interleave).
      let i = 0;
      while (i < entries.length && entries[i].rv > rv) i++;
      entries.splice(i, 0, e);
      if (entries.length > HISTORY_MAX) entries.length = HISTORY_MAX;
    }

    const render = throttle(() => {
      const only = mgrSel.value;
      const shown = entries.filter((e) => !only || e.manager === only).slice(0, 500);
      count.textContent = entries.length + ' writes seen' + (shown.length < entries.length ? ', ' + shown.length + ' shown' : '');
      list.replaceChildren(
        el('li', { class: 'head' }, ['Revision', 'Time', 'Manager', 'Operation', 'Event', 'Object']
          .map((h) => el('span', { text: h }))),
        ...shown.map((e) => el('li', { data: { rv: e.rv, manager: e.manager } },
          el('span', { class: 'rv', text: e.rv }),
          el('span', { class: 'muted', text: e.time ? new Date(e.time).toLocaleTimeString() : '' }),
          el('span', { class: 'mgr', title: e.manager, text: e.manager || '(none recorded)' }),
          el('span', { text: e.operation + (e.sub ? ' /' + e.sub : '') }),
          el('span', {}, badge(e.type, e.type === 'DELETED' ? 'bad' : e.type === 'ADDED' ? 'ok' : '')),
          el('details', {}, el('summary', { text: e.kind + ' ' + e.key }),
            el('pre', { text: e.mf.map((f) => f.manager + ' ' + f.operation + (f.subresource ? ' /' + f.subresource : '') +
              ' ' + (f.time || '')).join('\n') || 'no managedFields' })))));
    }, 300);

    function start() {
      infs.forEach((i) => i.stop());
      const kinds = HISTORY_KINDS.concat(beats.checked ? HEARTBEAT_KINDS : []);
      infs = kinds.map((id) => {
        const k = KINDS.find((x) => x.id === id);
        return new Informer(k.path, (type, o, inf, items) => {
          if (type === 'LIST') items.forEach((x) => add(id, 'ADDED', x, true));
          else if (o) add(id, type, o, false);
          render();
        }).start();
      });
    }
    mgrSel.addEventListener('change', render);
    beats.addEventListener('change', start);
    start();
    return { stop() { infs.forEach((i) => i.stop()); } };
  }

  // Prometheus text: [{name, labels, value}].
  function parseProm(text) {
    const out = [];
    for (const line of text.split('\n')) {
      if (!line || line[0] === '#') continue;
      const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/);
      if (!m) continue;
      const labels = {};
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let l;
      while ((l = re.exec(m[2] || '')))
        labels[l[1]] = l[2].replace(/\\(.)/g, (s, c) => (c === 'n' ? '\n' : c));
      out.push({ name: m[1], labels, value: Number(m[3]) });
    }
    return out;
  }

  // Each controller: its queue depth, sync rate (from the sync count's
  // deltas), errors, last error and last success; the leaders from the
  // Leases in kube-system.
  function controllersPage(main) {
    const table = el('table', { class: 'grid', id: 'controllers' });
    const leaders = el('table', { class: 'grid', id: 'leaders' });
    const err = el('p', { class: 'error' });
    main.append(el('h1', { text: 'Controllers' }),
      el('p', { class: 'muted', text: 'From /metrics every 2 s: the work queue, syncs per second, ' +
        'failed syncs and the last failure, of the controllers kplane server runs in its own process.' }),
      err, table, el('h2', { text: 'Leaders (Leases in kube-system)' }), leaders);
    let prev = null;
    let stopped = false;
    const rates = {};

    async function poll() {
      while (!stopped) {
        try {
          const text = await (await api('/metrics', { headers: { Accept: 'text/plain' } })).text();
          const now = Date.now() / 1000;
          const c = {};
          const get = (n) => (c[n] = c[n] || { name: n, depth: 0, adds: 0, syncs: 0, errors: 0, ok: 0, lastErr: null });
          for (const s of parseProm(text)) {
            if (s.name === 'workqueue_depth') get(s.labels.name).depth = s.value;
            else if (s.name === 'workqueue_adds_total') get(s.labels.name).adds = s.value;
            else if (s.name === 'controller_sync_duration_seconds_count') get(s.labels.controller).syncs = s.value;
            else if (s.name === 'controller_sync_errors_total') get(s.labels.controller).errors = s.value;
            else if (s.name === 'controller_last_successful_sync_timestamp_seconds') get(s.labels.controller).ok = s.value;
            else if (s.name === 'controller_last_error_info') get(s.labels.controller).lastErr = { message: s.labels.message, at: s.value };
          }
          if (prev) {
            const dt = now - prev.t;
            for (const n of Object.keys(c)) {
              const before = prev.c[n];
              if (before && dt > 0) rates[n] = Math.max(0, (c[n].syncs - before.syncs) / dt);
            }
          }
          prev = { t: now, c };
          const names = Object.keys(c).sort();
          const maxDepth = Math.max(1, ...names.map((n) => c[n].depth));
          table.replaceChildren(
            el('thead', {}, el('tr', {}, ['Controller', 'Queue depth', 'Syncs/s', 'Syncs', 'Errors',
              'Last success', 'Last error'].map((h) => el('th', { text: h })))),
            el('tbody', {}, names.map((n) => {
              const x = c[n];
              return el('tr', { data: { name: n } },
                el('td', { text: n }),
                el('td', { data: { col: 'depth' } }, el('span', { class: 'bar' }), ' ', String(x.depth)),
                el('td', { data: { col: 'rate' }, text: rates[n] === undefined ? '…' : rates[n].toFixed(1) }),
                el('td', { text: x.syncs }),
                el('td', {}, x.errors ? badge(String(x.errors), 'warn') : '0'),
                el('td', { text: x.ok ? age(new Date(x.ok * 1000).toISOString()) + ' ago' : 'never' }),
                el('td', { class: 'mono', title: x.lastErr ? x.lastErr.message : '' },
                  x.lastErr ? age(new Date(x.lastErr.at * 1000).toISOString()) + ' ago: ' + x.lastErr.message : ''));
            })));
          // Bars: CSSOM (allowed by the page's CSP), not style attributes.
          table.querySelectorAll('td[data-col=depth] .bar').forEach((b, i) => {
            b.style.width = Math.round(80 * c[names[i]].depth / maxDepth) + 'px';
          });
          if (!names.length) table.replaceChildren(el('tr', {}, el('td', { text: 'No controller metrics: ' +
            'this server runs no controllers in its process (kplane apiserver, or --no-controllers).' })));
          err.textContent = '';
        } catch (e) {
          if (e.code === 401) return;
          err.textContent = '/metrics: ' + e.message;
        }
        await sleep(2000);
      }
    }
    poll();
    const renderLeaders = throttle(() => {
      const rows = [...inf.items.values()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
      leaders.replaceChildren(
        el('thead', {}, el('tr', {}, ['Lease', 'Holder', 'Renewed', 'Duration', 'Transitions']
          .map((h) => el('th', { text: h })))),
        el('tbody', {}, rows.length ? rows.map((o) => {
          const s = o.spec || {};
          const late = s.renewTime && (Date.now() - Date.parse(s.renewTime)) / 1000 > (s.leaseDurationSeconds || 15);
          return el('tr', { data: { name: o.metadata.name } },
            el('td', { text: o.metadata.name }),
            el('td', { text: s.holderIdentity || '' }),
            el('td', {}, badge(age(s.renewTime) + ' ago', late ? 'bad' : 'ok')),
            el('td', { text: (s.leaseDurationSeconds || '') + 's' }),
            el('td', { text: s.leaseTransitions || 0 }));
        }) : el('tr', {}, el('td', { colspan: '5', text: inf.error ? inf.error.message : 'No leases: components that ' +
          'run in kplane server\'s process do not elect a leader; those run with --leader-elect do.' }))));
    }, 300);
    const inf = new Informer('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases', renderLeaders).start();
    const tick = setInterval(renderLeaders, 1000);
    return { stop() { stopped = true; inf.stop(); clearInterval(tick); } };
  }

  // Nodes with their heartbeats (Leases in kube-node-lease) and taints.
  function nodesPage(main) {
    const table = el('table', { class: 'grid', id: 'nodes' });
    const count = el('span', { class: 'count' });
    main.append(el('div', { class: 'toolbar' }, el('h1', { text: 'Nodes' }), count),
      el('p', { class: 'muted', text: 'A node agent renews its Lease in kube-node-lease every few ' +
        'seconds (its heartbeat); the node lifecycle controller marks a node whose Lease goes ' +
        'stale Unknown and taints it unreachable.' }), table);
    const render = throttle(() => {
      const nodes = [...nodes_.items.values()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
      const perNode = {};
      for (const p of pods.items.values()) {
        const n = p.spec && p.spec.nodeName;
        if (n) perNode[n] = (perNode[n] || 0) + 1;
      }
      count.textContent = nodes.length + ' nodes';
      table.replaceChildren(
        el('thead', {}, el('tr', {}, ['Node', 'Status', 'Heartbeat', 'Lease holder', 'Taints', 'Pods',
          'Capacity'].map((h) => el('th', { text: h })))),
        el('tbody', {}, nodes.map((o) => {
          const lease = leases.items.get('kube-node-lease/' + o.metadata.name);
          const ls = (lease && lease.spec) || {};
          const since = ls.renewTime ? (Date.now() - Date.parse(ls.renewTime)) / 1000 : Infinity;
          const ready = nodeReady(o);
          const cap = (o.status && o.status.capacity) || {};
          return el('tr', { data: { name: o.metadata.name } },
            el('td', { text: o.metadata.name }),
            el('td', {}, badge(ready, ready === 'Ready' ? 'ok' : 'bad'),
              o.spec && o.spec.unschedulable ? badge('SchedulingDisabled', 'warn') : null),
            el('td', { data: { col: 'heartbeat' } }, lease ? badge(Math.round(since) + 's ago',
              since > (ls.leaseDurationSeconds || 40) ? 'bad' : 'ok') : badge('no lease', 'warn')),
            el('td', { text: ls.holderIdentity || '' }),
            el('td', { class: 'mono', text: ((o.spec && o.spec.taints) || []).map(taintText).join('\n') }),
            el('td', { text: perNode[o.metadata.name] || 0 }),
            el('td', { text: (cap.cpu || '') + ' cpu, ' + (cap.memory || '') + ', ' + (cap.pods || '') + ' pods' }));
        })));
    }, 300);
    const nodes_ = new Informer('/api/v1/nodes', render).start();
    const leases = new Informer('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', render).start();
    const pods = new Informer('/api/v1/pods', render).start();
    const tick = setInterval(render, 1000);
    return { stop() { nodes_.stop(); leases.stop(); pods.stop(); clearInterval(tick); } };
  }

  // The lab page: the labs, a Run button, and the run's tables filling in
  // from its `@lab {...}` lines (src/lab/lab.h).
  function labPage(main) {
    const list = el('table', { class: 'grid lab-list', id: 'labs' });
    const note = el('p', { class: 'muted' });
    const runHead = el('h2', {});
    const verdict = el('p', { id: 'lab-verdict' });
    const says = el('ul', { class: 'lab-say', id: 'lab-say' });
    const tables = el('div', { id: 'lab-tables' });
    const output = el('pre', { class: 'output', id: 'lab-output' });
    main.append(el('h1', { text: 'Lab' }), note, list, runHead, verdict, says, tables,
      el('details', {}, el('summary', { text: 'Full output' }), output));
    let stopped = false;
    let polling = false;
    let run = null; // {offset, dec, partial, table}

    function reset(name) {
      run = { offset: 0, dec: new TextDecoder(), partial: '', table: null };
      runHead.textContent = 'Run: ' + name;
      verdict.textContent = '';
      verdict.className = '';
      says.replaceChildren();
      tables.replaceChildren();
      output.textContent = '';
    }

    function event(ev) {
      if ('say' in ev) says.append(el('li', { text: ev.say }));
      else if ('table' in ev) {
        const t = el('table', { class: 'grid lab-table filling', data: { table: ev.table } },
          el('caption', { text: ev.table }),
          el('thead', {}, el('tr', {}, (ev.columns || []).map((c) => el('th', { text: c })))),
          el('tbody', {}));
        run.table = t;
        tables.append(t);
      } else if ('row' in ev) {
        if (!run.table) return;
        $('tbody', run.table).append(el('tr', {}, (ev.row || []).map((c) => el('td', { text: String(c) }))));
      } else if ('end' in ev) {
        if (run.table) run.table.classList.remove('filling');
        run.table = null;
      } else if ('done' in ev) {
        verdict.textContent = ev.done ? 'The lab finished.' : 'The lab failed: ' + (ev.error || 'see its output');
        verdict.className = ev.done ? '' : 'error';
      }
    }

    function feed(text) {
      run.partial += text;
      let nl;
      while ((nl = run.partial.indexOf('\n')) >= 0) {
        const line = run.partial.slice(0, nl);
        run.partial = run.partial.slice(nl + 1);
        if (line.startsWith('@lab ')) {
          try {
            event(JSON.parse(line.slice(5)));
          } catch (e) {
            output.append(line + '\n');
          }
        } else {
          output.append(line + '\n');
        }
      }
    }

    async function poll(name) {
      if (polling) return;
      polling = true;
      reset(name);
      try {
        while (!stopped) {
          const res = await api('/ui/api/labs/run?offset=' + run.offset, { headers: { Accept: 'text/plain' } });
          const bytes = new Uint8Array(await res.arrayBuffer());
          const state = res.headers.get('X-Kplane-Lab-State');
          run.offset = Number(res.headers.get('X-Kplane-Lab-Next') || run.offset + bytes.length);
          if (bytes.length) feed(run.dec.decode(bytes, { stream: true }));
          const secs = res.headers.get('X-Kplane-Lab-Seconds');
          runHead.textContent = 'Run: ' + (res.headers.get('X-Kplane-Lab') || name) + ' (' + state + ', ' + secs + ' s)';
          if (state !== 'running' && !bytes.length) {
            const code = Number(res.headers.get('X-Kplane-Lab-Exit'));
            if (!verdict.textContent) {
              verdict.textContent = code === 0 ? 'The lab finished.' : 'The lab ended with exit status ' + code + '.';
              verdict.className = code === 0 ? '' : 'error';
            }
            if (res.headers.get('X-Kplane-Lab-Truncated') === '1')
              output.append('\n(output past 1 MiB was dropped)\n');
            break;
          }
          if (!bytes.length) await sleep(500);
        }
      } catch (e) {
        if (e.code !== 401) verdict.textContent = e.message;
      } finally {
        polling = false;
        loadList();
      }
    }

    async function start(name) {
      try {
        await api('/ui/api/labs/' + encodeURIComponent(name) + '/run', { method: 'POST' });
        poll(name);
        loadList(); // the Run buttons wait for this run
      } catch (e) {
        note.textContent = e.message;
        note.className = 'error';
      }
    }

    async function loadList() {
      try {
        const doc = await getJSON('/ui/api/labs');
        const running = doc.state === 'running';
        note.className = 'muted';
        note.textContent = !doc.enabled
          ? 'This server does not run labs: they run only in kplane server on loopback (--enable-labs).'
          : !doc.labs.length ? 'This kplane has no labs yet.'
          : 'Each lab runs as `kplane lab run NAME`, a child of the API server: one at a time.';
        list.replaceChildren(
          el('thead', {}, el('tr', {}, ['Lab', 'Seed', 'What it shows', ''].map((h) => el('th', { text: h })))),
          el('tbody', {}, doc.labs.map((l) => el('tr', { data: { lab: l.name } },
            el('td', { text: l.name }),
            el('td', { text: l.seed }),
            el('td', {}, l.title, l.needs ? el('span', { class: 'muted', text: ' (needs ' + l.needs + ')' }) : null),
            el('td', {}, el('button', { type: 'button', class: 'primary', data: { run: l.name },
              disabled: !doc.enabled || running || polling ? '' : null, onclick: () => start(l.name) }, 'Run'))))));
        if (doc.last && !polling && !run) poll(doc.last); // a run going or done: show it
      } catch (e) {
        if (e.code !== 401) {
          note.textContent = e.code === 403 ? 'You may not run labs (403): ' + e.message : e.message;
          note.className = 'error';
        }
      }
    }
    loadList();
    return { stop() { stopped = true; } };
  }

  const PAGES = { objects: objectsPage, history: historyPage, controllers: controllersPage,
    nodes: nodesPage, lab: labPage };

  function route() {
    if (!token) return;
    const m = location.hash.match(/^#\/([a-z]+)(?:\/([a-z0-9.-]+))?/);
    const name = m && PAGES[m[1]] ? m[1] : 'objects';
    if (page) page.stop();
    const main = $('#main');
    main.replaceChildren();
    document.querySelectorAll('#nav a').forEach((a) =>
      a.classList.toggle('active', a.dataset.page === name));
    page = PAGES[name](main, m && m[2]);
    status('');
  }

  function enter() {
    $('#login').hidden = true;
    $('#main').hidden = false;
    $('#nav').hidden = false;
    $('#logout').hidden = false;
    $('#token').value = '';
    route();
  }

  function boot() {
    takeFragmentToken();
    setupLogin();
    window.addEventListener('hashchange', () => {
      if (/^#token=/.test(location.hash)) {
        takeFragmentToken();
        token = sessionStorage.getItem(TOKEN_KEY);
        login(token);
        return;
      }
      route();
    });
    const t = sessionStorage.getItem(TOKEN_KEY);
    if (t) login(t);
    else showLogin('');
  }

  boot();
})();
