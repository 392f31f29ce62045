/* output: an executable's stdout and stderr — non-blocking pipe ends in the
 * loop, drained into bounded rings (kept across restarts), handed to log
 * followers as they arrive — and its optional stdin pipe. */
#include "cells/cells-int.h"

#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>

#define READ_CHUNK       65536
#define READS_PER_WAKEUP 16 /* then yield to the rest of the loop */

int exec_output_init(struct exec *e, size_t bytes)
{
	for (int s = 0; s < 2; s++) {
		e->out[s] = (struct exec_pipe){.src = {.fd = -1}, .e = e, .stream = s};
		int r = exec_ring_init(&e->ring[s], bytes);
		if (r < 0)
			return r;
	}
	return 0;
}

bool exec_output_open(const struct exec *e)
{
	return e->out[0].src.fd >= 0 || e->out[1].src.fd >= 0;
}

static void pipe_close(struct exec_pipe *p)
{
	if (p->src.fd < 0)
		return;
	ev_del(p->e->owner->loop, &p->src);
	close(p->src.fd);
	p->src.fd = -1;
}

void exec_output_maybe_end(struct exec *e)
{
	if (e->state != EXEC_EXITED || exec_output_open(e))
		return;
	for (size_t i = 0; i < EXEC_FOLLOWERS_MAX; i++) {
		struct exec_follower *f = &e->followers[i];
		if (f->used) {
			f->used = false;
			if (f->ops->end)
				f->ops->end(f->data);
		}
	}
}

static void deliver(struct exec *e, enum exec_stream s, const void *buf, size_t len)
{
	exec_ring_write(&e->ring[s], buf, len);
	for (size_t i = 0; i < EXEC_FOLLOWERS_MAX; i++)
		if (e->followers[i].used)
			e->followers[i].ops->data(s, buf, len, e->followers[i].data);
}

/* How much to read: all there is, or, from a pty master, exactly what
 * its line discipline holds (FIONREAD): a read asking for more than that
 * waits for the kernel's buffer work (flush_work, a kworker that may not
 * run soon) before it returns — a wait in PID 1's loop. Nothing there and
 * no hangup: 0, the loop's next wakeup says when. */
static size_t read_size(const struct exec *e, int fd, uint32_t events)
{
	int avail = 0;
	if (!e->spec->terminal)
		return READ_CHUNK;
	if (ioctl(fd, FIONREAD, &avail) == 0 && avail > 0)
		return (size_t)avail < READ_CHUNK ? (size_t)avail : READ_CHUNK;
	return events & (EPOLLHUP | EPOLLERR) ? READ_CHUNK : 0; /* the end: EIO */
}

static void on_output(struct ev_source *src, uint32_t events)
{
	struct exec_pipe *p = src->data;
	struct exec *e = p->e;
	static char buf[READ_CHUNK]; /* one loop, one reader at a time */
	for (int i = 0; i < READS_PER_WAKEUP; i++) {
		size_t want = read_size(e, src->fd, events);
		if (!want)
			return;
		ssize_t n = read(src->fd, buf, want);
		if (n > 0) {
			deliver(e, p->stream, buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* EOF: every writer (the process and whatever it forked) is gone. */
		pipe_close(p);
		exec_output_maybe_end(e);
		return;
	}
}

int exec_output_attach(struct exec *e, int out_fd, int err_fd, bool nonblocking)
{
	int fds[2] = {out_fd, err_fd}, r = 0;
	for (int s = 0; s < 2; s++) {
		struct exec_pipe *p = &e->out[s];
		pipe_close(p); /* a previous run's writer may linger: its output goes */
		p->src = (struct ev_source){.fd = fds[s], .fn = on_output, .data = p};
		fds[s] = -1;
		if (p->src.fd < 0)
			continue; /* the stream goes to a path of the spec */
		if (r == 0 && !nonblocking)
			r = fd_set_nonblock(p->src.fd, true);
		if (r == 0)
			r = ev_add(e->owner->loop, &p->src, EPOLLIN);
		if (r < 0) {
			close(p->src.fd);
			p->src.fd = -1;
		}
	}
	return r;
}

void exec_output_free(struct exec *e)
{
	for (int s = 0; s < 2; s++) {
		pipe_close(&e->out[s]);
		exec_ring_free(&e->ring[s]);
	}
	if (e->stdin_fd >= 0)
		close(e->stdin_fd);
	e->stdin_fd = -1;
}

/* ---- public: reading, following, stdin ------------------------------------ */

int exec_log_read(struct cells *c, const char *cell, const char *name, enum exec_stream s,
                  uint64_t *pos, void *buf, size_t size, size_t *ret_len, uint64_t *ret_dropped,
                  struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if ((unsigned)s > EXEC_STDERR)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "exec \"%s\": no such stream",
		               e->label);
	*ret_len = exec_ring_read(&e->ring[s], pos, buf, size, ret_dropped);
	return 0;
}

int exec_log_follow(struct cells *c, const char *cell, const char *name,
                    const struct exec_log_ops *ops, void *data, const uint64_t *from,
                    struct exec_follower **ret, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (!ops || !ops->data)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s\": follower without a data callback", e->label);
	struct exec_follower *f = NULL;
	for (size_t i = 0; i < EXEC_FOLLOWERS_MAX && !f; i++)
		if (!e->followers[i].used)
			f = &e->followers[i];
	if (!f)
		return err_set(err, -EUSERS, ERR_RESOURCE_EXHAUSTED,
		               "exec \"%s\": already %d log followers", e->label,
		               EXEC_FOLLOWERS_MAX);
	/* What is kept first, stream by stream, then live output. */
	char chunk[4096];
	for (int s = 0; s < 2 && !ops->live; s++) {
		uint64_t pos = from ? from[s] : 0, skipped = 0;
		size_t n;
		exec_ring_read(&e->ring[s], &pos, chunk, 0, &skipped); /* where it starts */
		if (from && skipped && ops->skipped)
			ops->skipped(s, skipped, data);
		while ((n = exec_ring_read(&e->ring[s], &pos, chunk, sizeof(chunk), NULL)) > 0)
			ops->data(s, chunk, n, data);
	}
	*f = (struct exec_follower){.ops = ops, .data = data, .e = e, .used = true};
	if (ret)
		*ret = f;
	if (e->state == EXEC_EXITED && !exec_output_open(e)) {
		if (ret)
			*ret = NULL; /* over already: end() below, no handle to keep */
		exec_output_maybe_end(e);
	}
	return 0;
}

void exec_log_unfollow(struct cells *c, struct exec_follower *f)
{
	(void)c;
	if (f)
		f->used = false;
}

ssize_t exec_stdin_write(struct cells *c, const char *cell, const char *name, const void *buf,
                         size_t len, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (e->stdin_fd < 0)
		return err_set(err, -EPIPE, ERR_FAILED_PRECONDITION,
		               "exec \"%s\": no stdin pipe (not asked for, closed, or ended)",
		               e->label);
	ssize_t n = write(e->stdin_fd, buf, len);
	if (n < 0)
		return err_set_errno(err, -errno, "exec \"%s\": stdin: %m", e->label);
	return n;
}

int exec_stdin_close(struct cells *c, const char *cell, const char *name, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (e->spec->terminal) /* the master stays: it is the output too */
		return exec_tty_eof(e) < 0
		           ? err_set_errno(err, -errno, "exec \"%s\": stdin: %m", e->label)
		           : 0;
	if (e->stdin_fd >= 0) {
		if (c->keeper.unkeep)
			c->keeper.unkeep(e->stdin_fd, c->keeper.data);
		close(e->stdin_fd);
	}
	e->stdin_fd = -1;
	return 0;
}

void exec_keep_pipes(struct exec *e)
{
	struct cells *c = e->owner;
	int fds[3];
	size_t n = 0;
	if (!c->keeper.keep)
		return;
	for (int i = 0; i < 2; i++)
		if (e->out[i].src.fd >= 0)
			fds[n++] = e->out[i].src.fd;
	if (e->stdin_fd >= 0 && !e->spec->terminal) /* a terminal's is the master again */
		fds[n++] = e->stdin_fd;
	if (n)
		c->keeper.keep(fds, n, c->keeper.data);
}

static void keep_all(struct cell *cell)
{
	struct exec *e;
	list_for_each(e, &cell->execs, node)
		if (e->token)
			exec_keep_pipes(e);
	struct cell *ch;
	list_for_each(ch, &cell->children, sibling)
		keep_all(ch);
}

void cells_set_keeper(struct cells *c, const struct cells_keeper *k, bool running_too)
{
	c->keeper = k ? *k : (struct cells_keeper){0};
	if (running_too)
		keep_all(&c->top);
}
