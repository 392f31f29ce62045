/* role: which of kin's init roles this process plays, and the signal table
 * that follows from the role. */
#include "init/init.h"

#include <sys/mount.h>
#include <sys/stat.h>

/* PROC_PID_INIT_INO: the initial PID namespace's fixed inode number. */
#define PID_NS_INIT_INO 0xEFFFFFFCu

static int pid_ns_is_initial(void)
{
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) < 0)
		return -errno;
	return st.st_ino == PID_NS_INIT_INO;
}

int init_detect_role(const struct init_config *cfg, enum init_role *ret_role)
{
	/* A zone kin may share its parent's PID namespace (a hostPID pod's):
	 * a zone all the same, its processes' subreaper. */
	if (cfg->zone[0]) {
		*ret_role = INIT_ROLE_ZONE;
		return 0;
	}
	if (getpid() != 1) {
		*ret_role = INIT_ROLE_DAEMON;
		return 0;
	}
	int r = pid_ns_is_initial();
	if (r == -ENOENT) {
		/* No /proc yet: the kernel started us on a bare initramfs, or a
		 * container engine gave us none. Mount it to look, and take it
		 * away again unless we turn out to be the machine's init. */
		mkdir("/proc", 0555);
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			return -errno;
		r = pid_ns_is_initial();
		if (r != 1)
			umount2("/proc", MNT_DETACH);
	}
	if (r < 0)
		return r;
	*ret_role = r ? INIT_ROLE_MACHINE : INIT_ROLE_CONTAINER;
	return 0;
}

const char *init_role_name(enum init_role role)
{
	switch (role) {
	case INIT_ROLE_MACHINE:
		return "machine";
	case INIT_ROLE_ZONE:
		return "zone";
	case INIT_ROLE_CONTAINER:
		return "container";
	case INIT_ROLE_DAEMON:
		return "daemon";
	}
	return "?";
}

const char *init_action_name(enum init_action act)
{
	static const char *const names[] = {
	    [INIT_ACT_IGNORE] = "ignore",   [INIT_ACT_REAP] = "reap",
	    [INIT_ACT_FORWARD] = "forward", [INIT_ACT_STOP] = "stop",
	    [INIT_ACT_REBOOT] = "reboot",   [INIT_ACT_POWEROFF] = "poweroff",
	    [INIT_ACT_HALT] = "halt",       [INIT_ACT_RELOAD] = "reload",
	};
	return (unsigned)act < ARRAY_SIZE(names) ? names[act] : "?";
}

/* The table docs/init.md documents. Machine init follows sysvinit/systemd
 * conventions (SIGINT is Ctrl-Alt-Del); the other roles stop on SIGTERM,
 * and with a workload they pass every other catchable signal on to it, as
 * tini does. */
enum init_action init_signal_action(enum init_role role, bool has_workload, int sig)
{
	if (sig == SIGCHLD)
		return INIT_ACT_REAP;
	/* A workload's SIGHUP stays the workload's (tini's habit). */
	if (sig == SIGHUP && (role == INIT_ROLE_MACHINE || !has_workload))
		return INIT_ACT_RELOAD;
	if (role == INIT_ROLE_MACHINE) {
		if (sig == SIGINT || sig == SIGTERM || sig == SIGRTMIN + 5)
			return INIT_ACT_REBOOT;
		if (sig == SIGUSR2 || sig == SIGPWR || sig == SIGRTMIN + 4)
			return INIT_ACT_POWEROFF;
		if (sig == SIGUSR1 || sig == SIGRTMIN + 3)
			return INIT_ACT_HALT;
		return INIT_ACT_IGNORE;
	}
	if (sig == SIGTERM)
		return INIT_ACT_STOP;
	if (has_workload) {
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGTTIN || sig == SIGTTOU ||
		    sig == SIGTSTP)
			return INIT_ACT_IGNORE;
		return INIT_ACT_FORWARD;
	}
	if (sig == SIGINT || sig == SIGQUIT || sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGPWR ||
	    sig == SIGRTMIN + 3 || sig == SIGRTMIN + 4)
		return INIT_ACT_STOP;
	return INIT_ACT_IGNORE;
}
