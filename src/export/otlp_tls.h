/* Transport security of the OTLP exporter (otlp_client.h): which TLS settings apply, where they
 * come from, when plaintext is allowed, and how a refusal is told apart from an outage.
 *
 * Policy:
 *  - an https:// endpoint always speaks TLS 1.2 or newer, verifying the collector's certificate
 *    against ca_file (else the system's CAs) and its name against server_name (else the
 *    endpoint's host); a client certificate (cert_file + key_file, PEM) is presented when given.
 *    Nothing is ever sent in plaintext to it: a failed handshake fails the request.
 *  - an http:// endpoint is plaintext, and allowed only to a loopback host (localhost,
 *    127.0.0.0/8, [::1]) unless insecure is set (--otlp-insecure, OTEL_EXPORTER_OTLP_INSECURE);
 *    TLS files or a server name with an http:// endpoint are an error (they would be ignored).
 *  - the files are read at each new connection; when one changes (inode, size or mtime, checked
 *    before each request), the next request opens a new connection that uses it: certificates
 *    rotate without a restart.
 *
 * Environment (the _PROFILES_ spelling wins over the general one; flags win over both):
 * OTEL_EXPORTER_OTLP_[PROFILES_]CERTIFICATE (CA file), _CLIENT_CERTIFICATE, _CLIENT_KEY,
 * _INSECURE (true/false).
 */
#ifndef STACKSCOPE_OTLP_TLS_H
#define STACKSCOPE_OTLP_TLS_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct otlp_config;

/* The TLS settings of an otlp_config (its .tls). Strings owned (otlp_tls__free()). */
struct otlp_tls {
	char *ca_file;     /* NULL: the system's CAs */
	char *cert_file;   /* client certificate, PEM; with key_file */
	char *key_file;    /* its private key, PEM, unencrypted */
	char *server_name; /* name the certificate must carry; NULL: the endpoint's host */
	bool insecure;     /* plaintext to a non-loopback http:// endpoint allowed */
};

void otlp_tls__free(struct otlp_tls *t);
/* Deep copy into dst (zeroed first). 0 or -ENOMEM. */
int otlp_tls__copy(struct otlp_tls *dst, const struct otlp_tls *src);
/* Sets *field to a copy of value (replacing it). 0 or -ENOMEM. */
int otlp_tls__set(char **field, const char *value);

/* Reads the environment above into t. 0, -ENOMEM, or -EINVAL with a message naming the
 * variable in err.
 */
int otlp_tls__from_env(struct otlp_tls *t, char *err, size_t err_sz);

/* Whether the settings fit the endpoint (the policy above; files readable, a certificate with
 * its key, a server name without spaces). 0 or -EINVAL with one line in err.
 */
int otlp_tls__check(const struct otlp_tls *t, const char *endpoint, char *err, size_t err_sz);

/* Sets the TLS options of a curl handle for requests to url (TLS 1.2+, verification, the
 * files). With a server name, url's host is replaced by it (*url_out, caller frees; else
 * NULL) and *connect_to maps it back to the real host and port (caller frees with
 * curl_slist_free_all). 0 or -ENOMEM.
 */
int otlp_tls__apply(CURL *curl, const struct otlp_tls *t, const char *url, char **url_out,
		    struct curl_slist **connect_to);

/* What was seen of the files, to notice a rotation. */
struct otlp_tls_stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool present;
};

struct otlp_tls_watch {
	struct otlp_tls_stamp files[3]; /* ca, cert, key */
	bool primed;
};

/* True when a file changed since the last call (false on the first). */
bool otlp_tls_watch__changed(struct otlp_tls_watch *w, const struct otlp_tls *t);

/* Whether a failed transfer is the TLS layer refusing (a certificate not trusted, expired, for
 * another name; the peer's alert, e.g. a client certificate required or rejected), not an
 * outage: such a request is not retried. errbuf: curl's error buffer.
 */
bool otlp_tls__refused(CURLcode rc, const char *errbuf);

#endif
