/* units: the service manager (units/) in kin's loop — when it runs, from
 * where, and what services see (their environment, what conditions are
 * checked against). A host's init runs the root's units; any role runs
 * those of --unit-dir (and only those: a test's or an operator's own
 * directory, never the host's units by accident). */
#include "init/init.h"
#include "units/units.h"

#include <stdlib.h>
#include <string.h>

struct init_units {
	struct units *units;
	char *cmdline;
	char virt[32];
	bool booted;
	char getty[64];
	const char *wants[2];
};

#define UNITS_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Machine init on a root that has units (not an initramfs of kin's own). */
static bool host_has_units(const struct init_config *cfg)
{
	return !cfg->argv && units_host_root(); /* a workload on the command line is what runs */
}

/* What ConditionVirtualization= sees: the DMI vendor of a VM, "" else. */
static void detect_virt(char *buf, size_t size, enum init_role role)
{
	char *vendor = NULL;
	buf[0] = '\0';
	if (role != INIT_ROLE_MACHINE) {
		str_copy(buf, size, "container-other");
		return;
	}
	if (file_read_small("/sys/class/dmi/id/sys_vendor", 256, &vendor, NULL) < 0)
		return;
	str_trim(vendor);
	if (strcmp(vendor, "QEMU") == 0)
		str_copy(buf, size, "qemu");
	else if (strstr(vendor, "KVM"))
		str_copy(buf, size, "kvm");
	free(vendor);
}

/* A login prompt on the console the kernel writes to (the last of
 * /sys/class/tty/console/active): serial-getty@ttyS0, or getty@tty1 for
 * the virtual terminals. */
static void console_getty(struct init_units *iu)
{
	char *active = NULL;
	if (file_read_small("/sys/class/tty/console/active", 256, &active, NULL) < 0)
		return;
	char *last = strrchr(str_trim(active), ' ');
	last = last ? last + 1 : active;
	if (str_startswith(last, "tty") && last[3] >= '0' && last[3] <= '9')
		snprintf(iu->getty, sizeof(iu->getty), "getty@%s.service",
		         last[3] == '0' ? "tty1" : last);
	else if (*last && strlen(last) < 32 && !strchr(last, '/'))
		snprintf(iu->getty, sizeof(iu->getty), "serial-getty@%s.service", last);
	free(active);
	if (iu->getty[0])
		iu->wants[0] = iu->getty;
}

int init_units_start(const struct init_config *cfg, enum init_role role, struct ev_loop *loop,
                     struct child_table *children, struct cells *cells, struct state_in *in,
                     const struct state_field *units, struct init_adopt *adopt,
                     const struct cells_keeper *keeper, struct init_units **ret)
{
	*ret = NULL;
	bool host = role == INIT_ROLE_MACHINE && host_has_units(cfg);
	if (!cfg->n_unit_dirs && !host)
		return 0;
	if (!cells) {
		log_error("units: no cells here (cgroup2 missing?); services cannot run");
		return -ENOTSUP;
	}
	struct init_units *iu = calloc(1, sizeof(*iu));
	if (!iu)
		return -ENOMEM;
	file_read_small("/proc/cmdline", 65536, &iu->cmdline, NULL);
	detect_virt(iu->virt, sizeof(iu->virt), role);
	static char *const env[] = {(char *)UNITS_PATH, (char *)"LANG=C.UTF-8"};
	if (host)
		console_getty(iu);
	struct units_config ucfg = {
	    .root = "",
	    .extra_dirs = cfg->n_unit_dirs ? cfg->unit_dirs : NULL,
	    .default_target = cfg->default_target,
	    .log_dir = host ? NULL : "",
	    .run_dir = cfg->unit_run_dir ? cfg->unit_run_dir
	               : host            ? "/run/systemd"
	                                 : "/run/kin/units",
	    .cond = {.root = "",
	             .cmdline = iu->cmdline ? iu->cmdline : "",
	             .virtualization = iu->virt,
	             .container = role != INIT_ROLE_MACHINE,
	             .caps = ~0ull,
	             .architecture = "x86-64"},
	    .env = env,
	    .nenv = ARRAY_SIZE(env),
	    .boot_wants = iu->wants,
	};
	struct err err = {0};
	int notify_fd = in ? units_state_notify_fd(in, units, adopt ? adopt->kept : NULL,
	                                           adopt ? adopt->nkept : 0)
	                   : -1;
	if (notify_fd >= 0)
		ucfg.notify_fd = &notify_fd;
	int r = units_new(loop, children, cells, &ucfg, &iu->units, &err);
	if (r < 0) {
		log_error("units: %s", err.msg);
		free(iu->cmdline);
		free(iu);
		return r;
	}
	units_set_keeper(iu->units, keeper);
	/* A killed kin's: its services adopted, then the boot; a re-exec's:
	 * the units as they were, no boot. */
	if (in) {
		const char *how = adopt ? "adopt" : "re-exec";
		iu->booted = !adopt;
		r = adopt ? units_adopt(iu->units, in, units, adopt->kept, adopt->nkept)
		          : units_restore(iu->units, in, units);
		if (r < 0)
			log_error("%s: the units' state does not read whole; %s", how,
			          "what was read is taken back");
		else
			log_info("%s: %d units taken back", how, r);
	}
	*ret = iu;
	return 0;
}

void init_units_boot(struct init_units *iu)
{
	struct err err = {0};
	if (!iu || iu->booted)
		return;
	iu->booted = true;
	if (units_boot(iu->units, &err) < 0)
		log_error("units: %s", err.msg);
}

void init_units_stop(struct init_units *iu, void (*done)(void *data), void *data)
{
	units_shutdown(iu->units, done, data);
}

struct units *init_units_lib(struct init_units *iu)
{
	return iu ? iu->units : NULL;
}

void init_units_free(struct init_units *iu)
{
	if (!iu)
		return;
	units_free(iu->units);
	free(iu->cmdline);
	free(iu);
}
