/* Prometheus /metrics endpoint on its own thread. See metrics_server.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/metrics_server.h"

struct metrics_server {
	int fd;
	int stop_pipe[2];
	pthread_t thread;
	pthread_mutex_t lock;
	char *text;
	size_t len;
};

static int parse_addr(const char *addr, struct sockaddr_in *sa)
{
	const char *colon = strrchr(addr, ':');
	char host[64];
	char *end;
	long port;

	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || port <= 0 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void serve(struct metrics_server *m, int c)
{
	char req[2048], head[256];
	size_t got = 0;
	struct pollfd pfd = { .fd = c, .events = POLLIN };

	while (got < sizeof(req) - 1 && !memmem(req, got, "\r\n\r\n", 4)) {
		ssize_t r;

		if (poll(&pfd, 1, 2000) <= 0)
			return;
		r = read(c, req + got, sizeof(req) - 1 - got);
		if (r <= 0)
			return;
		got += (size_t)r;
	}
	req[got] = '\0';
	if (strncmp(req, "GET /metrics ", 13) && strncmp(req, "GET /metrics?", 13)) {
		static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
					 "Connection: close\r\n\r\n";

		write_all(c, nf, sizeof(nf) - 1);
		return;
	}
	pthread_mutex_lock(&m->lock);
	snprintf(head, sizeof(head),
		 "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
		 m->len);
	write_all(c, head, strlen(head));
	write_all(c, m->text ? m->text : "", m->len);
	pthread_mutex_unlock(&m->lock);
}

static void *run(void *arg)
{
	struct metrics_server *m = arg;
	struct pollfd pfd[2] = { { .fd = m->fd, .events = POLLIN },
				 { .fd = m->stop_pipe[0], .events = POLLIN } };

	for (;;) {
		int c;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & POLLIN))
			continue;
		c = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve(m, c);
		close(c);
	}
	return NULL;
}

struct metrics_server *metrics_server__start(const char *addr)
{
	struct metrics_server *m;
	struct sockaddr_in sa;
	int one = 1, err;

	err = parse_addr(addr, &sa);
	if (err) {
		errno = -err;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->stop_pipe[0] = m->stop_pipe[1] = -1;
	pthread_mutex_init(&m->lock, NULL);
	m->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->fd < 0 || setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(m->fd, 16) ||
	    pipe2(m->stop_pipe, O_CLOEXEC))
		goto fail;
	if ((errno = pthread_create(&m->thread, NULL, run, m)))
		goto fail;
	return m;
fail:
	err = errno;
	if (m->fd >= 0)
		close(m->fd);
	if (m->stop_pipe[0] >= 0) {
		close(m->stop_pipe[0]);
		close(m->stop_pipe[1]);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
	errno = err;
	return NULL;
}

void metrics_server__publish(struct metrics_server *m, const char *text, size_t len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&m->lock);
	free(m->text);
	m->text = copy;
	m->len = len;
	pthread_mutex_unlock(&m->lock);
}

void metrics_server__stop(struct metrics_server *m)
{
	if (!m)
		return;
	if (write(m->stop_pipe[1], "x", 1) == 1)
		pthread_join(m->thread, NULL);
	close(m->fd);
	close(m->stop_pipe[0]);
	close(m->stop_pipe[1]);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}
