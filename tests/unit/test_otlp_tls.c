/* export/otlp_tls.c: the plaintext policy, the environment (the _PROFILES_ spelling first),
 * the server-name URL rewrite, the refusal classification and the rotation watch. No network:
 * the TLS handshakes themselves are tests/system/test_otlp_tls.sh's.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/otlp_tls.h"
#include "test.h"

static char dir[] = "/tmp/stackscope-otlp-tls.XXXXXX";
static char ca[128], cert[128], key[128];

static bool write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok;
}

static void env_clear(void)
{
	static const char *const vars[] = {
		"OTEL_EXPORTER_OTLP_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_KEY",
		"OTEL_EXPORTER_OTLP_INSECURE",
		"OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY",
		"OTEL_EXPORTER_OTLP_PROFILES_INSECURE",
	};
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static bool allowed(const struct otlp_tls *t, const char *endpoint)
{
	char err[256] = "";

	return otlp_tls__check(t, endpoint, err, sizeof(err)) == 0;
}

TEST(plaintext_policy)
{
	struct otlp_tls t = { 0 };

	CHECK(allowed(&t, "http://127.0.0.1:4318"));
	CHECK(allowed(&t, "http://127.3.4.5:4318/x"));
	CHECK(allowed(&t, "http://localhost:4317"));
	CHECK(allowed(&t, "http://[::1]:4317"));
	CHECK(!allowed(&t, "http://collector:4318"));
	CHECK(!allowed(&t, "http://10.0.0.1:4318"));
	CHECK(!allowed(&t, "http://127.0.0.1.example.com:4318"));
	CHECK(!allowed(&t, "http://localhost.example.com"));
	t.insecure = true;
	CHECK(allowed(&t, "http://collector:4318"));
	/* insecure contradicts https */
	CHECK(!allowed(&t, "https://collector:4318"));
	t.insecure = false;
	CHECK(allowed(&t, "https://collector:4318"));
	/* TLS settings with a plaintext endpoint: refused, not ignored */
	t.ca_file = ca;
	CHECK(!allowed(&t, "http://127.0.0.1:4318"));
	CHECK(allowed(&t, "https://collector:4318"));
	t.cert_file = cert;
	CHECK(!allowed(&t, "https://collector:4318")); /* a certificate without its key */
	t.key_file = key;
	CHECK(allowed(&t, "https://collector:4318"));
	t.server_name = "collector.test";
	CHECK(allowed(&t, "https://127.0.0.1:4318"));
	t.server_name = "bad name";
	CHECK(!allowed(&t, "https://127.0.0.1:4318"));
	t.server_name = NULL;
	t.ca_file = "/nonexistent/ca.pem";
	CHECK(!allowed(&t, "https://collector:4318"));
	t.ca_file = dir; /* a directory */
	CHECK(!allowed(&t, "https://collector:4318"));
}

TEST(environment)
{
	struct otlp_tls t = { 0 };
	char err[256];

	env_clear();
	setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", cert, 1);
	setenv("OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE", ca, 1);
	setenv("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", cert, 1);
	setenv("OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY", key, 1);
	setenv("OTEL_EXPORTER_OTLP_INSECURE", "TRUE", 1);
	CHECK_EQ_INT(otlp_tls__from_env(&t, err, sizeof(err)), 0);
	CHECK_STR(t.ca_file, ca); /* the _PROFILES_ spelling wins */
	CHECK_STR(t.cert_file, cert);
	CHECK_STR(t.key_file, key);
	CHECK(t.insecure);
	otlp_tls__free(&t);

	setenv("OTEL_EXPORTER_OTLP_PROFILES_INSECURE", "false", 1);
	CHECK_EQ_INT(otlp_tls__from_env(&t, err, sizeof(err)), 0);
	CHECK(!t.insecure);
	otlp_tls__free(&t);

	setenv("OTEL_EXPORTER_OTLP_PROFILES_INSECURE", "yes", 1);
	CHECK_EQ_INT(otlp_tls__from_env(&t, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "OTEL_EXPORTER_OTLP_PROFILES_INSECURE") != NULL);
	otlp_tls__free(&t);
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_INSECURE");

	setenv("OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE", "/nonexistent/c.pem", 1);
	CHECK_EQ_INT(otlp_tls__from_env(&t, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE") != NULL);
	otlp_tls__free(&t);
	env_clear();
}

TEST(server_name_rewrites_the_url)
{
	struct otlp_tls t = { .server_name = "collector.test" };
	struct curl_slist *map = NULL;
	char *url = NULL;
	CURL *curl = curl_easy_init();

	REQUIRE(curl);
	CHECK_EQ_INT(otlp_tls__apply(curl, &t, "https://127.0.0.1:4317/opentelemetry.x/Export",
				     &url, &map),
		     0);
	REQUIRE(url && map);
	CHECK_STR(url, "https://collector.test:4317/opentelemetry.x/Export");
	CHECK_STR(map->data, "collector.test:4317:127.0.0.1:4317");
	free(url);
	curl_slist_free_all(map);
	/* no port: https's */
	CHECK_EQ_INT(otlp_tls__apply(curl, &t, "https://[::1]/v1development/profiles", &url, &map),
		     0);
	REQUIRE(url && map);
	CHECK_STR(url, "https://collector.test/v1development/profiles");
	CHECK_STR(map->data, "collector.test:443:[::1]:443");
	free(url);
	curl_slist_free_all(map);
	/* without a server name the URL stays */
	t.server_name = NULL;
	CHECK_EQ_INT(otlp_tls__apply(curl, &t, "https://127.0.0.1:4317/x", &url, &map), 0);
	CHECK(url == NULL && map == NULL);
	curl_easy_cleanup(curl);
}

TEST(refusals_are_not_outages)
{
	CHECK(otlp_tls__refused(CURLE_PEER_FAILED_VERIFICATION, ""));
	CHECK(otlp_tls__refused(CURLE_SSL_CONNECT_ERROR, ""));
	CHECK(otlp_tls__refused(CURLE_SSL_CACERT_BADFILE, ""));
	CHECK(otlp_tls__refused(CURLE_RECV_ERROR,
				"OpenSSL SSL_read: error:0A00045C:SSL routines::tlsv13 alert "
				"certificate required, errno 0"));
	CHECK(!otlp_tls__refused(CURLE_RECV_ERROR, "Connection reset by peer"));
	CHECK(!otlp_tls__refused(CURLE_COULDNT_CONNECT, ""));
	CHECK(!otlp_tls__refused(CURLE_OPERATION_TIMEDOUT, ""));
}

TEST(rotation_noticed)
{
	struct otlp_tls t = { .ca_file = ca, .cert_file = cert, .key_file = key };
	struct otlp_tls_watch w = { 0 };
	char tmp[160];

	CHECK(!otlp_tls_watch__changed(&w, &t)); /* the first look */
	CHECK(!otlp_tls_watch__changed(&w, &t));
	/* replaced whole, as a secret volume does: a new inode */
	snprintf(tmp, sizeof(tmp), "%s.new", cert);
	REQUIRE(write_file(tmp, "another certificate\n"));
	REQUIRE(rename(tmp, cert) == 0);
	CHECK(otlp_tls_watch__changed(&w, &t));
	CHECK(!otlp_tls_watch__changed(&w, &t));
	/* rewritten in place, another size */
	REQUIRE(write_file(key, "another key, longer than the first\n"));
	CHECK(otlp_tls_watch__changed(&w, &t));
	/* gone */
	unlink(ca);
	CHECK(otlp_tls_watch__changed(&w, &t));
	CHECK(write_file(ca, "ca\n"));
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	if (!write_file(ca, "ca\n") || !write_file(cert, "cert\n") || !write_file(key, "key\n"))
		return 1;
	RUN(plaintext_policy);
	RUN(environment);
	RUN(server_name_rewrites_the_url);
	RUN(refusals_are_not_outages);
	RUN(rotation_noticed);
	unlink(ca);
	unlink(cert);
	unlink(key);
	rmdir(dir);
	return test_summary();
}
