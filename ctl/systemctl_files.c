/* systemctl_files: what `systemctl` does to the unit files of a root no
 * kin runs on (a chroot during a package install, an image build,
 * --root=DIR), through units/install.c: ctl_systemctl_main's env when kin
 * is called as systemctl (init/main.c). */
#include "ctl/ctl.h"
#include "units/units.h"

#include <string.h>

static int paths_of(const char *root, struct unit_paths *p, struct err *err)
{
	int r = unit_paths_init(p, root && strcmp(root, "/") ? root : "");
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "--root=%s: %s", root, strerror(-r));
	return 0;
}

static int offline_files(const char *root, const char *verb, const char *name,
                         ctl_unit_change_fn change, void *data, struct err *err)
{
	struct unit_paths p;
	int r = paths_of(root, &p, err);
	if (r < 0)
		return r;
	if (!strcmp(verb, "enable"))
		return unit_enable(&p, name, change, data, err);
	if (!strcmp(verb, "disable"))
		return unit_disable(&p, name, change, data, err);
	if (!strcmp(verb, "mask") || !strcmp(verb, "unmask"))
		return unit_mask(&p, name, !strcmp(verb, "mask"), change, data, err);
	return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: not a unit file verb", verb);
}

static int offline_file_state(const char *root, const char *name, char *buf, size_t size)
{
	struct unit_paths p;
	int r = paths_of(root, &p, NULL);
	return r < 0 ? r : unit_file_state(&p, name, buf, size);
}

const struct ctl_systemctl_env ctl_systemctl_files = {
    .version = KIN_VERSION,
    .files = offline_files,
    .file_state = offline_file_state,
};
