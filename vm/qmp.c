/* qmp: one talk with QEMU's QMP monitor as a loop source with a deadline —
 * connect, the greeting, qmp_capabilities, one command, its answer — and
 * the parser of what the monitor sends. The monitor is QEMU's, yet its
 * bytes are read as hostile: a garbled line ends the talk with an error
 * naming it, never more. */
#include "vm/qmp-int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#define QMP_READ_MIN 4096

enum qmp_step { QMP_GREETING, QMP_CAPS, QMP_COMMAND };

struct vm_monitor_talk {
	struct ev_loop *loop;
	char name[NAME_MAX_LEN + 1];
	const char *what, *command;
	bool ended_ok;
	unsigned timeout_ms;
	enum qmp_step step;
	void (*done)(void *data, const struct err *e);
	void *data;
	struct ev_source io, timer;
	struct buf_in in;
};

/* src into dst with what is not printable ASCII as '?': a monitor's bytes
 * go into log lines and RPC answers. */
static void printable(char *dst, size_t size, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < size; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
}

static const char *str_member(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "?";
}

int vm_qmp_parse(const char *vm, const char *line, size_t len, struct vm_qmp_msg *ret,
                 struct err *e)
{
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len > VM_QMP_LINE_MAX)
		return err_set_errno(e, -EBADMSG, "vm \"%s\": a QMP line of %zu bytes, over %d", vm,
		                     len, VM_QMP_LINE_MAX);
	json_error_t je;
	json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	char text[96];
	if (!j) {
		printable(text, sizeof(text), je.text);
		return err_set_errno(e, -EBADMSG,
		                     "vm \"%s\": the VMM's monitor sent no JSON at byte %d: %s", vm,
		                     je.position, text);
	}
	*ret = (struct vm_qmp_msg){0};
	const json_t *v;
	int r = 0;
	if (!json_is_object(j)) {
		r = err_set_errno(e, -EBADMSG,
		                  "vm \"%s\": the VMM's monitor sent JSON that is "
		                  "not an object",
		                  vm);
	} else if (json_is_object(json_object_get(j, "QMP"))) {
		ret->kind = VM_QMP_GREETING;
	} else if (json_object_get(j, "return")) {
		ret->kind = VM_QMP_RETURN;
	} else if ((v = json_object_get(j, "error"))) {
		char class[48], desc[sizeof(ret->what) - sizeof(class) - 2];
		printable(class, sizeof(class), str_member(v, "class"));
		printable(desc, sizeof(desc), str_member(v, "desc"));
		ret->kind = VM_QMP_ERROR;
		snprintf(ret->what, sizeof(ret->what), "%s: %s", class, desc);
	} else if (json_is_string(v = json_object_get(j, "event"))) {
		ret->kind = VM_QMP_EVENT;
		printable(ret->what, sizeof(ret->what), json_string_value(v));
	} else {
		r = err_set_errno(e, -EBADMSG,
		                  "vm \"%s\": the VMM's monitor sent an object with "
		                  "none of QMP, return, error, event",
		                  vm);
	}
	json_decref(j);
	return r;
}

/* The talk is over: its sources go, then its owner hears (e NULL: done). */
static void talk_finish(struct vm_monitor_talk *t, const struct err *e)
{
	void (*done)(void *, const struct err *) = t->done;
	void *data = t->data;
	vm_qmp_talk_cancel(t);
	if (done)
		done(data, e);
}

static void talk_fail(struct vm_monitor_talk *t, int neg_errno, const char *fmt, ...)
    _printf_(3, 4);
static void talk_fail(struct vm_monitor_talk *t, int neg_errno, const char *fmt, ...)
{
	struct err e;
	char why[ERR_MSG_MAX - 128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	err_set_errno(&e, neg_errno, "vm \"%s\": %s: %s", t->name, t->what, why);
	talk_finish(t, &e);
}

/* A message this small fits an empty socket buffer: a short write means
 * the monitor does not read, and the talk ends rather than wait. */
static int talk_send(struct vm_monitor_talk *t, const char *msg)
{
	size_t n = strlen(msg);
	ssize_t w = send(t->io.fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w == (ssize_t)n && send(t->io.fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
		return 0;
	int r = w < 0 ? -errno : -EAGAIN;
	talk_fail(t, r, "cannot write to the VMM's monitor: %s", strerror(-r));
	return r;
}

/* One message in the talk's order. 1: the talk is over (t is gone). */
static int talk_step(struct vm_monitor_talk *t, const struct vm_qmp_msg *m)
{
	static const char *const expected[] = {"its QMP greeting", "the answer to qmp_capabilities",
	                                       "the answer"};
	if (m->kind == VM_QMP_EVENT) { /* asynchronous: not an answer */
		log_debug("vm \"%s\": QMP event %s", t->name, m->what);
		return 0;
	}
	if (m->kind == VM_QMP_ERROR) {
		talk_fail(t, -EIO, "the VMM refused %s: %s",
		          t->step == QMP_COMMAND ? "it" : "qmp_capabilities", m->what);
		return 1;
	}
	bool fits = t->step == QMP_GREETING ? m->kind == VM_QMP_GREETING : m->kind == VM_QMP_RETURN;
	if (!fits) {
		talk_fail(t, -EBADMSG, "the VMM's monitor sent %s while kin waited for %s",
		          m->kind == VM_QMP_GREETING ? "a greeting" : "an answer",
		          expected[t->step]);
		return 1;
	}
	if (t->step == QMP_COMMAND) {
		talk_finish(t, NULL);
		return 1;
	}
	t->step++;
	return talk_send(t, t->step == QMP_CAPS ? "{\"execute\":\"qmp_capabilities\"}"
	                                        : t->command) < 0;
}

/* Every whole line read so far, in order. 1: the talk is over. */
static int talk_lines(struct vm_monitor_talk *t)
{
	for (;;) {
		const char *p = (const char *)buf_in_peek(&t->in);
		size_t have = buf_in_pending(&t->in);
		const char *nl = memchr(p, '\n', have);
		if (!nl)
			break;
		size_t n = (size_t)(nl - p) + 1;
		struct vm_qmp_msg m;
		struct err e;
		if (vm_qmp_parse(t->name, p, n, &m, &e) < 0) {
			struct err f;
			err_set_errno(&f, e.errnum, "%s (kin's %s ends there)", e.msg, t->what);
			talk_finish(t, &f);
			return 1;
		}
		buf_in_consume(&t->in, n);
		if (talk_step(t, &m))
			return 1;
	}
	buf_in_compact(&t->in);
	return 0;
}

static void on_talk_io(struct ev_source *src, uint32_t events)
{
	struct vm_monitor_talk *t = src->data;
	(void)events;
	for (;;) {
		/* A full buffer holds one unfinished line: room for more, bounded. */
		if (t->in.data && t->in.len == t->in.cap) {
			if (t->in.cap >= VM_QMP_LINE_MAX + 2 ||
			    buf_in_reserve(&t->in, t->in.cap * 2 > VM_QMP_LINE_MAX + 2
			                               ? VM_QMP_LINE_MAX + 2
			                               : t->in.cap * 2) < 0) {
				talk_fail(t, -EMSGSIZE,
				          "the VMM's monitor sent a line over %d bytes",
				          VM_QMP_LINE_MAX);
				return;
			}
		}
		ssize_t n = buf_in_read(&t->in, t->io.fd, true);
		if (n == -EAGAIN)
			return;
		/* ECONNRESET: the VMM ended with kin's words unread. */
		bool ended = n == 0 || n == -ECONNRESET;
		if (ended && t->step == QMP_COMMAND && t->ended_ok) {
			log_debug("vm \"%s\": the VMM ended after %s", t->name, t->what);
			talk_finish(t, NULL);
			return;
		}
		if (n <= 0) {
			talk_fail(t, n == 0 ? -ECONNRESET : (int)n,
			          "the VMM's monitor %s while kin waited for %s",
			          n == 0 ? "hung up" : strerror((int)-n),
			          t->step == QMP_GREETING ? "its greeting"
			          : t->step == QMP_CAPS   ? "the answer to qmp_capabilities"
			                                  : "the answer");
			return;
		}
		if (talk_lines(t))
			return;
	}
}

static void on_talk_timeout(struct ev_source *src, uint32_t events)
{
	struct vm_monitor_talk *t = src->data;
	(void)events;
	talk_fail(t, -ETIMEDOUT, "the VMM's monitor did not answer in %u ms%s", t->timeout_ms,
	          t->step == QMP_COMMAND ? " (the command was sent)" : "");
}

int vm_qmp_talk(const struct vm_monitor_req *q, const char *what, const char *command,
                bool ended_ok, struct vm_monitor_talk **ret, struct err *e)
{
	struct vm_monitor_talk *t = calloc(1, sizeof(*t));
	if (!t)
		return err_set_errno(e, -ENOMEM, "vm \"%s\": %s: out of memory", q->name, what);
	*t = (struct vm_monitor_talk){.loop = q->loop,
	                              .what = what,
	                              .command = command,
	                              .ended_ok = ended_ok,
	                              .timeout_ms = q->timeout_ms,
	                              .done = q->done,
	                              .data = q->data,
	                              .io = {.fd = -1, .fn = on_talk_io, .data = t},
	                              .timer = {.fd = -1, .fn = on_talk_timeout, .data = t}};
	str_copy(t->name, sizeof(t->name), q->name);
	buf_in_init(&t->in, QMP_READ_MIN, QMP_READ_MIN, 0, NULL);
	/* A unix connect completes at once or fails (EAGAIN: the VMM's
	 * backlog is full, it does not accept). */
	int r = t->io.fd = sock_unix_connect(q->monitor, SOCK_NONBLOCK);
	if (r < 0) {
		t->io.fd = -1;
		vm_qmp_talk_cancel(t);
		return err_set_errno(e, r,
		                     "vm \"%s\": %s: cannot connect to the VMM's monitor %s: %s",
		                     q->name, what, q->monitor, strerror(-r));
	}
	struct itimerspec its = {.it_value = {.tv_sec = q->timeout_ms / 1000,
	                                      .tv_nsec = q->timeout_ms % 1000 * 1000000L}};
	t->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	r = t->timer.fd < 0 || timerfd_settime(t->timer.fd, 0, &its, NULL) < 0 ? -errno : 0;
	if (r == 0)
		r = ev_add(t->loop, &t->io, EPOLLIN);
	if (r == 0 && (r = ev_add(t->loop, &t->timer, EPOLLIN)) < 0)
		ev_del(t->loop, &t->io);
	if (r < 0) {
		vm_qmp_talk_cancel(t);
		return err_set_errno(e, r, "vm \"%s\": %s: %s", q->name, what, strerror(-r));
	}
	*ret = t;
	return 0;
}

void vm_qmp_talk_cancel(struct vm_monitor_talk *t)
{
	if (!t)
		return;
	ev_close(t->loop, &t->io);
	ev_close(t->loop, &t->timer);
	buf_in_free(&t->in);
	free(t);
}
