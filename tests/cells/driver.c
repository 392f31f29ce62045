/* cells-driver: runs a script of cell operations against the real cells/
 * library inside its own ev_loop, for tests/ns/cells.test.sh (there is no RPC
 * yet). One command per line on stdin, words split like a shell (quotes,
 * backslash); every command prints "ok ...", or "error CODE: sentence".
 *
 *   cells-driver [--base REL] [--own-leaf]      (REL: cgroup under the mount)
 *
 * Commands: create PATH [key=value...] | update PATH key=value... | list [PATH]
 *   | show PATH | delete PATH [force] | freeze PATH | thaw PATH | kill PATH
 *   | start CELL NAME [opt=value...] -- ARGV... | wait CELL NAME | stop CELL NAME MS
 *   | signal CELL NAME SIGNUM | status CELL NAME | log CELL NAME [stderr]
 *   | until-log CELL NAME TEXT [MS] | follow CELL NAME | stdin CELL NAME TEXT
 *   | stdin-close CELL NAME | execs [CELL] | forget CELL NAME | pid CELL NAME
 *   | run MS | events | sh COMMAND | dir [PATH]
 *   | reexec   (cells_save, the driver exec'd again, cells_restore: a re-exec
 *              of kin's, the executables kept running; stdin is read unbuffered
 *              so the script goes on where it was)
 * start options: ns=pid,mnt,net,uts,ipc,user,cgroup hostname= root= ro caps=
 *   ambient= seccomp=default|none|FILE uid= gid= groups=1,2 env=K=V cwd= nnp
 *   restart=no|on-failure|always backoff=BASE_MS:CAP_MS stdin log=BYTES
 *   rlimit=NAME=SOFT[:HARD] umask=OCTAL passfd=PATH (opened for reading,
 *   passed as fd 3, 4, ...; the driver closes its own once started) */
#include "cells/cells.h"
#include "lib/state.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define WORDS_MAX 128

static struct ev_loop *loop;
static struct cells *cells;
static char **self_argv;
static int pass[8];
static char events_text[65536];
static size_t events_len;
static bool op_done;
static int op_result;
static struct err op_err;

static void on_event(const struct cells_event *ev, void *data)
{
	(void)data;
	int n = snprintf(events_text + events_len, sizeof(events_text) - events_len,
	                 "event %s cell=%s%s%s pid=%d code=%d signal=%d count=%llu\n",
	                 cells_event_name(ev->type), ev->cell, ev->exec ? " exec=" : "",
	                 ev->exec ? ev->exec : "", (int)ev->pid, ev->exit_code, ev->signal,
	                 (unsigned long long)ev->count);
	if (n > 0 && events_len + (size_t)n < sizeof(events_text))
		events_len += (size_t)n;
}
static const struct cells_listener_ops listener_ops = {.event = on_event};

static void print_err(const struct err *err)
{
	printf("error %s: %s\n", err_code_name(err->code), err->msg);
}

static void on_done(int result, const struct err *err, void *data)
{
	(void)data;
	op_done = true;
	op_result = result;
	if (err)
		op_err = *err;
}

static void on_exec_done(int result, const struct exec_status *st, void *data)
{
	(void)data;
	(void)st;
	op_done = true;
	op_result = result;
}

static void run_until(bool *flag, int max_ms)
{
	uint64_t end = now_monotonic_ns() + (uint64_t)max_ms * 1000000;
	while (!*flag && now_monotonic_ns() < end)
		ev_run_once(loop, 50);
}

/* Completes a call that may be pending (returned 1). */
static void finish(const char *what, int r, struct err *err)
{
	if (r == 1) {
		run_until(&op_done, 20000);
		if (!op_done) {
			printf("error TIMEOUT: %s never completed\n", what);
			return;
		}
		if (op_result < 0) {
			print_err(&op_err);
			return;
		}
		printf("ok %s (waited)\n", what);
		return;
	}
	if (r < 0)
		print_err(err);
	else
		printf("ok %s\n", what);
}

static int split_words(char *line, char **w)
{
	int n = 0;
	char *out = line;
	for (char *p = line; *p;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (n == WORDS_MAX)
			return -1;
		w[n++] = out;
		char q = 0;
		for (; *p && (q || (*p != ' ' && *p != '\t')); p++) {
			if (q && *p == q)
				q = 0;
			else if (!q && (*p == '\'' || *p == '"'))
				q = *p;
			else if (*p == '\\' && p[1] && q != '\'')
				*out++ = *++p;
			else
				*out++ = *p;
		}
		if (*p)
			p++;
		*out++ = '\0';
	}
	return n;
}

static int print_cell(const struct cell_info *i, void *data)
{
	(void)data;
	printf("cell %s depth=%u populated=%d frozen=%d nexec=%zu controllers=%#x\n", i->path,
	       i->depth, i->populated, i->frozen, i->nexec, i->controllers);
	return 0;
}

static int print_exec(const struct exec_status *st, void *data)
{
	(void)data;
	printf("exec %s/%s state=%s pid=%d exited=%d code=%d signal=%d restarts=%u\n", st->cell,
	       st->name, exec_state_name(st->state), (int)st->pid, st->exited, st->exit_code,
	       st->signal, st->restarts);
	return 0;
}

static int parse_limits(char **w, int n, struct cell_limits *l, struct err *err)
{
	for (int i = 0; i < n; i++) {
		char *eq = strchr(w[i], '=');
		if (!eq) {
			snprintf(err->msg, sizeof(err->msg), "expected key=value: %s", w[i]);
			err->code = ERR_INVALID_ARGUMENT;
			return -EINVAL;
		}
		*eq = '\0';
		int r = cell_limit_parse(l, w[i], eq + 1, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_start(char **w, int n, struct exec_spec *s, char **env, int *ret_argc,
                       struct err *err)
{
	int nenv = 0, i;
	uint64_t v;
	for (i = 0; i < n && strcmp(w[i], "--") != 0; i++) {
		char *k = w[i], *val = strchr(k, '=');
		int r = 0;
		if (val)
			*val++ = '\0';
		if (!strcmp(k, "ns"))
			r = exec_ns_parse(val, &s->namespaces, err);
		else if (!strcmp(k, "hostname"))
			s->hostname = val;
		else if (!strcmp(k, "root"))
			s->root = val;
		else if (!strcmp(k, "ro"))
			s->root_readonly = true;
		else if (!strcmp(k, "caps"))
			r = exec_caps_parse(val, &s->caps, err);
		else if (!strcmp(k, "ambient"))
			r = exec_caps_parse(val, &s->ambient, err);
		else if (!strcmp(k, "seccomp")) {
			if (!strcmp(val, "default"))
				s->seccomp = EXEC_SECCOMP_DEFAULT;
			else if (!strcmp(val, "none"))
				s->seccomp = EXEC_SECCOMP_NONE;
			else {
				s->seccomp = EXEC_SECCOMP_FILE;
				s->seccomp_file = val;
			}
		} else if (!strcmp(k, "uid") && str_to_u64(val, UINT32_MAX, &v) == 0)
			s->uid = (uint32_t)v;
		else if (!strcmp(k, "gid") && str_to_u64(val, UINT32_MAX, &v) == 0)
			s->gid = (uint32_t)v;
		else if (!strcmp(k, "groups")) {
			for (char *save = NULL, *g = strtok_r(val, ",", &save); g;
			     g = strtok_r(NULL, ",", &save))
				if (s->ngroups < EXEC_GROUPS_MAX &&
				    str_to_u64(g, UINT32_MAX, &v) == 0)
					s->groups[s->ngroups++] = (uint32_t)v;
		} else if (!strcmp(k, "env") && nenv < 64)
			env[nenv++] = val;
		else if (!strcmp(k, "cwd"))
			s->cwd = val;
		else if (!strcmp(k, "nnp"))
			s->no_new_privs = true;
		else if (!strcmp(k, "stdin"))
			s->stdin_pipe = true;
		else if (!strcmp(k, "log") && str_to_u64(val, UINT64_MAX, &v) == 0)
			s->log_bytes = v;
		else if (!strcmp(k, "umask"))
			s->umask = (mode_t)strtoul(val, NULL, 8);
		else if (!strcmp(k, "restart"))
			s->restart = !strcmp(val, "always")       ? EXEC_RESTART_ALWAYS
			             : !strcmp(val, "on-failure") ? EXEC_RESTART_ON_FAILURE
			                                          : EXEC_RESTART_NO;
		else if (!strcmp(k, "backoff")) {
			unsigned long long b = 0, c = 0;
			sscanf(val, "%llu:%llu", &b, &c);
			s->backoff_base_ms = b, s->backoff_cap_ms = c;
		} else if (!strcmp(k, "passfd") && s->npass_fds < ARRAY_SIZE(pass)) {
			int fd = open(val, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return err_set(err, -errno, ERR_NOT_FOUND, "passfd %s: %m", val);
			pass[s->npass_fds++] = fd;
			s->pass_fds = pass;
		} else if (!strcmp(k, "rlimit") && s->nrlimits < EXEC_RLIMITS_MAX)
			r = exec_rlimit_parse(val, &s->rlimits[s->nrlimits++], err);
		else {
			snprintf(err->msg, sizeof(err->msg), "unknown start option %s", k);
			err->code = ERR_INVALID_ARGUMENT;
			return -EINVAL;
		}
		if (r < 0)
			return r;
	}
	env[nenv] = NULL;
	s->env = nenv ? env : NULL;
	*ret_argc = i < n ? i + 1 : n;
	return 0;
}

/* What kin's re-exec does with its cells: the state in a sealed memfd
 * named in the environment, the same binary exec'd; returns only when the
 * exec failed. */
static void reexec(void)
{
	struct state_w w;
	struct err err = {0};
	int fd = -1;
	state_w_init(&w);
	int r = cells_save(cells, &w, 1, &err);
	if (r == 0 && (r = state_w_seal(&w, &fd)) == 0) {
		char num[16];
		snprintf(num, sizeof(num), "%d", fd);
		setenv("CELLS_DRIVER_STATE", num, 1);
		execv("/proc/self/exe", self_argv);
		r = err_set_errno(&err, -errno, "execv: %m");
	}
	state_w_unkeep(&w);
	state_w_free(&w);
	finish("reexec", r, &err);
}

/* The other half: the cells the previous driver handed over. */
static int restore(struct child_table *children, const char *num, struct err *err)
{
	struct state_in in;
	struct state_field f;
	uint32_t fd;
	if (str_to_u32(num, &fd) < 0 || state_in_open((int)fd, &in, NULL) < 0)
		return err_set(err, -EBADMSG, ERR_INTERNAL, "reexec: no state in %s", num);
	struct state_r r = in.top;
	int k = state_next(&r, &f) == 1 ? cells_restore(loop, children, &in, &f, &cells, err)
	                                : err_set(err, -EBADMSG, ERR_INTERNAL, "reexec: no record");
	state_in_close(&in);
	close((int)fd);
	unsetenv("CELLS_DRIVER_STATE");
	if (k == 0)
		printf("ok reexec\n");
	return k;
}

static void print_log(const char *cell, const char *name, enum exec_stream st)
{
	char buf[65536];
	uint64_t pos = 0, dropped = 0;
	size_t len = 0;
	struct err err;
	int r =
	    exec_log_read(cells, cell, name, st, &pos, buf, sizeof(buf) - 1, &len, &dropped, &err);
	if (r < 0) {
		print_err(&err);
		return;
	}
	buf[len] = '\0';
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		printf("log| %s\n", l);
	printf("ok log %zu bytes, %llu dropped, end %llu\n", len, (unsigned long long)dropped,
	       (unsigned long long)pos);
}

static bool log_contains(const char *cell, const char *name, const char *text)
{
	static char buf[EXEC_LOG_DEFAULT + 1];
	uint64_t pos = 0;
	size_t len = 0;
	if (exec_log_read(cells, cell, name, EXEC_STDOUT, &pos, buf, sizeof(buf) - 1, &len, NULL,
	                  NULL) < 0)
		return false;
	buf[len] = '\0';
	return strstr(buf, text) != NULL;
}

static void follow_data(enum exec_stream s, const void *buf, size_t len, void *data)
{
	(void)data;
	printf("follow|%s| %.*s%s", s == EXEC_STDOUT ? "out" : "err", (int)len, (const char *)buf,
	       len && ((const char *)buf)[len - 1] == '\n' ? "" : "\n");
}
static void follow_end(void *data)
{
	(void)data;
	printf("follow end\n");
}
static const struct exec_log_ops follow_ops = {.data = follow_data, .end = follow_end};

static void command(char **w, int n)
{
	struct err err = {0};
	struct cell_limits lim = {0};
	const char *cmd = w[0];
	int r;
	op_done = false;
	memset(&op_err, 0, sizeof(op_err));

	if (!strcmp(cmd, "create") && n >= 2) {
		r = parse_limits(w + 2, n - 2, &lim, &err);
		if (r == 0)
			r = cell_create(cells, w[1], &lim, &err);
		finish("create", r, &err);
	} else if (!strcmp(cmd, "update") && n >= 2) {
		r = parse_limits(w + 2, n - 2, &lim, &err);
		if (r == 0)
			r = cell_update(cells, w[1], &lim, &err);
		finish("update", r, &err);
	} else if (!strcmp(cmd, "list")) {
		r = cell_list(cells, n > 1 ? w[1] : NULL, print_cell, NULL, &err);
		finish("list", r, &err);
	} else if (!strcmp(cmd, "show") && n == 2) {
		struct cell_info info;
		struct cell_stats st;
		r = cell_show(cells, w[1], &info, &st, &err);
		if (r == 0)
			printf("show %s procs=%llu cpu=%d usage_us=%llu memory=%d pids=%d "
			       "psi_cpu=%d psi_memory=%d populated=%d frozen=%d\n",
			       info.path, (unsigned long long)st.procs, st.has_cpu,
			       (unsigned long long)st.cpu_usage_us, st.has_memory, st.has_pids,
			       st.psi_cpu.present, st.psi_memory.present, info.populated,
			       info.frozen);
		finish("show", r, &err);
	} else if (!strcmp(cmd, "delete") && n >= 2) {
		r = cell_delete(cells, w[1], n > 2 && !strcmp(w[2], "force"), on_done, NULL, &err);
		finish("delete", r, &err);
	} else if ((!strcmp(cmd, "freeze") || !strcmp(cmd, "thaw")) && n == 2) {
		r = cell_freeze(cells, w[1], cmd[0] == 'f', on_done, NULL, &err);
		finish(cmd, r, &err);
	} else if (!strcmp(cmd, "kill") && n == 2) {
		finish("kill", cell_kill(cells, w[1], &err), &err);
	} else if (!strcmp(cmd, "start") && n >= 3) {
		struct exec_spec spec;
		char *env[65];
		int argi = 0;
		exec_spec_init(&spec);
		r = parse_start(w + 3, n - 3, &spec, env, &argi, &err);
		if (r == 0) {
			w[n] = NULL;
			spec.argv = w + 3 + argi;
			r = exec_start(cells, w[1], w[2], &spec, on_done, NULL, &err);
		}
		for (size_t i = 0; i < spec.npass_fds; i++)
			close(pass[i]);
		if (r == 1) { /* answered from the loop: the child exec'd or failed */
			run_until(&op_done, 20000);
			r = !op_done ? -ETIMEDOUT : op_result;
			if (!op_done)
				err = (struct err){.code = ERR_DEADLINE_EXCEEDED,
				                   .msg = "start never completed"};
			else if (r < 0)
				err = op_err;
		}
		finish("start", r, &err);
	} else if (!strcmp(cmd, "wait") && n == 3) {
		struct exec_status st;
		r = exec_wait(cells, w[1], w[2], on_exec_done, NULL, &st, &err);
		if (r == 1)
			run_until(&op_done, 20000);
		if (r >= 0 && exec_status(cells, w[1], w[2], &st, &err) == 0)
			printf("ok wait %s/%s: %s %d\n", w[1], w[2], st.signal ? "signal" : "exit",
			       st.signal ? st.signal : st.exit_code);
		else
			print_err(&err);
	} else if (!strcmp(cmd, "stop") && n == 4) {
		r = exec_stop(cells, w[1], w[2], strtoull(w[3], NULL, 10), on_exec_done, NULL,
		              &err);
		finish("stop", r, &err);
	} else if (!strcmp(cmd, "signal") && n == 4) {
		finish("signal", exec_signal(cells, w[1], w[2], atoi(w[3]), &err), &err);
	} else if (!strcmp(cmd, "status") && n == 3) {
		struct exec_status st;
		r = exec_status(cells, w[1], w[2], &st, &err);
		if (r == 0)
			print_exec(&st, NULL);
		finish("status", r, &err);
	} else if (!strcmp(cmd, "execs")) {
		finish("execs", exec_list(cells, n > 1 ? w[1] : NULL, print_exec, NULL, &err),
		       &err);
	} else if (!strcmp(cmd, "forget") && n == 3) {
		finish("forget", exec_delete(cells, w[1], w[2], &err), &err);
	} else if (!strcmp(cmd, "log") && n >= 3) {
		print_log(w[1], w[2], n > 3 && !strcmp(w[3], "stderr") ? EXEC_STDERR : EXEC_STDOUT);
	} else if (!strcmp(cmd, "until-log") && n >= 4) {
		uint64_t end =
		    now_monotonic_ns() + (n > 4 ? strtoull(w[4], NULL, 10) : 10000) * 1000000;
		bool found;
		while (!(found = log_contains(w[1], w[2], w[3])) && now_monotonic_ns() < end)
			ev_run_once(loop, 20);
		printf(found ? "ok until-log\n" : "error TIMEOUT: \"%s\" not in the log\n", w[3]);
	} else if (!strcmp(cmd, "follow") && n == 3) {
		struct exec_follower *f;
		finish("follow",
		       exec_log_follow(cells, w[1], w[2], &follow_ops, NULL, NULL, &f, &err), &err);
	} else if (!strcmp(cmd, "stdin") && n == 4) {
		ssize_t k = exec_stdin_write(cells, w[1], w[2], w[3], strlen(w[3]), &err);
		finish("stdin", k < 0 ? (int)k : 0, &err);
	} else if (!strcmp(cmd, "stdin-close") && n == 3) {
		finish("stdin-close", exec_stdin_close(cells, w[1], w[2], &err), &err);
	} else if (!strcmp(cmd, "pid") && n == 3) {
		struct exec_status st;
		r = exec_status(cells, w[1], w[2], &st, &err);
		if (r == 0) {
			char pid[16];
			snprintf(pid, sizeof(pid), "%d", (int)st.pid);
			setenv("KIN_PID", pid, 1);
		}
		finish("pid", r, &err);
	} else if (!strcmp(cmd, "dir")) {
		char dir[4096];
		r = cells_cgroup_dir(cells, n > 1 ? w[1] : NULL, dir, sizeof(dir));
		if (r == 0) {
			setenv("KIN_DIR", dir, 1);
			printf("dir %s\n", dir);
		}
		printf(r == 0 ? "ok dir\n" : "error NOT_FOUND: no cell\n");
	} else if (!strcmp(cmd, "run") && n == 2) {
		bool never = false;
		run_until(&never, atoi(w[1]));
		printf("ok run\n");
	} else if (!strcmp(cmd, "events")) {
		fputs(events_text, stdout);
		events_len = 0;
		events_text[0] = '\0';
		printf("ok events\n");
	} else if (!strcmp(cmd, "reexec") && n == 1) {
		reexec();
	} else if (!strcmp(cmd, "sh") && n >= 2) {
		char line[8192] = "";
		for (int i = 1; i < n; i++) {
			strncat(line, w[i], sizeof(line) - strlen(line) - 2);
			strncat(line, " ", sizeof(line) - strlen(line) - 1);
		}
		fflush(stdout);
		r = system(line);
		printf("ok sh exit %d\n", WIFEXITED(r) ? WEXITSTATUS(r) : 128);
	} else {
		printf("error INVALID_ARGUMENT: bad command %s (%d words)\n", cmd, n);
	}
}

int main(int argc, char **argv)
{
	struct cells_config cfg = {0};
	struct child_table *children;
	struct err err;
	char line[8192];

	setvbuf(stdout, NULL, _IOLBF, 0);
	setvbuf(stdin, NULL, _IONBF, 0); /* nothing read ahead is lost in a reexec */
	self_argv = argv;
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--base") && i + 1 < argc)
			cfg.base = argv[++i];
		else if (!strcmp(argv[i], "--own-leaf"))
			cfg.own_leaf = true;
		else {
			fprintf(stderr, "usage: cells-driver [--base REL] [--own-leaf] < script\n");
			return 2;
		}
	}
	if (ev_loop_new(&loop) < 0 || child_table_new(loop, &children) < 0)
		return 1;
	const char *state = getenv("CELLS_DRIVER_STATE");
	if (state ? restore(children, state, &err) < 0
	          : cells_new(loop, children, &cfg, &cells, &err) < 0) {
		print_err(&err);
		return 1;
	}
	cells_listen(cells, &listener_ops, NULL, NULL);
	char dir[4096];
	cells_cgroup_dir(cells, NULL, dir, sizeof(dir));
	setenv("KIN_CELLS", dir, 1);
	while (fgets(line, sizeof(line), stdin)) {
		char *w[WORDS_MAX + 1];
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		printf("> %s\n", line);
		int n = split_words(line, w);
		if (n <= 0) {
			printf("error INVALID_ARGUMENT: cannot split\n");
			continue;
		}
		command(w, n);
	}
	cells_free(cells);
	child_table_free(children);
	ev_loop_free(loop);
	return 0;
}
