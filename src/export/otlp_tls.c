/* Transport security of the OTLP exporter (see otlp_tls.h for the policy). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err_buf.h"
#include "export/otlp_tls.h"

void otlp_tls__free(struct otlp_tls *t)
{
	if (!t)
		return;
	free(t->ca_file);
	free(t->cert_file);
	free(t->key_file);
	free(t->server_name);
	memset(t, 0, sizeof(*t));
}

int otlp_tls__set(char **field, const char *value)
{
	char *copy = value ? strdup(value) : NULL;

	if (value && !copy)
		return -ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

int otlp_tls__copy(struct otlp_tls *dst, const struct otlp_tls *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->insecure = src->insecure;
	if (otlp_tls__set(&dst->ca_file, src->ca_file) ||
	    otlp_tls__set(&dst->cert_file, src->cert_file) ||
	    otlp_tls__set(&dst->key_file, src->key_file) ||
	    otlp_tls__set(&dst->server_name, src->server_name))
		return -ENOMEM;
	return 0;
}

/* OTEL_EXPORTER_OTLP_PROFILES_<what>, else OTEL_EXPORTER_OTLP_<what>; NULL when neither is
 * set (or empty). *name: the variable read.
 */
static const char *env__signal(const char *what, char *name, size_t name_sz)
{
	const char *v;

	snprintf(name, name_sz, "OTEL_EXPORTER_OTLP_PROFILES_%s", what);
	v = getenv(name);
	if (v && *v)
		return v;
	snprintf(name, name_sz, "OTEL_EXPORTER_OTLP_%s", what);
	v = getenv(name);
	return v && *v ? v : NULL;
}

int otlp_tls__from_env(struct otlp_tls *t, char *err, size_t err_sz)
{
	static const struct {
		const char *what;
		size_t offset;
	} files[] = {
		{ "CERTIFICATE", offsetof(struct otlp_tls, ca_file) },
		{ "CLIENT_CERTIFICATE", offsetof(struct otlp_tls, cert_file) },
		{ "CLIENT_KEY", offsetof(struct otlp_tls, key_file) },
	};
	char name[64];
	const char *v;
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		v = env__signal(files[i].what, name, sizeof(name));
		if (!v)
			continue;
		if (access(v, R_OK)) {
			err_buf__set(err, err_sz, "%s=\"%s\": %s", name, v, strerror(errno));
			return -EINVAL;
		}
		if (otlp_tls__set((char **)((char *)t + files[i].offset), v))
			return -ENOMEM;
	}
	v = env__signal("INSECURE", name, sizeof(name));
	if (v) {
		if (!strcasecmp(v, "true")) {
			t->insecure = true;
		} else if (!strcasecmp(v, "false")) {
			t->insecure = false;
		} else {
			err_buf__set(err, err_sz, "%s=\"%s\": want true or false", name, v);
			return -EINVAL;
		}
	}
	return 0;
}

/* The host of an http(s):// URL: [start, end) inside url (brackets kept for IPv6). */
static void url__host(const char *url, const char **start, const char **end)
{
	const char *s = strstr(url, "://");

	s = s ? s + 3 : url;
	*start = s;
	if (*s == '[') {
		const char *close = strchr(s, ']');

		*end = close ? close + 1 : s + strlen(s);
		return;
	}
	while (*s && *s != ':' && *s != '/' && *s != '?' && *s != '#')
		s++;
	*end = s;
}

static bool host__loopback(const char *h, size_t len)
{
	unsigned a, b, c, d;
	char tail;
	char buf[64];

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, h, len);
	buf[len] = '\0';
	if (!strcasecmp(buf, "localhost") || !strcmp(buf, "[::1]"))
		return true;
	return sscanf(buf, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 && b < 256 &&
	       c < 256 && d < 256;
}

static int file__readable(const char *what, const char *path, char *err, size_t err_sz)
{
	struct stat st;

	if (stat(path, &st) || access(path, R_OK)) {
		err_buf__set(err, err_sz, "%s %s: %s", what, path, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISREG(st.st_mode)) {
		err_buf__set(err, err_sz, "%s %s: not a regular file", what, path);
		return -EINVAL;
	}
	return 0;
}

int otlp_tls__check(const struct otlp_tls *t, const char *endpoint, char *err, size_t err_sz)
{
	const char *h, *h_end, *s;
	bool https = !strncmp(endpoint, "https://", 8);

	if (!https) {
		if (t->ca_file || t->cert_file || t->key_file || t->server_name) {
			err_buf__set(
				err, err_sz,
				"TLS settings (CA, client certificate, server name) given for the "
				"plaintext endpoint %s: use https://",
				endpoint);
			return -EINVAL;
		}
		url__host(endpoint, &h, &h_end);
		if (!t->insecure && !host__loopback(h, (size_t)(h_end - h))) {
			err_buf__set(
				err, err_sz,
				"refusing to send profiles in plaintext to %s: use https://, or "
				"--otlp-insecure (OTEL_EXPORTER_OTLP_INSECURE=true) to allow it",
				endpoint);
			return -EINVAL;
		}
		return 0;
	}
	if (t->insecure) {
		err_buf__set(err, err_sz,
			     "--otlp-insecure (plaintext) contradicts the https:// endpoint %s",
			     endpoint);
		return -EINVAL;
	}
	if (!t->cert_file != !t->key_file) {
		err_buf__set(err, err_sz,
			     "a client certificate needs both --otlp-cert and --otlp-key "
			     "(OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY)");
		return -EINVAL;
	}
	if ((t->ca_file && file__readable("CA file", t->ca_file, err, err_sz)) ||
	    (t->cert_file && file__readable("client certificate", t->cert_file, err, err_sz)) ||
	    (t->key_file && file__readable("client key", t->key_file, err, err_sz)))
		return -EINVAL;
	if (t->server_name) {
		for (s = t->server_name; *s; s++) {
			if ((unsigned char)*s <= ' ' || strchr("/:@[]?#", *s) || *s == 0x7f)
				break;
		}
		if (!*t->server_name || *s) {
			err_buf__set(err, err_sz, "bad --otlp-server-name \"%s\": want a host name",
				     t->server_name);
			return -EINVAL;
		}
	}
	return 0;
}

int otlp_tls__apply(CURL *curl, const struct otlp_tls *t, const char *url, char **url_out,
		    struct curl_slist **connect_to)
{
	const char *h, *h_end, *port;
	char *out = NULL, map[512];
	size_t port_len, out_len;
	int n;

	*url_out = NULL;
	*connect_to = NULL;
	/* TLS 1.2 at least, whatever the system's default; peer and name verified */
	curl_easy_setopt(curl, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
	/* the CA file read again at each new connection, not kept for a day (rotation) */
	curl_easy_setopt(curl, CURLOPT_CA_CACHE_TIMEOUT, 0L);
	if (t->ca_file)
		curl_easy_setopt(curl, CURLOPT_CAINFO, t->ca_file);
	if (t->cert_file) {
		curl_easy_setopt(curl, CURLOPT_SSLCERT, t->cert_file);
		curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(curl, CURLOPT_SSLKEY, t->key_file);
		curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (!t->server_name || strncmp(url, "https://", 8))
		return 0;
	/* the URL names the server (SNI, verification, Host/:authority); CONNECT_TO sends the
	 * connection to the endpoint's real host and port
	 */
	url__host(url, &h, &h_end);
	port = *h_end == ':' ? h_end + 1 : "443";
	port_len = *h_end == ':' ? strspn(port, "0123456789") : 3;
	n = snprintf(map, sizeof(map), "%s:%.*s:%.*s:%.*s", t->server_name, (int)port_len, port,
		     (int)(h_end - h), h, (int)port_len, port);
	if (n < 0 || (size_t)n >= sizeof(map))
		return -EINVAL;
	out_len = (size_t)(h - url) + strlen(t->server_name) + strlen(h_end);
	out = malloc(out_len + 1);
	if (!out)
		return -ENOMEM;
	snprintf(out, out_len + 1, "%.*s%s%s", (int)(h - url), url, t->server_name, h_end);
	*connect_to = curl_slist_append(NULL, map);
	if (!*connect_to) {
		free(out);
		return -ENOMEM;
	}
	curl_easy_setopt(curl, CURLOPT_CONNECT_TO, *connect_to);
	*url_out = out;
	return 0;
}

static void stamp__take(struct otlp_tls_stamp *s, const char *path)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	if (!path || stat(path, &st))
		return;
	s->present = true;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->size = st.st_size;
	s->mtime = st.st_mtim;
}

bool otlp_tls_watch__changed(struct otlp_tls_watch *w, const struct otlp_tls *t)
{
	const char *paths[3] = { t->ca_file, t->cert_file, t->key_file };
	struct otlp_tls_stamp now;
	bool changed = false;
	int i;

	for (i = 0; i < 3; i++) {
		stamp__take(&now, paths[i]);
		if (w->primed && memcmp(&now, &w->files[i], sizeof(now)))
			changed = true;
		w->files[i] = now;
	}
	w->primed = true;
	return changed;
}

bool otlp_tls__refused(CURLcode rc, const char *errbuf)
{
	switch (rc) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_CLIENTCERT:
	case CURLE_SSL_INVALIDCERTSTATUS:
		return true;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_HTTP2:
		/* TLS 1.3 ends the handshake before the server has checked the client's
		 * certificate: its refusal comes as an alert on the first read
		 */
		return errbuf && strstr(errbuf, " alert ");
	default:
		return false;
	}
}
