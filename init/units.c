/* units: the service manager (units/) in kin's loop — when it runs, from
 * where, and what services see (their environment, what conditions are
 * checked against). A host's init runs the root's units; any role runs
 * those of --unit-dir (and only those: a test's or an operator's own
 * directory, never the host's units by accident). */
#include "init/init.h"
#include "keep/keep.h"
#include "units/units.h"

#include <stdlib.h>
#include <string.h>

struct init_units {
	struct units *units;
	struct keep *keep;
	const struct init_config *cfg;
	enum init_role role;
	struct ev_loop *loop;
	struct child_table *children;
	struct init_cells *cells;
	bool host, failed;
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

/* A re-exec's units as they were (no boot), a killed kin's taken back
 * (then the boot), or none. */
static void units_take(struct init_units *iu, const struct keep_from *from)
{
	if (!from->record)
		return;
	iu->booted = from->how == KEEP_REEXEC;
	int r = from->how == KEEP_ADOPT
	            ? units_adopt(iu->units, from->in, from->record, from->kept, from->nkept)
	            : units_restore(iu->units, from->in, from->record);
	if (r < 0)
		log_error("%s: the units' state does not read whole; %s", from->how_name,
		          "what was read is taken back");
	else
		log_info("%s: %d units taken back", from->how_name, r);
}

static int units_keep_start(void *data, const struct keep_from *from)
{
	struct init_units *iu = data;
	struct cells *cells = init_cells_lib(iu->cells);
	if (!cells) {
		log_error("units: no cells here (cgroup2 missing?); services cannot run");
		iu->failed = true;
		return 0;
	}
	static char *const env[] = {(char *)UNITS_PATH, (char *)"LANG=C.UTF-8"};
	const struct init_config *cfg = iu->cfg;
	struct units_config ucfg = {
	    .root = "",
	    .extra_dirs = cfg->n_unit_dirs ? cfg->unit_dirs : NULL,
	    .default_target = cfg->default_target,
	    .log_dir = iu->host ? NULL : "",
	    .run_dir = cfg->unit_run_dir ? cfg->unit_run_dir
	               : iu->host        ? "/run/systemd"
	                                 : "/run/kin/units",
	    .cond = {.root = "",
	             .cmdline = iu->cmdline ? iu->cmdline : "",
	             .virtualization = iu->virt,
	             .container = iu->role != INIT_ROLE_MACHINE,
	             .caps = ~0ull,
	             .architecture = "x86-64"},
	    .env = env,
	    .nenv = ARRAY_SIZE(env),
	    .boot_wants = iu->wants,
	};
	struct err err = {0};
	int notify_fd = from->record
	                    ? units_state_notify_fd(from->in, from->record, from->kept, from->nkept)
	                    : -1;
	if (notify_fd >= 0)
		ucfg.notify_fd = &notify_fd;
	int r = units_new(iu->loop, iu->children, cells, &ucfg, &iu->units, &err);
	if (r < 0) {
		log_error("units: %s", err.msg);
		iu->failed = true;
		return 0;
	}
	struct cells_keeper buf;
	units_set_keeper(iu->units, init_keeper(iu->keep, &buf));
	units_take(iu, from);
	return 0;
}

static int units_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	struct init_units *iu = data;
	(void)err;
	if (iu->units)
		units_save(iu->units, w, tag);
	return 0;
}

static bool units_keep_settled(void *data, char *why, size_t size)
{
	struct init_units *iu = data;
	return !iu->units || units_settled(iu->units, why, size);
}

static size_t units_keep_children(void *data)
{
	struct init_units *iu = data;
	return iu->units ? units_children(iu->units) : 0;
}

/* A keeper started anew holds neither the notify socket nor the socket
 * units' fds. */
static void units_keep_keeper(void *data, const struct keep_keeper *k, bool fresh)
{
	struct init_units *iu = data;
	struct cells_keeper buf;
	if (iu->units && (fresh || !k))
		units_set_keeper(iu->units, k ? init_keeper(iu->keep, &buf) : NULL);
}

static void units_keep_free(void *data)
{
	init_units_free(data);
}

static const struct keep_part units_part = {.name = "the units",
                                            .tag = KEEP_TAG_UNITS,
                                            .level = KEEP_LEVEL_UNITS,
                                            .start = units_keep_start,
                                            .save = units_keep_save,
                                            .settled = units_keep_settled,
                                            .children = units_keep_children,
                                            .set_keeper = units_keep_keeper,
                                            .free = units_keep_free};

int init_units_new(struct keep *k, const struct init_config *cfg, enum init_role role,
                   struct ev_loop *loop, struct child_table *children, struct init_cells *cells,
                   struct init_units **ret)
{
	*ret = NULL;
	bool host = role == INIT_ROLE_MACHINE && host_has_units(cfg);
	if (!cfg->n_unit_dirs && !host)
		return 0;
	struct init_units *iu = calloc(1, sizeof(*iu));
	if (!iu)
		return -ENOMEM;
	*iu = (struct init_units){.keep = k,
	                          .cfg = cfg,
	                          .role = role,
	                          .loop = loop,
	                          .children = children,
	                          .cells = cells,
	                          .host = host};
	file_read_small("/proc/cmdline", 65536, &iu->cmdline, NULL);
	units_host_virt(iu->virt, sizeof(iu->virt), role == INIT_ROLE_MACHINE);
	if (host)
		units_host_getty(iu->getty, sizeof(iu->getty));
	if (iu->getty[0])
		iu->wants[0] = iu->getty;
	struct keep_part p = units_part;
	p.data = iu;
	int r = keep_register(k, &p);
	if (r < 0) {
		free(iu->cmdline);
		free(iu);
		return r;
	}
	*ret = iu;
	return 0;
}

bool init_units_failed(const struct init_units *iu)
{
	return iu && iu->failed;
}

void init_units_boot(struct init_units *iu)
{
	struct err err = {0};
	if (!iu || !iu->units || iu->booted)
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
	keep_unregister(iu->keep, iu);
	units_free(iu->units);
	free(iu->cmdline);
	free(iu);
}
