/* lib: parsers, files, the event loop and the child table. */
#include "lib/lib.h"
#include "unit.h"

#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

TEST(str_to_u64_strict)
{
	uint64_t v = 0;
	CHECK_EQ(str_to_u64("0", 10, &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(str_to_u64("18446744073709551615", UINT64_MAX, &v), 0);
	CHECK(v == UINT64_MAX);
	CHECK_EQ(str_to_u64("18446744073709551616", UINT64_MAX, &v), -ERANGE);
	CHECK_EQ(str_to_u64("11", 10, &v), -ERANGE);
	CHECK_EQ(str_to_u64("", 10, &v), -EINVAL);
	CHECK_EQ(str_to_u64("-1", 10, &v), -EINVAL);
	CHECK_EQ(str_to_u64(" 1", 10, &v), -EINVAL);
	CHECK_EQ(str_to_u64("1x", 10, &v), -EINVAL);
	CHECK_EQ(str_to_u64(NULL, 10, &v), -EINVAL);
}

TEST(str_to_duration)
{
	uint64_t ms = 0;
	CHECK_EQ(str_to_duration_ms("10", 100000, &ms), 0);
	CHECK_EQ(ms, 10000);
	CHECK_EQ(str_to_duration_ms("1500ms", 100000, &ms), 0);
	CHECK_EQ(ms, 1500);
	CHECK_EQ(str_to_duration_ms("2s", 100000, &ms), 0);
	CHECK_EQ(ms, 2000);
	CHECK_EQ(str_to_duration_ms("1m", 100000, &ms), 0);
	CHECK_EQ(ms, 60000);
	CHECK_EQ(str_to_duration_ms("2m", 100000, &ms), -ERANGE);
	CHECK_EQ(str_to_duration_ms("ms", 100000, &ms), -EINVAL);
	CHECK_EQ(str_to_duration_ms("s", 100000, &ms), -EINVAL);
	CHECK_EQ(str_to_duration_ms("1h", 100000, &ms), -EINVAL);
	CHECK_EQ(str_to_duration_ms("-1s", 100000, &ms), -EINVAL);
	CHECK_EQ(str_to_duration_ms("99999999999999999999999999999s", UINT64_MAX, &ms), -ERANGE);
}

TEST(hostname_rules)
{
	CHECK(str_is_hostname("kin"));
	CHECK(str_is_hostname("pod-1.example"));
	CHECK(str_is_hostname("a"));
	CHECK(!str_is_hostname(""));
	CHECK(!str_is_hostname("-a"));
	CHECK(!str_is_hostname("a-"));
	CHECK(!str_is_hostname("a..b"));
	CHECK(!str_is_hostname("a.b."));
	CHECK(!str_is_hostname("a b"));
	CHECK(!str_is_hostname("a/b"));
	CHECK(
	    !str_is_hostname("0123456789012345678901234567890123456789012345678901234567890123x"));
}

TEST(str_copy_truncates)
{
	char buf[4];
	CHECK_EQ(str_copy(buf, sizeof(buf), "abc"), 0);
	CHECK_STR(buf, "abc");
	CHECK_EQ(str_copy(buf, sizeof(buf), "abcd"), -ENAMETOOLONG);
	CHECK_STR(buf, "abc");
}

TEST(file_read_small_bounds)
{
	char path[] = "/tmp/kin-unit-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(write_all(fd, "hello", 5), 0);
	close(fd);
	char *buf = NULL;
	size_t len = 0;
	CHECK_EQ(file_read_small(path, 16, &buf, &len), 0);
	CHECK_EQ(len, 5);
	CHECK_STR(buf, "hello");
	free(buf);
	CHECK_EQ(file_read_small(path, 4, &buf, &len), -EFBIG);
	/* Past the first 4 KiB the buffer grows; the bound still holds. */
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0);
	static char big[10000];
	memset(big, 'x', sizeof(big));
	CHECK_EQ(write_all(fd, big, sizeof(big)), 0);
	close(fd);
	CHECK_EQ(file_read_small(path, 20000, &buf, &len), 0);
	CHECK_EQ(len, 10000);
	CHECK(buf[9999] == 'x' && buf[10000] == '\0');
	free(buf);
	CHECK_EQ(file_read_small(path, 9999, &buf, &len), -EFBIG);
	unlink(path);
	CHECK_EQ(file_read_small(path, 4, &buf, &len), -ENOENT);
}

TEST(log_levels)
{
	enum log_level l;
	CHECK_EQ(log_parse_level("debug", &l), 0);
	CHECK_EQ(l, LOG_DEBUG_);
	CHECK_EQ(log_parse_level("WARN", &l), 0);
	CHECK_EQ(l, LOG_WARN_);
	CHECK_EQ(log_parse_level("3", &l), 0);
	CHECK_EQ(l, LOG_ERR_);
	CHECK_EQ(log_parse_level("8", &l), -EINVAL);
	CHECK_EQ(log_parse_level("loud", &l), -EINVAL);
}

struct loop_probe {
	struct ev_loop *loop;
	struct ev_source *other;
	int calls;
};

static void probe_fn(struct ev_source *src, uint32_t events)
{
	struct loop_probe *p = src->data;
	(void)events;
	p->calls++;
	/* Removing a source that is ready in the same batch must be safe. */
	if (p->other) {
		ev_del(p->loop, p->other);
		p->other = NULL;
	}
}

TEST(loop_delete_during_dispatch)
{
	struct ev_loop *loop;
	int a[2], b[2];
	CHECK_EQ(ev_loop_new(&loop), 0);
	CHECK_EQ(pipe(a), 0);
	CHECK_EQ(pipe(b), 0);
	struct loop_probe p = {.loop = loop};
	struct ev_source sa = {.fd = a[0], .fn = probe_fn, .data = &p};
	struct ev_source sb = {.fd = b[0], .fn = probe_fn, .data = &p};
	CHECK_EQ(ev_add(loop, &sa, EPOLLIN), 0);
	CHECK_EQ(ev_add(loop, &sb, EPOLLIN), 0);
	CHECK_EQ(write(a[1], "x", 1), 1);
	CHECK_EQ(write(b[1], "x", 1), 1);
	p.other = &sb; /* whichever runs first removes sb */
	struct ev_source *first_removes = &sb;
	(void)first_removes;
	CHECK_EQ(ev_run_once(loop, 1000), 2);
	/* sa ran (and removed sb), or sb ran first then sa removed sb: either
	 * way exactly one or two calls, never a call on a removed source after
	 * its removal. With sb removed first, only sa is called. */
	CHECK(p.calls >= 1 && p.calls <= 2);
	CHECK_EQ(ev_run_once(loop, 0), 1); /* sa still ready; sb gone */
	ev_del(loop, &sa);
	CHECK_EQ(ev_run_once(loop, 0), 0);
	ev_loop_free(loop);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
}

static void count_fn(struct ev_source *src, uint32_t events)
{
	char buf[16];
	(void)events;
	(*(int *)src->data)++;
	(void)!read(src->fd, buf, sizeof(buf));
}

/* Deferred adds: queued, made between turns; ev_mod changes the queued
 * events, ev_del and ev_close take a source out of the queue unmade. */
TEST(loop_deferred_adds)
{
	struct ev_loop *loop;
	int a[2], b[2], c[2], calls = 0;
	CHECK_EQ(ev_loop_new(&loop), 0);
	CHECK_EQ(pipe(a), 0);
	CHECK_EQ(pipe(b), 0);
	CHECK_EQ(pipe(c), 0);
	struct ev_source sa = {.fd = a[0], .fn = count_fn, .data = &calls};
	struct ev_source sb = {.fd = b[0], .fn = count_fn, .data = &calls};
	struct ev_source sc = {.fd = c[0], .fn = count_fn, .data = &calls};
	CHECK_EQ(write(a[1], "x", 1), 1);
	CHECK_EQ(write(b[1], "x", 1), 1);
	CHECK_EQ(write(c[1], "x", 1), 1);
	ev_defer(loop, true);
	CHECK_EQ(ev_add(loop, &sa, 0), 0);
	CHECK_EQ(ev_add(loop, &sa, 0), -EEXIST);
	CHECK_EQ(ev_mod(loop, &sa, EPOLLIN), 0); /* the queued events change */
	CHECK_EQ(ev_add(loop, &sb, EPOLLIN), 0);
	CHECK_EQ(ev_add(loop, &sc, EPOLLIN), 0);
	ev_defer(loop, false);
	CHECK_EQ(ev_del(loop, &sb), 0); /* never added: nothing to remove */
	ev_close(loop, &sc);
	CHECK_EQ(sc.fd, -1);
	/* Nothing was in the epoll set yet: the first turn makes the adds. */
	CHECK_EQ(ev_run_once(loop, 1000), 1);
	CHECK_EQ(calls, 1);
	CHECK_EQ(ev_run_once(loop, 0), 0); /* sa read; sb never watched */
	CHECK_EQ(ev_del(loop, &sa), 0);
	ev_loop_free(loop);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]), close(c[1]);
}

/* A retired epoll set is emptied between turns, then closed; the fds it
 * watched stay open and the loop goes on serving meanwhile. */
TEST(loop_retire_old_set)
{
	struct ev_loop *loop;
	int a[2], calls = 0;
	CHECK_EQ(ev_loop_new(&loop), 0);
	CHECK_EQ(pipe(a), 0);
	int old = epoll_create1(EPOLL_CLOEXEC);
	CHECK(old >= 0);
	struct epoll_event ev = {.events = EPOLLIN};
	CHECK_EQ(epoll_ctl(old, EPOLL_CTL_ADD, a[0], &ev), 0);
	uint64_t bits[2] = {0};
	bits[a[0] / 64] |= 1ull << (a[0] % 64);
	bits[old / 64] |= 1ull << (old % 64); /* itself: skipped */
	CHECK_EQ(ev_retire(loop, old, bits, 128), 0);
	struct ev_source sa = {.fd = a[0], .fn = count_fn, .data = &calls};
	CHECK_EQ(ev_add(loop, &sa, EPOLLIN), 0);
	CHECK_EQ(write(a[1], "x", 1), 1);
	CHECK_EQ(ev_run_once(loop, 1000), 1);
	CHECK_EQ(calls, 1);
	CHECK(fcntl(old, F_GETFD) < 0); /* emptied and closed */
	CHECK(fcntl(a[0], F_GETFD) >= 0);
	int other = epoll_create1(EPOLL_CLOEXEC);
	CHECK_EQ(ev_retire(loop, other, bits, 128), 0);
	int third = epoll_create1(EPOLL_CLOEXEC);
	CHECK_EQ(ev_retire(loop, third, bits, 128), -EBUSY); /* closed at once */
	CHECK(fcntl(third, F_GETFD) < 0);
	CHECK_EQ(ev_del(loop, &sa), 0);
	ev_loop_free(loop); /* closes the one still retiring */
	close(a[0]), close(a[1]);
}

static void on_exit_record(const siginfo_t *si, void *data)
{
	*(int *)data = child_status_code(si);
}

TEST(child_spawn_exit_and_errors)
{
	struct ev_loop *loop;
	struct child_table *t;
	CHECK_EQ(ev_loop_new(&loop), 0);
	CHECK_EQ(child_table_new(loop, &t), 0);
	int status = -1;
	char *ok[] = {"sh", "-c", "exit 7", NULL};
	CHECK_EQ(child_spawn(t, ok, on_exit_record, &status, NULL), 0);
	CHECK_EQ(child_count(t), 1);
	for (int i = 0; i < 100 && status < 0; i++)
		ev_run_once(loop, 100);
	CHECK_EQ(status, 7);
	CHECK_EQ(child_count(t), 0);

	char *missing[] = {"/nonexistent/kin-no-such-binary", NULL};
	CHECK_EQ(child_spawn(t, missing, on_exit_record, &status, NULL), -ENOENT);
	CHECK_EQ(child_count(t), 0);
	char path[] = "/tmp/kin-unit-noexec-XXXXXX";
	int fd = mkstemp(path); /* mode 0600: not executable */
	CHECK(fd >= 0);
	close(fd);
	char *notexec[] = {path, NULL};
	CHECK_EQ(child_spawn(t, notexec, on_exit_record, &status, NULL), -EACCES);
	unlink(path);
	CHECK(child_none_left());

	status = -1;
	struct child *c;
	char *sleeper[] = {"sleep", "100", NULL};
	CHECK_EQ(child_spawn(t, sleeper, on_exit_record, &status, &c), 0);
	CHECK_EQ(child_signal(c, SIGKILL), 0);
	for (int i = 0; i < 500 && status < 0; i++) {
		child_reap(t); /* the SIGCHLD path reaps tracked children too */
		usleep(10000);
	}
	CHECK_EQ(status, 128 + SIGKILL);
	child_table_free(t);
	ev_loop_free(loop);
}

static void on_exit_known(const siginfo_t *si, void *data)
{
	*(int *)data = child_status_known(si) ? 1 : 0;
}

/* A process that is not our child (a killed kin's, adopted): its end is
 * seen through the pidfd, its status is not; an untracked spawn is not
 * counted. */
TEST(child_watch_sees_an_end_without_status)
{
	struct ev_loop *loop;
	struct child_table *t;
	CHECK_EQ(ev_loop_new(&loop), 0);
	CHECK_EQ(child_table_new(loop, &t), 0);
	int p[2], q[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(pipe(q), 0);
	pid_t mid = fork();
	if (mid == 0) { /* the grandchild outlives its parent: not ours */
		pid_t g = fork();
		if (g == 0) {
			char buf;
			close(p[1]);
			_exit(read(p[0], &buf, 1) < 0 ? 1 : 0);
		}
		_exit(write(q[1], &g, sizeof(g)) == sizeof(g) ? 0 : 1);
	}
	CHECK(mid > 0);
	CHECK_EQ(waitpid(mid, NULL, 0), mid);
	close(p[0]);
	close(q[1]);
	pid_t gc = -1;
	CHECK_EQ(read(q[0], &gc, sizeof(gc)), (ssize_t)sizeof(gc));
	close(q[0]);
	CHECK(gc > 0);
	int pidfd = (int)syscall(SYS_pidfd_open, gc, 0);
	CHECK(pidfd >= 0);
	CHECK_EQ(child_adopt(t, gc, on_exit_known, NULL, NULL), -ECHILD);
	int known = -1;
	CHECK_EQ(child_watch(t, gc, pidfd, on_exit_known, &known, NULL), 0);
	CHECK_EQ(child_count(t), 1);
	ev_run_once(loop, 0);
	CHECK_EQ(known, -1); /* still running */
	close(p[1]);         /* it reads EOF and exits */
	for (int i = 0; i < 100 && known < 0; i++)
		ev_run_once(loop, 100);
	CHECK_EQ(known, 0);
	CHECK_EQ(child_count(t), 0);

	int status = -1;
	char *quick[] = {"true", NULL};
	CHECK_EQ(child_spawn(NULL, quick, on_exit_record, &status, NULL), 0);
	CHECK_EQ(child_count(t), 0);
	for (int i = 0; i < 100 && !child_reap(t); i++)
		usleep(10000);
	CHECK(child_none_left());
	child_table_free(t);
	ev_loop_free(loop);
}

static int call_look(void *arg, struct err *err)
{
	const char *path = arg;
	if (access(path, F_OK) < 0)
		return err_set_errno(err, -errno, "look at %s: %m", path);
	return 1;
}

static int call_hang(void *arg, struct err *err)
{
	(void)arg, (void)err;
	for (;;)
		pause();
	return 0;
}

struct call_seen {
	int result, calls;
	struct err err;
};

static void call_done(int result, const struct err *err, void *data)
{
	struct call_seen *s = data;
	s->result = result;
	s->calls++;
	if (err)
		s->err = *err;
}

/* A step run in a child answers from the loop; one that hangs is given up
 * at its deadline and killed; a cancelled one is never answered. No child
 * is left either way. */
TEST(child_call_answers_gives_up_and_cancels)
{
	struct ev_loop *loop;
	struct child_table *t;
	CHECK_EQ(ev_loop_new(&loop), 0);
	CHECK_EQ(child_table_new(loop, &t), 0);

	struct call_seen ok = {0}, missing = {0}, hung = {0}, gone = {0};
	CHECK_EQ(child_call(t, call_look, (void *)"/", 2000, "look", call_done, &ok, NULL), 0);
	CHECK_EQ(ok.calls, 0); /* never from inside child_call */
	CHECK_EQ(child_call(t, call_look, (void *)"/nonexistent/kin", 2000, "look", call_done,
	                    &missing, NULL),
	         0);
	CHECK_EQ(child_call(t, call_hang, NULL, 100, "hang", call_done, &hung, NULL), 0);
	struct child_call *c = NULL;
	CHECK_EQ(child_call(t, call_hang, NULL, 100, "gone", call_done, &gone, &c), 0);
	child_call_cancel(c);
	for (int i = 0; i < 200 && (child_count(t) || !ok.calls || !missing.calls || !hung.calls);
	     i++)
		ev_run_once(loop, 20);
	CHECK_EQ(ok.calls, 1);
	CHECK_EQ(ok.result, 1);
	CHECK_EQ(missing.calls, 1);
	CHECK_EQ(missing.result, -ENOENT);
	CHECK_STR(missing.err.msg, "look at /nonexistent/kin: No such file or directory");
	CHECK_EQ(hung.calls, 1);
	CHECK_EQ(hung.result, -ETIMEDOUT);
	CHECK_EQ(hung.err.code, ERR_DEADLINE_EXCEEDED);
	CHECK_STR(hung.err.msg, "hang: no answer within 100 ms (a hung mount?); given up");
	CHECK_EQ(gone.calls, 0);
	CHECK_EQ(child_count(t), 0);
	CHECK(child_none_left());
	child_table_free(t);
	ev_loop_free(loop);
}

TEST(str_to_size_units)
{
	uint64_t v = 0;
	CHECK_EQ(str_to_size("512M", 1 << 20, UINT64_MAX, &v), 0);
	CHECK(v == 512ull << 20);
	CHECK_EQ(str_to_size("1G", 1 << 20, UINT64_MAX, &v), 0);
	CHECK(v == 1ull << 30);
	CHECK_EQ(str_to_size("2048", 1 << 20, UINT64_MAX, &v), 0);
	CHECK(v == 2048ull << 20);
	CHECK_EQ(str_to_size("4096", 1, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 4096);
	CHECK_EQ(str_to_size("1k", 1, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 1024);
	CHECK_EQ(str_to_size("2t", 1, UINT64_MAX, &v), 0);
	CHECK(v == 2ull << 40);
	CHECK_EQ(str_to_size("1G", 1, 1ull << 30, &v), 0);
	CHECK_EQ(str_to_size("1025M", 1, 1ull << 30, &v), -ERANGE);
	CHECK_EQ(str_to_size("99999999999999999999", 1, UINT64_MAX, &v), -ERANGE);
	CHECK_EQ(str_to_size("17179869184G", 1, UINT64_MAX, &v), -ERANGE);
	CHECK_EQ(str_to_size("", 1, UINT64_MAX, &v), -EINVAL);
	CHECK_EQ(str_to_size("M", 1, UINT64_MAX, &v), -EINVAL);
	CHECK_EQ(str_to_size("1.5G", 1, UINT64_MAX, &v), -EINVAL);
	CHECK_EQ(str_to_size("1MB", 1, UINT64_MAX, &v), -EINVAL);
	CHECK_EQ(str_to_size("-1", 1, UINT64_MAX, &v), -EINVAL);
	CHECK_EQ(str_to_size("1P", 1, UINT64_MAX, &v), -EINVAL);
	CHECK_EQ(str_to_size(NULL, 1, UINT64_MAX, &v), -EINVAL);
}

TEST(err_type)
{
	struct err e;
	CHECK_EQ(err_set(&e, -ENOENT, ERR_NOT_FOUND, "cell \"%s\" does not exist", "web"), -ENOENT);
	CHECK_EQ(e.code, ERR_NOT_FOUND);
	CHECK_EQ(e.errnum, -ENOENT);
	CHECK_STR(e.msg, "cell \"web\" does not exist");
	CHECK_EQ(err_set_errno(&e, -EBUSY, "busy"), -EBUSY);
	CHECK_EQ(e.code, ERR_FAILED_PRECONDITION);
	CHECK_EQ(err_set_errno(NULL, -EPERM, "nobody keeps this"), -EPERM);
	err_clear(&e);
	CHECK_EQ(e.code, ERR_OK);
	CHECK_STR(e.msg, "");
	CHECK_STR(err_code_name(ERR_UNAUTHENTICATED), "UNAUTHENTICATED");
	CHECK_STR(err_code_name(99), "CODE_99");
	CHECK_EQ(err_code_from_errno(-EOPNOTSUPP), ERR_UNIMPLEMENTED);
	CHECK_EQ(err_code_from_errno(-ENOEXEC), ERR_FAILED_PRECONDITION);
	CHECK_EQ(err_code_from_errno(EIO), ERR_INTERNAL);
}

struct item {
	int v;
	struct list_node node;
};

TEST(list_intrusive)
{
	struct list_node head = LIST_HEAD_INIT(head);
	struct item a = {.v = 1}, b = {.v = 2}, c = {.v = 3};
	CHECK(list_is_empty(&head));
	CHECK(list_first_entry(&head, struct item, node) == NULL);
	list_append(&head, &a.node);
	list_append(&head, &b.node);
	list_push(&head, &c.node); /* c a b */
	CHECK_EQ(list_count(&head), 3);
	struct item *it, *tmp;
	int sum = 0, first = 0;
	list_for_each(it, &head, node) {
		if (!first)
			first = it->v;
		sum = sum * 10 + it->v;
	}
	CHECK_EQ(first, 3);
	CHECK_EQ(sum, 312);
	list_for_each_safe(it, tmp, &head, node) {
		if (it->v == 1)
			list_remove(&it->node);
	}
	CHECK(!list_is_linked(&a.node));
	CHECK(list_is_linked(&b.node));
	list_remove(&a.node); /* twice is fine */
	CHECK_EQ(list_count(&head), 2);
	list_remove(&b.node);
	list_remove(&c.node);
	CHECK(list_is_empty(&head));
}

/* ---- lib/buf ---- */

#include <sys/socket.h>

TEST(buf_in_frames)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	size_t total = 0;
	struct buf_in b;
	buf_in_init(&b, 16, 32, 1024, &total);
	CHECK_EQ(buf_in_read(&b, sv[0], true), -EAGAIN); /* nothing yet */
	CHECK_EQ(b.cap, 16);                             /* the first read allocates min */
	CHECK_EQ(total, 16);
	CHECK_EQ(write(sv[1], "abcdefghij", 10), 10);
	CHECK_EQ(buf_in_read(&b, sv[0], true), 10);
	CHECK(buf_in_has(&b, 4));
	CHECK(!buf_in_has(&b, 11));
	CHECK(memcmp(buf_in_peek(&b), "abcd", 4) == 0);
	buf_in_consume(&b, 4);
	CHECK_EQ(buf_in_pending(&b), 6);
	CHECK(memcmp(buf_in_peek(&b), "efgh", 4) == 0);
	/* Room for a frame of 14: the 6 unread move to the front, no growth. */
	CHECK_EQ(buf_in_reserve(&b, 14), 0);
	CHECK_EQ(b.off, 0);
	CHECK_EQ(b.cap, 16);
	CHECK(memcmp(buf_in_peek(&b), "efghij", 6) == 0);
	/* A frame of 100: grown to exactly that, and counted. */
	CHECK_EQ(buf_in_reserve(&b, 100), 0);
	CHECK_EQ(b.cap, 100);
	CHECK_EQ(total, 100);
	CHECK(memcmp(buf_in_peek(&b), "efghij", 6) == 0);
	/* Over the shared budget: refused, nothing changes. */
	total += 900; /* others hold 900 */
	CHECK_EQ(buf_in_reserve(&b, 200), -ENOBUFS);
	CHECK_EQ(b.cap, 100);
	total -= 900;
	/* Consumed and compacted: a buffer over keep is given back. */
	buf_in_consume(&b, 6);
	buf_in_compact(&b);
	CHECK(b.data == NULL);
	CHECK_EQ(b.cap, 0);
	CHECK_EQ(total, 0);
	/* A full buffer reads nothing: its frame waits for its reader. */
	char big[32];
	memset(big, 'x', sizeof(big));
	CHECK_EQ(write(sv[1], big, sizeof(big)), (ssize_t)sizeof(big));
	CHECK_EQ(buf_in_read(&b, sv[0], true), 16);
	CHECK_EQ(buf_in_read(&b, sv[0], true), -EAGAIN);
	buf_in_consume(&b, 16);
	buf_in_compact(&b); /* 16 is not over keep: kept */
	CHECK_EQ(b.cap, 16);
	CHECK_EQ(buf_in_read(&b, sv[0], false), 16); /* read(2) works as well */
	buf_in_consume(&b, 16);
	buf_in_compact(&b);
	close(sv[1]);
	CHECK_EQ(buf_in_read(&b, sv[0], true), 0); /* the end of the stream */
	buf_in_free(&b);
	CHECK_EQ(total, 0);
	close(sv[0]);
}

TEST(buf_in_no_budget)
{
	struct buf_in b;
	buf_in_init(&b, 8, 8, 0, NULL);
	CHECK_EQ(buf_in_reserve(&b, 1 << 20), 0); /* no total: no budget */
	CHECK_EQ(b.cap, 1 << 20);
	buf_in_compact(&b);
	CHECK_EQ(b.cap, 0);
	buf_in_free(&b);
}

TEST(buf_out_queue)
{
	size_t total = 0;
	struct buf_out b;
	uint8_t *p;
	buf_out_init(&b, 10000, 8192, 20000, &total);
	CHECK_EQ(buf_out_append(&b, "hello", 5), 0);
	CHECK_EQ(b.cap, BUF_OUT_MIN);
	CHECK_EQ(total, BUF_OUT_MIN);
	CHECK_EQ(buf_out_pending(&b), 5);
	/* Past max pending bytes: refused whole. */
	CHECK_EQ(buf_out_reserve(&b, 9996, &p), -ENOBUFS);
	CHECK_EQ(buf_out_pending(&b), 5);
	/* Grown by doubling. */
	CHECK_EQ(buf_out_reserve(&b, 9995, &p), 0);
	memset(p, 'y', 9995);
	buf_out_commit(&b, 9995);
	CHECK_EQ(b.cap, 16384);
	CHECK_EQ(total, 16384);
	buf_out_free(&b);
	CHECK_EQ(total, 0);
	/* Past the shared budget, only above keep. */
	total = 15000;
	CHECK_EQ(buf_out_reserve(&b, 4096, &p), 0);        /* 4096: not over keep */
	CHECK_EQ(buf_out_reserve(&b, 8193, &p), -ENOBUFS); /* would grow to 16384 */
	CHECK_EQ(b.cap, BUF_OUT_MIN);
	total -= 15000;
	buf_out_free(&b);
	CHECK_EQ(total, 0);
}

TEST(buf_out_flush)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	int small = 4096;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	size_t total = 0;
	struct buf_out b;
	buf_out_init(&b, 1 << 20, 4096, 1 << 30, &total);
	static uint8_t data[512 * 1024];
	memset(data, 'z', sizeof(data));
	CHECK_EQ(buf_out_append(&b, data, sizeof(data)), 0);
	/* More than the socket takes: written in part, the rest pending. */
	CHECK_EQ(buf_out_flush(&b, sv[0], true), -EAGAIN);
	size_t left = buf_out_pending(&b);
	CHECK(left > 0 && left < sizeof(data));
	CHECK(b.off > 0);
	/* Appending moves the pending bytes to the front when it needs room. */
	size_t cap = b.cap;
	CHECK_EQ(buf_out_append(&b, data, cap - b.len + 1), 0);
	CHECK_EQ(b.off, 0);
	CHECK_EQ(b.cap, cap);
	/* Drained by the reader: the rest goes, the big queue is freed. */
	static uint8_t sink[64 * 1024];
	int r;
	while ((r = buf_out_flush(&b, sv[0], true)) == -EAGAIN)
		while (read(sv[1], sink, sizeof(sink)) > 0)
			;
	CHECK_EQ(r, 0);
	CHECK_EQ(buf_out_pending(&b), 0);
	CHECK(b.data == NULL);
	CHECK_EQ(total, 0);
	/* A peer gone: the error, no SIGPIPE. */
	close(sv[1]);
	CHECK_EQ(buf_out_append(&b, "x", 1), 0);
	CHECK_EQ(buf_out_flush(&b, sv[0], true), -EPIPE);
	CHECK_EQ(buf_out_pending(&b), 1);
	buf_out_free(&b);
	close(sv[0]);
}

/* lib/spawn: the report pipe carries (step, errno); EOF means execve. */
TEST(spawn_report_and_pidfd_shim)
{
	struct spawn_proc p;
	int step = 0;
	siginfo_t si;

	/* A failing setup step: the parent reads the step and the errno. */
	int r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &p);
	CHECK(r >= 0);
	if (r == 0)
		spawn_child_fail(p.report_fd, 5, ENOTDIR);
	CHECK(p.pid > 0 && p.pidfd >= 0 && p.report_fd >= 0);
	CHECK_EQ(spawn_report_read(p.report_fd, &step), -ENOTDIR);
	CHECK_EQ(step, 5);
	CHECK_EQ(spawn_pidfd_wait(p.pidfd, &si, WEXITED), 0);
	CHECK_EQ(si.si_pid, p.pid);
	CHECK_EQ(child_status_code(&si), 127);
	close(p.report_fd), close(p.pidfd);

	/* An errno of 0 still reads as a failure (EIO). */
	r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &p);
	CHECK(r >= 0);
	if (r == 0)
		spawn_child_fail(p.report_fd, 1, 0);
	CHECK_EQ(spawn_report_read(p.report_fd, &step), -EIO);
	CHECK_EQ(step, 1);
	spawn_kill_and_reap(p.pidfd); /* already exited: the kill is a no-op */
	close(p.report_fd), close(p.pidfd);

	/* A successful exec: EOF (the write end is CLOEXEC). */
	r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &p);
	CHECK(r >= 0);
	if (r == 0) {
		spawn_signals_reset(SPAWN_MASK_EMPTY);
		execlp("true", "true", (char *)NULL);
		spawn_child_fail(p.report_fd, 0, errno);
	}
	CHECK_EQ(spawn_report_read(p.report_fd, &step), 1);
	CHECK_EQ(step, -1);
	CHECK_EQ(spawn_pidfd_wait(p.pidfd, &si, WEXITED), 0);
	CHECK_EQ(child_status_code(&si), 0);
	close(p.report_fd), close(p.pidfd);
}

TEST(spawn_nonblocking_report_and_kill)
{
	struct spawn_proc p;
	int step = 0;
	siginfo_t si;

	int r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1, .report_nonblock = true}, &p);
	CHECK(r >= 0);
	if (r == 0) {
		pause();
		_exit(0);
	}
	/* Nothing yet from a child that is still in its setup. */
	CHECK_EQ(spawn_report_read(p.report_fd, &step), 0);
	CHECK_EQ(spawn_pidfd_wait(p.pidfd, &si, WEXITED | WNOHANG), 0);
	CHECK_EQ(si.si_pid, 0);
	CHECK_EQ(spawn_pidfd_signal(p.pidfd, SIGKILL), 0);
	CHECK_EQ(spawn_pidfd_wait(p.pidfd, &si, WEXITED), 0);
	CHECK_EQ(si.si_code, CLD_KILLED);
	CHECK_EQ(child_status_code(&si), 128 + SIGKILL);
	/* The child is gone: EOF, and a reaped pidfd cannot be waited on. */
	CHECK_EQ(spawn_report_read(p.report_fd, &step), 1);
	CHECK(spawn_pidfd_wait(p.pidfd, &si, WEXITED | WNOHANG) < 0);
	close(p.report_fd), close(p.pidfd);

	/* kill-and-reap of a child not yet tracked. */
	r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &p);
	CHECK(r >= 0);
	if (r == 0) {
		pause();
		_exit(0);
	}
	spawn_kill_and_reap(p.pidfd);
	CHECK_EQ(spawn_report_read(p.report_fd, &step), 1);
	close(p.report_fd), close(p.pidfd);
	CHECK(child_none_left());
}

TEST(spawn_signals_reset_masks)
{
	struct spawn_proc p;
	int step = 0;
	for (int mask = SPAWN_MASK_KEEP; mask <= SPAWN_MASK_FULL; mask++) {
		int r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &p);
		CHECK(r >= 0);
		if (r == 0) {
			signal(SIGTERM, SIG_IGN);
			spawn_signals_reset((enum spawn_mask)mask);
			struct sigaction sa;
			sigset_t cur;
			sigaction(SIGTERM, NULL, &sa);
			sigprocmask(SIG_SETMASK, NULL, &cur);
			if (sa.sa_handler != SIG_DFL)
				spawn_child_fail(p.report_fd, 1, EINVAL);
			if (mask == SPAWN_MASK_FULL && !sigismember(&cur, SIGTERM))
				spawn_child_fail(p.report_fd, 2, EINVAL);
			if (mask == SPAWN_MASK_EMPTY && sigismember(&cur, SIGTERM))
				spawn_child_fail(p.report_fd, 3, EINVAL);
			_exit(0);
		}
		CHECK_EQ(spawn_report_read(p.report_fd, &step), 1);
		spawn_kill_and_reap(p.pidfd);
		close(p.report_fd), close(p.pidfd);
	}
}

/* The running binary's copy made by a "child" (here: the same process):
 * one not filled is not kept; one filled is checked, sealed and shared. */
TEST(self_copy_by_a_child)
{
	struct self_copy_job j;
	int fd = -1, again = -1;
	struct file_id id;
	CHECK_EQ(self_copy_begin(&j), 1);
	CHECK_EQ(self_copy_end(&j), -EIO); /* never filled */
	CHECK_EQ(j.memfd, -1);
	CHECK_EQ(self_copy_begin(&j), 1);
	CHECK_EQ(self_copy_fill(&j), 0);
	int mfd = j.memfd;
	CHECK_EQ(self_copy_end(&j), 0);
	CHECK_EQ(self_copy(&fd, &id), 0);
	CHECK_EQ(fd, mfd);
	struct stat st;
	CHECK_EQ(stat("/proc/self/exe", &st), 0);
	CHECK_EQ(id.size, (uint64_t)st.st_size);
	CHECK_EQ(id.ino, (uint64_t)st.st_ino);
	CHECK(fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE);
	CHECK_EQ(self_copy_begin(&j), 0); /* there is one */
	CHECK_EQ(self_copy(&again, NULL), 0);
	CHECK_EQ(again, fd);
	CHECK(!self_copy_take(fd, &id)); /* one already */
}

/* Every pty master opened through /dev/ptmx has that node's inode: fd_ino
 * tells them apart by the pty's number (the keeper and an adoption find
 * a terminal's master by it); a pipe keeps its inode. */
TEST(fd_ino_pty_masters)
{
	int a = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	int b = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	int p[2] = {-1, -1};
	if (a < 0 || b < 0) {
		printf("    (no /dev/ptmx here: %s)\n", strerror(errno));
		CHECK(errno == ENOENT || errno == EACCES);
	} else {
		struct stat sa, sb;
		CHECK(fstat(a, &sa) == 0 && fstat(b, &sb) == 0);
		CHECK(fd_is_pty_master(a) && fd_is_pty_master(b));
		CHECK((fd_ino(a) & FD_INO_PTY) == FD_INO_PTY);
		CHECK(fd_ino(a) != fd_ino(b));
		int d = fcntl(a, F_DUPFD_CLOEXEC, 3);
		CHECK_EQ(fd_ino(d), fd_ino(a)); /* the same pty */
		close(d);
	}
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	struct stat sp;
	CHECK(fstat(p[0], &sp) == 0 && fd_ino(p[0]) == (uint64_t)sp.st_ino);
	CHECK(!fd_is_pty_master(p[0]));
	CHECK_EQ(fd_ino(-1), 0);
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	close(p[0]);
	close(p[1]);
}
