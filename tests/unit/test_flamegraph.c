/* Unit tests for the SVG flamegraph: the file is parsed by an independent XML parser
 * (python3's xml.dom.minidom), which prints every frame; widths, positions, merged totals,
 * pruning, escaping and colour families are checked against a known profile.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/flamegraph.h"
#include "profile/profile.h"
#include "scratch.h"
#include "test.h"

static char tmp_dir[256];

/* Prints "title\tx\twidth\tfill\ttext" per frame, or fails on malformed XML. */
static const char dump_py[] =
	"import sys, xml.dom.minidom\n"
	"d = xml.dom.minidom.parse(sys.argv[1])\n"
	"frames = [g for g in d.getElementsByTagName('g') if g.getAttribute('id') == 'frames'][0]\n"
	"for g in frames.getElementsByTagName('g'):\n"
	"    t = g.getElementsByTagName('title')[0].firstChild.data\n"
	"    r = g.getElementsByTagName('rect')[0]\n"
	"    x = g.getElementsByTagName('text')[0].firstChild\n"
	"    print('\\t'.join([t, r.getAttribute('x'), r.getAttribute('width'),\n"
	"                     r.getAttribute('fill'), x.data if x else '']))\n"
	"print('scripts', len(d.getElementsByTagName('script')))\n";

#define MAX_FRAMES 64

struct svg_frame {
	char title[256];
	double x, width;
	int rgb[3];
	char text[256];
};

struct svg_dump {
	struct svg_frame frames[MAX_FRAMES];
	size_t cnt;
	int scripts;
};

static int svg_dump__read(struct svg_dump *d, const char *svg)
{
	char py[512], cmd[2048], line[1024];
	FILE *f;

	memset(d, 0, sizeof(*d));
	snprintf(py, sizeof(py), "%s/dump.py", tmp_dir);
	f = fopen(py, "w");
	if (!f)
		return -1;
	fputs(dump_py, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' 2>&1", py, svg);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct svg_frame *fr = &d->frames[d->cnt];
		char *field[5], *save = NULL, *tok;
		int n = 0;

		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "scripts ", 8)) {
			d->scripts = (int)strtol(line + 8, NULL, 10);
			continue;
		}
		if (d->cnt >= MAX_FRAMES)
			continue;
		/* strtok_r would merge empty fields: split by hand */
		for (tok = line; n < 5; n++) {
			field[n] = tok;
			save = strchr(tok, '\t');
			if (!save) {
				n++;
				break;
			}
			*save = 0;
			tok = save + 1;
		}
		if (n < 4) {
			printf("  python: %s\n", line);
			continue;
		}
		snprintf(fr->title, sizeof(fr->title), "%s", field[0]);
		fr->x = strtod(field[1], NULL);
		fr->width = strtod(field[2], NULL);
		sscanf(field[3], "rgb(%d,%d,%d)", &fr->rgb[0], &fr->rgb[1], &fr->rgb[2]);
		snprintf(fr->text, sizeof(fr->text), "%s", n > 4 ? field[4] : "");
		d->cnt++;
	}
	return pclose(f) ? -1 : 0;
}

static const struct svg_frame *svg_dump__find(const struct svg_dump *d, const char *title)
{
	size_t i;

	for (i = 0; i < d->cnt; i++) {
		if (!strcmp(d->frames[i].title, title))
			return &d->frames[i];
	}
	return NULL;
}

static bool near(double a, double b)
{
	return a - b < 0.011 && b - a < 0.011;
}

static struct profile *build_profile(void)
{
	struct profile_opts opts = { .period_ns = 10000000 };
	struct profile_mapping m = { "/usr/bin/app", NULL, 0, 0x10000, 0 };
	struct profile_line l_main[] = { { "main", NULL, 0 } };
	struct profile_line l_a[] = { { "a", NULL, 0 } };
	/* b inlined into a2: draws as a2 -> b */
	struct profile_line l_b[] = { { "b", NULL, 0 }, { "a", NULL, 0 } };
	struct profile_line l_c[] = { { "c", NULL, 0 } };
	struct profile_line l_d[] = { { "d<&>\"'", NULL, 0 } };
	struct profile_line l_long[] = {
		{ "a_function_with_a_very_long_name_that_cannot_fit_in_its_box", NULL, 0 }
	};
	struct profile_line l_tiny[] = { { "tiny", NULL, 0 } };
	struct profile_line l_bad[] = { { "bad\xff\x01utf8", NULL, 0 } };
	struct profile_line l_err[] = { { "[unwind: no CFI]", NULL, 0 } };
	struct profile_line l_k[] = { { "do_syscall_64", NULL, 0 } };
	struct profile *p = profile__new(&opts);
	uint32_t mid, f_main, f_a, f_b, f_c, f_d, f_long, f_tiny, f_bad, f_err, f_k;

	if (!p)
		return NULL;
	mid = profile__add_mapping(p, &m);
#define NATIVE(lines, n, addr) \
	profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, mid, addr, lines, n })
	f_main = NATIVE(l_main, 1, 0x100);
	f_a = NATIVE(l_a, 1, 0x200);
	f_b = NATIVE(l_b, 2, 0x300);
	f_c = NATIVE(l_c, 1, 0x400);
	f_d = NATIVE(l_d, 1, 0x500);
	f_long = NATIVE(l_long, 1, 0x600);
	f_tiny = NATIVE(l_tiny, 1, 0x700);
	f_bad = NATIVE(l_bad, 1, 0x800);
#undef NATIVE
	f_err = profile__add_frame(p, &(struct profile_frame){ FRAME_ERROR, 0, 0, l_err, 1 });
	f_k = profile__add_frame(p, &(struct profile_frame){ FRAME_KERNEL, 0, 0xffff1000, l_k, 1 });
	{
		/* leaf first; totals: all 20000 = app 18000 + sh 2000 */
		struct {
			uint32_t frames[4];
			uint32_t cnt;
			const char *comm;
			uint32_t tid;
			uint64_t count;
		} s[] = {
			{ { f_b, f_main }, 2, "app", 1, 6000 },       /* main;a;b */
			{ { f_b, f_main }, 2, "app", 2, 6000 },       /* same path, other thread */
			{ { f_c, f_a, f_main }, 3, "app", 1, 3000 },  /* main;a;c */
			{ { f_d, f_main }, 2, "app", 1, 1999 },       /* main;d<&>"' */
			{ { f_tiny, f_main }, 2, "app", 1, 1 },       /* pruned: 0.059 px */
			{ { f_long, f_main }, 2, "app", 1, 500 },     /* 29.5 px */
			{ { f_k, f_bad, f_main }, 3, "app", 1, 500 }, /* main;bad;do_syscall_64 */
			{ { f_err }, 1, "sh", 3, 2000 },
		};
		size_t i;

		for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
			struct profile_sample ps = { s[i].frames, s[i].cnt, 7, s[i].tid,  s[i].comm,
						     s[i].comm,   0,        0, s[i].count };

			if (profile__add_sample(p, &ps)) {
				profile__free(p);
				return NULL;
			}
		}
	}
	return p;
}

TEST(flamegraph_layout_and_escaping)
{
	struct profile *p = build_profile();
	struct svg_dump *d = calloc(1, sizeof(*d));
	const struct svg_frame *all, *app, *sh, *mn, *a, *b, *c, *dd, *lng, *k, *bad, *err;
	char path[512];
	size_t i;

	REQUIRE(p && d);
	snprintf(path, sizeof(path), "%s/fg.svg", tmp_dir);
	REQUIRE(flamegraph__write(p, path, "Test <profile> & co") == 0);
	REQUIRE(svg_dump__read(d, path) == 0);
	CHECK_EQ_INT(d->scripts, 1);

	/* 1180 px for 20000 samples: 0.059 px per sample */
	all = svg_dump__find(d, "all (20000 samples, 100.00%)");
	app = svg_dump__find(d, "app (18000 samples, 90.00%)");
	sh = svg_dump__find(d, "sh (2000 samples, 10.00%)");
	mn = svg_dump__find(d, "main (18000 samples, 90.00%)");
	a = svg_dump__find(d, "a (15000 samples, 75.00%)"); /* a and inlined-into a merged */
	b = svg_dump__find(d, "b (12000 samples, 60.00%)");
	c = svg_dump__find(d, "c (3000 samples, 15.00%)");
	dd = svg_dump__find(d, "d<&>\"' (1999 samples, 9.99%)");
	lng = svg_dump__find(d, "a_function_with_a_very_long_name_that_cannot_fit_in_its_box "
				"(500 samples, 2.50%)");
	bad = svg_dump__find(d, "bad??utf8 (500 samples, 2.50%)");
	k = svg_dump__find(d, "do_syscall_64 (500 samples, 2.50%)");
	err = svg_dump__find(d, "[unwind: no CFI] (2000 samples, 10.00%)");
	REQUIRE(all && app && sh && mn && a && b && c && dd && lng && bad && k && err);

	CHECK(near(all->x, 10) && near(all->width, 1180));
	CHECK(near(app->x, 10) && near(app->width, 1062));
	CHECK(near(sh->x, 1072) && near(sh->width, 118));
	CHECK(near(mn->width, 1062));
	/* children sorted by name: a, a_function..., bad, d<&>"', (tiny pruned) */
	CHECK(near(a->x, 10) && near(a->width, 885));
	CHECK(near(b->x, 10) && near(b->width, 708));
	CHECK(near(c->x, 718) && near(c->width, 177));
	CHECK(near(lng->x, 895) && near(lng->width, 29.5));
	CHECK(near(bad->x, 924.5));
	CHECK(near(dd->x, 954) && near(dd->width, 117.94));
	CHECK(near(k->x, bad->x) && near(k->width, 29.5));
	for (i = 0; i < d->cnt; i++)
		CHECK(strncmp(d->frames[i].title, "tiny", 4) != 0);
	CHECK_EQ_INT(d->cnt, 12);

	/* labels fit their boxes */
	CHECK_STR(b->text, "b");
	CHECK_STR(dd->text, "d<&>\"'");
	CHECK(strlen(lng->text) < 5 && strlen(lng->text) >= 3);
	CHECK(!strcmp(lng->text + strlen(lng->text) - 2, ".."));

	/* colour families: kernel orange, error grey, native red, process blue */
	CHECK(k->rgb[0] >= 220 && k->rgb[1] >= 130 && k->rgb[2] <= 40);
	CHECK(err->rgb[0] == err->rgb[1] && err->rgb[1] == err->rgb[2]);
	CHECK(c->rgb[0] >= 200 && c->rgb[1] >= 50 && c->rgb[1] <= 130 && c->rgb[1] == c->rgb[2]);
	CHECK(app->rgb[2] >= 215 && app->rgb[0] < 160);
	/* and the same name gets the same colour */
	{
		struct svg_dump *d2 = calloc(1, sizeof(*d2));
		const struct svg_frame *c2;

		REQUIRE(d2);
		REQUIRE(flamegraph__write(p, path, NULL) == 0);
		REQUIRE(svg_dump__read(d2, path) == 0);
		c2 = svg_dump__find(d2, "c (3000 samples, 15.00%)");
		CHECK(c2 && !memcmp(c2->rgb, c->rgb, sizeof(c->rgb)));
		free(d2);
	}
	if (test__cur_failed) {
		for (i = 0; i < d->cnt; i++)
			printf("  %s x=%.2f w=%.2f text=%s\n", d->frames[i].title, d->frames[i].x,
			       d->frames[i].width, d->frames[i].text);
	}
	free(d);
	profile__free(p);
}

TEST(flamegraph_empty_profile)
{
	struct profile_opts opts = { .period_ns = 1 };
	struct profile *p = profile__new(&opts);
	struct svg_dump *d = calloc(1, sizeof(*d));
	char path[512];

	REQUIRE(p && d);
	snprintf(path, sizeof(path), "%s/empty.svg", tmp_dir);
	REQUIRE(flamegraph__write(p, path, NULL) == 0);
	CHECK(svg_dump__read(d, path) == 0);
	CHECK_EQ_INT(d->cnt, 0);
	CHECK(flamegraph__write(p, "/nonexistent-dir/x.svg", NULL) < 0);
	free(d);
	profile__free(p);
}

static void run_tests(void)
{
	RUN(flamegraph_layout_and_escaping);
	RUN(flamegraph_empty_profile);
}

int main(void)
{
	return test_scratch_main(tmp_dir, sizeof(tmp_dir), "fg", run_tests);
}
