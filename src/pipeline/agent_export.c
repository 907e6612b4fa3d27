/* The agent's sinks: OTLP, a pprof folder, the store. See agent_export.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/log.h"
#include "export/otlp.h"
#include "export/otlp_client.h"
#include "export/pprof_dir.h"
#include "export/protobuf.h"
#include "pipeline/agent_export.h"
#include "pipeline/session.h"
#include "proc/k8s_pod.h"
#include "proc/process.h"
#include "proc/process_text.h"
#include "profile/profile.h"
#include "store/store_sink.h"

#define AGENT_MAX_EXTRAS 64
#define AGENT_K8S_ATTRS 4 /* k8s.namespace.name, k8s.pod.name, k8s.container.name, k8s.node.name */
#define AGENT_K8S_PODS 1024

struct agent_export {
	const struct agent_export_opts *opts;
	struct session *session;
	/* OTLP */
	struct otlp_config cfg;
	struct otlp_client *client;
	struct otlp_encoder *encoder;
	struct otlp_host host;
	uint64_t encode_failed;
	/* per-process extras (command line, environment) of the last lookup */
	struct otlp_attr extras[AGENT_MAX_EXTRAS + AGENT_K8S_ATTRS];
	char *extra_mem[AGENT_MAX_EXTRAS * 2];
	size_t extra_mem_cnt;
	/* Kubernetes names of the pod of the last lookup (proc/k8s_pod.h) */
	struct k8s_pod_table *k8s;
	struct k8s_identity k8s_id;
	const char *node_name; /* --node-name, else NODE_NAME (the downward API), else NULL */
	/* pprof folder */
	bool pprof_dir;
	struct pprof_dir_stats dir_stats;
	/* the embedded store (also beside OTLP or pprof files when --store is given) */
	struct store_sink *store;
	char describe[512];
};

static void release_extras(struct agent_export *ex)
{
	while (ex->extra_mem_cnt)
		free(ex->extra_mem[--ex->extra_mem_cnt]);
}

static char *keep(struct agent_export *ex, char *s)
{
	if (!s || ex->extra_mem_cnt >= sizeof(ex->extra_mem) / sizeof(ex->extra_mem[0])) {
		free(s);
		return NULL;
	}
	ex->extra_mem[ex->extra_mem_cnt++] = s;
	return s;
}

#define ENV_ATTR_PREFIX "process.environment_variable."

/* The opt-in attributes: process.command_line and process.environment_variable.<NAME>
 * (semantic-convention names). Read while the process lives; nothing for exited ones.
 */
static size_t add_private_attrs(struct agent_export *ex, uint32_t pid)
{
	size_t n = 0, len, pos = 0, name_len, pre = strlen(ENV_ATTR_PREFIX);
	const char *name, *value;
	char *text, *key;

	if (ex->opts->include_cmdline && (text = keep(ex, process_text__cmdline((pid_t)pid))))
		ex->extras[n++] = (struct otlp_attr){ "process.command_line", text };
	if (!ex->opts->include_env || !(text = keep(ex, process_text__environ((pid_t)pid, &len))))
		return n;
	while (n < AGENT_MAX_EXTRAS &&
	       process_text__next_var(text, len, &pos, &name, &name_len, &value)) {
		key = keep(ex, malloc(pre + name_len + 1));
		if (!key)
			break;
		memcpy(key, ENV_ATTR_PREFIX, pre);
		memcpy(key + pre, name, name_len);
		key[pre + name_len] = '\0';
		ex->extras[n++] = (struct otlp_attr){ key, value };
	}
	return n;
}

/* The Kubernetes attributes of a process in a pod (what the node tells: proc/k8s_pod.h) and
 * k8s.node.name into attrs (AGENT_K8S_ATTRS at most); their count. Valid until the next call.
 */
static size_t add_k8s_attrs(struct agent_export *ex, const struct process *p,
			    struct otlp_attr *attrs)
{
	struct timespec ts;
	size_t n = 0;

	if (ex->k8s && p->container.pod_uid[0]) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		k8s_pod_table__lookup(ex->k8s, p->container.pod_uid, p->container.id,
				      (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
				      &ex->k8s_id);
		if (ex->k8s_id.namespace_name[0])
			attrs[n++] = (struct otlp_attr){ "k8s.namespace.name",
							 ex->k8s_id.namespace_name };
		if (ex->k8s_id.pod_name[0])
			attrs[n++] = (struct otlp_attr){ "k8s.pod.name", ex->k8s_id.pod_name };
		if (ex->k8s_id.container_name[0])
			attrs[n++] = (struct otlp_attr){ "k8s.container.name",
							 ex->k8s_id.container_name };
	}
	if (ex->node_name && *ex->node_name)
		attrs[n++] = (struct otlp_attr){ "k8s.node.name", ex->node_name };
	return n;
}

/* Resource attributes of a pid, from the process tracker (also for exited processes). The
 * strings stay valid until the next lookup (the encoder copies them at once).
 */
static int lookup_process(void *ctx, uint32_t pid, struct otlp_process *out)
{
	struct agent_export *ex = ctx;
	const struct process *p = ex->session ? session__process(ex->session, (pid_t)pid) : NULL;

	memset(out, 0, sizeof(*out));
	release_extras(ex);
	if (!p)
		return -ESRCH;
	out->exe_path = p->exe_path[0] ? p->exe_path : NULL;
	out->container_id = p->container.id[0] ? p->container.id : NULL;
	out->k8s_pod_uid = p->container.pod_uid[0] ? p->container.pod_uid : NULL;
	out->published = session__process_context(ex->session, (pid_t)pid);
	if (p->alive && (ex->opts->include_cmdline || ex->opts->include_env)) {
		out->extra_cnt = add_private_attrs(ex, pid);
		out->extra = ex->extras;
	}
	out->extra_cnt += add_k8s_attrs(ex, p, ex->extras + out->extra_cnt);
	out->extra = ex->extras;
	return 0;
}

/* The executable and container of a pid, for the store's processes table. */
static int store_lookup(void *ctx, uint32_t pid, struct store_process *out)
{
	struct agent_export *ex = ctx;
	const struct process *p = ex->session ? session__process(ex->session, (pid_t)pid) : NULL;

	if (!p)
		return -ESRCH;
	out->exe = p->exe_path[0] ? p->exe_path : NULL;
	out->container = p->container.id[0] ? p->container.id : NULL;
	return 0;
}

/* The TLS flags over what the environment set (otlp_tls.h), then its policy checked. 0 or
 * -EINVAL / -ENOMEM with the line in err.
 */
static int agent_export__tls(struct otlp_config *cfg, const struct agent_export_opts *o, char *err,
			     size_t err_sz)
{
	struct otlp_tls *t = &cfg->tls;

	if ((o->otlp_ca_file && otlp_tls__set(&t->ca_file, o->otlp_ca_file)) ||
	    (o->otlp_cert_file && otlp_tls__set(&t->cert_file, o->otlp_cert_file)) ||
	    (o->otlp_key_file && otlp_tls__set(&t->key_file, o->otlp_key_file)) ||
	    (o->otlp_server_name && otlp_tls__set(&t->server_name, o->otlp_server_name))) {
		snprintf(err, err_sz, "out of memory");
		return -ENOMEM;
	}
	if (o->otlp_insecure)
		t->insecure = true;
	return otlp_tls__check(t, cfg->endpoint, err, err_sz);
}

/* The flags over the OTLP configuration the environment gave: 0, or -EINVAL / -ENOMEM with
 * the line in err.
 */
static int otlp_config_from_opts(struct otlp_config *cfg, const struct agent_export_opts *o,
				 char *err, size_t err_sz)
{
	if (o->otlp_endpoint &&
	    otlp_config__set_endpoint(cfg, o->otlp_endpoint, false, err, err_sz))
		return -EINVAL;
	if (o->otlp_protocol)
		cfg->protocol = strcmp(o->otlp_protocol, "grpc") ? OTLP_PROTOCOL_HTTP_PROTOBUF
								 : OTLP_PROTOCOL_GRPC;
	if (o->otlp_headers && otlp_config__add_headers(cfg, o->otlp_headers, err, err_sz))
		return -EINVAL;
	for (size_t i = 0; i < o->otlp_header_cnt; i++) {
		if (otlp_config__add_header(cfg, o->otlp_header_list[i], err, err_sz))
			return -EINVAL;
	}
	return agent_export__tls(cfg, o, err, err_sz);
}

int agent_export__check(const struct agent_export_opts *o, char *err, size_t err_sz)
{
	struct otlp_config cfg;
	struct stat st;
	int ret;

	err[0] = '\0';
	otlp_config__init(&cfg);
	ret = otlp_config__from_env(&cfg, err, err_sz);
	if (!ret && (o->otlp_endpoint || cfg.endpoint))
		ret = otlp_config_from_opts(&cfg, o, err, err_sz);
	otlp_config__free(&cfg);
	if (ret) {
		if (!err[0])
			snprintf(err, err_sz, "bad OTLP configuration");
		return ret;
	}
	if (o->host_root && (stat(o->host_root, &st) || !S_ISDIR(st.st_mode))) {
		snprintf(err, err_sz, "--host-root %s: not a directory", o->host_root);
		return -EINVAL;
	}
	return 0;
}

static int setup_otlp(struct agent_export *ex, const struct agent_export_opts *o)
{
	char err[256] = "";
	char *url;

	if (otlp_config_from_opts(&ex->cfg, o, err, sizeof(err)))
		goto bad;
	ex->cfg.queue_max_sz = (size_t)o->queue_max_bytes;
	otlp_host__detect(&ex->host);
	ex->host.extra = ex->cfg.resource_attrs;
	ex->host.extra_cnt = ex->cfg.resource_attr_cnt;
	{
		struct otlp_encoder_opts eo = { .scope_version = o->scope_version };

		ex->encoder = otlp_encoder__new(&eo);
	}
	ex->client = ex->encoder ? otlp_client__new(&ex->cfg) : NULL;
	if (!ex->client) {
		pr_err("cannot start the OTLP exporter: %s\n", strerror(errno));
		return -ENOMEM;
	}
	url = otlp_config__url(&ex->cfg);
	snprintf(ex->describe, sizeof(ex->describe), "%s (OTLP %s)", url ? url : "?",
		 ex->cfg.protocol == OTLP_PROTOCOL_GRPC ? "gRPC" : "HTTP");
	free(url);
	return 0;
bad:
	pr_err("%s\n", err[0] ? err : "bad OTLP configuration");
	return -EINVAL;
}

struct agent_export *agent_export__new(const struct agent_export_opts *o)
{
	struct agent_export *ex = calloc(1, sizeof(*ex));
	char err_text[256] = "";
	int err;

	if (!ex)
		return NULL;
	ex->opts = o;
	ex->node_name = o->node_name ? o->node_name : getenv("NODE_NAME");
	ex->k8s = k8s_pod_table__new(o->host_root, AGENT_K8S_PODS);
	if (!ex->k8s) {
		err = -errno;
		pr_err("--host-root %s: %s\n", o->host_root ? o->host_root : "/", strerror(errno));
		goto fail;
	}
	otlp_config__init(&ex->cfg);
	if (otlp_config__from_env(&ex->cfg, err_text, sizeof(err_text))) {
		pr_err("%s\n", err_text[0] ? err_text : "bad OTEL_EXPORTER_OTLP_* environment");
		err = -EINVAL;
		goto fail;
	}
	if (o->otlp_endpoint || ex->cfg.endpoint) {
		err = setup_otlp(ex, o);
		if (err)
			goto fail;
	} else if (o->output_dir_set) {
		err = pprof_dir__prepare(o->output_dir);
		if (err) {
			pr_err("cannot write profiles into %s: %s\n", o->output_dir,
			       strerror(-err));
			goto fail;
		}
		ex->pprof_dir = true;
		snprintf(ex->describe, sizeof(ex->describe), "%s (pprof files, at most %llu MiB)",
			 o->output_dir, (unsigned long long)(o->output_max_bytes >> 20));
	}
	if (o->store_path || (!ex->client && !ex->pprof_dir)) {
		const char *path = o->store_path ?: STORE_DEFAULT_PATH;
		size_t n = strlen(ex->describe);

		ex->store = store_sink__open(path, o->store_max_bytes,
					     (uint64_t)(o->store_max_age_s * 1e9));
		if (!ex->store) {
			err = -errno;
			goto fail;
		}
		snprintf(ex->describe + n, sizeof(ex->describe) - n,
			 "%s%s (store, at most %llu MiB, %.0f h)", n ? " and " : "", path,
			 (unsigned long long)(o->store_max_bytes >> 20), o->store_max_age_s / 3600);
	}
	return ex;
fail:
	agent_export__free(ex);
	errno = -err;
	return NULL;
}

void agent_export__free(struct agent_export *ex)
{
	if (!ex)
		return;
	release_extras(ex);
	k8s_pod_table__free(ex->k8s);
	store_sink__free(ex->store);
	otlp_client__free(ex->client);
	otlp_encoder__free(ex->encoder);
	otlp_config__free(&ex->cfg);
	free(ex);
}

void agent_export__set_session(struct agent_export *ex, struct session *s)
{
	ex->session = s;
}

const char *agent_export__describe(const struct agent_export *ex)
{
	return ex->describe;
}

static void report_otlp(struct agent_export *ex, const struct profile *p)
{
	struct pb_buf buf;
	int err;

	pb_buf__init(&buf, OTLP_DEFAULT_MAX_REQUEST_SZ);
	err = otlp_encoder__encode(ex->encoder, p, &ex->host, lookup_process, ex, &buf);
	if (err) {
		ex->encode_failed++;
		pr_warn("cannot encode an OTLP request (%s): interval dropped\n", strerror(-err));
	} else {
		err = otlp_client__submit(ex->client, &buf);
		/* -EMSGSIZE: counted by the client as dropped (too large) */
		if (err && err != -EMSGSIZE)
			ex->encode_failed++;
	}
	pb_buf__free(&buf);
}

void agent_export__report(struct agent_export *ex, struct profile *p)
{
	int err;

	if (!profile__total_samples(p))
		goto out;
	if (ex->store)
		store_sink__write(ex->store, p, store_lookup, ex);
	if (ex->client) {
		report_otlp(ex, p);
		goto out;
	}
	if (!ex->pprof_dir)
		goto out;
	err = pprof_dir__write(ex->opts->output_dir, ex->opts->output_max_bytes, p,
			       profile__start_time_ns(p), &ex->dir_stats);
	if (err)
		pr_warn("cannot write a profile into %s: %s\n", ex->opts->output_dir,
			strerror(-err));
out:
	profile__free(p);
}

void agent_export__flush(struct agent_export *ex, int timeout_ms)
{
	if (ex->client)
		otlp_client__flush(ex->client, (unsigned)timeout_ms);
}

void agent_export__stats(const struct agent_export *ex, struct agent_export_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (ex->store) {
		struct store_sink_stats ss;

		store_sink__stats(ex->store, &ss);
		out->store = true;
		out->store_written = ss.store.intervals_written;
		out->store_failed = ss.store.write_failed;
		out->store_kept = ss.deferred;
		out->store_written_late = ss.written_late;
		out->store_lost = ss.lost;
		out->store_pending = ss.pending;
		out->store_pending_bytes = ss.pending_sz;
		out->store_dropped_size = ss.store.dropped_size;
		out->store_dropped_age = ss.store.dropped_age;
		out->store_recovered = ss.recovered;
		out->store_bytes = ss.store.file_sz;
	}
	if (ex->client) {
		struct otlp_client_stats cs;

		otlp_client__stats(ex->client, &cs);
		out->otlp = true;
		out->ok = cs.exports_ok;
		out->failed = cs.exports_failed + ex->encode_failed;
		out->retried = cs.exports_retried;
		out->dropped = cs.exports_dropped;
		out->bytes_sent = cs.bytes_sent;
		out->bytes_delivered = cs.bytes_delivered;
		out->queue_bytes = cs.queue_sz;
		memcpy(out->lost, cs.exports_lost, sizeof(out->lost));
		out->lost[OTLP_LOST_REJECTED] += ex->encode_failed;
		out->outages = cs.outages;
		out->delivered_late = cs.delivered_late;
		out->collector_unavailable = cs.collector_unavailable;
		return;
	}
	if (!ex->pprof_dir) {
		out->ok = out->store_written;
		out->failed = out->store_failed;
		out->dropped = out->store_dropped_size + out->store_dropped_age;
		return;
	}
	out->ok = ex->dir_stats.written;
	out->failed = ex->dir_stats.failed;
	out->dropped = ex->dir_stats.deleted;
	out->bytes_sent = out->bytes_delivered = ex->dir_stats.bytes;
}
