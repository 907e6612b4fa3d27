/* Unit tests of `stackscope top`'s model and view (src/top/): the window ring, the function
 * table (self and total shares, recursion counted once, names merged across profiles,
 * filters), the caller tree, the screen (no full clear, cut lines, names that cannot drive
 * the terminal) and the terminal on a pseudo-terminal (keys, the mode restored).
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "profile/profile.h"
#include "top/caller_tree.h"
#include "top/function_table.h"
#include "top/screen.h"
#include "top/terminal.h"
#include "top/window.h"
#include "test.h"

/* A profile with stacks given as names, root last: "hot_leaf chain_c chain_b main". */
struct stack_spec {
	const char *names;
	uint32_t pid;
	const char *comm;
	uint64_t count;
	const char *path; /* the program's path (NULL: /usr/bin/wl) */
};

static uint32_t frame_for(struct profile *p, uint32_t mapping, const char *name)
{
	struct profile_line line = { name, NULL, 0 };
	struct profile_frame f = { FRAME_NATIVE, mapping, top_name__hash(name) & 0xffffff, &line,
				   1 };

	if (!strcmp(name, "kfunc")) {
		f.kind = FRAME_KERNEL;
		f.mapping = 0;
	}
	return profile__add_frame(p, &f);
}

static struct profile *make_profile(const struct stack_spec *specs, size_t cnt, uint64_t start_s)
{
	struct profile_opts opts = { .period_ns = 10000000, .start_time_ns = start_s * 1000000000 };
	struct profile *p = profile__new(&opts);
	struct profile_mapping m = { "/usr/bin/wl", NULL, 0, 0x1000000, 0 };
	uint32_t mapping, frames[32];
	size_t i;

	if (!p)
		return NULL;
	for (i = 0; i < cnt; i++) {
		char buf[256], *save = NULL, *tok;
		uint32_t n = 0;

		m.path = specs[i].path ? specs[i].path : "/usr/bin/wl";
		mapping = profile__add_mapping(p, &m);

		snprintf(buf, sizeof(buf), "%s", specs[i].names);
		for (tok = strtok_r(buf, " ", &save); tok && n < 32;
		     tok = strtok_r(NULL, " ", &save))
			frames[n++] = frame_for(p, mapping, tok);
		profile__add_sample(p, &(struct profile_sample){ .frames = frames,
								 .frame_cnt = n,
								 .pid = specs[i].pid,
								 .tid = specs[i].pid,
								 .comm = specs[i].comm,
								 .thread_comm = specs[i].comm,
								 .count = specs[i].count });
	}
	profile__set_end_time(p, (start_s + 1) * 1000000000);
	return p;
}

static const struct stack_spec base_specs[] = {
	{ "hot_leaf chain_c chain_b main", 10, "wl_chain", 5 },
	{ "other main", 20, "python3", 3 },
	{ "rec rec rec main", 10, "wl_chain", 2 },
	{ "kfunc hot_leaf chain_x main", 10, "wl_chain", 1 },
};

static const struct top_function *fn(const struct function_table *t, const char *name)
{
	long i = function_table__find(t, name, NULL);

	return i >= 0 ? &t->fns[i] : NULL;
}

TEST(window_ring)
{
	struct top_window *w = top_window__new(2);
	struct profile *a, *b, *c;

	struct function_table t = { 0 };
	struct caller_tree tree = { 0 };
	struct top_filter all = { 0 };

	REQUIRE(w);
	CHECK(!top_window__new(0));
	/* an empty window: empty views */
	REQUIRE(!function_table__build(&t, w, &all, TOP_SORT_SELF));
	CHECK_EQ_INT(t.fn_cnt, 0);
	CHECK_EQ_INT(t.proc_cnt, 0);
	REQUIRE(!caller_tree__build(&tree, w, &all, "hot_leaf", NULL, 16));
	CHECK_EQ_INT(tree.row_cnt, 0);
	function_table__free(&t);
	caller_tree__free(&tree);
	a = make_profile(base_specs, 1, 100);
	b = make_profile(base_specs, 1, 101);
	c = make_profile(base_specs, 1, 102);
	REQUIRE(a && b && c);
	CHECK_EQ_INT(top_window__slot_cnt(w), 0);
	CHECK(top_window__seconds(w) == 0);
	top_window__push(w, a);
	top_window__push(w, b);
	CHECK(top_window__slot(w, 0) == a);
	CHECK(top_window__slot(w, 1) == b);
	CHECK(top_window__seconds(w) == 2.0);
	top_window__push(w, c); /* frees a */
	CHECK_EQ_INT(top_window__slot_cnt(w), 2);
	CHECK(top_window__slot(w, 0) == b);
	CHECK(top_window__slot(w, 1) == c);
	CHECK(!top_window__slot(w, 2));
	CHECK(top_window__seconds(w) == 2.0);
	top_window__push(w, NULL);
	CHECK_EQ_INT(top_window__slot_cnt(w), 2);
	top_window__free(w);
}

TEST(self_and_total)
{
	struct top_window *w = top_window__new(4);
	struct function_table t = { 0 };
	struct top_filter all = { 0 };
	const struct top_function *f;

	REQUIRE(w);
	top_window__push(w, make_profile(base_specs, 4, 100));
	REQUIRE(!function_table__build(&t, w, &all, TOP_SORT_SELF));
	CHECK_EQ_U64(t.samples, 11);
	CHECK_EQ_U64(t.all_samples, 11);
	/* by self: hot_leaf 5, other 3, rec 2, kfunc 1, then the callers at 0 by total */
	REQUIRE(t.fn_cnt == 8);
	CHECK_STR(t.fns[0].name, "hot_leaf");
	CHECK_STR(t.fns[1].name, "other");
	CHECK_STR(t.fns[2].name, "rec");
	CHECK_STR(t.fns[3].name, "kfunc");
	CHECK_STR(t.fns[4].name, "main");
	f = fn(&t, "hot_leaf");
	REQUIRE(f);
	CHECK_EQ_U64(f->self, 5);
	CHECK_EQ_U64(f->total, 6);
	CHECK_STR(f->where, "wl");
	f = fn(&t, "rec"); /* three times on its stacks, counted once */
	REQUIRE(f);
	CHECK_EQ_U64(f->self, 2);
	CHECK_EQ_U64(f->total, 2);
	f = fn(&t, "main");
	REQUIRE(f);
	CHECK_EQ_U64(f->self, 0);
	CHECK_EQ_U64(f->total, 11);
	f = fn(&t, "kfunc");
	REQUIRE(f);
	CHECK_STR(f->where, "[kernel]");
	CHECK(fn(&t, "nothing") == NULL);
	/* processes by samples */
	REQUIRE(t.proc_cnt == 2);
	CHECK_EQ_INT(t.procs[0].pid, 10);
	CHECK_EQ_U64(t.procs[0].samples, 8);
	CHECK_STR(t.procs[0].comm, "wl_chain");
	CHECK_EQ_INT(t.procs[1].pid, 20);
	/* by total: main first */
	REQUIRE(!function_table__build(&t, w, &all, TOP_SORT_TOTAL));
	CHECK_STR(t.fns[0].name, "main");
	CHECK_STR(t.fns[1].name, "hot_leaf");
	function_table__free(&t);
	top_window__free(w);
}

TEST(names_merge_across_profiles)
{
	struct top_window *w = top_window__new(3);
	struct function_table t = { 0 };
	struct top_filter all = { 0 };
	const struct top_function *f;

	REQUIRE(w);
	top_window__push(w, make_profile(base_specs, 1, 100));
	top_window__push(w, make_profile(base_specs, 2, 101));
	top_window__push(w, make_profile(base_specs, 1, 102));
	top_window__push(w, make_profile(base_specs + 1, 1, 103)); /* the first one leaves */
	REQUIRE(!function_table__build(&t, w, &all, TOP_SORT_SELF));
	CHECK_EQ_U64(t.samples, 16);
	f = fn(&t, "hot_leaf");
	REQUIRE(f);
	CHECK_EQ_U64(f->self, 10);
	f = fn(&t, "other");
	REQUIRE(f);
	CHECK_EQ_U64(f->self, 6);
	CHECK_EQ_INT(t.fn_cnt, 5); /* hot_leaf, other, chain_c, chain_b, main */
	function_table__free(&t);
	top_window__free(w);
}

TEST(filters)
{
	struct top_window *w = top_window__new(1);
	struct function_table t = { 0 };
	struct top_filter f = { .pid = 20 };

	REQUIRE(w);
	top_window__push(w, make_profile(base_specs, 4, 100));
	REQUIRE(!function_table__build(&t, w, &f, TOP_SORT_SELF));
	CHECK_EQ_U64(t.samples, 3);
	CHECK_EQ_U64(t.all_samples, 11);
	CHECK_EQ_INT(t.proc_cnt, 2); /* the processes are before the filter */
	CHECK_EQ_INT(t.fn_cnt, 2);
	CHECK(fn(&t, "hot_leaf") == NULL);
	f = (struct top_filter){ .text = "chain" };
	REQUIRE(!function_table__build(&t, w, &f, TOP_SORT_SELF));
	CHECK_EQ_U64(t.samples, 8);
	CHECK(fn(&t, "other") == NULL);
	f = (struct top_filter){ .text = "20" }; /* digits: a pid */
	REQUIRE(!function_table__build(&t, w, &f, TOP_SORT_SELF));
	CHECK_EQ_U64(t.samples, 3);
	f = (struct top_filter){ .text = "nomatch" };
	REQUIRE(!function_table__build(&t, w, &f, TOP_SORT_SELF));
	CHECK_EQ_U64(t.samples, 0);
	CHECK_EQ_INT(t.fn_cnt, 0);
	function_table__free(&t);
	top_window__free(w);
}

TEST(same_name_two_programs)
{
	static const struct stack_spec specs[] = {
		{ "hot_leaf chain_c main", 10, "wl", 5 },
		{ "hot_leaf pre_b main", 20, "prefork", 3, "/opt/prefork" },
	};
	struct top_window *w = top_window__new(1);
	struct function_table t = { 0 };
	struct caller_tree c = { 0 };
	struct top_filter all = { 0 };
	long i;

	REQUIRE(w);
	top_window__push(w, make_profile(specs, 2, 100));
	REQUIRE(!function_table__build(&t, w, &all, TOP_SORT_SELF));
	CHECK_EQ_INT(t.fn_cnt, 6); /* hot_leaf and main twice, chain_c, pre_b */
	CHECK_STR(t.fns[0].name, "hot_leaf");
	CHECK_STR(t.fns[0].where, "wl");
	CHECK_EQ_U64(t.fns[0].self, 5);
	CHECK_STR(t.fns[1].name, "hot_leaf");
	CHECK_STR(t.fns[1].where, "prefork");
	CHECK_EQ_U64(t.fns[1].self, 3);
	i = function_table__find(&t, "hot_leaf", "prefork");
	CHECK_EQ_INT(i, 1);
	CHECK_EQ_INT(function_table__find(&t, "hot_leaf", NULL), 0);
	CHECK_EQ_INT(function_table__find(&t, "hot_leaf", "[kernel]"), -1);
	REQUIRE(!caller_tree__build(&c, w, &all, "hot_leaf", "prefork", 16));
	CHECK_EQ_U64(c.samples, 3);
	REQUIRE(c.row_cnt == 2);
	CHECK_STR(c.rows[0].name, "pre_b");
	REQUIRE(!caller_tree__build(&c, w, &all, "hot_leaf", NULL, 16));
	CHECK_EQ_U64(c.samples, 8);
	CHECK_STR(c.rows[0].name, "chain_c");
	caller_tree__free(&c);
	function_table__free(&t);
	top_window__free(w);
}

TEST(caller_tree)
{
	static const struct stack_spec specs[] = {
		{ "hot_leaf chain_c chain_b chain_a main", 10, "wl", 5 },
		{ "hot_leaf chain_x main", 10, "wl", 2 },
		{ "hot_leaf chain_c chain_y main", 10, "wl", 1 },
		{ "other main", 10, "wl", 4 },
		{ "hot_leaf hot_leaf chain_c main", 10, "wl", 1 }, /* innermost occurrence */
	};
	struct top_window *w = top_window__new(2);
	struct caller_tree c = { 0 };
	struct top_filter all = { 0 };
	char name[] = "hot_leaf"; /* matched by content */

	REQUIRE(w);
	top_window__push(w, make_profile(specs, 5, 100));
	top_window__push(w, make_profile(specs, 1, 101));
	REQUIRE(!caller_tree__build(&c, w, &all, name, NULL, 16));
	CHECK_EQ_U64(c.samples, 14);
	/* chain_c 12 { chain_b 10 { chain_a 10 { main } }, chain_y 1 { main }, main 1 },
	 * chain_x 2 { main }, hot_leaf 1 { chain_c { main } }
	 */
	REQUIRE(c.row_cnt >= 8);
	CHECK_STR(c.rows[0].name, "chain_c");
	CHECK_EQ_U64(c.rows[0].count, 11);
	CHECK_EQ_INT(c.rows[0].depth, 1);
	CHECK_STR(c.rows[1].name, "chain_b");
	CHECK_EQ_U64(c.rows[1].count, 10);
	CHECK_EQ_INT(c.rows[1].depth, 2);
	CHECK_STR(c.rows[2].name, "chain_a");
	CHECK_EQ_INT(c.rows[2].depth, 3);
	CHECK_STR(c.rows[3].name, "main");
	CHECK_EQ_INT(c.rows[3].depth, 4);
	/* chain_c's other callers, by count then name */
	CHECK_STR(c.rows[4].name, "chain_y");
	CHECK_EQ_INT(c.rows[4].depth, 2);
	CHECK_STR(c.rows[6].name, "chain_x");
	CHECK_EQ_U64(c.rows[6].count, 2);
	CHECK_EQ_INT(c.rows[6].depth, 1);
	CHECK_STR(c.rows[8].name, "hot_leaf");
	CHECK_EQ_U64(c.rows[8].count, 1);
	/* depth cap */
	REQUIRE(!caller_tree__build(&c, w, &all, "hot_leaf", NULL, 1));
	CHECK_EQ_INT(c.row_cnt, 3);
	CHECK_STR(c.rows[0].name, "chain_c");
	/* a function nobody has */
	REQUIRE(!caller_tree__build(&c, w, &all, "absent", NULL, 16));
	CHECK_EQ_INT(c.row_cnt, 0);
	CHECK_EQ_U64(c.samples, 0);
	caller_tree__free(&c);
	top_window__free(w);
}

static size_t count_of(const char *s, const char *what)
{
	size_t n = 0;

	for (s = strstr(s, what); s; s = strstr(s + 1, what))
		n++;
	return n;
}

TEST(screen_text_and_frame)
{
	static const struct stack_spec specs[] = {
		{ "hot_leaf chain_c chain_b main", 10, "wl", 3 },
		{ "evil\x1b]0;pwned\x07\xc2\x9b\xe2\x82\xac main", 10, "wl", 1 },
	};
	struct top_window *w = top_window__new(1);
	struct function_table t = { 0 };
	struct caller_tree c = { 0 };
	struct top_filter all = { 0 };
	struct screen_buf b = { 0 };
	struct top_view v = { .rows = 8, .cols = 40, .expanded = true };
	char *line, *save = NULL;
	size_t lines = 0;

	REQUIRE(w);
	top_window__push(w, make_profile(specs, 2, 100));
	REQUIRE(!function_table__build(&t, w, &all, TOP_SORT_SELF));
	REQUIRE(!caller_tree__build(&c, w, &all, "hot_leaf", NULL, 16));
	REQUIRE(!screen__text(&b, &t, &c, "title", 10));
	CHECK(strstr(b.s, " 75.00%   75.00%  wl               hot_leaf\n") != NULL);
	CHECK(strstr(b.s, "callers of hot_leaf (3 samples):\n") != NULL);
	CHECK(strstr(b.s, "<- chain_c\n") != NULL);
	CHECK(strstr(b.s, "  <- chain_b\n") != NULL);
	/* Esc, BEL and the C1 CSI shown as '?', the euro sign kept */
	CHECK(strstr(b.s, "evil?]0;pwned??\xe2\x82\xac") != NULL);
	CHECK(!strchr(b.s, '\x1b'));
	CHECK(!strchr(b.s, '\x07'));

	REQUIRE(!screen__frame(&b, &v, &t, &c, "a title longer than forty columns, cut at forty",
			       "keys"));
	CHECK(!strncmp(b.s, "\x1b[H", 3));
	CHECK(!strstr(b.s, "\x1b[2J")); /* no full clear: lines cleared after their text */
	CHECK(b.len >= 3 && !strcmp(b.s + b.len - 3, "\x1b[J"));
	CHECK_EQ_INT(count_of(b.s, "\r\n"), 7); /* 8 rows, no newline after the last */
	CHECK(strstr(b.s, "a title longer than forty columns, cut a\x1b[0m") != NULL);
	CHECK(strstr(b.s, "<- ch\x1b[K") != NULL); /* cut at 40 */
	CHECK(!strstr(b.s, "\x1b]0"));
	/* every line within 40 columns once the escape sequences are out */
	for (line = strtok_r(b.s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t cols = 0;
		const char *s;

		for (s = line; *s; s++) {
			if (*s == '\x1b') {
				while (*s && !(*s >= 'A' && *s <= 'z' && *s != '['))
					s++;
				if (!*s)
					break;
				continue;
			}
			if (*s != '\r' && ((unsigned char)*s & 0xc0) != 0x80)
				cols++;
		}
		CHECK(cols <= 40);
		lines++;
	}
	CHECK_EQ_INT(lines, 8);
	/* callers that do not fit: the last line says how many are left out */
	v = (struct top_view){ .rows = 7, .cols = 80, .expanded = true };
	REQUIRE(!screen__frame(&b, &v, &t, &c, "t", "k"));
	CHECK(strstr(b.s, "<- chain_c\x1b[K") != NULL);
	CHECK(strstr(b.s, "... 2 more\x1b[K") != NULL);
	CHECK(!strstr(b.s, "<- chain_b"));
	CHECK_EQ_INT(count_of(b.s, "\r\n"), 6);
	/* the selection is kept on screen */
	v = (struct top_view){ .rows = 5, .cols = 80, .selected = 4 };
	REQUIRE(!screen__frame(&b, &v, &t, NULL, "t", "k"));
	CHECK_EQ_INT(v.scroll, 3);
	v.selected = 99; /* past the end: the last one */
	REQUIRE(!screen__frame(&b, &v, &t, NULL, "t", "k"));
	CHECK_EQ_INT(v.selected, t.fn_cnt - 1);
	screen_buf__free(&b);
	caller_tree__free(&c);
	function_table__free(&t);
	top_window__free(w);
}

static bool read_until(int fd, const char *what, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = 0;
	while (len + 1 < cap) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 2000) <= 0)
			return false;
		n = read(fd, buf + len, cap - 1 - len);
		if (n <= 0)
			return false;
		len += (size_t)n;
		buf[len] = 0;
		if (strstr(buf, what))
			return true;
	}
	return false;
}

TEST(terminal_on_a_pty)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY), slave = -1, key;
	struct termios before, after;
	char buf[256];
	int keys[8], n = 0;

	if (master < 0 || grantpt(master) || unlockpt(master))
		SKIP("no pseudo-terminal: %s", strerror(errno));
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	REQUIRE(slave >= 0);
	REQUIRE(!tcgetattr(slave, &before));
	REQUIRE(!terminal__enter(slave, slave));
	CHECK(read_until(master, "\x1b[?1049h", buf, sizeof(buf)));
	REQUIRE(!tcgetattr(slave, &after));
	CHECK(!(after.c_lflag & ECHO));
	CHECK(!(after.c_lflag & ICANON));
	CHECK(after.c_lflag & ISIG); /* Ctrl-C still signals */
	CHECK_EQ_INT(terminal__read_key(), KEY_NONE);
	/* q, arrows (CSI and SS3), page down, Enter, a lone Esc */
	REQUIRE(write(master, "q\x1b[A\x1bOB\x1b[6~\r\x1b", 13) == 13);
	usleep(50000);
	while (n < 8 && (key = terminal__read_key()) != KEY_NONE)
		keys[n++] = key;
	CHECK_EQ_INT(n, 6);
	CHECK_EQ_INT(keys[0], 'q');
	CHECK_EQ_INT(keys[1], KEY_UP);
	CHECK_EQ_INT(keys[2], KEY_DOWN);
	CHECK_EQ_INT(keys[3], KEY_PAGE_DOWN);
	CHECK_EQ_INT(keys[4], KEY_ENTER);
	CHECK_EQ_INT(keys[5], KEY_ESC);
	/* a sequence split across reads waits for its end */
	REQUIRE(write(master, "\x1b[", 2) == 2);
	usleep(50000);
	CHECK_EQ_INT(terminal__read_key(), KEY_NONE);
	REQUIRE(write(master, "5~x", 3) == 3);
	usleep(50000);
	CHECK_EQ_INT(terminal__read_key(), KEY_PAGE_UP);
	CHECK_EQ_INT(terminal__read_key(), 'x');
	CHECK_EQ_INT(terminal__read_key(), KEY_NONE);
	terminal__leave();
	CHECK(read_until(master, "\x1b[?1049l", buf, sizeof(buf)));
	CHECK(strstr(buf, "\x1b[?25h") != NULL);
	REQUIRE(!tcgetattr(slave, &after));
	CHECK_EQ_INT(after.c_lflag, before.c_lflag);
	CHECK_EQ_INT(after.c_iflag, before.c_iflag);
	terminal__leave(); /* idempotent: nothing more written */
	close(slave);
	close(master);
}

int main(void)
{
	RUN(window_ring);
	RUN(self_and_total);
	RUN(names_merge_across_profiles);
	RUN(filters);
	RUN(same_name_two_programs);
	RUN(caller_tree);
	RUN(screen_text_and_frame);
	RUN(terminal_on_a_pty);
	return test_summary();
}
