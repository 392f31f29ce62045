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
	bool exited, stopping;
	int status;
	int console_fd;
	bool stream;
	uint64_t stop_deadline_ns, stop_timeout_ms, run_deadline_ns;
};

static void run_usage(FILE *f)
{
	fputs("usage: kin vm run --kernel FILE --image FILE [OPTIONS] [-- CMD ARGS...]\n"
	      "\n"
	      "Boots one microVM with kin as its PID 1 and streams its console. CMD, if\n"
	      "given, is the guest kin's workload (an absolute path).\n"
	      "\n"
	      "  --kernel FILE        guest kernel (bzImage)\n"
	      "  --image FILE         initramfs from 'kin image build'\n"
	      "  --disk FILE          an ext4 root disk ('kin image build --format ext4'):\n"
	      "                       the initramfs's kin switches root to it\n"
	      "  --name NAME          VM name (default vm)\n"
	      "  --cpus N             virtual CPUs (default 1)\n"
	      "  --memory MIB         memory in MiB (default 512)\n"
	      "  --accel auto|kvm|tcg accelerator (default auto: KVM only with vmx/svm)\n"
	      "  --append TEXT        more guest kernel command line\n"
	      "  --state-dir DIR      where console.log and sockets go (default /run/kin/vm)\n"
	      "  --quiet              do not stream the console\n"
	      "  --timeout DURATION   shut the VM down after this long\n"
	      "  --stop-timeout DUR   shutdown grace before the VMM is killed (default 30s)\n",
	      f);
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

static void begin_stop(struct run_state *s, const char *why)
{
	if (s->stopping)
		return;
	s->stopping = true;
	s->stop_deadline_ns = now_monotonic_ns() + s->stop_timeout_ms * 1000000ull;
	int r = vm_request_shutdown(s->m, s->name);
	fprintf(stderr, "kin vm: %s: asking the guest to shut down%s%s\n", why,
	        r < 0 ? " failed: " : "", r < 0 ? strerror(-r) : "");
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

int vm_run_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"kernel", required_argument, NULL, 'k'},
	    {"image", required_argument, NULL, 'i'},
	    {"disk", required_argument, NULL, 'd'},
	    {"name", required_argument, NULL, 'n'},
	    {"cpus", required_argument, NULL, 'c'},
	    {"memory", required_argument, NULL, 'm'},
	    {"accel", required_argument, NULL, 'a'},
	    {"append", required_argument, NULL, 'A'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"timeout", required_argument, NULL, 't'},
	    {"stop-timeout", required_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct vm_spec spec;
	struct run_state s = {
	    .name = "vm", .console_fd = -1, .stream = true, .stop_timeout_ms = 30000};
	const char *state_dir = VM_STATE_DIR_DEFAULT;
	uint64_t timeout_ms = 0;
	int c, r;

	vm_spec_defaults(&spec);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		uint32_t u;
		switch (c) {
		case 'k':
			r = str_copy(spec.kernel, sizeof(spec.kernel), optarg);
			break;
		case 'i':
			r = str_copy(spec.image, sizeof(spec.image), optarg);
			break;
		case 'd':
			r = str_copy(spec.disk, sizeof(spec.disk), optarg);
			break;
		case 'n':
			s.name = optarg;
			r = 0;
			break;
		case 'c':
			r = str_to_u32(optarg, &u);
			spec.cpus = u;
			break;
		case 'm':
			r = str_to_u32(optarg, &u);
			spec.memory_mb = u;
			break;
		case 'a':
			r = vm_accel_parse(optarg, &spec.accel);
			break;
		case 'A':
			r = str_copy(spec.cmdline, sizeof(spec.cmdline), optarg);
			break;
		case 's':
			state_dir = optarg;
			r = 0;
			break;
		case 'q':
			s.stream = false;
			r = 0;
			break;
		case 't':
			r = str_to_duration_ms(optarg, 24ull * 3600 * 1000, &timeout_ms);
			break;
		case 'T':
			r = str_to_duration_ms(optarg, 3600ull * 1000, &s.stop_timeout_ms);
			break;
		case 'h':
			run_usage(stdout);
			return 0;
		case ':':
			fprintf(stderr, "kin vm run: option '%s' needs a value\n",
			        argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr,
			        "kin vm run: unknown option '%s'\nTry 'kin vm run --help'.\n",
			        argv[optind - 1]);
			return 2;
		}
		if (r < 0) {
			fprintf(stderr, "kin vm run: %s '%s' is not valid\n", argv[optind - 2],
			        optarg);
			return 2;
		}
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0 || argv[optind][0] != '/') {
			fprintf(stderr,
			        "kin vm run: the workload goes after '--' and starts with '/'\n");
			return 2;
		}
		r = append_word(spec.cmdline, sizeof(spec.cmdline), "--");
		for (int i = optind; i < argc && r == 0; i++)
			r = append_word(spec.cmdline, sizeof(spec.cmdline), argv[i]);
		if (r < 0) {
			fprintf(stderr,
			        "kin vm run: the workload does not fit the kernel command line "
			        "(too long, or it contains '\"')\n");
			return 2;
		}
	}
	str_copy(spec.name, sizeof(spec.name), s.name);

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	_cleanup_close_ int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	struct ev_loop *loop = NULL;
	struct child_table *children = NULL;
	struct vm_events ev = {.exited = on_exited, .data = &s};
	if (sfd < 0 || ev_loop_new(&loop) < 0 || child_table_new(loop, &children) < 0 ||
	    vm_manager_new(loop, children, state_dir, &ev, &s.m) < 0) {
		fprintf(stderr, "kin vm run: cannot set up: %m\n");
		return 1;
	}
	char err[512];
	r = vm_start(s.m, &spec, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "kin vm run: %s\n", err);
		return r == -EINVAL ? 2 : 1;
	}
	struct vm_info info;
	vm_get(s.m, s.name, &info);
	fprintf(stderr, "kin vm: \"%s\" started (accel %s, %u cpu, %u MiB), console %s\n", s.name,
	        vm_accel_name(info.accel), info.cpus, info.memory_mb, info.paths.console);
	if (timeout_ms)
		s.run_deadline_ns = now_monotonic_ns() + timeout_ms * 1000000ull;

	while (!s.exited) {
		struct signalfd_siginfo si;
		ev_run_once(loop, 50); /* pidfds */
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				child_reap(children);
			else
				begin_stop(&s,
				           si.ssi_signo == SIGINT ? "interrupted" : "terminated");
		}
		if (s.console_fd < 0)
			s.console_fd = open(info.paths.console, O_RDONLY | O_CLOEXEC);
		pump_console(&s);
		uint64_t now = now_monotonic_ns();
		if (s.run_deadline_ns && now > s.run_deadline_ns && !s.stopping)
			begin_stop(&s, "--timeout reached");
		if (s.stopping && now > s.stop_deadline_ns) {
			fprintf(stderr,
			        "kin vm: the guest did not stop in time; killing the VMM\n");
			vm_kill(s.m, s.name, SIGKILL);
			s.stop_deadline_ns = UINT64_MAX;
		}
	}
	pump_console(&s);
	if (s.console_fd >= 0)
		close(s.console_fd);
	fprintf(stderr, "kin vm: \"%s\" exited with status %d\n", s.name, s.status);
	vm_manager_free(s.m);
	child_table_free(children);
	ev_loop_free(loop);
	return s.status;
}
