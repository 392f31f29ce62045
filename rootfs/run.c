/* run: the builder's helper programs (apt-get, dpkg, depmod, mke2fs,
 * debootstrap, and what runs in a chroot) run to completion, with or without
 * their output kept in a bounded tail,
 * and removal of scratch directories. The builder is an
 * ordinary process (`kin image`), never PID 1, so waiting is fine here. */
#include "rootfs/rootfs-int.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

int rootfs_run(const char *const argv[], const char *const env_extra[], const char *cwd, int out_fd)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		if (out_fd >= 0)
			dup2(out_fd, STDOUT_FILENO);
		if (cwd && chdir(cwd) < 0) {
			fprintf(stderr, "kin image: %s: %s\n", cwd, strerror(errno));
			_exit(127);
		}
		for (size_t i = 0; env_extra && env_extra[i]; i++)
			putenv((char *)env_extra[i]);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "kin image: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

static _Noreturn void capture_child(const char *const argv[], const struct rootfs_run_opts *o,
                                    int out)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Its own process group: a deadline kills dpkg and maintainer
	 * scripts too, not only apt-get. */
	setpgid(0, 0);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null >= 0)
		dup2(null, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	dup2(out, STDERR_FILENO);
	const char *cwd = o->cwd ? o->cwd : o->root ? "/" : NULL;
	if (o->root && chroot(o->root) < 0) {
		fprintf(stderr, "chroot %s: %s\n", o->root, strerror(errno));
		_exit(127);
	}
	if (cwd && chdir(cwd) < 0) {
		fprintf(stderr, "%s: %s\n", cwd, strerror(errno));
		_exit(127);
	}
	if (o->env)
		execvpe(argv[0], (char *const *)argv, (char *const *)o->env);
	else
		execvp(argv[0], (char *const *)argv);
	fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Keeps the newest bytes: when full, the older half goes. */
static void tail_add(struct rootfs_run_tail *t, const char *b, size_t n)
{
	if (n >= ROOTFS_RUN_TAIL) {
		b += n - ROOTFS_RUN_TAIL / 2;
		n = ROOTFS_RUN_TAIL / 2;
	}
	if (t->len + n > ROOTFS_RUN_TAIL) {
		size_t drop = t->len + n - ROOTFS_RUN_TAIL / 2;
		drop = drop > t->len ? t->len : drop;
		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
	}
	memcpy(t->buf + t->len, b, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

static int status_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int rootfs_run_capture(const char *const argv[], const struct rootfs_run_opts *o,
                       struct rootfs_run_tail *tail)
{
	static const struct rootfs_run_opts none;
	int p[2], status;
	o = o ? o : &none;
	tail->len = 0;
	tail->buf[0] = '\0';
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid == 0)
		capture_child(argv, o, p[1]);
	close(p[1]);
	_cleanup_close_ int in = p[0];
	uint64_t deadline = o->timeout_ms ? now_monotonic_ns() + o->timeout_ms * 1000000ull : 0;
	bool open_end = true;
	for (;;) {
		/* Once the helper is gone, what is still buffered is read and
		 * no more: a daemon it left behind may hold the pipe open. */
		pid_t w = waitpid(pid, &status, WNOHANG);
		bool gone = w == pid;
		struct pollfd pfd = {in, POLLIN, 0};
		while (open_end && poll(&pfd, 1, gone ? 0 : 200) > 0) {
			char chunk[4096];
			ssize_t n = read(in, chunk, sizeof(chunk));
			if (n <= 0) {
				open_end = n < 0 && errno == EINTR;
				break;
			}
			tail_add(tail, chunk, (size_t)n);
			if (!gone)
				break;
		}
		if (gone)
			return status_code(status);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (!open_end)
			usleep(20000);
		if (deadline && now_monotonic_ns() > deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
	}
}

/* Appends line (len bytes) to out, "; " between lines. */
static void line_join(char *out, size_t size, const char *line, size_t len)
{
	size_t have = strlen(out);
	if (have && have + 2 < size) {
		memcpy(out + have, "; ", 3);
		have += 2;
	}
	if (have + 1 < size) {
		size_t n = len < size - have - 1 ? len : size - have - 1;
		memcpy(out + have, line, n);
		out[have + n] = '\0';
	}
}

int rootfs_run_fail(struct err *d, const char *what, int status, const struct rootfs_run_tail *tail)
{
	char said[320] = "", *last[2] = {NULL, NULL};
	size_t last_len[2] = {0, 0};
	char buf[ROOTFS_RUN_TAIL + 1];
	memcpy(buf, tail->buf, tail->len);
	buf[tail->len] = '\0';
	for (char *l = buf, *end; *l; l = *end ? end + 1 : end) {
		end = l + strcspn(l, "\n\r");
		size_t len = (size_t)(end - l);
		if (len == 0)
			continue;
		if (str_startswith(l, "E: "))
			line_join(said, sizeof(said), l, len);
		last[0] = last[1];
		last_len[0] = last_len[1];
		last[1] = l;
		last_len[1] = len;
	}
	for (int i = 0; !said[0] && i < 2; i++)
		if (last[i])
			line_join(said, sizeof(said), last[i], last_len[i]);
	if (status == -ETIMEDOUT)
		return err_set_errno(d, status, "%s took too long and was killed: %s", what,
		                     said[0] ? said : "no output");
	if (status < 0)
		return err_set_errno(d, status, "%s: %s", what, strerror(-status));
	return err_set_errno(d, -EIO, "%s failed (exit status %d): %s", what, status,
	                     said[0] ? said : "no output");
}
