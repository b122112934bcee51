// Trellis dashboard: plain JavaScript, no build step. Every read and action goes through
// /api/v1 with the key from the sign-in form (session storage); the page shows only the
// actions the key's role allows (GET /api/v1/whoami), and the API refuses the rest.
'use strict';

const KEY = 'trellis.key';
// task statuses in lifecycle order (the domain's TaskStatus::ALL)
const TASK_STATUSES = ['pending', 'planning', 'running', 'reflecting', 'replanning', 'evaluating', 'succeeded', 'failed', 'needs_intervention', 'cancelled'];
const TERMINAL = ['succeeded', 'failed', 'cancelled'];
const state = { role: null, stream: null };
const OPERATOR = () => state.role === 'operator' || state.role === 'admin';

// ---- DOM helpers (text is always set as text: nothing the API returns is parsed as HTML)
function h(tag, attrs, ...children) {
  const svg = ['svg', 'g', 'rect', 'text', 'path', 'line', 'title'].includes(tag);
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const $ = (id) => document.getElementById(id);
// replace an element's children, leaving out the absent ones
const fill = (el, ...nodes) => el.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
const status = (s) => h('span', { class: `status ${s}`, 'data-status': s }, s);
const when = (t) => (t ? new Date(t).toLocaleString() : '');
const json = (v) => h('pre', {}, JSON.stringify(v, null, 2));
const collapsible = (label, v) => (v === null || v === undefined ? null : h('details', {}, h('summary', {}, label), json(v)));

// ---- the API
class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
  }
}
function headers(extra) {
  const k = sessionStorage.getItem(KEY);
  return Object.assign(k ? { Authorization: `Bearer ${k}` } : {}, extra || {});
}
async function api(path, opts = {}) {
  const init = { method: opts.method || 'GET', headers: headers(opts.body !== undefined ? { 'Content-Type': 'application/json' } : {}) };
  if (opts.body !== undefined) init.body = JSON.stringify(opts.body);
  const r = await fetch(`api/v1${path}`, init);
  const text = await r.text();
  const body = text ? JSON.parse(text) : null;
  if (r.status === 401) { signOut('Your key was refused: sign in again.'); throw new ApiError(401, body); }
  if (!r.ok) throw new ApiError(r.status, body);
  return body;
}

// ---- sign-in
function signOut(message) {
  sessionStorage.removeItem(KEY);
  state.role = null;
  stopStream();
  $('nav').hidden = true; $('signout').hidden = true; $('who').textContent = '';
  fill($('view'), );
  $('signin').hidden = false;
  $('signin-error').textContent = message || '';
  $('key').focus();
}
async function start() {
  if (document.body.dataset.accessControl === 'on' && !sessionStorage.getItem(KEY)) { signOut(); return; }
  try {
    const me = await api('/whoami');
    state.role = me.role;
    $('signin').hidden = true; $('nav').hidden = false;
    $('signout').hidden = !me.access_control;
    $('who').textContent = me.access_control ? `signed in as ${me.role}` : 'access control off';
    route();
  } catch (e) {
    if (e.status !== 401) fill($('view'), h('p', { class: 'error' }, e.message));
  }
}
$('signin').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(KEY, $('key').value.trim());
  $('key').value = '';
  start();
});
$('signout').addEventListener('click', () => signOut());

// ---- routing: #/, #/tasks, #/tasks/<id>, #/bulk, #/approvals, #/schedules, #/recovery, #/tools, #/workers
const views = { '': overview, tasks, bulk: bulkActions, approvals, schedules, recovery, tools, workers };
async function route() {
  if (!state.role) return;
  stopStream();
  const [, path, id] = (location.hash || '#/').split('/');
  const page = (path || '').split('?')[0];
  // a fresh container per visit: a slower render of the page left behind fills a detached one
  const view = h('div', {});
  fill($('view'), view);
  try {
    if (page === 'tasks' && id) await task(view, decodeURIComponent(id));
    else await (views[page] || overview)(view);
  } catch (e) {
    if (e.status !== 401) fill(view, h('p', { class: 'error', role: 'alert' }, e.message));
  }
}
window.addEventListener('hashchange', route);

// pages that redraw themselves every few seconds while open and visible (cheap reads only)
const REFRESH_MS = 5000;
function every(view, redraw) {
  const tick = async () => {
    if (!view.isConnected) return; // another page was opened
    if (!document.hidden) {
      try { await redraw(); } catch (e) { if (e.status === 401) return; }
    }
    setTimeout(tick, REFRESH_MS);
  };
  setTimeout(tick, REFRESH_MS);
}
const updated = () => h('p', { class: 'muted', id: 'updated', 'data-at': String(performance.now()) }, `Updated ${new Date().toLocaleTimeString()}; refreshes every ${REFRESH_MS / 1000} s.`);

// ---- overview
async function overview(view) {
  await drawOverview(view);
  every(view, () => drawOverview(view));
}
async function drawOverview(view) {
  // every read here costs what the live work and the last hour cost, never the whole history
  const [fleet, act] = await Promise.all([api('/workers'), api('/stats/activity')]);
  const count = (n) => (n > act.recent_cap ? `${act.recent_cap.toLocaleString('en')}+` : n.toLocaleString('en'));
  const inOrder = (counts) => Object.entries(counts).sort(([a], [b]) => TASK_STATUSES.indexOf(a) - TASK_STATUSES.indexOf(b));
  const cards = (id, counts) => h('div', { class: 'cards', id }, inOrder(counts).map(([k, n]) => h('div', { class: 'card', 'data-count-of': k }, h('b', {}, count(n)), status(k))));
  const top = act.tools.filter((t) => t.failed > 0).sort((a, b) => b.failed - a.failed).slice(0, 5);
  const lag = act.queue.length ? Math.max(...act.queue.map((q) => q.oldest_ready_secs)) : 0;
  const sum = (key) => act.queue.reduce((n, q) => n + q[key], 0);
  fill(view,
    h('h1', {}, 'Overview'), updated(),
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('b', { id: 'queue-lag' }, `${lag.toFixed(1)} s`), 'queue lag (oldest ready step)'),
      h('div', { class: 'card' }, h('b', {}, sum('ready')), 'steps ready'),
      h('div', { class: 'card' }, h('b', {}, sum('running')), 'steps running'),
      h('div', { class: 'card' }, h('b', {}, act.workers), `live workers, ${act.in_flight} in flight`),
      // a transaction held open for minutes keeps every dead row (docs/sql-reporting.md, "Long reports")
      h('div', { class: act.oldest_transaction_secs >= 60 ? 'card warn' : 'card', title: 'VACUUM cannot remove rows changed after the oldest open transaction began; run long reports on a replica' },
        h('b', { id: 'oldest-transaction' }, `${act.oldest_transaction_secs.toFixed(0)} s`), 'oldest open transaction')),
    h('h2', {}, 'Steps per second and failures, last hour'), activityChart(act.minutes),
    h('h2', {}, 'Unfinished tasks'), cards('unfinished-tasks', act.unfinished_tasks),
    h('h2', {}, 'Tasks submitted in the last hour, by status now'), cards('recent-tasks', act.recent_tasks),
    h('h2', {}, 'Queue by tool'), act.queue.length
      ? table(['tool', 'ready', 'running', 'oldest ready waited'], act.queue.map((q) => [q.tool, q.ready, q.running, `${q.oldest_ready_secs.toFixed(1)} s`]))
      : h('p', { class: 'muted' }, 'Nothing queued.'),
    h('h2', {}, 'Queue by concurrency key'), act.queue_by_key.length
      ? table(['key', 'ready', 'running'], act.queue_by_key.map((k) => [k.key === '' ? '(no key)' : k.key, k.ready, k.running]), { id: 'queue-by-key' })
      : h('p', { class: 'muted' }, 'Nothing queued.'),
    h('h2', {}, 'Queue by tenant'), act.queue_by_tenant.length
      ? table(['tenant', 'ready', 'running'], act.queue_by_tenant.map((k) => [k.key, k.ready, k.running]), { id: 'queue-by-tenant' })
      : h('p', { class: 'muted' }, 'Nothing queued.'),
    h('h2', {}, `Workers (${fleet.length})`), workerTable(fleet),
    h('h2', {}, 'Most failing tools, last hour'),
    top.length ? table(['tool', 'failed attempts', 'of attempts'], top.map((t) => [t.tool, t.failed, t.attempts])) : h('p', { class: 'muted' }, 'No failures in the last hour.'),
  );
}
// a bar per minute of the last hour: succeeded attempts (green) under failed ones (red)
function activityChart(minutes) {
  const W = 720; const H = 140; const now = Date.now();
  const slot = (W - 40) / 60;
  const peak = Math.max(1, ...minutes.map((m) => m.succeeded + m.failed));
  const bars = minutes.flatMap((m) => {
    const age = Math.floor((now - Date.parse(m.minute)) / 60000);
    if (age < 0 || age > 59) return [];
    const x = 40 + (59 - age) * slot;
    const ok = (m.succeeded / peak) * (H - 30); const bad = (m.failed / peak) * (H - 30);
    return [
      h('rect', { class: 'bar succeeded', 'data-minute': m.minute, x, y: H - 20 - ok, width: slot - 1, height: ok }, h('title', {}, `${new Date(m.minute).toLocaleTimeString()}: ${(m.succeeded / 60).toFixed(2)} steps/s, ${m.failed} failed`)),
      h('rect', { class: 'bar failed', x, y: H - 20 - ok - bad, width: slot - 1, height: bad }),
    ];
  });
  const total = minutes.reduce((n, m) => n + m.succeeded, 0);
  return h('div', { class: 'scroll' }, h('svg', { id: 'activity', role: 'img', 'aria-label': `${total} attempts succeeded in the last hour`, width: W, height: H },
    h('text', { x: 0, y: 12 }, `${(peak / 60).toFixed(2)}/s`), h('text', { x: 0, y: H - 22 }, '0'),
    h('text', { x: 40, y: H - 4 }, '−60 min'), h('text', { x: W - 40, y: H - 4 }, 'now'),
    h('line', { x1: 38, y1: H - 20, x2: W, y2: H - 20, stroke: '#999' }), bars));
}
function table(head, rows, attrs) {
  return h('div', { class: 'scroll' }, h('table', attrs || {}, h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map((r) => (r instanceof Node ? r : h('tr', {}, r.map((c) => h('td', {}, c))))))));
}

// ---- tasks
async function tasks(view) {
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  const st = params.get('status') || '';
  const text = params.get('q') || '';
  const since = params.get('since') || '';
  const query = new URLSearchParams({ limit: 50 });
  for (const k of ['status', 'q', 'since', 'before']) if (params.get(k)) query.set(k, params.get(k));
  const list = await api(`/tasks?${query}`);
  const go = (changes) => {
    const next = new URLSearchParams(params);
    next.delete('before');
    for (const [k, v] of Object.entries(changes)) { if (v) next.set(k, v); else next.delete(k); }
    location.hash = `#/tasks?${next}`;
  };
  const search = h('input', { id: 'text-filter', type: 'search', value: text, placeholder: 'description contains…', 'aria-label': 'description contains', maxlength: 200, onchange: (e) => go({ q: e.target.value.trim() }) });
  const sinceBox = h('input', { id: 'since-filter', type: 'datetime-local', 'aria-label': 'submitted since', value: since ? new Date(since).toISOString().slice(0, 16) : '', onchange: (e) => go({ since: e.target.value ? new Date(e.target.value).toISOString() : '' }) });
  const filter = h('select', { id: 'status-filter', 'aria-label': 'status filter', onchange: (e) => go({ status: e.target.value }) },
    h('option', { value: '' }, 'any status'),
    TASK_STATUSES.map((s) => h('option', { value: s, selected: s === st }, s)));
  const selected = new Set();
  const rows = list.map((t) => h('tr', { 'data-task': t.task_id },
    OPERATOR() ? h('td', {}, h('input', { type: 'checkbox', 'aria-label': `select ${t.task_id}`, onchange: (e) => (e.target.checked ? selected.add(t.task_id) : selected.delete(t.task_id)) })) : null,
    h('td', {}, h('a', { href: `#/tasks/${t.task_id}` }, t.description || t.task_id)),
    h('td', {}, status(t.status)),
    h('td', { class: 'hide-narrow' }, when(t.created_at))));
  // the selected tasks, or every task the filter matches, through one bulk action the workers
  // apply in batches; its progress shows until it ends
  const progress = h('p', { id: 'bulk-progress', role: 'status' });
  const confirmBox = h('p', { id: 'bulk-confirm' });
  const follow = async (id) => {
    for (;;) {
      const b = await api(`/bulk-actions/${id}`);
      progress.textContent = `${b.action}: ${b.done} of ${b.matched} done${b.failed ? `, ${b.failed} could not` : ''} (${b.status})`;
      progress.dataset.status = b.status;
      if (b.status !== 'running') return b;
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  const start = async (body) => {
    try {
      const made = await api('/bulk-actions', { method: 'POST', body });
      const b = await follow(made.bulk_action_id);
      await tasks(view);
      view.prepend(h('p', { id: 'bulk-progress', role: 'status', 'data-status': b.status }, progress.textContent));
      if (b.failed) view.prepend(h('p', { class: 'error', role: 'alert' }, `${b.failed} of ${b.matched} could not ${b.action}`));
    } catch (e) { progress.textContent = e.message; progress.className = 'error'; }
  };
  const bulk = (action) => selected.size && start({ action, ids: [...selected] });
  const filterOf = () => {
    const f = {};
    if (st) f.status = st;
    if (text) f.q = text;
    if (since) f.since = since;
    return f;
  };
  const matching = async (action) => {
    const body = { action, filter: filterOf() };
    if (action === 'rerun') body.from_step = 'first_failed';
    try {
      const dry = await api('/bulk-actions', { method: 'POST', body: { ...body, dry_run: true } });
      const what = action === 'rerun' ? 'Rerun them from their first failed step' : `${action[0].toUpperCase()}${action.slice(1)} them`;
      fill(confirmBox, `${dry.matched} task(s) match${since ? '' : ' (submitted in the last 7 days)'}. `,
        dry.matched ? h('button', { type: 'button', 'data-bulk-confirm': action, onclick: () => { fill(confirmBox); start(body); } }, what) : null);
    } catch (e) { fill(confirmBox, h('span', { class: 'error', role: 'alert' }, e.message)); }
  };
  const last = list[list.length - 1];
  fill(view, 
    h('h1', {}, 'Tasks'),
    h('div', { class: 'toolbar' }, filter, search, h('label', {}, 'since ', sinceBox),
      OPERATOR() ? h('button', { type: 'button', onclick: () => bulk('cancel') }, 'Cancel selected') : null,
      OPERATOR() ? h('button', { type: 'button', onclick: () => bulk('resume') }, 'Resume selected') : null,
      OPERATOR() ? h('button', { type: 'button', 'data-bulk': 'rerun', onclick: () => matching('rerun') }, 'Rerun all matching…') : null,
      OPERATOR() ? h('button', { type: 'button', 'data-bulk': 'cancel', onclick: () => matching('cancel') }, 'Cancel all matching…') : null),
    confirmBox, progress,
    table([OPERATOR() ? '' : null, 'task', 'status', h('span', { class: 'hide-narrow' }, 'submitted')].filter((c) => c !== null), rows, { id: 'task-list' }),
    list.length === 50 && last ? h('p', {}, h('a', { href: `#/tasks?${new URLSearchParams({ ...Object.fromEntries(params), before: last.task_id })}` }, 'Older tasks →')) : null,
  );
}

// ---- one task
async function task(view, id) {
  const load = () => Promise.all([api(`/tasks/${id}`), api(`/tasks/${id}/plan`).catch(() => null), api(`/tasks/${id}/attempts`), api(`/tasks/${id}/reflections`), api(`/tasks/${id}/events?limit=10000`)]);
  let version = null;
  const render = ([t, plan, attempts, reflections, events]) => {
    const versions = plan ? [plan, ...plan.history].sort((a, b) => b.version - a.version) : [];
    const shown = versions.find((p) => p.version === version) || versions[0];
    const picker = versions.length > 1
      ? h('select', { id: 'version', 'aria-label': 'plan version', onchange: (e) => { version = Number(e.target.value); render([t, plan, attempts, reflections, events]); } },
        versions.map((p) => h('option', { value: p.version, selected: p === shown }, `v${p.version} (${p.origin})`)))
      : null;
    fill(view, 
      h('h1', { 'data-task': t.task_id }, t.description),
      h('div', { class: 'toolbar' }, status(t.status), h('span', { class: 'muted' }, `round ${t.round} · plan v${t.plan_version} · ${t.task_id}`)),
      actions(t, shown),
      t.error ? h('p', { class: 'error' }, `${t.error.code || 'error'}: ${t.error.message || ''}`) : null,
      family(t),
      h('h2', {}, 'Plan '), picker,
      shown ? graph(shown, t.task_id) : h('p', { class: 'muted' }, 'Not planned yet.'),
      shown && versions.length > 1 ? changes(versions, shown) : null,
      h('h2', {}, 'Attempts'), gantt(attempts), attemptTable(attempts),
      h('h2', {}, 'Recovery'), chain(events, reflections),
      h('h2', {}, 'Counters'), json(t.counters),
      h('p', { id: 'task-cost', 'data-cost': String(t.cost) }, `Cost: ${money(t.cost)}${t.limits.max_cost != null ? ` of at most ${money(t.limits.max_cost)}` : ''} (LLM calls at the price map's prices, and the tools' reported costs)`),
      collapsible('Result outputs', shown && Object.fromEntries(shown.steps.filter((s) => s.output !== null && (s.item_index === undefined || s.item_index === null)).map((s) => [s.id, s.output]))),
    );
  };
  render(await load());
  if (!TERMINAL.includes(view.querySelector('[data-status]').dataset.status)) follow(id, async () => render(await load()));
}
function actions(t, plan) {
  if (!OPERATOR()) return null;
  const bar = h('div', { class: 'toolbar', id: 'actions' });
  const act = (label, path, body) => h('button', { type: 'button', onclick: async () => {
    try { await api(`/tasks/${t.task_id}/${path}`, { method: 'POST', body: body ? body() : {} }); route(); } catch (e) { bar.append(h('span', { class: 'error', role: 'alert' }, e.message)); }
  } }, label);
  if (!TERMINAL.includes(t.status)) bar.append(act('Cancel', 'cancel'));
  if (t.status === 'needs_intervention') bar.append(act('Resume', 'resume'));
  if ((TERMINAL.includes(t.status) || t.status === 'needs_intervention') && plan) {
    const from = h('select', { 'aria-label': 'rerun from step' }, plan.steps.filter((s) => s.status !== 'superseded').map((s) => h('option', { value: s.id }, s.id)));
    const params = h('textarea', { rows: 2, cols: 40, 'aria-label': 'parameters for that step (JSON)', placeholder: '{"key": "value"}' });
    bar.append(from, params, act('Rerun from step', 'rerun', () => {
      const body = { from_step: from.value };
      if (params.value.trim()) body.step_overrides = { [from.value]: { parameters: JSON.parse(params.value) } };
      return body;
    }));
  }
  return bar.childElementCount ? bar : null;
}
// the task's place in a tree of child tasks: its parent, and the children its steps started
function family(t) {
  const link = (id, label) => h('a', { href: `#/tasks/${id}`, 'data-task-link': id }, label);
  const parent = t.parent_task_id ? h('p', { id: 'parent-task' }, 'Started by ', link(t.parent_task_id, t.parent_task_id)) : null;
  const kids = (t.children || []).length
    ? h('details', { id: 'child-tasks', open: true }, h('summary', {}, `${t.children.length} child task(s)`),
      h('ul', {}, t.children.map((c) => h('li', { 'data-child': c.task_id }, status(c.status), ' ', link(c.task_id, c.task_id), h('span', { class: 'muted' }, ` · step ${c.step_id}`)))))
    : null;
  return parent || kids ? h('div', { class: 'family' }, parent, kids) : null;
}
// the plan as a graph: a column per dependency depth, an edge per dependency; a map step is one
// node (N of M items done) that opens its items below the graph, an agent step one node that
// opens its turns and their calls
function graph(plan, taskId) {
  const live = plan.steps.filter((s) => s.status !== 'superseded' || plan.steps.every((x) => x.status === 'superseded'));
  const isItem = (s) => s.item_index !== undefined && s.item_index !== null;
  const steps = live.filter((s) => !isItem(s));
  const itemsOf = (m) => live.filter((s) => isItem(s) && s.id.startsWith(`${m.id}[`));
  const depth = {};
  const byId = Object.fromEntries(steps.map((s) => [s.id, s]));
  const d = (s, seen = new Set()) => {
    if (depth[s.id] !== undefined) return depth[s.id];
    if (seen.has(s.id)) return 0;
    seen.add(s.id);
    depth[s.id] = Math.max(0, ...s.dependencies.filter((x) => byId[x]).map((x) => d(byId[x], seen) + 1));
    return depth[s.id];
  };
  steps.forEach((s) => d(s));
  const cols = {}; const pos = {};
  const W = 150; const H = 44; const GX = 60; const GY = 18;
  for (const s of steps) { const c = depth[s.id]; cols[c] = (cols[c] || 0) + 1; pos[s.id] = { x: 10 + c * (W + GX), y: 10 + (cols[c] - 1) * (H + GY) }; }
  const width = 20 + (Math.max(0, ...Object.keys(cols).map(Number)) + 1) * (W + GX);
  const height = 20 + Math.max(1, ...Object.values(cols)) * (H + GY);
  const edges = steps.flatMap((s) => s.dependencies.filter((x) => pos[x]).map((x) => {
    const a = pos[x]; const b = pos[s.id];
    return h('path', { class: 'edge', 'data-from': x, 'data-to': s.id, d: `M${a.x + W},${a.y + H / 2} C${a.x + W + GX / 2},${a.y + H / 2} ${b.x - GX / 2},${b.y + H / 2} ${b.x},${b.y + H / 2}` });
  }));
  const maps = steps.filter((s) => s.map);
  const agents = steps.filter((s) => !s.map && s.tool === 'agent');
  const isAgent = (s) => !s.map && s.tool === 'agent';
  const progress = (s) => (s.map_progress ? `${s.map_progress.ended} of ${s.map_progress.total} done` : 'map');
  const open = (sel) => () => { const d = document.querySelector(sel); if (d) { d.open = !d.open; d.scrollIntoView({ block: 'nearest' }); } };
  const nodes = steps.map((s) => h('g', { class: `node ${s.status}${s.map ? ' map' : ''}${isAgent(s) ? ' agent' : ''}`, 'data-step': s.id, 'data-status': s.status, 'data-map': s.map ? progress(s) : null, 'data-agent': isAgent(s) ? 'true' : null, tabindex: 0, role: s.map || isAgent(s) ? 'button' : 'img', 'aria-label': `step ${s.id}: ${s.status}${s.map ? `, ${progress(s)}` : ''}${isAgent(s) ? ', an agent: opens its turns' : ''}`, transform: `translate(${pos[s.id].x},${pos[s.id].y})`,
    onclick: s.map ? open(`[data-map-items="${CSS.escape(s.id)}"]`) : isAgent(s) ? open(`[data-agent-turns="${CSS.escape(s.id)}"]`) : null },
    h('title', {}, `${s.id}: ${s.status}, tool ${s.tool}, ${s.map ? progress(s) : `${s.attempts} attempt(s)`}`),
    h('rect', { width: W, height: H }),
    h('text', { x: 8, y: 17 }, s.id.length > 20 ? `${s.id.slice(0, 19)}…` : s.id),
    h('text', { x: 8, y: 34, fill: '#555' }, s.map ? `${s.tool} · ${progress(s)}` : `${s.tool} · ${s.status}${s.attempts > 1 ? ` · ×${s.attempts}` : ''}`)));
  const lists = maps.map((m) => {
    const items = itemsOf(m);
    return h('details', { class: 'map-items', 'data-map-items': m.id },
      h('summary', {}, `${m.id}: ${progress(m)} (${items.length} started)`),
      h('ol', { start: 0 }, items.map((i) => h('li', { 'data-item': i.id, 'data-status': i.status },
        status(i.status), ` ${i.id}${i.attempts > 1 ? ` · ×${i.attempts}` : ''}${i.error ? ` · ${i.error.message || ''}` : ''}`))));
  });
  return h('div', {}, h('div', { class: 'scroll' }, h('svg', { id: 'plan-graph', role: 'img', 'aria-label': `plan version ${plan.version}`, width, height, viewBox: `0 0 ${width} ${height}` }, edges, nodes)), lists, agents.map((a) => agentTurns(taskId, a)));
}
// an agent step's turns, read when opened: each turn's calls (their steps' statuses) and what
// the model said
function agentTurns(taskId, a) {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const box = h('details', { class: 'agent-turns', 'data-agent-turns': a.id,
    ontoggle: () => { if (!box.open || box.dataset.loaded) return; box.dataset.loaded = '1';
      api(`/tasks/${taskId}/steps/${encodeURIComponent(a.id)}/turns`).then((turns) => fill(body, turns.length
        ? h('ol', {}, turns.map((t) => h('li', { 'data-turn': t.turn },
          h('b', {}, `turn ${t.turn}`), h('span', { class: 'muted' }, ` · ${t.usage.total_tokens ?? 0} tokens`),
          t.tool_calls.length ? h('ul', {}, t.tool_calls.map((c) => h('li', { 'data-call': c.step_id || c.id, 'data-status': c.status },
            status(c.status), ` ${c.step_id || c.id} · ${c.tool || 'refused'}${c.refused ? ` · ${c.refused}` : ''}`))) : null,
          answerOf(t))))
        : h('p', { class: 'muted' }, 'No turn yet.'))).catch((e) => fill(body, h('p', { class: 'error' }, String(e)))); } },
  h('summary', {}, `${a.id}: an agent, ${a.status}`), body);
  return box;
}
// the model's words in a turn (its answer, or what it said beside its calls)
function answerOf(t) {
  const said = t.messages.filter((m) => m.role === 'assistant' && typeof m.content === 'string' && m.content).map((m) => m.content);
  return said.length ? h('pre', { class: 'agent-said' }, said.join('\n').slice(0, 2000)) : null;
}
// what changed between the version shown and another (the one before it, unless picked)
function changes(versions, shown) {
  const others = versions.filter((p) => p.version !== shown.version);
  const box = h('details', { id: 'version-changes', open: true });
  const show = (prev) => {
    const key = (s) => JSON.stringify([s.tool, s.parameters, s.dependencies]);
    const before = Object.fromEntries(prev.steps.map((s) => [s.id, s]));
    const now = Object.fromEntries(shown.steps.map((s) => [s.id, s]));
    const lines = [
      ...shown.steps.filter((s) => !before[s.id]).map((s) => `+ ${s.id} (${s.tool})`),
      ...prev.steps.filter((s) => !now[s.id]).map((s) => `− ${s.id}`),
      ...shown.steps.filter((s) => before[s.id] && key(before[s.id]) !== key(s)).map((s) => `~ ${s.id}: ${before[s.id].tool} → ${s.tool}${JSON.stringify(before[s.id].parameters) !== JSON.stringify(s.parameters) ? ', parameters changed' : ''}`),
    ];
    const pick = h('select', { 'aria-label': 'compare with version', onchange: (e) => show(others.find((p) => p.version === Number(e.target.value))) },
      others.map((p) => h('option', { value: p.version, selected: p === prev }, `v${p.version} (${p.origin})`)));
    fill(box, h('summary', {}, `Changes from v${prev.version} to v${shown.version}`), h('label', {}, 'compare with ', pick),
      lines.length ? h('pre', {}, lines.join('\n')) : h('p', { class: 'muted' }, 'No step changed.'));
  };
  show(others.find((p) => p.version < shown.version) || others[0]);
  return box;
}
// attempts as a timeline: a row per step, a bar per attempt (parallel steps overlap)
function gantt(attempts) {
  if (!attempts.length) return h('p', { class: 'muted' }, 'No attempts yet.');
  const t0 = Math.min(...attempts.map((a) => Date.parse(a.started_at)));
  const t1 = Math.max(...attempts.map((a) => Date.parse(a.finished_at)));
  const span = Math.max(1, t1 - t0);
  const rows = [...new Set(attempts.map((a) => a.step_id))];
  const W = 720; const L = 130; const R = 22;
  const bars = attempts.map((a) => {
    const x = L + ((Date.parse(a.started_at) - t0) / span) * (W - L - 10);
    const w = Math.max(3, ((Date.parse(a.finished_at) - Date.parse(a.started_at)) / span) * (W - L - 10));
    return h('rect', { class: `bar ${a.status}`, 'data-step': a.step_id, 'data-attempt': a.attempt, x, y: 6 + rows.indexOf(a.step_id) * R, width: w, height: R - 6 },
      h('title', {}, `${a.step_id} attempt ${a.attempt}: ${a.status}, ${a.duration_ms ?? '?'} ms`));
  });
  const labels = rows.map((r, i) => h('text', { x: 4, y: 20 + i * R }, r.length > 18 ? `${r.slice(0, 17)}…` : r));
  return h('div', { class: 'scroll' }, h('svg', { id: 'gantt', role: 'img', 'aria-label': `attempts over ${span} ms`, width: W, height: 12 + rows.length * R }, labels, bars));
}
function attemptTable(attempts) {
  // the call's idempotency key: the same on every attempt of one call (docs/idempotency.md)
  const key = (k) => h('td', { class: 'key', title: k || '' }, k ? `${k.slice(0, 12)}…` : '');
  return table(['step', 'attempt', 'tool', 'status', 'ms', 'key', 'details'], attempts.map((a) => h('tr', { 'data-step': a.step_id, 'data-attempt': a.attempt },
    h('td', {}, a.step_id), h('td', {}, a.attempt), h('td', {}, a.tool), h('td', {}, status(a.status)), h('td', {}, a.duration_ms ?? ''), key(a.idempotency_key),
    h('td', {}, collapsible('error', a.error), collapsible('output', a.output), collapsible('parameters', a.parameters)))), { id: 'attempts' });
}
// each failure's recovery, from the task's events: the failure, the reflection (with the
// brain's analysis), what each tier did (retry, repair, replan with its strategy, or a stop) and
// the outcome (the step's next success, or the task's end)
const strategy = (x) => (x && typeof x === 'object' ? [x.strategy_type, x.step_id || (x.step_ids || []).join(', ')].filter(Boolean).join(' ') : x);
const TIER = { retry_with_params: 1, retry_with_tool: 1, repair: 2, trigger_overall_reflection: 3 };
function chain(events, reflections) {
  const analyses = {};
  for (const r of reflections) (analyses[r.step_key || ''] = analyses[r.step_key || ''] || []).push(r.body || {});
  const open = {};
  const failures = [];
  const add = (stepId, line, cls) => { const f = open[stepId] || open['*']; if (f) f.lines.push([line, cls]); };
  for (const e of events) {
    const p = e.payload || {};
    const step = p.step_id;
    switch (e.kind) {
      case 'step_failed': {
        if (open[step] && !open[step].outcome) open[step].outcome = 'failed';
        const f = { step, attempt: p.attempt, error: p.error || {}, lines: [], outcome: null };
        failures.push(f); open[step] = f; open['*'] = f;
        break;
      }
      case 'step_reflected': {
        const a = p.suggested_action || {};
        const why = (analyses[step] || []).shift();
        add(step, `reflection: ${p.root_cause_category || '?'} → tier ${TIER[a.type] || '?'} ${a.type || ''}${p.fallback ? ' (rules fallback)' : ''}`, null);
        if (why && why.analysis) add(step, why.analysis, 'muted');
        break;
      }
      case 'retry_scheduled': add(step, `tier ${p.tier}: retry as attempt ${p.next_attempt}${p.delay_ms ? ` after ${p.delay_ms} ms` : ''}`, null); break;
      case 'step_repaired': add(step, p.ok ? `tier 2: repaired (${p.old_tool} → ${p.new_tool}), plan v${p.plan_version}` : `tier 2: repair failed: ${p.reason}`, null); break;
      case 'overall_reflected': add(step || '*', p.should_replan ? `tier 3: reflection on the whole task → replan (${strategy(p.replanning_strategy) || 'strategy chosen by the brain'})` : `tier 3: reflection on the whole task → stop${p.stop_reason ? `: ${p.stop_reason}` : ''}`, null); break;
      case 'replanned': add('*', `replanned: v${p.from_version} → v${p.to_version} (${strategy(p.strategy)}), ${(p.kept || []).length} succeeded step(s) kept`, null); break;
      case 'intervention_required':
        add(step || '*', `needs intervention: ${p.reason}`, 'error');
        for (const f of Object.values(open)) if (!f.outcome) f.outcome = 'needs_intervention';
        break;
      case 'step_completed': if (open[step]) { open[step].outcome = 'succeeded'; if (open['*'] === open[step]) delete open['*']; delete open[step]; } break;
      case 'task_failed': case 'task_cancelled': for (const f of Object.values(open)) if (!f.outcome) f.outcome = e.kind === 'task_failed' ? 'failed' : 'cancelled'; break;
      default: break;
    }
  }
  if (!failures.length) return h('p', { class: 'muted' }, 'No failure needed recovery.');
  return h('ol', { class: 'chain', id: 'recovery-chain' }, failures.map((f) => h('li', { 'data-step': f.step, 'data-outcome': f.outcome || 'open' },
    h('b', {}, `step ${f.step}, attempt ${f.attempt} failed`), `: ${f.error.message || ''}${f.error.category ? ` (${f.error.category})` : ''}`,
    h('ol', {}, f.lines.map(([line, cls]) => h('li', { class: cls }, line))),
    h('div', {}, 'outcome: ', f.outcome ? status(f.outcome) : h('span', { class: 'muted' }, 'not settled yet')))));
}

// live updates: the SSE stream, read with fetch (EventSource cannot send the key)
function stopStream() { if (state.stream) { state.stream.abort(); state.stream = null; } }
function follow(id, refresh) {
  const ctl = new AbortController();
  state.stream = ctl;
  let timer = null;
  const soon = () => { clearTimeout(timer); timer = setTimeout(() => { if (!ctl.signal.aborted) refresh().catch(() => {}); }, 150); };
  (async () => {
    try {
      const r = await fetch(`api/v1/tasks/${id}/events`, { headers: headers({ Accept: 'text/event-stream' }), signal: ctl.signal });
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (dec.decode(value, { stream: true }).includes('data:')) soon();
      }
      soon();
    } catch (e) { /* aborted: another page was opened */ }
  })();
}

// ---- recovery statistics, tools, workers
async function recovery(view) {
  const rec = await api('/stats/recovery');
  const sum = (rows, key, fields) => {
    const out = {};
    for (const r of rows) {
      const k = String(r[key]);
      const o = (out[k] = out[k] || Object.fromEntries(fields.map((f) => [f, 0])));
      for (const f of fields) o[f] += Number(r[f] || 0);
    }
    return Object.entries(out).map(([label, v]) => ({ label, ...v }));
  };
  const section = (name, rows) => [h('h3', {}, `${name.replace(/_/g, ' ')} (rows)`), rows.length
    ? table(Object.keys(rows[0]), rows.map((r) => Object.values(r).map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : v ?? ''))), { 'data-view': name })
    : h('p', { class: 'muted' }, 'No rows yet.')];
  fill(view,
    h('h1', {}, 'Recovery'),
    h('h2', {}, 'By tool'), barChart('by-tool', sum(rec.recovery_by_tool, 'tool', ['failures', 'recovered']), 'failures', 'recovered'),
    h('h2', {}, 'By category'), barChart('by-category', sum(rec.recovery_by_category, 'category', ['failures', 'recovered']), 'failures', 'recovered'),
    h('h2', {}, 'By tier'), barChart('by-tier', sum(rec.recovery_by_tier, 'tier', ['actions', 'saved']).map((r) => ({ ...r, label: `tier ${r.label}` })), 'actions', 'saved'),
    h('h2', {}, 'By action and replanning strategy'), barChart('by-action', sum(rec.recovery_by_action, 'action', ['actions', 'saved']).map((r) => ({ ...r, label: r.label || '(not recorded)' })), 'actions', 'saved'),
    h('h2', {}, 'By day'), barChart('by-day', sum(rec.recovery_by_tool, 'day', ['failures', 'recovered']), 'failures', 'recovered'),
    h('h2', {}, 'What recovery cost, against what it saved'), rec.recovery_cost_by_tier.length
      ? table(['tier', 'strategy', 'actions', 'LLM cost', 'tool cost', 'steps saved', 'tasks saved', 'per task saved'], rec.recovery_cost_by_tier.map((r) => [
        String(r.tier), r.strategy, String(r.actions), money(r.llm_cost), money(r.tool_cost), String(r.saved_steps), String(r.tasks_saved), r.cost_per_task_saved == null ? '—' : money(r.cost_per_task_saved)]), { id: 'recovery-cost' })
      : h('p', { class: 'muted', id: 'recovery-cost' }, 'No recovery yet.'),
    h('h2', {}, 'The views'), ...Object.entries(rec).flatMap(([k, rows]) => section(k, rows)));
}
// an amount in the price map's currency
function money(v) { return Number(v || 0).toLocaleString('en', { maximumFractionDigits: 6 }); }
// horizontal bars, two per label: `a` (red) and how many of them `b` (green)
function barChart(id, rows, a, b) {
  if (!rows.length) return h('p', { class: 'muted' }, 'No rows yet.');
  const W = 600; const L = 150; const R = 30;
  const peak = Math.max(1, ...rows.map((r) => Math.max(r[a], r[b])));
  const scale = (n) => (n / peak) * (W - L - 60);
  return h('div', { class: 'scroll' }, h('svg', { id, role: 'img', 'aria-label': `${a} and ${b} by ${id.slice(3)}`, width: W, height: 24 + rows.length * R },
    h('text', { x: L, y: 12 }, `■ ${a}`), h('text', { x: L + 90, y: 12 }, `■ ${b}`),
    rows.flatMap((r, i) => [
      h('text', { x: 0, y: 32 + i * R }, r.label.length > 22 ? `${r.label.slice(0, 21)}…` : r.label),
      h('rect', { class: 'bar failed', x: L, y: 20 + i * R, width: scale(r[a]), height: 10 }, h('title', {}, `${r.label}: ${r[a]} ${a}`)),
      h('rect', { class: 'bar succeeded', x: L, y: 31 + i * R, width: scale(r[b]), height: 10 }, h('title', {}, `${r.label}: ${r[b]} ${b}`)),
      h('text', { x: L + scale(Math.max(r[a], r[b])) + 6, y: 36 + i * R }, `${r[a]} / ${r[b]}`),
    ])));
}
async function tools(view) {
  const [list, templates, rec, act, mcp] = await Promise.all([api('/tools'), api('/templates'), api('/stats/recovery'), api('/stats/activity'), api('/mcp-servers')]);
  const hour = Object.fromEntries(act.tools.map((t) => [t.tool, t]));
  const rate = {};
  for (const r of rec.recovery_by_tool) {
    const x = (rate[r.tool] = rate[r.tool] || { ok: 0, n: 0 });
    x.n += Number(r.attempts || 0); x.ok += Number(r.attempts || 0) - Number(r.failures || 0);
  }
  fill(view,
    h('h1', {}, 'Tools'),
    table(['id', 'kind', 'endpoint', 'limits', 'circuit', 'held', 'attempts (success rate)', 'last hour: attempts, median / mean ms'], list.map((t) => [
      t.id, t.kind, t.endpoint || '', [t.max_concurrency && `≤ ${t.max_concurrency} at once`, t.rate_limit_per_sec && `${t.rate_limit_per_sec}/s`].filter(Boolean).join(', '),
      circuit(t.circuit), held(t, view),
      rate[t.id] && rate[t.id].n ? `${rate[t.id].n} (${Math.round((100 * rate[t.id].ok) / rate[t.id].n)}% ok)` : '',
      hour[t.id] ? `${hour[t.id].attempts} (${hour[t.id].failed} failed), ${hour[t.id].median_ms.toFixed(0)} / ${hour[t.id].mean_ms.toFixed(0)} ms` : '',
    ].map((c, i) => (i === 0 ? h('span', { 'data-tool': t.id }, c) : c))), { id: 'tools' }),
    h('h1', {}, 'MCP servers'),
    mcp.length
      ? table(['id', 'endpoint', 'tools imported', 'refreshed'], mcp.map((s) => [h('span', { 'data-mcp-server': s.id }, s.id), s.endpoint, s.tools.join(', '), when(s.refreshed_at)]), { id: 'mcp-servers' })
      : h('p', { class: 'muted', id: 'mcp-servers' }, 'No MCP server registered.'),
    h('h1', {}, 'Templates'),
    templates.length
      ? table(['id', 'description', 'steps', 'input schema'], templates.map((t) => [t.id, t.description, (t.plan.steps || []).length, collapsible('input_schema', t.input_schema)]), { id: 'templates' })
      : h('p', { class: 'muted' }, 'No template registered.'));
}
// whether a tool's steps are held (paused), with the button that holds or releases them: an
// operator's, for a built-in an admin's
function held(t, view) {
  const mark = t.paused ? h('span', { class: 'error', 'data-paused': 'true' }, 'paused') : h('span', { class: 'muted', 'data-paused': 'false' }, '');
  if (!OPERATOR() || (t.kind === 'builtin' && state.role !== 'admin')) return mark;
  const action = t.paused ? 'resume' : 'pause';
  const button = h('button', { type: 'button', 'data-pause': t.id, onclick: async () => {
    try { await api(`/tools/${encodeURIComponent(t.id)}/${action}`, { method: 'POST', body: {} }); route(); } catch (e) { view.prepend(h('p', { class: 'error', role: 'alert' }, e.message)); }
  } }, t.paused ? 'Resume' : 'Pause');
  return h('span', {}, mark, ' ', button);
}
// a tool's fleet-wide circuit breaker: its state, until when, its outages in a row, a Retry-After hold
function circuit(c) {
  if (!c) return '';
  const parts = [c.state.replace('_', ' ')];
  if (c.until) parts.push(`until ${when(c.until)}`);
  if (c.consecutive_failures) parts.push(`${c.consecutive_failures} outage(s) in a row`);
  if (c.held_until) parts.push(`held (Retry-After) until ${when(c.held_until)}`);
  if (c.released_until) parts.push(`releasing one call per ${c.pace_ms} ms until ${when(c.released_until)}`);
  return h('span', { class: c.state === 'closed' ? 'muted' : 'error', 'data-circuit': c.state }, parts.join(', '));
}
function workerTable(fleet) {
  return fleet.length
    ? table(['worker', 'host', 'in flight', 'concurrency', 'last heartbeat'], fleet.map((w) => [w.worker_id.slice(0, 8), `${w.host}:${w.pid}`, w.in_flight, w.concurrency, when(w.last_heartbeat_at)]))
    : h('p', { class: 'muted' }, 'No live worker.');
}
async function workers(view) {
  const draw = async () => fill(view, h('h1', {}, 'Workers'), updated(), workerTable(await api('/workers')));
  await draw();
  every(view, draw);
}

// ---- approvals: the open approval waits, each with its parameters to edit, approve or reject
async function approvals(view) {
  const [open, done] = await Promise.all([
    api('/waits?status=open&kind=approval&limit=200'),
    api('/waits?status=resolved&kind=approval&limit=20'),
  ]);
  const item = (w) => {
    const edit = h('textarea', { rows: 6, cols: 60, 'aria-label': `parameters for ${w.step_id}`, 'data-parameters': w.wait_id },
      JSON.stringify(w.parameters || {}, null, 2));
    const comment = h('input', { type: 'text', placeholder: 'comment (optional)', 'aria-label': 'comment', 'data-comment': w.wait_id });
    const out = h('span', { role: 'status' });
    const act = (what) => async () => {
      const body = { comment: comment.value || undefined };
      if (what === 'approve') {
        try { body.parameters = JSON.parse(edit.value || '{}'); } catch (e) { out.textContent = `not JSON: ${e.message}`; out.className = 'error'; return; }
      }
      try { await api(`/waits/${w.wait_id}/${what}`, { method: 'POST', body }); route(); } catch (e) { out.textContent = e.message; out.className = 'error'; }
    };
    return h('article', { class: 'card', 'data-wait': w.wait_id },
      h('h2', {}, w.prompt || 'Approve?'),
      h('p', {}, 'Task ', h('a', { href: `#/tasks/${w.task_id}` }, w.task_id.slice(0, 8)), ` · step ${w.step_id}`,
        w.tool ? ` · tool ${w.tool}` : '', ` · needs ${w.role || 'operator'}`, w.expires_at ? ` · expires ${when(w.expires_at)}` : ''),
      w.form ? collapsible('form (JSON Schema of the answer)', w.form) : null,
      h('label', {}, w.tool ? 'Parameters the tool runs with (edit to change them)' : 'Answer'), edit,
      comment,
      OPERATOR() || w.role === 'reader'
        ? h('p', {}, h('button', { type: 'button', 'data-approve': w.wait_id, onclick: act('approve') }, 'Approve'), ' ',
          h('button', { type: 'button', 'data-reject': w.wait_id, onclick: act('reject') }, 'Reject'), ' ', out)
        : null);
  };
  fill(view,
    h('h1', {}, 'Approvals'),
    open.length ? h('div', { id: 'approvals' }, open.map(item)) : h('p', { class: 'muted', id: 'approvals' }, 'Nothing waits for a person.'),
    h('h2', {}, 'Recently decided'),
    table(['task', 'step', 'outcome', 'decided by', 'at'], done.map((w) => [
      h('a', { href: `#/tasks/${w.task_id}` }, w.task_id.slice(0, 8)), w.step_id, (w.resolution || {}).outcome || '', w.resolved_by || '', when(w.resolved_at)])));
}

// ---- bulk actions: their progress, and aborting one
async function bulkActions(view) {
  const list = await api('/bulk-actions');
  const abort = (id) => async () => {
    try { await api(`/bulk-actions/${id}/abort`, { method: 'POST', body: {} }); route(); } catch (e) { view.prepend(h('p', { class: 'error', role: 'alert' }, e.message)); }
  };
  fill(view,
    h('h1', {}, 'Bulk actions'),
    list.length
      ? table(['action', 'name', 'state', 'done', 'could not', 'started', ''], list.map((b) => [
        h('span', { 'data-bulk-action': b.bulk_action_id }, b.action), b.name || '',
        h('span', { 'data-state': b.status }, b.status), `${b.done} / ${b.matched}`, String(b.failed), when(b.created_at),
        OPERATOR() && b.status === 'running' ? h('button', { type: 'button', 'data-abort': b.bulk_action_id, onclick: abort(b.bulk_action_id) }, 'Abort') : '',
      ]), { id: 'bulk-actions' })
      : h('p', { class: 'muted', id: 'bulk-actions' }, 'No bulk action yet: the task list starts them.'));
}

// ---- schedules: cron schedules, their next ticks, pause / resume / trigger
async function schedules(view) {
  const list = await api('/schedules');
  const act = (id, how) => async () => {
    try {
      if (how === 'trigger') await api(`/schedules/${encodeURIComponent(id)}/trigger`, { method: 'POST', body: {} });
      else await api(`/schedules/${encodeURIComponent(id)}`, { method: 'PATCH', body: { enabled: how === 'resume' } });
      route();
    } catch (e) { fill(view, h('p', { class: 'error', role: 'alert' }, e.message)); }
  };
  fill(view,
    h('h1', {}, 'Schedules'),
    list.length
      ? table(['id', 'cron', 'time zone', 'state', 'next ticks', 'last tick', ''], list.map((s) => [
        h('span', { 'data-schedule': s.id }, s.id), h('code', {}, s.cron), s.timezone,
        h('span', { 'data-enabled': String(s.enabled) }, s.enabled ? 'active' : 'paused'),
        h('ul', { 'data-next': s.id }, s.next_fire_times.map((t) => h('li', {}, when(t)))),
        s.last_tick ? h('span', {}, when(s.last_tick), ' ', s.last_task_id ? h('a', { href: `#/tasks/${s.last_task_id}` }, 'task') : '', s.last_error ? h('span', { class: 'error' }, ` ${s.last_error}`) : '') : '',
        OPERATOR() ? h('span', {},
          h('button', { type: 'button', 'data-toggle': s.id, onclick: act(s.id, s.enabled ? 'pause' : 'resume') }, s.enabled ? 'Pause' : 'Resume'), ' ',
          h('button', { type: 'button', 'data-trigger': s.id, onclick: act(s.id, 'trigger') }, 'Run now')) : '',
      ]), { id: 'schedules' })
      : h('p', { class: 'muted', id: 'schedules' }, 'No schedule.'));
}

start();
