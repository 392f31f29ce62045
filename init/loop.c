/* loop: kin's main loop as init. One epoll set holds a signalfd (every
 * signal but the synchronous faults is blocked), one pidfd per child and a
 * timerfd for the stop sequence. Nothing here blocks and nothing exits on a
 * recoverable error. */
#include "init/init-int.h"
#include "api/api.h"
#include "shim/shim.h"
#include "zone/zone.h"
#include "keep/keep.h"
#include "lib/state.h"
#include "units/units.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#define KILL_WAIT_MS    5000 /* after SIGKILL, how long to wait for D-state stragglers */
#define DESCENDANTS_MAX 65536

static bool is_stopping(void *data)
{
	const struct init_state *s = data;
	return s->phase != PHASE_RUNNING;
}

static bool has_workload(const struct init_state *s)
{
	return s->cfg->argv && s->role != INIT_ROLE_MACHINE;
}

static int timer_arm(struct init_state *s, uint64_t ms)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000}};
	if (ms == 0)
		its.it_value.tv_nsec = 1; /* zero would disarm */
	return timerfd_settime(s->timer_src.fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* Not PID 1: our processes are our descendants, found through /proc (they
 * may have been reparented to us, the subreaper, from anywhere below). */
static size_t signal_descendants(pid_t root, int sig)
{
	_cleanup_free_ pid_t *pids = calloc(DESCENDANTS_MAX, sizeof(pid_t));
	_cleanup_free_ pid_t *ppids = calloc(DESCENDANTS_MAX, sizeof(pid_t));
	size_t n = 0, sent = 0;
	DIR *d;

	if (!pids || !ppids || !(d = opendir("/proc")))
		return 0;
	for (struct dirent *e; (e = readdir(d)) && n < DESCENDANTS_MAX;) {
		uint32_t pid;
		char path[64], *stat = NULL;
		if (str_to_u32(e->d_name, &pid) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/stat", pid);
		if (file_read_small(path, 4096, &stat, NULL) < 0)
			continue;
		/* comm may hold anything, ')' included: parse after the last one. */
		char *rp = strrchr(stat, ')');
		int ppid;
		if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1) {
			pids[n] = (pid_t)pid;
			ppids[n++] = ppid;
		}
		free(stat);
	}
	closedir(d);
	/* Breadth-first from root: mark by moving found pids into ppids' role. */
	_cleanup_free_ pid_t *queue = calloc(n + 1, sizeof(pid_t));
	if (!queue)
		return 0;
	size_t head = 0, tail = 0;
	queue[tail++] = root;
	while (head < tail) {
		pid_t p = queue[head++];
		for (size_t i = 0; i < n; i++)
			if (ppids[i] == p && pids[i] != 0 && tail <= n) {
				queue[tail++] = pids[i];
				if (kill(pids[i], sig) == 0)
					sent++;
				pids[i] = 0;
			}
	}
	return sent;
}

static void signal_everyone(struct init_state *s, int sig)
{
	if (getpid() == 1) {
		/* PID 1 of a namespace: -1 is everyone in it but us. */
		kill(-1, sig);
		return;
	}
	child_signal_all(s->children, sig);
	signal_descendants(getpid(), sig);
}

static void check_done(struct init_state *s)
{
	/* Zones' cleanup (cgroups, veths) comes after their kins are reaped. */
	if ((s->phase == PHASE_TERM || s->phase == PHASE_KILL) && child_none_left() &&
	    api_zones_idle(s->api)) {
		log_debug("no process left");
		s->phase = PHASE_DONE;
	}
}

static void term_begin(struct init_state *s)
{
	s->phase = PHASE_TERM;
	log_info("stopping (%s): SIGTERM to every process, SIGKILL after %llu ms",
	         init_action_name(s->stop_act), (unsigned long long)s->cfg->grace_ms);
	init_cells_stop(s->cells, s->cfg->grace_ms); /* no restarts from now on */
	signal_everyone(s, SIGTERM);
	signal_everyone(s, SIGCONT);
	int r = timer_arm(s, s->cfg->grace_ms);
	if (r < 0) {
		log_error("cannot arm the stop timer: %s; killing at once", strerror(-r));
		signal_everyone(s, SIGKILL);
		s->phase = PHASE_KILL;
	}
	check_done(s);
}

/* After the units (or without any): VMs, then every process left. */
static void stop_rest(struct init_state *s)
{
	enum init_action act = s->stop_act;
	/* Each zone kin stops its own cells; VMs power off over their links. */
	size_t vms = api_stop_all(s->api, s->cfg->grace_ms);
	if (vms && timer_arm(s, s->cfg->grace_ms) == 0) {
		s->phase = PHASE_VMS;
		log_info("stopping (%s): %zu VMs power off first, for at most %llu ms",
		         init_action_name(act), vms, (unsigned long long)s->cfg->grace_ms);
		return;
	}
	term_begin(s);
}

static void on_units_stopped(void *data)
{
	struct init_state *s = data;
	if (s->phase != PHASE_UNITS)
		return;
	log_info("units stopped");
	stop_rest(s);
}

/* Units leave in reverse dependency order, each with its ExecStop= and
 * timeouts, within three grace periods (at least 30 s) in all. */
#define UNITS_STOP_MIN_MS 30000ull

static void stop_begin(struct init_state *s, enum init_action act)
{
	if (s->phase != PHASE_RUNNING) {
		log_debug("already stopping; %s ignored", init_action_name(act));
		return;
	}
	s->stop_act = act;
	keep_reexec_stop(s->keep);
	init_tls_stop(s->tls);
	if (s->units) {
		uint64_t ms = s->cfg->grace_ms * 3;
		s->phase = PHASE_UNITS;
		timer_arm(s, ms < UNITS_STOP_MIN_MS ? UNITS_STOP_MIN_MS : ms);
		log_info("stopping (%s): units first", init_action_name(act));
		init_units_stop(s->units, on_units_stopped, s);
		return;
	}
	stop_rest(s);
}

/* The loop's turn: the VMs are down, the rest may stop. */
static void units_boot_when_swept(struct init_state *s)
{
	/* machine init boots its units once its late boot is over */
	if (!s->units || s->units_booted || s->phase != PHASE_RUNNING ||
	    s->role == INIT_ROLE_MACHINE)
		return;
	if (cells_sweeping(init_cells_lib(s->cells))) {
		if (!s->units_boot_waits)
			log_info("units: the boot waits until what a killed kin left is removed");
		s->units_boot_waits = true;
		return;
	}
	s->units_booted = true;
	init_units_boot(s->units);
}

static void vms_check(struct init_state *s)
{
	if (s->phase == PHASE_VMS && api_vms_running(s->api) == 0) {
		log_info("VMs stopped");
		term_begin(s);
	}
}

static int system_reload_policy(const char **ret_source, size_t *ret_rules, struct err *err,
                                void *data)
{
	struct init_state *s = data;
	if (!s->auth)
		return err_set(err, -EOPNOTSUPP, ERR_FAILED_PRECONDITION, "no policy here");
	return init_auth_reload(s->auth, ret_source, ret_rules, err);
}

/* What a successor adopts changed in a way cells do not report (a VM now
 * running, a unit's state): the state file is written soon. */
static void persist_changed(void *data)
{
	struct init_state *s = data;
	keep_changed(s->keep);
}

/* kin.v1.System: the signal table's stop, asked over RPC. */
static int system_stop(bool reboot, bool dry_run, const char **ret_action, void *data)
{
	struct init_state *s = data;
	enum init_action act = INIT_ACT_STOP;
	if (s->role == INIT_ROLE_MACHINE)
		act = reboot ? INIT_ACT_REBOOT : INIT_ACT_POWEROFF;
	else if (reboot)
		return -EOPNOTSUPP; /* nobody would start this kin again */
	*ret_action = init_action_name(act);
	if (!dry_run) {
		log_info("%s asked over RPC", init_action_name(act));
		stop_begin(s, act);
	}
	return 0;
}

static const char *level_name(enum log_level l)
{
	return l <= LOG_ERR_    ? "error"
	       : l == LOG_WARN_ ? "warn"
	       : l == LOG_INFO_ ? "info"
	                        : "debug";
}

/* restored: a re-exec's kin, whose listening sockets were handed over. */
static void start_services(struct init_state *s, bool restored)
{
	if (!s->rpc)
		return;
	/* A machine (a VM zone's guest too) has a network of its own: the
	 * default subnet is its to use; a zone kin has what it was given. */
	const struct init_config *c = s->cfg;
	struct zones_config zcfg = {
	    .depth = c->zone_depth,
	    .depth_max = c->zone_max_depth,
	    .subnet = c->zone_subnet[0]              ? c->zone_subnet
	              : s->role == INIT_ROLE_MACHINE ? ZONE_SUBNET_DEFAULT
	                                             : NULL,
	    .state_dir = c->zone_dir,
	    .log_level = c->log_level_set ? level_name(c->log_level) : NULL,
	    .image_store = c->image_store,
	    .exec_self = c->shim != NULL,
	    .reconnect_dir = keep_file_zones_dir(s->keep),
	    .keeper = init_keeper(s->keep, &s->zones_keeper),
	};
	struct api_config acfg = {
	    .rpc = s->rpc,
	    .loop = s->loop,
	    .children = s->children,
	    .health = {.version = KIN_VERSION,
	               .role = init_role_name(s->role),
	               .zone = c->zone,
	               .started_ns = s->started_ns,
	               .stopping = is_stopping,
	               .reexecs = init_carry_reexecs,
	               .data = s},
	    .system = {.role = init_role_name(s->role),
	               .stop = system_stop,
	               .reload_policy = system_reload_policy,
	               .reexec = init_carry_reexec,
	               .reexec_cancel = init_carry_reexec_cancel,
	               .data = s},
	    .cells = init_cells_lib(s->cells),
	    .units = init_units_lib(s->units),
	    .cells_why = init_cells_why(s->cells),
	    .vm_dir = c->vm_dir,
	    .image_store = c->image_store,
	    .zones = &zcfg,
	    .changed = persist_changed,
	    .changed_data = s,
	    .keep = s->keep,
	};
	if (api_start(&acfg, NULL, 0, &s->api) < 0) {
		log_error("rpc: cannot start the services: out of memory");
		return;
	}
	/* A shim serves containerd's Task API too, after them (its pod is a
	 * zone of theirs). */
	if (!c->shim)
		return;
	const struct shim_task_config tcfg = {
	    .rpc = s->rpc,
	    .loop = s->loop,
	    .cells = acfg.cells,
	    .serve = c->shim,
	    .version = KIN_VERSION,
	    .listening = restored,
	    .stop = system_stop,
	    .stop_data = s,
	    .keep = s->keep,
	};
	s->task = init_shim_task_start(&tcfg, s->api);
}

/* The end, in the one order it has: the services' pending calls and
 * streams end (zones, VMs, cells), then the cells library goes; a machine
 * stops here (init_shutdown_machine never returns); the server goes (with the
 * connections it still has), then what it kept pointers to. */
static void services_end(struct init_state *s)
{
	keep_reexec_stop(s->keep);
	keep_file_close(s->keep, false); /* kept: kin did not stop its work */
	shim_task_shutdown(s->task);     /* as api's services: the last started, first */
	api_shutdown(s->api);
	init_cells_shutdown(s->cells);
	/* after cells: their last callbacks (cancelled waits) reach live units */
	init_units_free(s->units);
	s->units = NULL;
	if (s->role == INIT_ROLE_MACHINE && s->cfg->host)
		units_sysinit_seed_save(); /* the next boot's, before the unmount */
	if (s->role == INIT_ROLE_MACHINE)
		init_shutdown_machine(s->stop_act);
	init_tls_free(s->tls);
	s->tls = NULL;
	rpc_server_free(s->rpc);
	init_auth_free(s->auth); /* after the server: its calls' ends are audited */
	s->auth = NULL;
	init_link_free(s->link);
	shim_task_free(s->task);
	s->task = NULL;
	api_free(s->api);
	init_cells_free(s->cells);
	keep_free(s->keep);
	s->keep = NULL;
}

static void on_timer(struct ev_source *src, uint32_t events)
{
	struct init_state *s = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	if (s->phase == PHASE_UNITS) {
		log_warn("units did not all stop in time; stopping the rest");
		stop_rest(s);
	} else if (s->phase == PHASE_VMS) {
		log_warn("grace period over with %zu VMs still running; stopping the rest",
		         api_vms_running(s->api));
		term_begin(s);
	} else if (s->phase == PHASE_TERM) {
		log_warn("grace period over: SIGKILL to the processes still running");
		init_cells_kill(s->cells); /* cgroup.kill: also what left kin's tree */
		signal_everyone(s, SIGKILL);
		s->phase = PHASE_KILL;
		timer_arm(s, KILL_WAIT_MS);
	} else if (s->phase == PHASE_KILL) {
		log_error("processes survive SIGKILL for %d ms (uninterruptible?); going on",
		          KILL_WAIT_MS);
		s->phase = PHASE_DONE;
	}
}

static void on_workload_exit(const siginfo_t *si, void *data)
{
	struct init_state *s = data;
	s->workload = NULL;
	s->workload_running = false;
	s->workload_status = child_status_code(si);
	if (si->si_code == CLD_EXITED)
		log_debug("workload exited with status %d", si->si_status);
	else
		log_debug("workload killed by signal %d", si->si_status);
	if (s->role == INIT_ROLE_MACHINE) {
		if (s->phase == PHASE_RUNNING)
			log_warn("workload ended with status %d; kin keeps running",
			         s->workload_status);
		return;
	}
	stop_begin(s, INIT_ACT_STOP);
}

/* SIGHUP: the policy read again (a bad one refused, logged), the TLS
 * gateway told to read its files again. */
static void reload(struct init_state *s)
{
	if (s->auth)
		init_auth_reload_signal(s->auth);
	init_tls_reload(s->tls);
}

static void on_signal(struct ev_source *src, uint32_t events)
{
	struct init_state *s = src->data;
	struct signalfd_siginfo si;
	(void)events;

	while (read(src->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;
		enum init_action act = init_signal_action(s->role, has_workload(s), sig);
		if (act != INIT_ACT_REAP)
			log_debug("signal %d from pid %u: %s", sig, si.ssi_pid,
			          init_action_name(act));
		switch (act) {
		case INIT_ACT_IGNORE:
			break;
		case INIT_ACT_REAP:
			child_reap(s->children);
			check_done(s);
			break;
		case INIT_ACT_FORWARD:
			if (s->workload)
				child_signal(s->workload, sig);
			break;
		case INIT_ACT_RELOAD:
			reload(s);
			break;
		default:
			stop_begin(s, act);
		}
	}
}

static void on_late_boot_exit(const siginfo_t *si, void *data)
{
	struct init_state *s = data;
	uint64_t ms = (now_monotonic_ns() - s->cfg->exec_ns) / 1000000ull;
	s->booted = true;
	init_units_boot(s->units); /* the network and modules are there */
	if (si->si_code == CLD_EXITED && si->si_status == 0)
		log_info("boot complete, %llu ms after exec", (unsigned long long)ms);
	else if (si->si_code == CLD_EXITED)
		log_warn("boot complete, %llu ms after exec; %d steps failed (named above)",
		         (unsigned long long)ms, si->si_status);
	else
		log_warn("boot complete, %llu ms after exec; the late boot was killed by signal %d",
		         (unsigned long long)ms, si->si_status);
}

static int setup(struct init_state *s)
{
	sigset_t all;
	int r;

	sigfillset(&all);
	/* Synchronous faults stay deliverable (see init_install_fault_handlers). */
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGABRT);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	if (sigprocmask(SIG_SETMASK, &all, NULL) < 0)
		return -errno;
	r = ev_loop_new(&s->loop);
	if (r < 0)
		return r;
	r = child_table_new(s->loop, &s->children);
	if (r < 0)
		return r;
	s->sig_src = (struct ev_source){
	    .fd = signalfd(-1, &all, SFD_NONBLOCK | SFD_CLOEXEC), .fn = on_signal, .data = s};
	if (s->sig_src.fd < 0)
		return -errno;
	r = ev_add(s->loop, &s->sig_src, EPOLLIN);
	if (r < 0)
		return r;
	s->timer_src =
	    (struct ev_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                       .fn = on_timer,
	                       .data = s};
	if (s->timer_src.fd < 0)
		return -errno;
	return ev_add(s->loop, &s->timer_src, EPOLLIN);
}

static int start_workload(struct init_state *s)
{
	int r = child_spawn(s->children, s->cfg->argv, on_workload_exit, s, &s->workload);
	if (r < 0) {
		log_error("cannot run '%s': %s", s->cfg->argv[0], strerror(-r));
		return r;
	}
	s->workload_running = true;
	log_debug("workload '%s' started as pid %d", s->cfg->argv[0], (int)child_pid(s->workload));
	return 0;
}

void init_loop_track_workload(struct init_state *s, pid_t pid)
{
	if (child_adopt(s->children, pid, on_workload_exit, s, &s->workload) < 0) {
		log_error("re-exec: the workload (pid %d) is not kin's child any more", (int)pid);
		s->workload_running = false;
		s->workload_status = 255;
		return;
	}
	s->workload_running = true;
}

/* A daemon's state directory: what a killed kin ran is adopted (its
 * file and the keeper's fds handed to the participants). */
static void state_dir_open(struct init_state *s, bool restored)
{
	const struct init_config *cfg = s->cfg;
	if (s->role != INIT_ROLE_DAEMON || cfg->shim || !s->rpc ||
	    keep_file_open(s->keep, cfg->state_dir ? cfg->state_dir : INIT_STATE_DIR) < 0)
		return;
	if (!restored)
		keep_file_load(s->keep);
}

/* Every participant started in level order — fresh, taking a re-exec's
 * state over, or adopting a killed kin's — with what each needs started
 * between the levels. 0, or the exit status of a daemon that cannot run
 * without what failed. */
static int start_parts(struct init_state *s, bool restored)
{
	const struct init_config *cfg = s->cfg;
	state_dir_open(s, restored);
	/* Before the workload: kin moves into its own leaf cgroup first. */
	if (init_cells_new(s->keep, s->loop, s->children, s->rpc, cfg->cgroup, cfg->n_unit_dirs > 0,
	                   &s->cells) < 0)
		log_error("cells: out of memory; going on without them");
	if (init_units_new(s->keep, cfg, s->role, s->loop, s->children, s->cells, &s->units) < 0)
		log_error("units: out of memory; no service manager");
	keep_start(s->keep, KEEP_LEVEL_CELLS);
	/* A daemon told --policy or --tls-listen explicitly does not run
	 * without them; machine init goes on with root only. */
	int r = 0;
	if (s->rpc) {
		struct keep_from from;
		struct state_field f;
		keep_from_for(s->keep, KEEP_TAG_TLS, &from, &f);
		bool carried = from.how == KEEP_REEXEC && from.record;
		r = init_auth_start(&cfg->rpc, s->rpc, &s->auth);
		if (r == 0)
			r = init_tls_start(&cfg->rpc, s->loop, s->children, s->rpc,
			                   init_cells_lib(s->cells), carried ? from.in : NULL,
			                   carried ? from.record : NULL, &s->tls);
		init_tls_keep(s->tls, s->keep);
		/* A re-exec's kin goes on: what it took over runs already. */
		if (r < 0 && s->role == INIT_ROLE_DAEMON && !restored)
			return 1;
	} else if (cfg->rpc.tls_listen[0]) {
		log_error("tls: kin.rpc.tls= needs kin's RPC server (it serves no socket here)");
	}
	/* The service manager before the services: kin.v1.Units serves it. */
	keep_start(s->keep, KEEP_LEVEL_UNITS);
	bool units_failed = init_units_failed(s->units);
	if (units_failed) {
		init_units_free(s->units);
		s->units = NULL;
	}
	if (s->units && keep_file_dir(s->keep)) /* a unit's state is in the state file too */
		units_on_change(init_units_lib(s->units), persist_changed, s);
	s->cfg->host = s->role == INIT_ROLE_MACHINE && s->units;
	start_services(s, restored);
	keep_start(s->keep, KEEP_LEVEL_MAX); /* the services' zones, VMs, tasks... */
	if (restored)
		keep_reexec_restored(s->keep);
	keep_file_loaded(s->keep);
	if (keep_file_watch(s->keep, s->loop) < 0)
		log_warn("state: cannot watch for changes: out of resources; no state kept");
	if (units_failed && cfg->n_unit_dirs && s->role == INIT_ROLE_DAEMON)
		return 1;
	/* A killed kin's services are removed first: their units start them
	 * again once their cells are gone (cells_sweeping). */
	units_boot_when_swept(s);
	return 0;
}

int init_run(struct init_config *cfg, enum init_role role)
{
	static struct init_state s; /* static: the loop's sources point into it */
	s = (struct init_state){.cfg = cfg, .role = role, .started_ns = now_monotonic_ns()};
	int r;

	if ((role == INIT_ROLE_DAEMON || getpid() != 1) && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		log_warn("cannot become a child subreaper: %m; orphans go to the real init");
	if (role == INIT_ROLE_MACHINE)
		reboot(RB_DISABLE_CAD); /* Ctrl-Alt-Del arrives as SIGINT */
	r = setup(&s);
	if (r < 0) {
		if (role == INIT_ROLE_MACHINE)
			init_panic(cfg->panic, "cannot set up the main loop: %s", strerror(-r));
		log_error("cannot set up the main loop: %s", strerror(-r));
		return 1;
	}
	if (keep_new(&s.keep) < 0 || init_carry_register(&s) < 0) {
		log_error("cannot set up the handover: out of memory");
		return 1;
	}
	/* A re-exec's state, taken over as the participants start: first
	 * RPC and the workload as they were. */
	bool restored = keep_reexec_pending() && keep_reexec_restore(s.keep) == 0;
	keep_start(s.keep, KEEP_LEVEL_RPC);
	/* Only a daemon told --socket explicitly gives up without RPC; PID 1
	 * of a machine never returns from here. */
	if (s.carry.rpc_failed && role != INIT_ROLE_MACHINE)
		return 1;
	r = start_parts(&s, restored);
	if (r != 0) {
		services_end(&s);
		return r;
	}
	if (cfg->argv && role != INIT_ROLE_MACHINE && !restored) {
		r = start_workload(&s);
		if (r < 0 && role != INIT_ROLE_MACHINE) {
			services_end(&s);
			return r == -ENOENT ? 127 : 126;
		}
	}
	uint64_t now = now_monotonic_ns();
	char split[128] = "";
	if (cfg->boot_modules) /* the kernel's work apart from kin's own */
		snprintf(split, sizeof(split),
		         " (%.1f ms in the kernel loading %u modules, %.1f ms kin's own)",
		         (double)cfg->boot_kernel_ns / 1e6, cfg->boot_modules,
		         (double)(now - cfg->exec_ns - cfg->boot_kernel_ns) / 1e6);
	log_info("%s: role %s, pid %d, monotonic %llu.%06llu, %.1f ms after exec%s",
	         restored ? "ready again" : "ready", init_role_name(role), (int)getpid(),
	         (unsigned long long)(now / 1000000000ull),
	         (unsigned long long)(now % 1000000000ull / 1000),
	         (double)(now - cfg->exec_ns) / 1e6, split);
	if (role == INIT_ROLE_MACHINE && init_link_start(s.loop, s.rpc, &cfg->guest, &s.link) < 0)
		log_warn("rpc: cannot watch for the VM link: out of resources");
	if (role == INIT_ROLE_MACHINE && cfg->argv && !restored)
		start_workload(&s); /* a failure is logged; machine init goes on */
	if (role == INIT_ROLE_MACHINE && !restored) {
		r = init_boot_machine_late(cfg, s.children, on_late_boot_exit, &s);
		if (r < 0)
			log_warn("boot: cannot start the late boot (network, modules): %s",
			         strerror(-r));
	}

	while (s.phase != PHASE_DONE) {
		r = ev_run_once(s.loop, -1);
		vms_check(&s);
		units_boot_when_swept(&s);
		init_auth_tick(s.auth);
		if (r < 0) {
			if (role == INIT_ROLE_MACHINE)
				init_panic(cfg->panic, "main loop: epoll_wait: %s", strerror(-r));
			log_error("main loop: epoll_wait: %s", strerror(-r));
			return 1;
		}
	}
	log_info("stopped; %llu orphans reaped in all",
	         (unsigned long long)child_orphans_reaped(s.children));
	keep_file_close(s.keep, true); /* nothing left to adopt */
	services_end(&s);
	return cfg->argv ? s.workload_status : 0;
}
