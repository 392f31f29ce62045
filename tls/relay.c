/* relay: plaintext between one TLS connection and one unix socket, both
 * non-blocking, in a loop (the gateway's many, kin ctl's relay child's
 * one). Each direction has one bounded buffer; a side is not read while
 * the buffer toward its peer is full, so a slow reader slows its writer
 * instead of growing memory. Each direction ends on its own (TLS
 * close_notify -> shutdown(SHUT_WR) of the unix end; EOF from the unix
 * end -> close_notify); the relay is done when both have, or at once
 * when either socket fails. */
#include "tls/tls-int.h"

#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/socket.h>

struct relay_buf {
	uint8_t *data;
	size_t off, len; /* bytes [off, len) are waiting */
};

struct tls_relay {
	struct ev_loop *loop;
	SSL *ssl;
	struct ev_source tcp, unx;
	uint32_t tcp_events, unx_events; /* what each is registered for */
	struct relay_buf down;           /* TLS -> unix */
	struct relay_buf up;             /* unix -> TLS */
	size_t write_retry;              /* an SSL_write to repeat with this length */
	int read_want, write_want;       /* SSL_ERROR_WANT_* of the last SSL_read/SSL_write */
	bool tls_eof;                    /* the peer's close_notify came */
	bool unix_eof;                   /* the unix end will send no more */
	bool unix_shut;                  /* ...and we told it the TLS side will not */
	bool unix_gone;                  /* the unix end closed: nothing more can go to it */
	bool tls_shut;                   /* close_notify sent */
	bool tls_failed;                 /* SSL must not be shut down, only freed */
	bool unx_registered;             /* unx is in the loop's set */
	tls_relay_done_fn on_done;
	void *data;
};

static bool buf_empty(const struct relay_buf *b)
{
	return b->off == b->len;
}

static void buf_consumed(struct relay_buf *b, size_t n)
{
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}

/* TLS -> down. 1 progress, 0 none, -1 the TLS side failed. */
static int relay_tls_read(struct tls_relay *r)
{
	if (r->tls_eof || r->unix_gone || r->down.len == TLS_RELAY_BUF)
		return 0;
	ERR_clear_error();
	int n = SSL_read(r->ssl, r->down.data + r->down.len, (int)(TLS_RELAY_BUF - r->down.len));
	if (n > 0) {
		r->down.len += (size_t)n;
		return 1;
	}
	int e = SSL_get_error(r->ssl, n);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		r->read_want = e;
		return 0;
	}
	if (e == SSL_ERROR_ZERO_RETURN) {
		r->tls_eof = true;
		return 1;
	}
	r->tls_failed = true;
	return -1;
}

/* down -> unix, and the unix end's SHUT_WR once TLS has ended. */
static int relay_unix_write(struct tls_relay *r)
{
	if (r->unix_gone)
		return 0;
	if (buf_empty(&r->down)) {
		if (r->tls_eof && !r->unix_shut) {
			(void)shutdown(r->unx.fd, SHUT_WR);
			r->unix_shut = true;
			return 1;
		}
		return 0;
	}
	ssize_t n = send(r->unx.fd, r->down.data + r->down.off, r->down.len - r->down.off,
	                 MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n > 0) {
		buf_consumed(&r->down, (size_t)n);
		return 1;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* kin closed its end: what it has sent still goes out below */
	r->unix_gone = r->unix_eof = true;
	r->down.off = r->down.len = 0;
	return 1;
}

/* unix -> up. Not while an SSL_write waits to be repeated: its bytes
 * must stay where they are. */
static int relay_unix_read(struct tls_relay *r)
{
	if (r->unix_eof || r->up.len == TLS_RELAY_BUF || r->write_retry)
		return 0;
	ssize_t n =
	    recv(r->unx.fd, r->up.data + r->up.len, TLS_RELAY_BUF - r->up.len, MSG_DONTWAIT);
	if (n > 0) {
		r->up.len += (size_t)n;
		return 1;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	r->unix_eof = true; /* EOF, or an error that ends it the same way */
	if (n < 0)
		r->unix_gone = true;
	return 1;
}

/* up -> TLS, and close_notify once the unix end has ended. */
static int relay_tls_write(struct tls_relay *r)
{
	if (buf_empty(&r->up)) {
		if (r->unix_eof && !r->tls_shut) {
			ERR_clear_error();
			(void)SSL_shutdown(r->ssl); /* best effort: one try, no waiting */
			r->tls_shut = true;
			return 1;
		}
		return 0;
	}
	size_t len = r->write_retry ? r->write_retry : r->up.len - r->up.off;
	ERR_clear_error();
	int n = SSL_write(r->ssl, r->up.data + r->up.off, (int)len);
	if (n > 0) {
		r->write_retry = 0;
		buf_consumed(&r->up, (size_t)n);
		return 1;
	}
	int e = SSL_get_error(r->ssl, n);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		r->write_want = e;
		r->write_retry = len;
		return 0;
	}
	r->tls_failed = true;
	return -1;
}

static bool relay_finished(const struct tls_relay *r)
{
	bool down_done = (r->tls_eof && buf_empty(&r->down) && r->unix_shut) || r->unix_gone;
	bool up_done = r->unix_eof && buf_empty(&r->up) && r->tls_shut;
	return down_done && up_done;
}

static void relay_set_events(struct tls_relay *r)
{
	uint32_t tcp = 0, unx = 0;
	if (r->read_want == SSL_ERROR_WANT_READ || r->write_want == SSL_ERROR_WANT_READ)
		tcp |= EPOLLIN;
	if (r->read_want == SSL_ERROR_WANT_WRITE || r->write_want == SSL_ERROR_WANT_WRITE)
		tcp |= EPOLLOUT;
	if (!r->unix_gone) {
		if (!r->unix_eof && r->up.len < TLS_RELAY_BUF && !r->write_retry)
			unx |= EPOLLIN;
		if (!buf_empty(&r->down))
			unx |= EPOLLOUT;
	}
	if (tcp != r->tcp_events && ev_mod(r->loop, &r->tcp, tcp) == 0)
		r->tcp_events = tcp;
	if (r->unx_registered && unx != r->unx_events && ev_mod(r->loop, &r->unx, unx) == 0)
		r->unx_events = unx;
}

/* The owner may free r in on_done: nothing touches r after this. */
static void relay_finish(struct tls_relay *r)
{
	r->on_done(r, r->data);
}

/* Moves what can be moved until nothing moves; then waits for what the
 * last attempts said they need. SSL_read is repeated while it returns
 * data, so bytes OpenSSL holds decrypted (SSL_pending) are never left
 * waiting for a socket event that will not come. True when the relay
 * has ended (and r may be gone). */
static bool relay_pump(struct tls_relay *r)
{
	int p;
	do {
		r->read_want = r->write_want = 0;
		int a = relay_tls_read(r), b = relay_unix_write(r), c = relay_unix_read(r),
		    d = relay_tls_write(r);
		if (a < 0 || d < 0) {
			relay_finish(r);
			return true;
		}
		p = a | b | c | d;
	} while (p);
	if (relay_finished(r)) {
		relay_finish(r);
		return true;
	}
	relay_set_events(r);
	return false;
}

static void relay_on_tcp(struct ev_source *src, uint32_t events)
{
	struct tls_relay *r = src->data;
	if (relay_pump(r))
		return;
	/* A reset or dead TCP connection (HUP/ERR are reported whatever we
	 * asked for): nothing more can go either way. */
	if (events & (EPOLLHUP | EPOLLERR)) {
		r->tls_failed = true;
		relay_finish(r);
	}
}

static void relay_on_unix(struct ev_source *src, uint32_t events)
{
	struct tls_relay *r = src->data;
	if (events & (EPOLLHUP | EPOLLERR)) {
		/* kin closed its end: read what it left, send it, then end.
		 * The fd leaves the set, or its HUP would wake us forever. */
		while (relay_unix_read(r) > 0 && !r->unix_eof && r->up.len < TLS_RELAY_BUF)
			;
		if (r->up.len == TLS_RELAY_BUF && !r->unix_eof)
			r->unix_eof = true; /* what did not fit is lost with the closed end */
		r->unix_gone = r->unix_eof = true;
		r->down.off = r->down.len = 0;
		if (r->unx_registered)
			(void)ev_del(r->loop, &r->unx);
		r->unx_registered = false;
		r->unx_events = 0;
	}
	(void)relay_pump(r);
}

int tls_relay_new(struct ev_loop *loop, SSL *ssl, int tcp_fd, int unix_fd, tls_relay_done_fn done,
                  void *data, struct tls_relay **ret)
{
	struct tls_relay *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->down.data = malloc(TLS_RELAY_BUF);
	r->up.data = malloc(TLS_RELAY_BUF);
	if (!r->down.data || !r->up.data) {
		free(r->down.data);
		free(r->up.data);
		free(r);
		return -ENOMEM;
	}
	r->loop = loop;
	r->ssl = ssl;
	r->tcp = (struct ev_source){.fd = tcp_fd, .fn = relay_on_tcp, .data = r};
	r->unx = (struct ev_source){.fd = unix_fd, .fn = relay_on_unix, .data = r};
	r->on_done = done;
	r->data = data;
	/* The first pump runs at once (the unix end is writable): the
	 * handshake may have left decrypted data inside OpenSSL already. */
	r->tcp_events = EPOLLIN;
	r->unx_events = EPOLLIN | EPOLLOUT;
	int rc = ev_add(loop, &r->tcp, r->tcp_events);
	if (rc == 0) {
		rc = ev_add(loop, &r->unx, r->unx_events);
		if (rc < 0)
			(void)ev_del(loop, &r->tcp);
	}
	if (rc < 0) {
		free(r->down.data);
		free(r->up.data);
		free(r);
		return rc;
	}
	r->unx_registered = true;
	*ret = r;
	return 0;
}

void tls_relay_free(struct tls_relay *r)
{
	if (!r)
		return;
	(void)ev_del(r->loop, &r->tcp);
	if (r->unx_registered)
		(void)ev_del(r->loop, &r->unx);
	if (!r->tls_failed && !r->tls_shut) {
		ERR_clear_error();
		(void)SSL_shutdown(r->ssl);
	}
	ERR_clear_error();
	SSL_free(r->ssl);
	close(r->tcp.fd);
	close(r->unx.fd);
	free(r->down.data);
	free(r->up.data);
	free(r);
}
