/* cli: `kin vm run` — one microVM in the foreground, its console streamed to
 * stdout, Ctrl-C or SIGTERM as a graceful shutdown (then a kill after
 * --stop-timeout). The host kin's RPC service starts VMs through the same
 * manager. */
#include "vm/vm.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

struct run_state {
	struct vm_manager *m;
	const char *name;
	bool exited, stopping, failed;
	int status;
	int console_fd;
	bool stream;
	uint64_t stop_timeout_ms, run_deadline_ns;
	/* from the flags */
	struct vm_spec spec;
	const char *state_dir;
	uint64_t timeout_ms;
};

static void run_usage(FILE *f)
{
	char vm[2048] = "";
	vm_options_help(VM_OPT_FOR_RUN, vm, sizeof(vm)); /* the VM's own: vm/options.c */
	fprintf(f,
	        "usage: kin vm run --kernel FILE --image FILE [OPTIONS] [-- CMD ARGS...]\n"
	        "\n"
	        "Boots one microVM with kin as its PID 1 and streams its console. CMD, if\n"
	        "given, is the guest kin's workload (an absolute path).\n"
	        "\n"
	        "%s"
	        "  --name NAME          VM name (default vm)\n"
	        "  --state-dir DIR      where console.log and sockets go (default /run/kin/vm)\n"
	        "  --quiet              do not stream the console\n"
	        "  --timeout DURATION   shut the VM down after this long\n"
	        "  --stop-timeout DUR   shutdown grace before the VMM is killed (default 30s)\n",
	        vm);
}

static void on_started(void *data, const struct vm_info *info, const struct err *e)
{
	struct run_state *s = data;
	if (!e) {
		fprintf(stderr, "kin vm: \"%s\" started (accel %s, %u cpu, %u MiB), console %s\n",
		        info->name, vm_accel_name(info->accel), info->cpus, info->memory_mb,
		        info->paths.console);
		return;
	}
	fprintf(stderr, "kin vm run: %s\n", e->msg);
	s->exited = s->failed = true;
	s->status = e->errnum == -EINVAL ? 2 : 1;
}

static void on_exited(void *data, const struct vm_info *info)
{
	struct run_state *s = data;
	s->exited = true;
	s->status = info->exit_status;
}

static void pump_console(struct run_state *s)
{
	char buf[4096];
	ssize_t n;
	if (s->console_fd < 0 || !s->stream)
		return;
	while ((n = read(s->console_fd, buf, sizeof(buf))) > 0)
		(void)!write_all(STDOUT_FILENO, buf, (size_t)n);
}

/* The manager's stop (no link here: the monitor, then SIGKILL). */
static void begin_stop(struct run_state *s, const char *why)
{
	struct err e = {0};
	if (s->stopping)
		return;
	s->stopping = true;
	int r = vm_stop(s->m, s->name, s->stop_timeout_ms, &e);
	fprintf(stderr, "kin vm: %s: asking the guest to shut down%s%s\n", why,
	        r < 0 ? " failed: " : "", r < 0 ? e.msg : "");
}

static int append_word(char *cmd, size_t size, const char *w)
{
	size_t len = strlen(cmd);
	bool quote = strpbrk(w, " \t") != NULL;
	if (strchr(w, '"'))
		return -EINVAL; /* the kernel's quoting cannot carry a '"' */
	int n = snprintf(cmd + len, size - len, "%s%s%s%s", len ? " " : "", quote ? "\"" : "", w,
	                 quote ? "\"" : "");
	return n < 0 || (size_t)n >= size - len ? -E2BIG : 0;
}

/* One flag with its value into s; -errno for a bad value. */
static int run_flag_set(struct run_state *s, int c, const char *v)
{
	if (c >= VM_OPT_VAL && c < VM_OPT_VAL + VM_OPT_N)
		return vm_option_set((enum vm_opt_id)(c - VM_OPT_VAL), &s->spec, v, NULL);
	switch (c) {
	case 'n':
		s->name = v;
		return 0;
	case 's':
		s->state_dir = v;
		return 0;
	case 'q':
		s->stream = false;
		return 0;
	case 't':
		return str_to_duration_ms(v, 24ull * 3600 * 1000, &s->timeout_ms);
	case 'T':
		return str_to_duration_ms(v, 3600ull * 1000, &s->stop_timeout_ms);
	}
	return -EINVAL;
}

/* The workload after "--" joins the guest's command line. */
static int run_workload(struct run_state *s, int argc, char **argv)
{
	if (optind >= argc)
		return 0;
	if (strcmp(argv[optind - 1], "--") != 0 || argv[optind][0] != '/') {
		fprintf(stderr, "kin vm run: the workload goes after '--' and starts with '/'\n");
		return 2;
	}
	int r = append_word(s->spec.cmdline, sizeof(s->spec.cmdline), "--");
	for (int i = optind; i < argc && r == 0; i++)
		r = append_word(s->spec.cmdline, sizeof(s->spec.cmdline), argv[i]);
	if (r < 0) {
		fprintf(stderr, "kin vm run: the workload does not fit the kernel command line "
		                "(too long, or it contains '\"')\n");
		return 2;
	}
	return 0;
}

/* The flags into s: -1 to go on, else the exit code (0 for --help, 2 for
 * a usage error). */
static int run_parse(struct run_state *s, int argc, char **argv)
{
	static const struct option longopts[] = {
	    VM_GETOPT(KERNEL, "kernel"),
	    VM_GETOPT(IMAGE, "image"),
	    VM_GETOPT(DISK, "disk"),
	    VM_GETOPT(CPUS, "cpus"),
	    VM_GETOPT(MEMORY, "memory"),
	    VM_GETOPT(ACCEL, "accel"),
	    VM_GETOPT(APPEND, "append"),
	    {"name", required_argument, NULL, 'n'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"timeout", required_argument, NULL, 't'},
	    {"stop-timeout", required_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			run_usage(stdout);
			return 0;
		case ':':
			fprintf(stderr, "kin vm run: option '%s' needs a value\n",
			        argv[optind - 1]);
			return 2;
		case '?':
			fprintf(stderr,
			        "kin vm run: unknown option '%s'\nTry 'kin vm run --help'.\n",
			        argv[optind - 1]);
			return 2;
		}
		if (run_flag_set(s, c, optarg) < 0) {
			fprintf(stderr, "kin vm run: %s '%s' is not valid\n", argv[optind - 2],
			        optarg);
			return 2;
		}
	}
	int r = run_workload(s, argc, argv);
	if (r)
		return r;
	str_copy(s->spec.name, sizeof(s->spec.name), s->name);
	return -1;
}

/* Until the VMM exits: signals, the console, --timeout and the stop grace. */
static void run_loop(struct run_state *s, struct ev_loop *loop, struct child_table *children,
                     int sfd, const struct vm_info *info)
{
	while (!s->exited) {
		struct signalfd_siginfo si;
		ev_run_once(loop, 50); /* pidfds */
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				child_reap(children);
			else
				begin_stop(s,
				           si.ssi_signo == SIGINT ? "interrupted" : "terminated");
		}
		if (s->console_fd < 0)
			s->console_fd = open(info->paths.console, O_RDONLY | O_CLOEXEC);
		pump_console(s);
		if (s->run_deadline_ns && now_monotonic_ns() > s->run_deadline_ns && !s->stopping)
			begin_stop(s, "--timeout reached");
	}
	pump_console(s);
}

int vm_run_main(int argc, char **argv)
{
	struct run_state s = {.name = "vm",
	                      .console_fd = -1,
	                      .stream = true,
	                      .stop_timeout_ms = 30000,
	                      .state_dir = VM_STATE_DIR_DEFAULT};
	int r;

	vm_spec_defaults(&s.spec);
	r = run_parse(&s, argc, argv);
	if (r >= 0)
		return r;

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	_cleanup_close_ int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	struct ev_loop *loop = NULL;
	struct child_table *children = NULL;
	struct vm_events ev = {.started = on_started, .exited = on_exited, .data = &s};
	if (sfd < 0 || ev_loop_new(&loop) < 0 || child_table_new(loop, &children) < 0 ||
	    vm_manager_new(loop, children, s.state_dir, &ev, &s.m) < 0) {
		fprintf(stderr, "kin vm run: cannot set up: %m\n");
		return 1;
	}
	struct err e = {0};
	r = vm_start(s.m, &s.spec, &e);
	if (r < 0) {
		fprintf(stderr, "kin vm run: %s\n", e.msg);
		return r == -EINVAL ? 2 : 1;
	}
	struct vm_info info;
	vm_get(s.m, s.name, &info); /* starting: its paths are known */
	if (s.timeout_ms)
		s.run_deadline_ns = now_monotonic_ns() + s.timeout_ms * 1000000ull;
	run_loop(&s, loop, children, sfd, &info);
	if (s.console_fd >= 0)
		close(s.console_fd);
	if (!s.failed)
		fprintf(stderr, "kin vm: \"%s\" exited with status %d\n", s.name, s.status);
	vm_manager_free(s.m);
	child_table_free(children);
	ev_loop_free(loop);
	return s.status;
}
