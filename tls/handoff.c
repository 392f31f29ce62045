/* handoff: one authenticated connection from the gateway to kin. One
 * SOCK_SEQPACKET datagram of text with exactly one socket in SCM_RIGHTS:
 *
 *	kin-tls-handoff 1
 *	peer 192.0.2.1:40000
 *	name cn:ops
 *	name uri:spiffe://example.org/ops
 *
 * No OpenSSL here: PID 1 links this file. The gateway is the side that
 * parsed hostile TLS, so kin trusts nothing in these bytes either: every
 * line is checked, and any fd that came with a bad message is closed. */
#include "tls/tls.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define HANDOFF_MAGIC "kin-tls-handoff 1\n"
/* A few more fds than one fit, so a message carrying extras is seen (and
 * all of them closed) instead of the kernel silently dropping them. */
#define HANDOFF_FDS_ROOM 4

static bool handoff_char_ok(uint8_t c)
{
	return c > 0x20 && c < 0x7f; /* printable ASCII, no space */
}

/* A name: a known prefix and 1..TLS_NAME_MAX printable bytes after it. */
static bool handoff_name_ok(const uint8_t *s, size_t len)
{
	static const char *const prefixes[] = {"uri:", "dns:", "cn:"};
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t pl = strlen(prefixes[i]);
		if (len <= pl || memcmp(s, prefixes[i], pl) != 0)
			continue;
		if (len - pl > TLS_NAME_MAX)
			return false;
		for (size_t k = pl; k < len; k++)
			if (!handoff_char_ok(s[k]))
				return false;
		return true;
	}
	return false;
}

int tls_handoff_parse(const uint8_t *buf, size_t len, struct tls_identity *ret_id)
{
	struct tls_identity id = {0};
	bool have_peer = false;

	if (len > TLS_HANDOFF_MAX || len < STRLEN(HANDOFF_MAGIC) ||
	    memcmp(buf, HANDOFF_MAGIC, STRLEN(HANDOFF_MAGIC)) != 0)
		return -EBADMSG;
	size_t pos = STRLEN(HANDOFF_MAGIC);
	while (pos < len) {
		const uint8_t *line = buf + pos;
		const uint8_t *nl = memchr(line, '\n', len - pos);
		if (!nl)
			return -EBADMSG; /* every line ends in a newline */
		size_t ll = (size_t)(nl - line);
		pos += ll + 1;
		if (ll > 5 && memcmp(line, "peer ", 5) == 0) {
			/* once, first after the version line */
			if (have_peer || ll - 5 >= sizeof(id.peer))
				return -EBADMSG;
			for (size_t k = 5; k < ll; k++)
				if (!handoff_char_ok(line[k]))
					return -EBADMSG;
			memcpy(id.peer, line + 5, ll - 5);
			id.peer[ll - 5] = '\0';
			have_peer = true;
		} else if (ll > 5 && memcmp(line, "name ", 5) == 0) {
			if (!have_peer || id.n_names >= TLS_NAMES_MAX ||
			    !handoff_name_ok(line + 5, ll - 5))
				return -EBADMSG;
			memcpy(id.names[id.n_names], line + 5, ll - 5);
			id.names[id.n_names][ll - 5] = '\0';
			id.n_names++;
		} else {
			return -EBADMSG;
		}
	}
	if (!have_peer)
		return -EBADMSG;
	*ret_id = id;
	return 0;
}

/* The message for id into buf; -EINVAL when id holds something the parse
 * would refuse (the gateway never sends what kin cannot take). */
static int handoff_format(const struct tls_identity *id, char *buf, size_t size, size_t *ret_len)
{
	size_t n = 0;
	int m = snprintf(buf, size, HANDOFF_MAGIC "peer %s\n", id->peer);
	if (m < 0 || (size_t)m >= size || id->n_names > TLS_NAMES_MAX)
		return -EINVAL;
	n = (size_t)m;
	for (size_t i = 0; i < id->n_names; i++) {
		m = snprintf(buf + n, size - n, "name %s\n", id->names[i]);
		if (m < 0 || (size_t)m >= size - n)
			return -EINVAL;
		n += (size_t)m;
	}
	struct tls_identity check;
	if (tls_handoff_parse((const uint8_t *)buf, n, &check) < 0)
		return -EINVAL;
	*ret_len = n;
	return 0;
}

int tls_handoff_send(int control_fd, int fd, const struct tls_identity *id)
{
	char text[TLS_HANDOFF_MAX];
	size_t len;
	int r = handoff_format(id, text, sizeof(text), &len);
	if (r < 0)
		return r;

	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	memset(&cm, 0, sizeof(cm));
	struct iovec iov = {.iov_base = text, .iov_len = len};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = cm.buf,
	    .msg_controllen = sizeof(cm.buf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));

	/* Never blocks: a kin too busy to take a connection gets -EAGAIN and
	 * the gateway drops that peer rather than stall every other one. */
	ssize_t n;
	do
		n = sendmsg(control_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

static void handoff_close_all(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Collects every fd of every SCM_RIGHTS header (whatever else is there). */
static size_t handoff_collect_fds(struct msghdr *msg, int *fds, size_t max)
{
	size_t n = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && n < max; i++)
			memcpy(&fds[n++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	return n;
}

int tls_handoff_recv(int control_fd, int *ret_fd, struct tls_identity *ret_id)
{
	uint8_t text[TLS_HANDOFF_MAX];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * HANDOFF_FDS_ROOM)];
	} cm;
	int fds[HANDOFF_FDS_ROOM * 2];
	struct iovec iov = {.iov_base = text, .iov_len = sizeof(text)};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = cm.buf,
	    .msg_controllen = sizeof(cm.buf),
	};
	ssize_t n;
	do
		n = recvmsg(control_fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;

	size_t n_fds = handoff_collect_fds(&msg, fds, ARRAY_SIZE(fds));
	if (n == 0 && n_fds == 0 && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return 0; /* a seqpacket's end: the gateway is gone */

	int r = 0;
	struct stat st;
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || n_fds != 1)
		r = -EBADMSG;
	else if (fstat(fds[0], &st) < 0 || !S_ISSOCK(st.st_mode))
		r = -EBADMSG;
	else
		r = tls_handoff_parse(text, (size_t)n, ret_id);
	if (r < 0) {
		handoff_close_all(fds, n_fds);
		return r;
	}
	*ret_fd = fds[0];
	return 1;
}
