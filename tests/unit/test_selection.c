/* Unit tests for proc/selection.c (rules: parsing, the verdict of one identity, what cgroup
 * rules say of a cgroup; probabilistic draws) and for the selection keys of the agent's
 * config file and flags (cli/agent_options.c, cli/agent_config.c): every flag a key, flags
 * winning, a bad rule an error naming FILE:LINE.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "base/log.h"
#include "cli/agent_options.h"
#include "proc/selection.h"
#include "test.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static struct selection_rules *rules_of(const char *const *args, size_t n)
{
	struct selection_spec sp = { .cnt = 0 };
	char err[256];
	size_t i;

	/* args: pairs of flag ("select-name") and text */
	for (i = 0; i + 1 < n; i += 2) {
		bool exclude = !strncmp(args[i], "exclude-", 8);
		const char *kind = strchr(args[i], '-') + 1;
		enum selection_kind k = !strcmp(kind, "pid")      ? SELECTION_PID
					: !strcmp(kind, "name")   ? SELECTION_NAME
					: !strcmp(kind, "cgroup") ? SELECTION_CGROUP
					: !strcmp(kind, "pod")    ? SELECTION_POD
								  : SELECTION_CONTAINER;

		if (selection_spec__add(&sp, k, exclude, args[i + 1], err, sizeof(err)))
			return NULL;
	}
	return selection_rules__new(&sp, err, sizeof(err));
}

#define RULES(...)                                     \
	rules_of((const char *const[]){ __VA_ARGS__ }, \
		 sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))

TEST(spec_parsing)
{
	struct selection_spec sp = { .cnt = 0 };
	char err[256];
	int i;

	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_PID, false, "12,34", err, sizeof(err)), 0);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_PID, false, "12,", err, sizeof(err)),
		     -EINVAL);
	CHECK_STR(err, "--select-pid takes PID[,PID...], not '12,'");
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_PID, true, "0", err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_PID, true, "-3", err, sizeof(err)),
		     -EINVAL);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_NAME, false, "^py(thon)?3?$", err,
					 sizeof(err)),
		     0);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_NAME, true, "(", err, sizeof(err)),
		     -EINVAL);
	CHECK(!strncmp(err, "--exclude-name: bad regular expression '(':", 42));
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_NAME, true, "", err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_CGROUP, false, "/kubepods/*", err,
					 sizeof(err)),
		     0);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_CGROUP, false, "system.slice", err,
					 sizeof(err)),
		     -EINVAL);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_CONTAINER, false, ID64, err, sizeof(err)),
		     0);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_CONTAINER, false, "0123456789ab", err,
					 sizeof(err)),
		     0);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_CONTAINER, false, "0123456789a", err,
					 sizeof(err)),
		     -EINVAL); /* 11 digits: too short to mean one container */
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_CONTAINER, false, "0123456789AB", err,
					 sizeof(err)),
		     -EINVAL);
	CHECK_EQ_INT(
		selection_spec__add(&sp, SELECTION_POD, false, "kube-system", err, sizeof(err)), 0);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_POD, true, "shop/web-*", err, sizeof(err)),
		     0);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_POD, true, "shop/", err, sizeof(err)),
		     -EINVAL);
	CHECK_STR(err, "--exclude-pod takes a Kubernetes NAMESPACE or NAMESPACE/POD (globs), not "
		       "'shop/'");
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_POD, false, "/web", err, sizeof(err)),
		     -EINVAL);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_POD, false, "a/b/c", err, sizeof(err)),
		     -EINVAL);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_POD, false, "", err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(sp.cnt, 7);
	for (i = (int)sp.cnt; i < SELECTION_MAX_RULES; i++)
		CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_PID, false, "1", err, sizeof(err)),
			     0);
	CHECK_EQ_INT(selection_spec__add(&sp, SELECTION_PID, false, "1", err, sizeof(err)),
		     -EINVAL);
	CHECK_STR(selection_kind__flag(SELECTION_CGROUP, true), "exclude-cgroup");
	CHECK_STR(selection_kind__flag(SELECTION_POD, false), "select-pod");
}

TEST(verdicts)
{
	struct proc_identity a = {
		.pid = 100, .comm = "burn_a", .exe = "/opt/bin/burn_a", .cgroup_path = "/ss/a"
	};
	struct proc_identity b = { .pid = 200,
				   .comm = "worker",
				   .exe = "/usr/bin/python3.11",
				   .cgroup_path = "/ss/b/inner" };
	struct proc_identity c = { .pid = 300,
				   .comm = "burn_c",
				   .exe = "",
				   .cgroup_path = "/system.slice/docker-" ID64 ".scope",
				   .container_id = ID64 };
	struct selection_rules *r;

	/* no rules: everything */
	r = selection_rules__new(&(struct selection_spec){ .cnt = 0 }, NULL, 0);
	CHECK(r && !selection_rules__active(r) && selection_rules__keep(r, &a));
	selection_rules__free(r);

	/* name: comm or the executable's file name, unanchored unless anchored */
	r = RULES("select-name", "^python");
	CHECK(!selection_rules__keep(r, &a) && selection_rules__keep(r, &b));
	selection_rules__free(r);
	r = RULES("select-name", "burn");
	CHECK(selection_rules__keep(r, &a) && !selection_rules__keep(r, &b) &&
	      selection_rules__keep(r, &c));
	selection_rules__free(r);
	r = RULES("select-name", "^bin"); /* not the directory */
	CHECK(!selection_rules__keep(r, &a));
	selection_rules__free(r);

	/* exclude wins over include, whatever the order */
	r = RULES("exclude-name", "_c$", "select-name", "burn");
	CHECK(selection_rules__keep(r, &a) && !selection_rules__keep(r, &c));
	selection_rules__free(r);
	/* exclude only: the rest stays */
	r = RULES("exclude-pid", "200,300");
	CHECK(selection_rules__keep(r, &a) && !selection_rules__keep(r, &b) &&
	      !selection_rules__keep(r, &c));
	selection_rules__free(r);

	/* cgroup: the path or an ancestor; "/ss/b" is not "/ss/bb" */
	r = RULES("select-cgroup", "/ss/b");
	CHECK(!selection_rules__keep(r, &a) && selection_rules__keep(r, &b));
	CHECK_EQ_INT(selection_rules__cgroup(r, &b), SEL_CG_INCLUDE);
	CHECK_EQ_INT(selection_rules__cgroup(r, &(struct proc_identity){ .cgroup_path = "/ss/bb" }),
		     SEL_CG_NONE);
	selection_rules__free(r);
	r = RULES("select-cgroup", "/ss/*", "exclude-cgroup", "/ss/b");
	CHECK(selection_rules__keep(r, &a) && !selection_rules__keep(r, &b) &&
	      !selection_rules__keep(r, &c));
	CHECK_EQ_INT(selection_rules__cgroup(r, &a), SEL_CG_INCLUDE);
	CHECK_EQ_INT(selection_rules__cgroup(r, &b), SEL_CG_EXCLUDE);
	CHECK_EQ_INT(selection_rules__cgroup(r, &(struct proc_identity){ .cgroup_path = "/" }),
		     SEL_CG_NONE);
	selection_rules__free(r);

	/* container: a prefix of the id; also decided for its cgroup */
	r = RULES("select-container", "0123456789ab");
	CHECK(!selection_rules__keep(r, &a) && selection_rules__keep(r, &c));
	CHECK_EQ_INT(selection_rules__cgroup(r, &c), SEL_CG_INCLUDE);
	selection_rules__free(r);

	/* name rules say nothing of cgroups */
	r = RULES("select-name", "burn", "select-cgroup", "/ss/b");
	CHECK(selection_rules__keep(r, &a) && selection_rules__keep(r, &b));
	CHECK_EQ_INT(selection_rules__cgroup(r, &a), SEL_CG_NONE);
	CHECK(!selection_rules__need_pods(r));
	selection_rules__free(r);

	/* pods: a namespace alone is its every pod; globs stop at the '/'; decided per cgroup */
	{
		struct proc_identity web = { .pid = 400,
					     .comm = "nginx",
					     .cgroup_path = "/kubepods.slice/x",
					     .k8s_namespace = "shop",
					     .k8s_pod = "web-7d4b9c-x2x7k" };
		struct proc_identity db = {
			.pid = 500, .comm = "postgres", .k8s_namespace = "data", .k8s_pod = "db-0"
		};
		struct proc_identity sys = { .pid = 600,
					     .comm = "kube-proxy",
					     .k8s_namespace = "kube-system",
					     .k8s_pod = "kube-proxy-8xk2p" };

		r = RULES("select-pod", "shop");
		CHECK(selection_rules__keep(r, &web) && !selection_rules__keep(r, &db) &&
		      !selection_rules__keep(r, &a));
		CHECK_EQ_INT(selection_rules__cgroup(r, &web), SEL_CG_INCLUDE);
		CHECK_EQ_INT(selection_rules__cgroup(r, &db), SEL_CG_NONE);
		selection_rules__free(r);
		r = RULES("select-pod", "*/db-?", "select-pod", "kube-*/kube-proxy-*");
		CHECK(!selection_rules__keep(r, &web) && selection_rules__keep(r, &db) &&
		      selection_rules__keep(r, &sys));
		selection_rules__free(r);
		r = RULES("select-pod", "sh*"); /* "sh*" / "*": the namespace only */
		CHECK(selection_rules__keep(r, &web) && !selection_rules__keep(r, &sys));
		selection_rules__free(r);
		r = RULES("select-pod", "*web*"); /* '*' does not cross into the pod's name */
		CHECK(!selection_rules__keep(r, &web));
		selection_rules__free(r);
		/* the exclude list: outside pods kept, the excluded pod's cgroup out in eBPF */
		r = RULES("exclude-pod", "kube-system", "exclude-pod", "shop/web-*");
		CHECK(selection_rules__need_pods(r));
		CHECK(selection_rules__keep(r, &a) && selection_rules__keep(r, &db) &&
		      !selection_rules__keep(r, &web) && !selection_rules__keep(r, &sys));
		CHECK_EQ_INT(selection_rules__cgroup(r, &sys), SEL_CG_EXCLUDE);
		CHECK_EQ_INT(selection_rules__cgroup(r, &a), SEL_CG_NONE);
		selection_rules__free(r);
		/* with a name rule: exclude-pod still wins */
		r = RULES("select-name", ".", "exclude-pod", "data");
		CHECK(selection_rules__keep(r, &web) && !selection_rules__keep(r, &db));
		selection_rules__free(r);
		/* a pod the node does not show: its names unknown, no pod rule matches */
		r = RULES("select-pod", "*");
		CHECK(!selection_rules__keep(
			r, &(struct proc_identity){ .pid = 7, .k8s_namespace = "shop" }));
		selection_rules__free(r);
	}

	/* unknown fields match nothing */
	r = RULES("select-name", ".");
	CHECK(!selection_rules__keep(r, &(struct proc_identity){ .pid = 1 }));
	selection_rules__free(r);
}

TEST(probabilistic)
{
	struct selection *sel = selection__new(-1, -1, NULL, NULL);
	unsigned int i, on = 0, d, lo = 100, hi = 0;

	for (i = 0; i < 10000; i++) {
		d = selection__draw();
		CHECK(d < 100);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		on += d < 50;
	}
	CHECK(lo == 0 && hi == 99);
	/* 10000 fair draws: 5000 +- 5 sigma */
	CHECK(on > 4750 && on < 5250);

	CHECK(selection__profiling(sel)); /* off: always profiling */
	CHECK_EQ_INT(selection__tick(sel, 1000), 0);
	selection__set_probabilistic(sel, 100, 1000000000ULL, 0);
	CHECK(selection__profiling(sel));
	CHECK_EQ_INT(selection__tick(sel, 5000000000ULL), 0);
	/* 1 %: on is rare; a draw only when the interval is over */
	selection__set_probabilistic(sel, 1, 1000000000ULL, 0);
	CHECK_EQ_INT(selection__tick(sel, 999999999ULL), 0);
	CHECK_EQ_INT(selection__tick(sel, 1000000000ULL), 1);
	CHECK_EQ_INT(selection__tick(sel, 1500000000ULL), 0);
	for (i = 0, on = 0; i < 200; i++) {
		CHECK_EQ_INT(selection__tick(sel, (2ULL + i) * 1000000000ULL), 1);
		on += selection__profiling(sel);
	}
	CHECK(on < 15); /* mean 2 */
	{
		struct selection_stats st;

		selection__stats(sel, &st);
		CHECK_EQ_U64(st.prob_on + st.prob_off, 202);
	}
	selection__free(sel);
}

/* What call writes to stderr, into buf; its value in ret. */
#define STDERR_OF(buf, ret, call)                                            \
	do {                                                                 \
		FILE *tmp_ = tmpfile();                                      \
		int saved_ = dup(STDERR_FILENO);                             \
		size_t n_;                                                   \
                                                                             \
		REQUIRE(tmp_ &&saved_ >= 0);                                 \
		fflush(stderr);                                              \
		REQUIRE(dup2(fileno(tmp_), STDERR_FILENO) == STDERR_FILENO); \
		ret = (call);                                                \
		fflush(stderr);                                              \
		REQUIRE(dup2(saved_, STDERR_FILENO) == STDERR_FILENO);       \
		close(saved_);                                               \
		rewind(tmp_);                                                \
		n_ = fread(buf, 1, sizeof(buf) - 1, tmp_);                   \
		buf[n_] = '\0';                                              \
		fclose(tmp_);                                                \
	} while (0)

/* The agent's options from a config file (FILE) and argv. */
static int parse_with(const char *text, char **argv, int argc, struct agent_options *o, char *path,
		      size_t path_sz)
{
	FILE *f;
	int fd;

	snprintf(path, path_sz, "/tmp/test_selection.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	argv[2] = path;
	return agent_options__parse(argc, argv, o);
}

TEST(config_keys)
{
	struct agent_options *o = calloc(1, sizeof(*o));
	char path[64], out[512];
	char *argv[] = { "agent", "--config", NULL, "--exclude-name", "^sshd$", NULL };
	int ret;

	ret = parse_with("select-name = ^burn_(a|b)$\n"
			 "select-cgroup = /ss/*\n"
			 "exclude-container = 0123456789ab\n"
			 "select-pid = 1,2\n"
			 "exclude-pid = 3\n"
			 "exclude-cgroup = /ss/b\n"
			 "select-container = " ID64 "\n"
			 "exclude-pod = kube-system\n"
			 "probabilistic-threshold = 25\n"
			 "probabilistic-interval = 30\n",
			 argv, 5, o, path, sizeof(path));
	unlink(path);
	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(o->common.select.cnt, 9); /* the file's eight and the flag's one, last */
	CHECK_EQ_INT(o->common.select.rule[0].kind, SELECTION_NAME);
	CHECK_STR(o->common.select.rule[0].text, "^burn_(a|b)$");
	CHECK(o->common.select.rule[2].exclude);
	CHECK_EQ_INT(o->common.select.rule[7].kind, SELECTION_POD);
	CHECK_STR(o->common.select.rule[7].text, "kube-system");
	CHECK_EQ_INT(o->common.select.rule[8].kind, SELECTION_NAME);
	CHECK(o->common.select.rule[8].exclude);
	CHECK_EQ_INT(o->prob_threshold, 25);
	CHECK(o->prob_interval_s == 30);

	/* defaults: no rule, probabilistic off */
	ret = parse_with("interval = 2\n", argv, 3, o, path, sizeof(path));
	unlink(path);
	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(o->common.select.cnt, 0);
	CHECK_EQ_INT(o->prob_threshold, 100);

	/* a flag wins over the file */
	{
		char *argv2[] = {
			"agent", "--config", NULL, "--probabilistic-threshold", "60", NULL
		};

		ret = parse_with("probabilistic-threshold = 10\n", argv2, 5, o, path, sizeof(path));
		unlink(path);
		CHECK_EQ_INT(ret, 0);
		CHECK_EQ_INT(o->prob_threshold, 60);
	}

	/* a bad rule names the file and its line */
	STDERR_OF(out, ret,
		  parse_with("interval = 2\nselect-name = (\n", argv, 3, o, path, sizeof(path)));
	unlink(path);
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK(strstr(out, ":2") && strstr(out, "--select-name: bad regular expression '('"));
	STDERR_OF(out, ret,
		  parse_with("probabilistic-threshold = 0\n", argv, 3, o, path, sizeof(path)));
	unlink(path);
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK(strstr(out, "--probabilistic-threshold must be a percentage between 1 and 100"));
	STDERR_OF(out, ret,
		  parse_with("select-cgroup = kubepods\n", argv, 3, o, path, sizeof(path)));
	unlink(path);
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK(strstr(out, ":1") && strstr(out, "--select-cgroup takes a cgroup v2 path"));
	free(o);
}

int main(void)
{
	log__set_level(LOG_WARN); /* the draws' info lines */
	RUN(spec_parsing);
	RUN(verdicts);
	RUN(probabilistic);
	RUN(config_keys);
	return test_summary();
}
