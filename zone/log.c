/* log: a zone kin's stdout and stderr (and whatever of its workloads
 * writes there) go to a pipe the parent's loop drains into
 * STATE_DIR/NAME.log; once the file would pass its cap it becomes
 * NAME.log.1 (the previous .1 is replaced) and a new NAME.log starts, so a
 * zone never holds more than twice the cap on disk, and a chatty zone
 * never reaches the parent's stderr. The cells' ring buffers belong to
 * executables started through cells/, which a zone kin is not: a file
 * also outlives the zone for a post-mortem (the last ZONE_LOGS_KEPT). */
#include "zone/zone-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define LOG_READ_CHUNK  (16 * 1024)
#define LOG_READ_BUDGET (256 * 1024) /* per wakeup: other sources get their turn */

void zone_log_init(struct zone_log *l)
{
	*l = (struct zone_log){.src = {.fd = -1}, .file_fd = -1};
}

static int log_file_open(struct zone_log *l)
{
	l->file_fd =
	    open(l->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
	l->size = 0;
	return l->file_fd < 0 ? -errno : 0;
}

static void log_rotate(struct zone_log *l)
{
	char old[PATH_MAX + 2];
	snprintf(old, sizeof(old), "%s.1", l->path);
	if (l->file_fd >= 0)
		close(l->file_fd);
	(void)rename(l->path, old);
	log_file_open(l);
}

void zone_log_write(struct zone_log *l, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		if (l->size >= l->cap)
			log_rotate(l);
		size_t n = len < l->cap - l->size ? len : (size_t)(l->cap - l->size);
		if (l->file_fd < 0 || write_all(l->file_fd, p, n) < 0)
			l->dropped += n;
		l->size += n; /* counted even when dropped: a full disk still rotates */
		p += n;
		len -= n;
	}
}

static void log_source_close(struct zone_log *l)
{
	ev_close(l->loop, &l->src);
}

/* Reads at most budget bytes; false once the pipe is done (EOF, error). */
static bool log_drain(struct zone_log *l, size_t budget)
{
	char buf[LOG_READ_CHUNK];
	for (size_t got = 0; got < budget;) {
		ssize_t n = read(l->src.fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		zone_log_write(l, buf, (size_t)n);
		got += (size_t)n;
	}
	return true;
}

static void on_log(struct ev_source *src, uint32_t events)
{
	struct zone_log *l = src->data;
	(void)events;
	if (!log_drain(l, LOG_READ_BUDGET))
		log_source_close(l);
}

int zone_log_open(struct zone_log *l, struct ev_loop *loop, const char *path, size_t cap,
                  int *ret_write_fd)
{
	char old[PATH_MAX + 2];
	int p[2], r;
	if (str_copy(l->path, sizeof(l->path), path) < 0)
		return -ENAMETOOLONG;
	l->cap = cap;
	l->loop = loop;
	snprintf(old, sizeof(old), "%s.1", path);
	(void)unlink(old);
	r = log_file_open(l);
	if (r < 0)
		return r;
	if (pipe2(p, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	fd_set_nonblock(p[0], true);
	l->src = (struct ev_source){.fd = p[0], .fn = on_log, .data = l};
	r = ev_add(loop, &l->src, EPOLLIN);
	if (r < 0) {
		close(p[0]);
		close(p[1]);
		l->src.fd = -1;
		goto fail;
	}
	*ret_write_fd = p[1];
	return 0;
fail:
	close(l->file_fd);
	l->file_fd = -1;
	return r;
}

int zone_log_adopt(struct zone_log *l, struct ev_loop *loop, const char *path, size_t cap,
                   int pipe_fd, int file_fd, uint64_t size)
{
	l->loop = loop;
	l->cap = cap;
	l->size = size;
	l->file_fd = file_fd;
	l->src = (struct ev_source){.fd = pipe_fd, .fn = on_log, .data = l};
	int r = str_copy(l->path, sizeof(l->path), path) < 0 ? -ENAMETOOLONG
	        : pipe_fd < 0                                ? 0
	                                                     : ev_add(loop, &l->src, EPOLLIN);
	if (r < 0) {
		closep(&l->file_fd);
		closep(&l->src.fd);
		l->file_fd = l->src.fd = -1;
	}
	return r;
}

void zone_log_close(struct zone_log *l, struct ev_loop *loop)
{
	if (!l)
		return;
	if (!l->loop)
		l->loop = loop;
	if (l->src.fd >= 0)
		log_drain(l, SIZE_MAX);
	log_source_close(l);
	if (l->file_fd >= 0)
		close(l->file_fd);
	l->file_fd = -1;
	if (l->dropped)
		log_debug("zone log %s: %llu bytes could not be written", l->path,
		          (unsigned long long)l->dropped);
}

static void log_remove(const char *path)
{
	char old[PATH_MAX + 2];
	snprintf(old, sizeof(old), "%s.1", path);
	(void)unlink(path);
	(void)unlink(old);
}

static void kept_drop(struct zone_logs_kept *k, unsigned i)
{
	free(k->path[i]);
	memmove(&k->path[i], &k->path[i + 1], (size_t)(k->n - i - 1) * sizeof(k->path[0]));
	k->n--;
}

void zone_logs_forget(struct zone_logs_kept *k, const char *path)
{
	for (unsigned i = 0; i < k->n; i++) {
		if (strcmp(k->path[i], path) == 0) {
			kept_drop(k, i);
			return;
		}
	}
}

void zone_logs_keep(struct zone_logs_kept *k, const char *path)
{
	zone_logs_forget(k, path);
	char *copy = strdup(path);
	if (!copy) { /* cannot remember it, so cannot remove it later: now */
		log_remove(path);
		return;
	}
	if (k->n == ZONE_LOGS_KEPT) {
		log_remove(k->path[0]);
		kept_drop(k, 0);
	}
	k->path[k->n++] = copy;
}

void zone_logs_kept_free(struct zone_logs_kept *k)
{
	while (k->n)
		kept_drop(k, k->n - 1);
}
