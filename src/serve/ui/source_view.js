/* The source view of stackscope's web UI: a function's source file with each line's share of
 * the samples (self and total, a heat column), the hottest lines marked, read by the server
 * through the sampled process's root (GET /api/source, docs/API.md). Opened with the
 * "source" button for the clicked frame (flamegraph) or the sandwich's function, or by a
 * double click on a row of the top table. Kept apart from app.js, whose globals ($, state,
 * filterParams, getJSON, pct) it uses; it changes nothing of theirs.
 */
'use strict';

const srcView = { fn: null, answer: null };

/* A line is hot when its self share (or total, for a caller's line) is at least this share of
 * the hottest line's; the hottest one is marked apart.
 */
const SRC_HOT_SHARE = 0.5;

function srcClose() {
  srcView.fn = null;
  srcView.answer = null;
  $('source-box').hidden = true;
  $('src-table').tBodies[0].replaceChildren();
}

async function srcOpen(fn, file) {
  if (!fn) { status('click a frame first: its function\'s source is shown'); return; }
  const p = filterParams(false);
  p.set('function', fn);
  if (file) p.set('file', file);
  srcView.fn = fn;
  $('source-box').hidden = false;
  $('src-title').textContent = `source of ${fn}: loading…`;
  $('src-reason').hidden = true;
  $('src-table').tBodies[0].replaceChildren();
  let a;
  try {
    a = await getJSON('api/source?' + p);
  } catch (e) {
    $('src-title').textContent = `source of ${fn}`;
    srcReason('cannot show the source: ' + e.message);
    return;
  }
  if (srcView.fn !== fn) return; /* another one was asked meanwhile */
  srcView.answer = a;
  srcDraw(a);
}

function srcReason(text) {
  $('src-reason').textContent = text;
  $('src-reason').hidden = !text;
}

function srcDraw(a) {
  const sel = $('src-file');
  sel.replaceChildren();
  for (const f of a.files) {
    const o = document.createElement('option');
    o.value = f.file;
    o.textContent = `${f.file} (${f.samples} samples)`;
    o.selected = f.file === a.file;
    sel.appendChild(o);
  }
  sel.hidden = a.files.length < 2;
  const where = a.file ? `${a.file} in process ${a.pid} (${a.comm || '?'})` +
    (a.pids.length > 1 ? `, the one of ${a.pids.length} with most samples` : '') : '';
  $('src-title').textContent = `source of ${a.function}` + (where ? `: ${where}` : '');
  $('src-title').dataset.file = a.file || '';
  srcReason(a.reason ? 'cannot show the source: ' + a.reason : a.note || '');
  $('src-reason').classList.toggle('refused', !!a.reason);
  const heat = new Map(a.heat.map(([n, s, t]) => [n, { s, t }]));
  let best = 0, bestLine = 0, max = 0;
  for (const [n, h] of heat) {
    const v = h.s || h.t / 1e6; /* self first; a line only on callers' stacks after */
    if (v > best) { best = v; bestLine = n; }
    max = Math.max(max, h.s);
  }
  const all = a.process_samples || 0;
  const count = a.lines ? a.lines.length : 0;
  /* with the text, every line; without, the lines that have samples */
  const numbers = a.lines ? Array.from({ length: count }, (_, i) => i + 1) : [...heat.keys()].sort((x, y) => x - y);
  const body = $('src-table').tBodies[0];
  const frag = document.createDocumentFragment();
  for (const n of numbers) {
    const h = heat.get(n) || { s: 0, t: 0 };
    const tr = document.createElement('tr');
    tr.dataset.line = n;
    tr.dataset.self = h.s;
    tr.dataset.total = h.t;
    if (n === bestLine) tr.classList.add('hottest');
    if (h.s && max && h.s >= SRC_HOT_SHARE * max) tr.classList.add('hot');
    const td = (text, cls) => {
      const c = document.createElement('td');
      c.textContent = text;
      if (cls) c.className = cls;
      tr.appendChild(c);
      return c;
    };
    td(String(n), 'ln');
    const heatCell = td(h.s ? pct(h.s, all) : '', 'self');
    heatCell.style.background = h.s ? `rgba(230,40,20,${(0.15 + 0.85 * h.s / (all || 1)).toFixed(3)})` : '';
    const totCell = td(h.t ? pct(h.t, all) : '', 'total');
    totCell.style.background = h.t ? `rgba(240,140,20,${(0.1 + 0.6 * h.t / (all || 1)).toFixed(3)})` : '';
    td(a.lines ? a.lines[n - 1] : '', 'code');
    frag.appendChild(tr);
  }
  body.appendChild(frag);
  const hot = body.querySelector('tr.hottest');
  if (hot) {
    const box = $('src-scroll');
    box.scrollTop = Math.max(0, hot.offsetTop - box.clientHeight / 3);
  }
}

function setupSource() {
  $('source-open').addEventListener('click', () => srcOpen(state.zoom ? state.zoom.name : null));
  $('sw-source').addEventListener('click', () => srcOpen(state.sandwich ? state.sandwich.name : null));
  $('src-close').addEventListener('click', srcClose);
  $('src-file').addEventListener('change', () => srcOpen(srcView.fn, $('src-file').value));
  $('top').tBodies[0].addEventListener('dblclick', (ev) => {
    const row = ev.target.closest('tr');
    const fn = row && row.querySelector('td.fn');
    if (fn) srcOpen(fn.textContent);
  });
}

setupSource();
