/* shutdown: the end of a machine — swap off (units/, whose host boot
 * turned it on), unmount, remount read-only, reboot(2) —
 * and the kin.panic= policy for fatal errors, including faults in kin
 * itself, so that PID 1 never leaves the kernel to panic on its own. */
#include "init/init.h"
#include "units/units.h"

#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/wait.h>

#define UMOUNT_MAX 256

static void unmount_all(void)
{
	char *targets[UMOUNT_MAX];
	size_t n = 0;
	FILE *f = setmntent("/proc/self/mounts", "re");
	if (!f)
		return;
	for (struct mntent *m; (m = getmntent(f)) && n < UMOUNT_MAX;)
		if (strcmp(m->mnt_dir, "/") != 0)
			targets[n++] = strdup(m->mnt_dir);
	endmntent(f);
	/* Newest first: children before the mounts they sit on. API
	 * filesystems that stay busy are detached, which is harmless. */
	while (n > 0) {
		char *t = targets[--n];
		if (t && umount2(t, 0) < 0 && umount2(t, MNT_DETACH) < 0)
			log_debug("umount %s: %m", t);
		free(t);
	}
}

_noreturn_ void init_shutdown_machine(enum init_action act)
{
	int cmd = act == INIT_ACT_REBOOT     ? RB_AUTOBOOT
	          : act == INIT_ACT_POWEROFF ? RB_POWER_OFF
	                                     : RB_HALT_SYSTEM;
	log_info("%s: syncing and unmounting", init_action_name(act));
	sync();
	units_sysinit_swapoff();
	unmount_all();
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
		log_debug("remount / read-only: %m");
	sync();
	log_info("%s now", init_action_name(act));
	reboot(cmd);
	/* reboot(2) failed (or halt returned): there is nothing left to run. */
	log_error("reboot(2): %m; freezing");
	for (;;)
		pause();
}

static void freeze_reaping(void)
{
	for (;;)
		if (waitpid(-1, NULL, 0) < 0)
			sleep(1);
}

_noreturn_ void init_panic(enum init_panic policy, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(LOG_ERR_, fmt, ap);
	va_end(ap);
	sync();
	switch (policy) {
	case INIT_PANIC_REBOOT:
		log_error("panic: rebooting (kin.panic=reboot)");
		reboot(RB_AUTOBOOT);
		break;
	case INIT_PANIC_POWEROFF:
		log_error("panic: powering off (kin.panic=poweroff)");
		reboot(RB_POWER_OFF);
		break;
	case INIT_PANIC_FREEZE:
		break;
	}
	log_error("panic: frozen (kin.panic=freeze); still reaping orphans");
	freeze_reaping();
	for (;;)
		pause();
}

static enum init_panic fault_policy;

static void on_fault(int sig)
{
	/* Only async-signal-safe calls from here on. */
	static const char msg[] = "kin: fatal fault in PID 1; applying kin.panic=\n";
	(void)!write(STDERR_FILENO, msg, STRLEN(msg));
	sync();
	if (fault_policy == INIT_PANIC_REBOOT)
		reboot(RB_AUTOBOOT);
	else if (fault_policy == INIT_PANIC_POWEROFF)
		reboot(RB_POWER_OFF);
	(void)sig;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	freeze_reaping();
}

void init_install_fault_handlers(enum init_panic policy)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
	struct sigaction sa = {.sa_handler = on_fault, .sa_flags = SA_NODEFER};
	fault_policy = policy;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(faults); i++)
		sigaction(faults[i], &sa, NULL);
}
