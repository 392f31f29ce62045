/* logs: an executable's output to a server stream as LogChunk messages —
 * what its rings keep now, then the end; or followed until it ends, the
 * client goes, or kin stops. One way for Exec/Logs and Units/Logs. A client
 * that reads too slowly loses output (its connection's output is full);
 * the next chunk of that stream says how many bytes it missed
 * (LogChunk.dropped), as it does for bytes no longer kept when a reader
 * resumes from a position (LogsRequest.resume).
 * Memory stays bounded by the server's per-connection output cap; the
 * ring keeps the bytes for a later read. */
#include "api/api-int.h"
#include "cells/cells.h"
#include "proto/cells.pb-c.h"

#include <stdlib.h>

#define LOG_CHUNK (64 * 1024)

struct api_log_stream {
	struct list_node node; /* in the service's list */
	struct cells *cells;
	struct rpc_call *call;
	struct exec_follower *follower;
	unsigned streams;    /* bit per exec_stream wanted */
	uint64_t dropped[2]; /* per exec_stream: bytes not delivered yet noted */
	bool in_setup, ended;
};

static void stream_free(struct api_log_stream *st)
{
	list_remove(&st->node);
	free(st);
}

static void log_send(struct api_log_stream *st, enum exec_stream s, const void *buf, size_t len)
{
	Kin__V1__LogChunk m = KIN__V1__LOG_CHUNK__INIT;
	m.stream = s == EXEC_STDOUT ? KIN__V1__LOG_STREAM__STDOUT : KIN__V1__LOG_STREAM__STDERR;
	m.data.data = (uint8_t *)buf;
	m.data.len = len;
	m.dropped = st->dropped[s];
	int r = rpc_call_send(st->call, &m.base);
	if (r == -ENOBUFS)
		st->dropped[s] += len;
	else if (r == 0)
		st->dropped[s] = 0;
}

static void log_skipped(enum exec_stream s, uint64_t n, void *data)
{
	struct api_log_stream *st = data;
	st->dropped[s] += n;
}

static void log_data(enum exec_stream s, const void *buf, size_t len, void *data)
{
	struct api_log_stream *st = data;
	if (!st->call || !(st->streams & (1u << s)))
		return;
	/* The library hands at most 64 KiB at a time; keep frames small anyway. */
	for (size_t off = 0; off < len; off += LOG_CHUNK)
		log_send(st, s, (const uint8_t *)buf + off,
		         len - off < LOG_CHUNK ? len - off : LOG_CHUNK);
}

/* The executable ended and its pipes closed, or it was deleted. */
static void log_end(void *data)
{
	struct api_log_stream *st = data;
	st->follower = NULL;
	if (st->in_setup) {
		st->ended = true; /* the handler finishes */
		return;
	}
	if (st->call)
		rpc_call_close(st->call, ERR_OK, NULL);
	stream_free(st);
}

static const struct exec_log_ops log_ops = {
    .data = log_data, .end = log_end, .skipped = log_skipped};

static void log_cancelled(struct rpc_call *call, void *data)
{
	struct api_log_stream *st = data;
	(void)call;
	st->call = NULL;
	if (st->follower)
		exec_log_unfollow(st->cells, st->follower);
	stream_free(st);
}

int api_logs_serve(struct list_node *list, struct cells *cells, struct rpc_call *call,
                   const char *cell, const char *exec, unsigned streams, bool follow,
                   const uint64_t *from, struct err *err)
{
	struct api_log_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	*st = (struct api_log_stream){.cells = cells, .call = call, .streams = streams};
	list_push(list, &st->node);
	if (!follow) {
		_cleanup_free_ uint8_t *buf = malloc(LOG_CHUNK);
		if (!buf) {
			stream_free(st);
			return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
		}
		for (int s = EXEC_STDOUT; s <= EXEC_STDERR; s++) {
			uint64_t pos = from ? from[s] : 0, dropped;
			size_t n;
			struct err ignored = {0};
			if (!(streams & (1u << s)))
				continue;
			while (exec_log_read(cells, cell, exec, s, &pos, buf, LOG_CHUNK, &n,
			                     &dropped, &ignored) == 0 &&
			       n > 0) {
				if (from) /* resuming: what is no longer kept is told */
					st->dropped[s] += dropped;
				log_send(st, s, buf, n);
			}
		}
		stream_free(st);
		return rpc_call_close(call, ERR_OK, NULL);
	}
	st->in_setup = true;
	int r = exec_log_follow(cells, cell, exec, &log_ops, st, from, &st->follower, err);
	st->in_setup = false;
	if (r < 0) {
		stream_free(st);
		return r;
	}
	if (st->ended) {
		stream_free(st);
		return rpc_call_close(call, ERR_OK, NULL);
	}
	rpc_call_on_cancel(call, log_cancelled, st);
	return 0;
}

void api_logs_end(struct list_node *list)
{
	struct api_log_stream *st;
	/* From the head each time: ending one stream may end others. */
	while ((st = list_first_entry(list, struct api_log_stream, node))) {
		struct rpc_call *call = st->call;
		st->call = NULL;
		if (st->follower)
			exec_log_unfollow(st->cells, st->follower);
		if (call)
			rpc_call_close(call, ERR_UNAVAILABLE, "kin is stopping");
		stream_free(st);
	}
}

void api_logs_free(struct list_node *list)
{
	struct api_log_stream *st, *next;
	list_for_each_safe(st, next, list, node)
		stream_free(st);
}
