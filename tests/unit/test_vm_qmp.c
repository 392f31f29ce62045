/* vm/qmp: QEMU's monitor protocol — the parser of what a monitor sends,
 * and one talk (greeting, qmp_capabilities, a command, its answer) against
 * a monitor the test plays on a unix socket: in the loop, events skipped,
 * split lines joined, and every bad answer (garbled, an HMP prompt, a
 * refusal, a hang-up, silence, an endless line) a clear error. */
#include "vm/qmp-int.h"
#include "unit.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char greeting[] =
    "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 2, \"major\": 7}, "
    "\"package\": \"\"}, \"capabilities\": [\"oob\"]}}\r\n";

TEST(vm_qmp_parse)
{
	struct vm_qmp_msg m;
	struct err e = {0};
	CHECK_EQ(vm_qmp_parse("g", greeting, strlen(greeting), &m, &e), 0);
	CHECK_EQ(m.kind, VM_QMP_GREETING);
	CHECK_EQ(vm_qmp_parse("g", "{\"return\": {}}\r\n", 16, &m, &e), 0);
	CHECK_EQ(m.kind, VM_QMP_RETURN);
	static const char ev[] = "{\"timestamp\": {\"seconds\": 1}, \"event\": \"STOP\"}";
	CHECK_EQ(vm_qmp_parse("g", ev, strlen(ev), &m, &e), 0);
	CHECK_EQ(m.kind, VM_QMP_EVENT);
	CHECK_STR(m.what, "STOP");
	static const char er[] =
	    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"bad\\u0001key\"}}\n";
	CHECK_EQ(vm_qmp_parse("g", er, strlen(er), &m, &e), 0);
	CHECK_EQ(m.kind, VM_QMP_ERROR);
	CHECK_STR(m.what, "GenericError: bad?key"); /* nothing unprintable kept */
	/* Hostile or foreign bytes: refused, the sentence names the VM. */
	static const char *const bad[] = {
	    "(qemu) ",
	    "{\"QMP\": [",
	    "[1, 2]",
	    "{\"hello\": 1}",
	    "{\"event\": 3}",
	    "{\"return\": 1} trailing",
	    "{\"return\": 1, \"return\": 2}",
	    "",
	    "\xff\xfe",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		e = (struct err){0};
		CHECK_EQ(vm_qmp_parse("g", bad[i], strlen(bad[i]), &m, &e), -EBADMSG);
		CHECK(strncmp(e.msg, "vm \"g\": the VMM's monitor sent ", 31) == 0);
	}
	/* A line within bounds is read; past them, refused before parsing. */
	char *big = malloc(VM_QMP_LINE_MAX + 2);
	CHECK(big != NULL);
	if (big) {
		memset(big, ' ', VM_QMP_LINE_MAX + 1);
		memcpy(big, "{\"return\": 1}", 13);
		CHECK_EQ(vm_qmp_parse("g", big, VM_QMP_LINE_MAX, &m, &e), 0);
		CHECK_EQ(vm_qmp_parse("g", big, VM_QMP_LINE_MAX + 1, &m, &e), -EBADMSG);
		CHECK(strstr(e.msg, "over 65536") != NULL);
		free(big);
	}
}

/* The monitor the test plays, and what the talk told its owner. */
struct mon {
	char dir[32], path[64];
	int lfd, fd;
	struct ev_loop *loop;
	int dones;
	struct err e;
	bool failed;
};

static void on_done(void *data, const struct err *e)
{
	struct mon *x = data;
	x->dones++;
	x->failed = e != NULL;
	if (e)
		x->e = *e;
}

static bool mon_setup(struct mon *x)
{
	*x = (struct mon){.dir = "/tmp/kin-unit-qmp.XXXXXX", .lfd = -1, .fd = -1};
	if (!mkdtemp(x->dir) || ev_loop_new(&x->loop) < 0)
		return false;
	snprintf(x->path, sizeof(x->path), "%s/monitor.sock", x->dir);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(sa.sun_path, x->path);
	x->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return x->lfd >= 0 && bind(x->lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	       listen(x->lfd, 4) == 0;
}

static void mon_teardown(struct mon *x)
{
	if (x->fd >= 0)
		close(x->fd);
	if (x->lfd >= 0)
		close(x->lfd);
	unlink(x->path);
	rmdir(x->dir);
	ev_loop_free(x->loop);
}

/* Begins a talk (timeout_ms) and takes the monitor's end of it. */
static struct vm_monitor_talk *mon_talk(struct mon *x, unsigned timeout_ms, bool ended_ok)
{
	struct vm_monitor_talk *t = NULL;
	const struct vm_monitor_req q = {.loop = x->loop,
	                                 .name = "g",
	                                 .monitor = x->path,
	                                 .timeout_ms = timeout_ms,
	                                 .done = on_done,
	                                 .data = x};
	struct err e = {0};
	x->dones = 0;
	if (vm_qmp_talk(&q, "pause", "{\"execute\":\"stop\"}", ended_ok, &t, &e) < 0)
		return NULL;
	if (x->fd >= 0)
		close(x->fd);
	x->fd = accept4(x->lfd, NULL, NULL, SOCK_CLOEXEC);
	return x->fd >= 0 ? t : NULL;
}

/* MSG_NOSIGNAL: kin may have hung up already (a cancelled talk). */
static void mon_say(struct mon *x, const char *s)
{
	CHECK_EQ(send(x->fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
	for (int i = 0; i < 3; i++)
		ev_run_once(x->loop, 20);
}

/* What kin sent since the last call (the loop runs meanwhile). */
static void mon_heard(struct mon *x, const char *want)
{
	char got[256] = "";
	ssize_t n = 0;
	for (int i = 0; i < 25 && n <= 0; i++) {
		ev_run_once(x->loop, 20);
		n = recv(x->fd, got, sizeof(got) - 1, MSG_DONTWAIT);
	}
	got[n > 0 ? n : 0] = '\0';
	CHECK_STR(got, want);
}

TEST(vm_qmp_talk)
{
	struct mon x;
	CHECK(mon_setup(&x));
	/* The whole talk: the greeting split, an event skipped, done once. */
	CHECK(mon_talk(&x, 2000, false));
	mon_say(&x, "{\"QMP\": {\"version\": {}, ");
	CHECK_EQ(x.dones, 0);
	mon_say(&x, "\"capabilities\": []}}\r\n");
	mon_heard(&x, "{\"execute\":\"qmp_capabilities\"}\n");
	mon_say(&x, "{\"return\": {}}\r\n");
	mon_heard(&x, "{\"execute\":\"stop\"}\n");
	mon_say(&x, "{\"event\": \"STOP\", \"data\": {}}\r\n");
	CHECK_EQ(x.dones, 0);
	mon_say(&x, "{\"return\": {}}\r\n");
	CHECK_EQ(x.dones, 1);
	CHECK(!x.failed);
	char c;
	CHECK_EQ(read(x.fd, &c, 1), 0); /* kin hung up */

	/* Refused: the monitor's class and text in the error. */
	CHECK(mon_talk(&x, 2000, false));
	mon_say(&x, greeting);
	mon_say(&x, "{\"return\": {}}\n{\"error\": {\"class\": \"GenericError\", \"desc\": "
	            "\"no\"}}\n");
	CHECK_EQ(x.dones, 1);
	CHECK(x.failed);
	CHECK_STR(x.e.msg, "vm \"g\": pause: the VMM refused it: GenericError: no");

	/* An older kin's VMM speaking HMP: no crash, a sentence saying so. */
	CHECK(mon_talk(&x, 2000, false));
	mon_say(&x, "QEMU 7.2.0 monitor - type 'help' for more information\r\n(qemu) ");
	CHECK_EQ(x.dones, 1);
	CHECK(x.failed && x.e.errnum == -EBADMSG);
	CHECK(strstr(x.e.msg, "vm \"g\": the VMM's monitor sent no JSON") == x.e.msg);

	/* Out of order: an answer before the greeting. */
	CHECK(mon_talk(&x, 2000, false));
	mon_say(&x, "{\"return\": {}}\n");
	CHECK(x.failed && strstr(x.e.msg, "while kin waited for its QMP greeting"));

	/* A hang-up: an error before the command, done after it when the
	 * command ends the VMM (a shutdown). */
	CHECK(mon_talk(&x, 2000, false));
	close(x.fd), x.fd = -1;
	for (int i = 0; i < 5 && !x.dones; i++)
		ev_run_once(x.loop, 20);
	CHECK(x.failed && x.e.errnum == -ECONNRESET);
	CHECK(mon_talk(&x, 2000, true));
	mon_say(&x, greeting);
	mon_say(&x, "{\"return\": {}}\n");
	close(x.fd), x.fd = -1;
	for (int i = 0; i < 5 && !x.dones; i++)
		ev_run_once(x.loop, 20);
	CHECK_EQ(x.dones, 1);
	CHECK(!x.failed);

	/* Silence: the deadline ends it. */
	CHECK(mon_talk(&x, 200, false));
	for (int i = 0; i < 20 && !x.dones; i++)
		ev_run_once(x.loop, 50);
	CHECK(x.failed && x.e.errnum == -ETIMEDOUT);
	CHECK(strstr(x.e.msg, "did not answer in 200 ms") != NULL);

	/* An endless line: refused once over the bound, kin's memory bounded. */
	CHECK(mon_talk(&x, 5000, false));
	char chunk[8192];
	memset(chunk, ' ', sizeof(chunk));
	for (int i = 0; i < 12 && !x.dones; i++) {
		(void)!send(x.fd, chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
		for (int k = 0; k < 3; k++)
			ev_run_once(x.loop, 10);
	}
	CHECK(x.failed && x.e.errnum == -EMSGSIZE);

	/* Cancelled: the owner is not told. */
	struct vm_monitor_talk *t = mon_talk(&x, 2000, false);
	CHECK(t);
	vm_qmp_talk_cancel(t);
	(void)!send(x.fd, greeting, strlen(greeting), MSG_NOSIGNAL);
	for (int i = 0; i < 3; i++)
		ev_run_once(x.loop, 20);
	CHECK_EQ(x.dones, 0);

	/* No monitor: refused at once, naming the socket. */
	unlink(x.path);
	struct err e = {0};
	const struct vm_monitor_req q = {.loop = x.loop,
	                                 .name = "g",
	                                 .monitor = x.path,
	                                 .timeout_ms = 100,
	                                 .done = on_done,
	                                 .data = &x};
	CHECK(vm_qmp_talk(&q, "pause", "{}", false, &t, &e) < 0);
	CHECK(strstr(e.msg, "cannot connect to the VMM's monitor") != NULL);
	mon_teardown(&x);
}
