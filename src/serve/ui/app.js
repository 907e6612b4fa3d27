/* stackscope's web UI: timeline -> range -> flamegraph (icicle, root on top), top functions,
 * a function's sandwich (callers above, callees below, merged), the runtime fold toggle,
 * filters, diff of two ranges or two uploaded pprof files. Talks only to this server's JSON
 * API (docs/API.md); no other file is loaded.
 */
'use strict';

const $ = (id) => document.getElementById(id);
const TYPE_COLOURS = {
  kernel: [30, 80, 60], native: [15, 85, 62], go: [190, 70, 55], error: [0, 0, 70],
  cpython: [215, 70, 65], hotspot: [120, 45, 55], ruby: [345, 65, 65], php: [250, 45, 70],
  perl: [280, 40, 65], v8: [95, 55, 55], runtime: [170, 40, 60],
};

const state = {
  intervals: [],
  side: 0,             /* which range a drag sets: 0, or 1 (diff's B) */
  range: [null, null], /* [from, to] in ns (BigInt) per side; null: the whole store */
  diff: false,
  files: null,         /* [ArrayBuffer, ArrayBuffer] when comparing uploaded files */
  tree: null,          /* the answer of /api/flamegraph or /api/diff, nodes linked */
  zoom: null,
  search: null,
  sandwich: null,      /* {name, type} of the function the sandwich view shows */
  trace: '',           /* the trace filter: 32 lowercase hex digits, or '' */
};

function fmtTime(ns) {
  const d = new Date(Number(ns / 1000000n));
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}
function pct(v, total) { return total ? (100 * v / total).toFixed(2) + '%' : '-'; }
function status(text) { $('status').textContent = text; }

/* JSON with the large integers (ns times) kept exact: they are read as BigInt. */
async function getJSON(url, opts) {
  const r = await fetch(url, opts);
  const text = await r.text();
  const j = JSON.parse(text.replace(/("(?:from|to|start|end)":)(\d{16,})/g, '$1"$2"'));
  for (const k of ['from', 'to']) if (typeof j[k] === 'string') j[k] = BigInt(j[k]);
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

function filterParams(prefixed) {
  const p = new URLSearchParams();
  const sides = state.diff ? [0, 1] : [0];
  for (const s of sides) {
    const pre = prefixed ? (s ? 'b_' : 'a_') : '';
    const r = state.range[s] || state.range[0];
    if (r) { p.set(pre + 'from', r[0].toString()); p.set(pre + 'to', r[1].toString()); }
  }
  for (const [id, name] of [['f-pid', 'pid'], ['f-service', 'service'], ['f-container', 'container'],
    ['f-tid', 'tid']]) {
    if ($(id).value) p.set(name, $(id).value);
  }
  /* the host is a label filter, which the API does not take with a trace */
  if ($('f-host').value && !state.trace) p.set('label', 'host.name=' + $('f-host').value);
  if ($('f-sample').value) p.set('sample_type', $('f-sample').value); /* '' is cpu */
  if (state.trace) p.set('trace', state.trace);
  return p;
}

/* ---- timeline ---- */

function timelineSpan() {
  const iv = state.intervals;
  if (!iv.length) return null;
  let lo = iv[0].start, hi = iv[0].end;
  for (const i of iv) { if (i.start < lo) lo = i.start; if (i.end > hi) hi = i.end; }
  if (hi <= lo) hi = lo + 1n;
  return [lo, hi];
}

function drawTimeline() {
  const c = $('timeline'), ctx = c.getContext('2d');
  c.width = c.clientWidth;
  const W = c.width, H = c.height, span = timelineSpan();
  ctx.clearRect(0, 0, W, H);
  if (!span) return;
  const len = Number(span[1] - span[0]);
  const x = (t) => Number(t - span[0]) / len * W;
  let maxRate = 0;
  for (const i of state.intervals) maxRate = Math.max(maxRate, i.samples / Math.max(1, Number(i.end - i.start)));
  ctx.fillStyle = '#5a7';
  for (const i of state.intervals) {
    const rate = i.samples / Math.max(1, Number(i.end - i.start));
    const h = maxRate ? Math.max(1, rate / maxRate * (H - 4)) : 1;
    ctx.fillRect(x(i.start), H - h, Math.max(1, x(i.end) - x(i.start) - 1), h);
  }
  const shade = ['rgba(60,120,220,0.35)', 'rgba(220,60,60,0.35)'];
  for (const s of (state.diff ? [0, 1] : [0])) {
    const r = state.range[s];
    if (!r) continue;
    ctx.fillStyle = shade[s];
    ctx.fillRect(x(r[0]), 0, Math.max(2, x(r[1]) - x(r[0])), H);
  }
}

function describeRange() {
  const parts = [];
  for (const s of (state.diff ? [0, 1] : [0])) {
    const r = state.range[s];
    let n = 0, samples = 0;
    for (const i of state.intervals) {
      if (!r || (i.end > r[0] && i.start < r[1])) { n++; samples += i.samples; }
    }
    const label = state.diff ? (s ? 'B: ' : 'A: ') : '';
    parts.push(label + (r ? fmtTime(r[0]) + ' – ' + fmtTime(r[1]) : 'whole store') +
      ` (${n} intervals, ${samples} samples)`);
  }
  $('range').textContent = parts.join('; ');
}

function setupTimeline() {
  const c = $('timeline');
  let down = null;
  const timeAt = (ev) => {
    const span = timelineSpan(), rect = c.getBoundingClientRect();
    const f = Math.min(1, Math.max(0, (ev.clientX - rect.left) / rect.width));
    return span[0] + BigInt(Math.round(f * Number(span[1] - span[0])));
  };
  c.addEventListener('mousedown', (ev) => { if (timelineSpan()) down = timeAt(ev); });
  c.addEventListener('mousemove', (ev) => {
    if (down === null) return;
    const t = timeAt(ev);
    state.range[state.side] = t > down ? [down, t] : [t, down];
    drawTimeline();
  });
  window.addEventListener('mouseup', (ev) => {
    if (down === null) return;
    const t = timeAt(ev), from = t > down ? down : t, to = t > down ? t : down;
    down = null;
    state.range[state.side] = to > from ? [from, to + 1n] : null;
    state.files = null;
    drawTimeline();
    describeRange();
    loadRange();
  });
  $('range-all').addEventListener('click', () => {
    state.range = [null, null];
    state.files = null;
    drawTimeline();
    describeRange();
    loadRange();
  });
}

/* ---- filters ---- */

/* A filter menu rebuilt from the range's lists; what the user picked stays picked even when
 * the new list lacks it (a process with no CPU samples in the range, only memory rows; one
 * gone since): a filter never drops silently.
 */
function fillSelect(id, items, value, label) {
  const sel = $(id), keep = sel.value;
  sel.replaceChildren(new Option('all', ''));
  for (const it of items) sel.add(new Option(label(it), value(it)));
  if (keep && ![...sel.options].some((o) => o.value === keep)) {
    sel.add(new Option(`${keep} (none in this range)`, keep));
  }
  sel.value = keep;
}

async function loadFilters() {
  const p = new URLSearchParams();
  const r = state.range[0];
  if (r && !state.diff) { p.set('from', r[0].toString()); p.set('to', r[1].toString()); }
  const f = await getJSON('api/filters?' + p);
  const serviceOf = new Map(); /* pid -> the service.name it published */
  for (const s of f.services || []) for (const pid of s.pids) serviceOf.set(pid, s.service);
  fillSelect('f-pid', f.processes, (x) => String(x.pid),
    (x) => (serviceOf.has(x.pid) ? `${serviceOf.get(x.pid)} (pid ${x.pid}) ` : `${x.pid} `) +
      `${x.comm || ''}${x.exe ? ' (' + x.exe + ')' : ''}: ${x.samples}`);
  fillSelect('f-service', f.services || [], (x) => x.service, (x) => `${x.service}: ${x.samples}`);
  fillSelect('f-host', f.hosts || [], (x) => x.host, (x) => `${x.host}: ${x.samples}`);
  fillSelect('f-container', f.containers, (x) => x.container,
    (x) => `${x.container.slice(0, 12)}: ${x.samples}`);
  fillSelect('f-tid', f.threads, (x) => String(x.tid), (x) => `${x.tid} ${x.name || ''}: ${x.samples}`);
  fillSelect('f-type', f.types, (x) => x.type, (x) => `${x.type}: ${x.samples}`);
  fillSampleTypes(f.sample_types || []);
}

/* The sample-type menu: cpu ('') first, then the types the range has (off_cpu, faults,
 * alloc_space, inuse_space...), with their unit.
 */
function fillSampleTypes(types) {
  const sel = $('f-sample'), keep = sel.value;
  sel.replaceChildren(new Option('cpu', ''));
  for (const t of types) if (t.type !== 'cpu') sel.add(new Option(`${t.type} (${t.unit})`, t.type));
  if ([...sel.options].some((o) => o.value === keep)) sel.value = keep;
}

/* ---- traces ---- */

const TRACE_RE = /^[0-9a-f]{32}$/;

/* The trace table of the range: a trace id links to the viewer the server was given
 * (--trace-url; an http(s) link built there from hex ids) or nowhere; "only this" filters.
 */
async function loadTraces() {
  const p = filterParams(false);
  p.set('limit', '50');
  const t = await getJSON('api/traces?' + p);
  const body = $('traces').tBodies[0];
  body.replaceChildren();
  for (const x of t.traces) {
    const tr = body.insertRow();
    const id = tr.insertCell();
    id.className = 'trace-id';
    if (x.url && /^https?:\/\//i.test(x.url)) {
      const a = document.createElement('a');
      a.href = x.url;
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      a.textContent = x.trace_id;
      id.append(a);
    } else {
      id.textContent = x.trace_id;
    }
    tr.insertCell().textContent = x.spans;
    tr.insertCell().textContent = x.samples;
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = state.trace === x.trace_id ? 'all traces' : 'only this';
    b.addEventListener('click', () => setTrace(state.trace === x.trace_id ? '' : x.trace_id));
    tr.insertCell().append(b);
    for (const c of tr.cells) if (c !== id && c !== tr.cells[3]) c.className = 'num';
  }
  $('traces-box').hidden = t.traces.length === 0 && !state.trace;
}

function setTrace(id) {
  id = id.trim().toLowerCase();
  if (id && !TRACE_RE.test(id)) { status('a trace id is 32 hex digits'); return; }
  state.trace = id;
  $('f-trace').value = id;
  loadRange();
}

/* ---- the flamegraph ---- */

function link(answer) {
  const walk = (n, parent, depth) => {
    n.name = answer.names[n.n];
    n.type = answer.types[n.t];
    n.parent = parent;
    n.depth = depth;
    n.v2 = n.v2 || 0;
    for (const c of (n.c || [])) walk(c, n, depth + 1);
  };
  walk(answer.root, null, 0);
  answer.diff = answer.total2 !== undefined;
  return answer;
}

function weight(n) {
  const t = state.tree;
  if (!t.diff) return n.v;
  return (t.total ? n.v / t.total : 0) + (t.total2 ? n.v2 / t.total2 : 0);
}

/* share change of a node in a diff, in points of the total: > 0 grew in B */
function delta(n) {
  const t = state.tree;
  return (t.total2 ? n.v2 / t.total2 : 0) - (t.total ? n.v / t.total : 0);
}

function nameHue(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return h;
}

function colour(n) {
  if (state.tree.diff) {
    const d = delta(n), a = Math.min(1, Math.abs(d) / state.maxDelta);
    if (Math.abs(d) < 1e-9) return 'rgb(225,225,225)';
    const l = Math.round(92 - 40 * a);
    return d > 0 ? `hsl(0,85%,${l}%)` : `hsl(220,85%,${l}%)`;
  }
  const c = TYPE_COLOURS[n.type] || TYPE_COLOURS.runtime;
  const jitter = nameHue(n.name) % 14 - 7;
  return `hsl(${c[0] + jitter},${c[1]}%,${c[2] + (nameHue(n.name) >> 4) % 10}%)`;
}

function describe(n) {
  const t = state.tree;
  if (t.diff) {
    const d = delta(n) * 100;
    return `${n.name} [${n.type}]: A ${n.v} (${pct(n.v, t.total)}), B ${n.v2} (${pct(n.v2, t.total2)}), ` +
      `${d >= 0 ? '+' : ''}${d.toFixed(2)} points`;
  }
  return `${n.name} [${n.type}]: ${n.v} samples, ${pct(n.v, t.total)} of all, self ${n.s}`;
}

function render() {
  const box = $('flame'), t = state.tree;
  box.replaceChildren();
  if (!t) return;
  const W = box.clientWidth || 800, ROW = 18;
  const zoom = state.zoom || t.root;
  const re = state.search;
  const frag = document.createDocumentFragment();
  let maxDepth = 0, matched = 0;
  const place = (n, x, w, cls) => {
    const d = document.createElement('div');
    d.className = 'frame' + (cls ? ' ' + cls : '');
    d.style.left = x + 'px';
    d.style.top = (n.depth * ROW) + 'px';
    d.style.width = Math.max(1, w - 1) + 'px';
    d.style.background = colour(n);
    d.textContent = w > 30 ? n.name : '';
    d.title = describe(n);
    d.dataset.name = n.name;
    d.dataset.type = n.type;
    if (t.diff) d.dataset.delta = delta(n).toFixed(6);
    if (re && re.test(n.name)) d.classList.add('match');
    d.node = n;
    frag.appendChild(d);
    maxDepth = Math.max(maxDepth, n.depth);
  };
  for (let a = zoom.parent; a; a = a.parent) place(a, 0, W, 'ancestor');
  const lay = (n, x, w) => {
    place(n, x, w, '');
    let cx = x;
    const total = weight(n);
    for (const c of (n.c || [])) {
      const cw = total ? w * weight(c) / total : 0;
      if (cw >= 0.5) lay(c, cx, cw);
      cx += cw;
    }
  };
  lay(zoom, 0, W);
  box.appendChild(frag);
  box.style.height = ((maxDepth + 1) * ROW + 4) + 'px';
  /* the search's share: samples under a matching frame, each counted once */
  if (re) {
    const count = (n) => {
      if (re.test(n.name)) return t.diff ? n.v2 : n.v;
      let s = 0;
      for (const c of (n.c || [])) s += count(c);
      return s;
    };
    matched = count(t.root);
    const all = t.diff ? t.total2 : t.total;
    $('match').textContent = `match: ${matched} of ${all} samples (${pct(matched, all)})`;
  } else {
    $('match').textContent = '';
  }
}

function zoomTo(n) {
  state.zoom = n && n.parent ? n : null;
  $('detail').textContent = n ? describe(n) : '';
  $('detail').dataset.name = n ? n.name : '';
  $('sandwich-open').disabled = !(n && n.parent);
  render();
}

/* ---- sandwich: one function's callers above it and callees below it, merged over every
 * place it appears (its outermost occurrences: a recursive call is counted once) ---- */

function swNode(name, type, depth) {
  return { name, type, depth, v: 0, v2: 0, s: 0, s2: 0, c: [], byKey: new Map() };
}

function swChild(parent, n) {
  const k = n.name + '\u0000' + n.type;
  let c = parent.byKey.get(k);
  if (!c) {
    c = swNode(n.name, n.type, parent.depth + 1);
    c.parent = parent;
    parent.byKey.set(k, c);
    parent.c.push(c);
  }
  return c;
}

function swAdd(dst, n, v, v2) {
  dst.v += v; dst.v2 += v2;
}

/* The merged callee tree under every outermost node of (name, type), and the merged caller
 * tree above them (root: the function, children: its callers, outwards). */
function sandwichTrees(name, type) {
  const callees = swNode(name, type, 0), callers = swNode(name, type, 0);
  const mergeDown = (dst, n) => {
    for (const c of (n.c || [])) {
      const d = swChild(dst, c);
      swAdd(d, c, c.v, c.v2);
      d.s += c.s; d.s2 += c.s2 || 0;
      mergeDown(d, c);
    }
  };
  const walk = (n) => {
    if (n.parent && n.name === name && n.type === type) {
      swAdd(callees, n, n.v, n.v2);
      callees.s += n.s; callees.s2 += n.s2 || 0;
      mergeDown(callees, n);
      swAdd(callers, n, n.v, n.v2);
      let dst = callers;
      for (let a = n.parent; a && a.parent; a = a.parent) {
        dst = swChild(dst, a);
        swAdd(dst, a, n.v, n.v2);
      }
      return; /* deeper occurrences are inside this one */
    }
    for (const c of (n.c || [])) walk(c);
  };
  walk(state.tree.root);
  return { callers, callees };
}

/* Draws tree root into box as an icicle; inverted: the root at the bottom. */
function drawTree(box, root, inverted) {
  box.replaceChildren();
  const W = box.clientWidth || 800, ROW = 18, frag = document.createDocumentFragment();
  const placed = [];
  let maxDepth = 0;
  const lay = (n, x, w) => {
    placed.push([n, x, w]);
    maxDepth = Math.max(maxDepth, n.depth);
    let cx = x;
    const total = weight(n);
    for (const c of n.c.slice().sort((a, b) => weight(b) - weight(a))) {
      const cw = total ? w * weight(c) / total : 0;
      if (cw >= 0.5) lay(c, cx, cw);
      cx += cw;
    }
  };
  lay(root, 0, W);
  for (const [n, x, w] of placed) {
    const d = document.createElement('div');
    d.className = 'frame' + (n.depth ? '' : ' sw-root');
    d.style.left = x + 'px';
    d.style.top = ((inverted ? maxDepth - n.depth : n.depth) * ROW) + 'px';
    d.style.width = Math.max(1, w - 1) + 'px';
    d.style.background = colour(n);
    d.textContent = w > 30 ? n.name : '';
    d.title = describe(n);
    d.dataset.name = n.name;
    d.dataset.type = n.type;
    d.dataset.depth = String(n.depth);
    d.node = n;
    frag.appendChild(d);
  }
  box.appendChild(frag);
  box.style.height = ((maxDepth + 1) * ROW + 4) + 'px';
}

function openSandwich(name, type) {
  if (!state.tree) return;
  state.sandwich = { name, type };
  const { callers, callees } = sandwichTrees(name, type);
  $('sandwich-box').hidden = false;
  $('sw-title').textContent = `sandwich: ${describe(callees)}`;
  $('sw-title').dataset.name = name;
  drawTree($('sw-callers'), callers, true);
  drawTree($('sw-callees'), callees, false);
}

function closeSandwich() {
  state.sandwich = null;
  $('sandwich-box').hidden = true;
  $('sw-callers').replaceChildren();
  $('sw-callees').replaceChildren();
}

function setupSandwich() {
  $('sandwich-open').addEventListener('click', () => {
    const n = state.zoom;
    if (n) openSandwich(n.name, n.type);
  });
  $('sw-close').addEventListener('click', closeSandwich);
  for (const id of ['sw-callers', 'sw-callees']) {
    $(id).addEventListener('click', (ev) => {
      const d = ev.target.closest('.frame');
      if (d) openSandwich(d.node.name, d.node.type);
    });
  }
}

function setupFlame() {
  $('flame').addEventListener('click', (ev) => {
    const d = ev.target.closest('.frame');
    if (!d) return;
    const n = d.node;
    zoomTo(n === state.zoom ? n.parent : n);
  });
  document.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') zoomTo(null); });
  $('search').addEventListener('input', () => {
    const q = $('search').value;
    try { state.search = q ? new RegExp(q) : null; } catch (e) { state.search = null; }
    render();
  });
  window.addEventListener('resize', () => { drawTimeline(); render(); });
}

function legend() {
  const el = $('legend');
  el.replaceChildren();
  const items = state.tree && state.tree.diff ? [['grew in B', 'hsl(0,85%,60%)'], ['shrank', 'hsl(220,85%,60%)']] :
    (state.tree ? state.tree.types.slice(1) : []).map((t) => [t, colour({ type: t, name: '' })]);
  for (const [label, bg] of items) {
    const s = document.createElement('span');
    s.textContent = label;
    s.style.background = bg;
    el.appendChild(s);
  }
}

/* ---- top functions ---- */

/* sorting the table: a click on a column's head sorts by it (again: the other way) */
const topSort = { col: -1, desc: true, answer: null };

function sortKey(f, col, answer) {
  const diff = answer.total2 !== undefined;
  const d = (answer.total2 ? f.total2 / answer.total2 : 0) - (answer.total ? f.total / answer.total : 0);
  return [f.name, f.type, f.self, diff ? f.self2 : f.self, diff ? f.total2 : f.total, diff ? d : f.total][col];
}

function fillTop(answer) {
  topSort.answer = answer;
  if (topSort.col >= 0) {
    const c = topSort.col, k = (f) => sortKey(f, c, answer);
    answer.functions.sort((a, b) => {
      const x = k(a), y = k(b), r = x < y ? -1 : x > y ? 1 : 0;
      return topSort.desc ? -r : r;
    });
  }
  const body = $('top').tBodies[0], t = state.tree;
  body.replaceChildren();
  const head = $('top').tHead.rows[0].cells;
  const diff = t && t.diff;
  head[2].textContent = diff ? 'self A' : 'self';
  head[3].textContent = diff ? 'self B' : 'self %';
  head[4].textContent = diff ? 'total B' : 'total';
  head[5].textContent = diff ? 'change (points)' : 'total %';
  for (const f of answer.functions) {
    const tr = body.insertRow();
    const cell = (text, cls) => { const td = tr.insertCell(); td.textContent = text; if (cls) td.className = cls; };
    cell(f.name, 'fn');
    cell(f.type);
    if (diff) {
      const d = (answer.total2 ? f.total2 / answer.total2 : 0) - (answer.total ? f.total / answer.total : 0);
      cell(String(f.self), 'num');
      cell(String(f.self2), 'num');
      cell(String(f.total2), 'num');
      cell((d >= 0 ? '+' : '') + (100 * d).toFixed(2), 'num ' + (d > 0 ? 'grew' : d < 0 ? 'shrank' : ''));
    } else {
      cell(String(f.self), 'num');
      cell(pct(f.self, answer.total), 'num');
      cell(String(f.total), 'num');
      cell(pct(f.total, answer.total), 'num');
    }
    tr.addEventListener('click', () => focusFunction(f.name));
  }
}

/* The top table focuses the graph: the function's largest node, and a search for it. */
function focusFunction(name) {
  if (!state.tree) return;
  let best = null;
  const walk = (n) => {
    if (n.name === name && (!best || weight(n) > weight(best))) best = n;
    for (const c of (n.c || [])) walk(c);
  };
  walk(state.tree.root);
  $('search').value = '^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
  state.search = new RegExp($('search').value);
  zoomTo(best);
}

/* ---- loading ---- */

/* Each loadRange() a number: an answer that comes back after a newer request was made (the
 * filters changed meanwhile) is dropped, never drawn over the newer one's.
 */
let rangeSeq = 0;

async function loadRange() {
  const type = $('f-type').value;
  const fold = $('fold-runtime').checked;
  const seq = ++rangeSeq;
  try {
    status('loading…');
    let tree;
    if (state.files) {
      const [a, b] = state.files;
      const body = new Uint8Array(a.byteLength + b.byteLength);
      body.set(new Uint8Array(a), 0);
      body.set(new Uint8Array(b), a.byteLength);
      const q = new URLSearchParams({ a_len: String(a.byteLength) });
      if (type) q.set('type', type);
      if (fold) q.set('fold', 'runtime');
      tree = await getJSON('api/diff?' + q, { method: 'POST', body });
    } else {
      const p = filterParams(state.diff);
      if (type) p.set('type', type);
      if (fold) p.set('fold', 'runtime');
      tree = await getJSON((state.diff ? 'api/diff?' : 'api/flamegraph?') + p);
    }
    if (seq !== rangeSeq) return;
    state.tree = link(tree);
    state.maxDelta = 1e-9;
    const md = (n) => { state.maxDelta = Math.max(state.maxDelta, Math.abs(delta(n))); (n.c || []).forEach(md); };
    if (state.tree.diff) md(state.tree.root);
    state.zoom = null;
    $('sandwich-open').disabled = true;
    closeSandwich();
    $('detail').textContent = 'click a frame to zoom; Esc or click the top frame to zoom out';
    legend();
    render();
    fillTopFromTree();
    const dl = filterParams(false);
    $('download').href = 'api/pprof?' + dl;
    status(state.tree.diff ? `A ${state.tree.total} samples, B ${state.tree.total2} samples` :
      `${state.tree.total} samples`);
    /* the filter menus of the range, after its graph: they do not hold it up */
    if (!state.files) loadFilters().catch((e) => status('error: ' + e.message));
    if (!state.files && !state.diff) loadTraces().catch((e) => status('error: ' + e.message));
    else $('traces-box').hidden = true;
  } catch (e) {
    if (seq === rangeSeq) status('error: ' + e.message);
  }
}

/* The top table from the tree itself (one request per view; /api/top gives the same for
 * scripts): self summed per function; total counted where no caller above is the same
 * function (recursion once), through a count of each function on the current path.
 */
function fillTopFromTree() {
  const byName = new Map(), onPath = new Map();
  const walk = (n) => {
    let k = null;
    if (n.parent) {
      k = n.name + '\u0000' + n.type;
      let e = byName.get(k);
      if (!e) { e = { name: n.name, type: n.type, self: 0, self2: 0, total: 0, total2: 0 }; byName.set(k, e); }
      e.self += n.s; e.self2 += n.s2 || 0;
      if (!onPath.get(k)) { e.total += n.v; e.total2 += n.v2; }
      onPath.set(k, (onPath.get(k) || 0) + 1);
    }
    for (const c of (n.c || [])) walk(c);
    if (k) onPath.set(k, onPath.get(k) - 1);
  };
  walk(state.tree.root);
  const last = state.tree.diff ? 'self2' : 'self';
  const functions = [...byName.values()].sort((a, b) => b[last] - a[last] || b.self - a.self ||
    (a.name < b.name ? -1 : 1)).slice(0, 500);
  const answer = { functions, total: state.tree.total };
  if (state.tree.diff) answer.total2 = state.tree.total2;
  fillTop(answer);
}

async function loadAll() {
  try {
    const j = await getJSON('api/intervals');
    state.intervals = j.intervals.map((i) => ({ id: i.id, start: BigInt(i.start), end: BigInt(i.end), samples: i.samples }));
  } catch (e) {
    status('error: ' + e.message);
    return;
  }
  drawTimeline();
  describeRange();
  await loadRange();
}

function setupControls() {
  [...$('top').tHead.rows[0].cells].forEach((th, i) => th.addEventListener('click', () => {
    topSort.desc = topSort.col === i ? !topSort.desc : i >= 2;
    topSort.col = i;
    if (topSort.answer) fillTop(topSort.answer);
  }));
  for (const id of ['f-pid', 'f-service', 'f-host', 'f-container', 'f-tid', 'f-type', 'fold-runtime']) {
    $(id).addEventListener('change', loadRange);
  }
  $('f-sample').addEventListener('change', loadRange);
  $('f-trace').addEventListener('keydown', (e) => { if (e.key === 'Enter') setTrace($('f-trace').value); });
  $('f-trace').addEventListener('search', () => { if (!$('f-trace').value) setTrace(''); });
  $('diff-mode').addEventListener('change', () => {
    state.diff = $('diff-mode').checked;
    state.files = null;
    $('diff-pick').hidden = !state.diff;
    $('files').hidden = !state.diff;
    state.side = state.diff ? Number(document.querySelector('input[name=side]:checked').value) : 0;
    drawTimeline();
    describeRange();
    loadRange();
  });
  for (const r of document.querySelectorAll('input[name=side]')) {
    r.addEventListener('change', () => { state.side = Number(r.value); });
  }
  $('compare-files').addEventListener('click', async () => {
    const a = $('file-a').files[0], b = $('file-b').files[0];
    if (!a || !b) { status('choose two pprof files'); return; }
    state.files = [await a.arrayBuffer(), await b.arrayBuffer()];
    loadRange();
  });
}

setupTimeline();
setupFlame();
setupSandwich();
setupControls();
loadAll();
