/* SVG flamegraph export (see flamegraph.h for what the picture shows).
 *
 * Three steps: build the merged call tree (nodes in one array, an id_index on (parent, name)
 * to find a child; names are interned profile strings, so equal names are equal pointers), sort
 * every sibling list by name, then walk the tree twice: once for the height of the drawn
 * part, once to print.
 *
 * Invariants: node 1 is the root; a node's total is the sum of the counts of the samples
 * through it, so it is >= the sum of its children's totals (the rest is self time); a frame
 * is drawn only if its parent is, and every drawn frame's rect carries its position and width
 * in samples (data-x, data-w), from which the script recomputes the layout when zooming.
 * All text is XML-escaped and valid UTF-8 (bad bytes become '?').
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/cmp.h"
#include "base/id_index.h"
#include "base/output_file.h"
#include "export/flamegraph.h"

#define FG_FRAME_H 16
#define FG_FONT_SZ 12
#define FG_FONT_W 0.59 /* average glyph width / font size */
#define FG_XPAD 10
#define FG_YPAD_TOP (FG_FONT_SZ * 3)
#define FG_YPAD_BOTTOM (FG_FONT_SZ * 2 + 10)

enum fg_kind {
	FG_ROOT,
	FG_PROCESS,
	FG_NATIVE,
	FG_INLINE,
	FG_KERNEL,
	FG_ERROR,
	FG_INTERP, /* frame kinds added after FRAME_ERROR (interpreters) */
};

struct fg_node {
	const char *name;
	uint64_t total;
	uint64_t off_cpu; /* of total, from off-CPU samples (drawn in blues when most of it) */
	uint32_t parent;
	uint32_t first_child;
	uint32_t next_sibling;
	uint8_t kind;
};

struct fg {
	const struct profile *p;
	FILE *out;
	struct fg_node *nodes; /* [0] unused, [1] root */
	size_t cnt, cap;
	struct id_index idx; /* (parent, name) -> node id */
	double scale;        /* px per sample (per ns with off-CPU samples) */
	bool ns;             /* weights are ns (the profile has off-CPU samples) */
	uint32_t max_depth;
	int height;
};

static uint64_t fg__hash(uint32_t parent, const char *name)
{
	return ((uint64_t)parent << 32) ^ (uintptr_t)name; /* id_index mixes it */
}

struct fg_key {
	uint32_t parent;
	const char *name;
};

static bool fg__node_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct fg_node *n = &((const struct fg *)ctx)->nodes[id];
	const struct fg_key *k = key;

	return n->parent == k->parent && n->name == k->name;
}

/* Returns the child of parent called name (made if new, with the given kind), 0 on ENOMEM. */
static uint32_t fg__child(struct fg *g, uint32_t parent, const char *name, enum fg_kind kind)
{
	struct fg_key key = { parent, name };
	uint64_t h = fg__hash(parent, name);
	struct fg_node *n;
	uint32_t id;

	id = id_index__find(&g->idx, h, fg__node_eq, g, &key);
	if (id)
		return id;
	if (g->cnt + 2 > UINT32_MAX || id_index__reserve(&g->idx) ||
	    array__reserve((void **)&g->nodes, &g->cap, g->cnt + 2, sizeof(*g->nodes)))
		return 0;
	n = &g->nodes[++g->cnt];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->parent = parent;
	n->kind = kind;
	id_index__add(&g->idx, h, (uint32_t)g->cnt);
	return (uint32_t)g->cnt;
}

static enum fg_kind fg__frame_kind(const struct profile_frame *f, size_t line_idx)
{
	switch (f->kind) {
	case FRAME_KERNEL:
		return FG_KERNEL;
	case FRAME_NATIVE:
		return f->line_cnt && line_idx + 1 < f->line_cnt ? FG_INLINE : FG_NATIVE;
	case FRAME_ERROR:
		return FG_ERROR;
	default:
		return FG_INTERP;
	}
}

/* Weights from outside (an imported profile) add up saturating. */
static void fg__add(struct fg_node *n, uint64_t w, uint64_t off)
{
	n->total = profile__count_add(n->total, w);
	n->off_cpu = profile__count_add(n->off_cpu, off);
}

static int fg__build(struct fg *g)
{
	size_t i, l, line_cnt;
	uint32_t cnt, j, node;

	if (fg__child(g, 0, "all", FG_ROOT) != 1)
		return -ENOMEM;
	for (i = 0; i < profile__sample_cnt(g->p); i++) {
		const struct profile_agg_sample *s = profile__sample(g->p, i);
		const uint32_t *frames = profile__stack(g->p, s->stack, &cnt);
		uint64_t w = g->ns ? profile__sample_ns(g->p, s) : s->count;
		uint64_t off = s->off_cpu_ns ? w : 0;

		fg__add(&g->nodes[1], w, off);
		node = fg__child(g, 1, s->comm, FG_PROCESS);
		if (!node)
			return -ENOMEM;
		fg__add(&g->nodes[node], w, off);
		for (j = cnt; j-- > 0;) {
			const struct profile_frame *f = profile__frame(g->p, frames[j]);

			line_cnt = f->line_cnt ? f->line_cnt : 1;
			for (l = line_cnt; l-- > 0;) {
				node = fg__child(g, node, profile__frame_name(g->p, frames[j], l),
						 fg__frame_kind(f, l));
				if (!node)
					return -ENOMEM;
				fg__add(&g->nodes[node], w, off);
			}
		}
	}
	return 0;
}

static int fg_order__cmp(const void *a, const void *b, void *ctx)
{
	const struct fg_node *nodes = ctx;
	const struct fg_node *x = &nodes[*(const uint32_t *)a], *y = &nodes[*(const uint32_t *)b];

	return cmp_u64(x->parent, y->parent)
		       ?: strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* Links every node into its parent's child list, siblings sorted by name. */
static int fg__link(struct fg *g)
{
	uint32_t *order, *last;
	size_t i;

	order = malloc(g->cnt * sizeof(*order));
	last = calloc(g->cnt + 1, sizeof(*last));
	if (!order || !last) {
		free(order);
		free(last);
		return -ENOMEM;
	}
	for (i = 0; i < g->cnt; i++)
		order[i] = (uint32_t)i + 1;
	qsort_r(order, g->cnt, sizeof(*order), fg_order__cmp, g->nodes);
	for (i = 0; i < g->cnt; i++) {
		struct fg_node *n = &g->nodes[order[i]];

		if (!n->parent)
			continue;
		if (last[n->parent])
			g->nodes[last[n->parent]].next_sibling = order[i];
		else
			g->nodes[n->parent].first_child = order[i];
		last[n->parent] = order[i];
	}
	free(order);
	free(last);
	return 0;
}

static bool fg__visible(const struct fg *g, uint32_t id)
{
	return g->nodes[id].total * g->scale >= FLAMEGRAPH_MIN_PX;
}

static void fg__measure(struct fg *g, uint32_t id, uint32_t depth)
{
	uint32_t c;

	if (!fg__visible(g, id))
		return;
	if (depth > g->max_depth)
		g->max_depth = depth;
	for (c = g->nodes[id].first_child; c; c = g->nodes[c].next_sibling)
		fg__measure(g, c, depth + 1);
}

/* Length of the UTF-8 sequence at s, or 0 if it is not valid UTF-8. */
static size_t utf8__len(const unsigned char *s)
{
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

static size_t utf8__chars(const char *s)
{
	size_t cnt = 0, n;

	while (*s) {
		n = utf8__len((const unsigned char *)s);
		s += n ? n : 1;
		cnt++;
	}
	return cnt;
}

/* The characters XML text and attribute values cannot hold as they are. */
static const char *const xml_entities[256] = {
	['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&apos;",
};

/* Prints s XML-escaped, at most max_chars characters (then ending in ".."). */
static void fg__escape(FILE *out, const char *s, size_t max_chars)
{
	size_t total = utf8__chars(s), shown = total, i, n;

	if (total > max_chars)
		shown = max_chars >= 2 ? max_chars - 2 : 0;
	for (i = 0; i < shown && *s; i++) {
		unsigned char c = (unsigned char)*s;

		n = utf8__len((const unsigned char *)s);
		if (!n || (c < 0x20 && c != '\t') || c == 0x7f) {
			fputc('?', out);
			s++;
			continue;
		}
		if (xml_entities[c])
			fputs(xml_entities[c], out);
		else
			fwrite(s, 1, n, out);
		s += n;
	}
	if (shown < total)
		fputs("..", out);
}

/* The colours of a kind of frame: channel c is base[c] + span[c] * v[hash[c]], with v[] three
 * values in [0, 1] taken from a hash of the frame's name (alike names, alike colours).
 */
struct fg_palette {
	int base[3], span[3];
	uint8_t hash[3];
};

static const struct fg_palette fg_palettes[] = {
	[FG_ROOT] = { { 200, 200, 200 }, { 0, 0, 0 }, { 0, 0, 0 } },
	[FG_PROCESS] = { { 110, 140, 215 }, { 40, 40, 40 }, { 0, 0, 1 } },
	/* reds, kept apart from the kernel's oranges */
	[FG_NATIVE] = { { 200, 50, 50 }, { 55, 80, 80 }, { 0, 1, 1 } },
	[FG_INLINE] = { { 60, 180, 180 }, { 60, 55, 55 }, { 0, 0, 1 } },
	[FG_KERNEL] = { { 220, 130, 0 }, { 35, 55, 40 }, { 0, 1, 2 } },
	[FG_ERROR] = { { 150, 150, 150 }, { 50, 50, 50 }, { 0, 0, 0 } },
	[FG_INTERP] = { { 60, 170, 60 }, { 60, 60, 50 }, { 0, 1, 2 } },
};

/* a frame mostly off CPU, whatever its kind but the root: blues */
static const struct fg_palette fg_off_cpu_palette = { { 50, 90, 190 },
						      { 60, 80, 65 },
						      { 0, 0, 1 } };

static void fg__color(const struct fg_node *n, int rgb[3])
{
	const char *name = n->name ? n->name : "";
	uint64_t h = fnv64(name, strlen(name), FNV64_INIT);
	const struct fg_palette *p = &fg_palettes[FG_NATIVE];
	double v[3];
	int c;

	for (c = 0; c < 3; c++)
		v[c] = (double)((h >> (16 * c)) & 0xffff) / 0xffff;
	if (n->kind != FG_ROOT && n->off_cpu > n->total / 2)
		p = &fg_off_cpu_palette;
	else if ((size_t)n->kind < sizeof(fg_palettes) / sizeof(fg_palettes[0]))
		p = &fg_palettes[n->kind];
	for (c = 0; c < 3; c++)
		rgb[c] = p->base[c] + (int)(p->span[c] * v[p->hash[c]]);
}

static void fg__frame(struct fg *g, uint32_t id, uint64_t x, uint32_t depth)
{
	const struct fg_node *n = &g->nodes[id];
	double px = FG_XPAD + x * g->scale, w = n->total * g->scale;
	double pct = 100.0 * n->total / g->nodes[1].total;
	int y = g->height - FG_YPAD_BOTTOM - (int)(depth + 1) * FG_FRAME_H;
	size_t fit = w > 6 ? (size_t)((w - 6) / (FG_FONT_SZ * FG_FONT_W)) : 0;
	const char *name = n->name ? n->name : "";
	int rgb[3];

	fg__color(n, rgb);
	fputs("<g><title>", g->out);
	fg__escape(g->out, name, SIZE_MAX);
	if (g->ns)
		fprintf(g->out, " (%.3f ms, %.2f%%)</title>", (double)n->total / 1e6, pct);
	else
		fprintf(g->out, " (%llu sample%s, %.2f%%)</title>", (unsigned long long)n->total,
			n->total == 1 ? "" : "s", pct);
	fprintf(g->out,
		"<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" "
		"rx=\"2\" ry=\"2\" data-x=\"%llu\" data-w=\"%llu\"/>",
		px, y, w, FG_FRAME_H - 1, rgb[0], rgb[1], rgb[2], (unsigned long long)x,
		(unsigned long long)n->total);
	fprintf(g->out, "<text x=\"%.2f\" y=\"%.1f\">", px + 3,
		y + FG_FRAME_H * 0.5 + FG_FONT_SZ * 0.35);
	if (fit >= 3)
		fg__escape(g->out, name, fit);
	fputs("</text></g>\n", g->out);
}

static void fg__draw(struct fg *g, uint32_t id, uint64_t x, uint32_t depth)
{
	uint32_t c;

	if (!fg__visible(g, id))
		return;
	fg__frame(g, id, x, depth);
	for (c = g->nodes[id].first_child; c; c = g->nodes[c].next_sibling) {
		fg__draw(g, c, x, depth + 1);
		x += g->nodes[c].total;
	}
}

/* The page script: hover details, zoom, search. Positions come from data-x/data-w. */
static const char fg_script[] =
	"var svg, details, matchedtxt, unzoombtn, searchbtn, frames, searching = null;\n"
	"function init(evt) {\n"
	"  svg = document.documentElement;\n"
	"  details = document.getElementById('details').firstChild;\n"
	"  matchedtxt = document.getElementById('matched');\n"
	"  unzoombtn = document.getElementById('unzoom');\n"
	"  searchbtn = document.getElementById('search');\n"
	"  frames = document.getElementById('frames');\n"
	"  frames.addEventListener('mouseover', function(e) {\n"
	"    var g = frame_of(e.target);\n"
	"    if (g) details.nodeValue = g.querySelector('title').textContent;\n"
	"  });\n"
	"  frames.addEventListener('mouseout', function(e) { details.nodeValue = ' '; });\n"
	"  frames.addEventListener('click', function(e) {\n"
	"    var g = frame_of(e.target); if (g) zoom(g);\n"
	"  });\n"
	"  unzoombtn.addEventListener('click', unzoom);\n"
	"  searchbtn.addEventListener('click', search_prompt);\n"
	"  window.addEventListener('keydown', function(e) {\n"
	"    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {\n"
	"      e.preventDefault(); search_prompt();\n"
	"    } else if (e.keyCode === 27) { reset_search(); }\n"
	"  });\n"
	"}\n"
	"function frame_of(el) {\n"
	"  while (el && el !== frames) { if (el.tagName === 'g') return el; el = el.parentNode; }\n"
	"  return null;\n"
	"}\n"
	"function name_of(g) {\n"
	"  var t = g.querySelector('title').textContent;\n"
	"  return t.substring(0, t.lastIndexOf(' ('));\n"
	"}\n"
	"function fit_text(g, x, w) {\n"
	"  var t = g.querySelector('text'), name = name_of(g);\n"
	"  var n = Math.floor((w - 6) / (FONT_SZ * FONT_W));\n"
	"  t.setAttribute('x', (x + 3).toFixed(2));\n"
	"  if (n < 3) t.textContent = '';\n"
	"  else if (name.length > n) t.textContent = name.substring(0, n - 2) + '..';\n"
	"  else t.textContent = name;\n"
	"}\n"
	"function layout(zx, zw, zy) {\n"
	"  var gs = frames.getElementsByTagName('g'), scale = (WIDTH - 2 * XPAD) / zw;\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = g.querySelector('rect');\n"
	"    var x = +r.getAttribute('data-x'), w = +r.getAttribute('data-w');\n"
	"    var y = +r.getAttribute('y');\n"
	"    g.classList.remove('hide'); g.classList.remove('parent');\n"
	"    if (zy !== null && y > zy && x <= zx && x + w >= zx + zw) {\n"
	"      g.classList.add('parent');\n"
	"      r.setAttribute('x', XPAD); r.setAttribute('width', WIDTH - 2 * XPAD);\n"
	"      fit_text(g, XPAD, WIDTH - 2 * XPAD);\n"
	"    } else if (zy === null || (y <= zy && x >= zx && x + w <= zx + zw)) {\n"
	"      var px = XPAD + (x - zx) * scale, pw = w * scale;\n"
	"      r.setAttribute('x', px.toFixed(2)); r.setAttribute('width', pw.toFixed(2));\n"
	"      if (pw < MIN_PX) g.classList.add('hide');\n"
	"      fit_text(g, px, pw);\n"
	"    } else {\n"
	"      g.classList.add('hide');\n"
	"    }\n"
	"  }\n"
	"}\n"
	"function zoom(g) {\n"
	"  var r = g.querySelector('rect');\n"
	"  layout(+r.getAttribute('data-x'), +r.getAttribute('data-w'), +r.getAttribute('y'));\n"
	"  unzoombtn.classList.remove('hide');\n"
	"  if (searching) search(searching);\n"
	"}\n"
	"function unzoom() {\n"
	"  layout(0, TOTAL, null);\n"
	"  unzoombtn.classList.add('hide');\n"
	"  if (searching) search(searching);\n"
	"}\n"
	"function search_prompt() {\n"
	"  if (searching) { reset_search(); return; }\n"
	"  var term = prompt('Enter a search term (regexp allowed, eg: ^ext4_)', '');\n"
	"  if (term) search(term);\n"
	"}\n"
	"function reset_search() {\n"
	"  var rs = frames.getElementsByTagName('rect');\n"
	"  for (var i = 0; i < rs.length; i++) {\n"
	"    if (rs[i].hasAttribute('data-fill')) {\n"
	"      rs[i].setAttribute('fill', rs[i].getAttribute('data-fill'));\n"
	"      rs[i].removeAttribute('data-fill');\n"
	"    }\n"
	"  }\n"
	"  searching = null;\n"
	"  searchbtn.classList.remove('active');\n"
	"  matchedtxt.classList.add('hide');\n"
	"}\n"
	"function search(term) {\n"
	"  var re;\n"
	"  try { re = new RegExp(term); }\n"
	"  catch (e) { alert('Bad regexp: ' + e.message); return; }\n"
	"  reset_search();\n"
	"  var gs = frames.getElementsByTagName('g'), spans = [];\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    if (!re.test(name_of(gs[i]))) continue;\n"
	"    var r = gs[i].querySelector('rect');\n"
	"    r.setAttribute('data-fill', r.getAttribute('fill'));\n"
	"    r.setAttribute('fill', 'rgb(230,0,230)');\n"
	"    spans.push([+r.getAttribute('data-x'), +r.getAttribute('data-w')]);\n"
	"  }\n"
	"  searching = term;\n"
	"  searchbtn.classList.add('active');\n"
	"  /* matched share: union of the matched spans, so nested matches count once */\n"
	"  spans.sort(function(a, b) { return a[0] - b[0]; });\n"
	"  var sum = 0, end = -1;\n"
	"  for (var j = 0; j < spans.length; j++) {\n"
	"    var s = spans[j][0], e = s + spans[j][1];\n"
	"    if (s >= end) { sum += e - s; end = e; }\n"
	"    else if (e > end) { sum += e - end; end = e; }\n"
	"  }\n"
	"  matchedtxt.firstChild.nodeValue = 'Matched: ' + (100 * sum / TOTAL).toFixed(2) + '%';\n"
	"  matchedtxt.classList.remove('hide');\n"
	"}\n";

/* The default title: what the widths measure. */
static const char *fg__title(const struct fg *g)
{
	if (!g->ns)
		return "CPU flame graph";
	return profile__has_cpu(g->p) ? "Wall-clock flame graph (on CPU + off CPU, blue)"
				      : "Off-CPU flame graph";
}

static void fg__header(struct fg *g, const char *title)
{
	FILE *out = g->out;
	int w = FLAMEGRAPH_WIDTH, h = g->height;

	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		w, h, w, h);
	fputs("<!-- made by stackscope; root at the bottom, frames root to leaf upwards -->\n"
	      "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
	      "<stop stop-color=\"#f8f8f8\" offset=\"5%\"/><stop stop-color=\"#ececd8\" "
	      "offset=\"95%\"/></linearGradient></defs>\n"
	      "<style type=\"text/css\">\n"
	      "text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; "
	      "fill: rgb(0,0,0); }\n"
	      "#title { text-anchor: middle; font-size: 17px; }\n"
	      "#frames > g { cursor: pointer; }\n"
	      "#frames > g:hover > rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	      "#frames text { pointer-events: none; }\n"
	      "#unzoom, #search { cursor: pointer; fill: rgb(40,40,160); }\n"
	      "#search { text-anchor: end; }\n"
	      "#search.active { fill: rgb(200,0,200); }\n"
	      "#matched { text-anchor: end; }\n"
	      ".hide { display: none; }\n"
	      ".parent { opacity: 0.5; }\n"
	      "</style>\n",
	      out);
	fprintf(out,
		"<script type=\"text/ecmascript\"><![CDATA[\n"
		"var WIDTH = %d, XPAD = %d, FONT_SZ = %d, FONT_W = %g, MIN_PX = %g,\n"
		"  TOTAL = %llu;\n",
		w, FG_XPAD, FG_FONT_SZ, FG_FONT_W, FLAMEGRAPH_MIN_PX,
		(unsigned long long)g->nodes[1].total);
	fputs(fg_script, out);
	fputs("]]></script>\n", out);
	fprintf(out,
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#background)\"/>\n", w,
		h);
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", w / 2);
	fg__escape(out, title ? title : fg__title(g), 200);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
		FG_XPAD);
	fprintf(out, "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n", w - FG_XPAD);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", FG_XPAD, h - 17);
	fprintf(out, "<text id=\"matched\" class=\"hide\" x=\"%d\" y=\"%d\"> </text>\n",
		w - FG_XPAD, h - 17);
}

int flamegraph__fwrite(const struct profile *p, FILE *out, const char *title)
{
	struct fg g = { .p = p, .out = out, .ns = profile__has_off_cpu(p) };
	int err;

	err = fg__build(&g);
	err = err ?: fg__link(&g);
	if (err)
		goto cleanup;
	g.scale = g.nodes[1].total ? (double)(FLAMEGRAPH_WIDTH - 2 * FG_XPAD) / g.nodes[1].total
				   : 0;
	if (g.nodes[1].total)
		fg__measure(&g, 1, 0);
	g.height = FG_YPAD_TOP + (int)(g.max_depth + 1) * FG_FRAME_H + FG_YPAD_BOTTOM;
	fg__header(&g, title);
	fputs("<g id=\"frames\">\n", out);
	if (g.nodes[1].total)
		fg__draw(&g, 1, 0, 0);
	else
		fprintf(out, "<text x=\"%d\" y=\"%d\">No samples</text>\n", FG_XPAD,
			g.height - FG_YPAD_BOTTOM - 4);
	fputs("</g>\n</svg>\n", out);
	if (ferror(out) || fflush(out))
		err = -EIO;
cleanup:
	free(g.nodes);
	id_index__free(&g.idx);
	return err;
}

int flamegraph__write(const struct profile *p, const char *path, const char *title)
{
	struct output_file *out;
	FILE *f;
	int err = output_file__open_stream(path, &out, &f);

	return err ?: output_file__finish(out, flamegraph__fwrite(p, f, title));
}
