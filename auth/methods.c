/* methods: the one table of the role each kin.v1 method needs. A method
 * not in it needs admin, so a method added to the protos is safe until
 * someone classifies it; the unit test fails until they do. containerd's
 * Task API (the shim's services) is left out on purpose: only containerd,
 * a superuser peer, calls it. */
#include "auth/auth-int.h"

#include <string.h>

static const struct {
	const char *service, *method;
	enum auth_role role;
} methods[] = {
    {"kin.v1.Health", "Check", AUTH_READ},
    {"kin.v1.Health", "Version", AUTH_READ},

    {"kin.v1.Cells", "Create", AUTH_ADMIN},
    {"kin.v1.Cells", "Update", AUTH_ADMIN},
    {"kin.v1.Cells", "List", AUTH_READ},
    {"kin.v1.Cells", "Show", AUTH_READ},
    {"kin.v1.Cells", "Freeze", AUTH_OPERATE},
    {"kin.v1.Cells", "Thaw", AUTH_OPERATE},
    {"kin.v1.Cells", "Kill", AUTH_OPERATE},
    {"kin.v1.Cells", "Delete", AUTH_ADMIN},

    {"kin.v1.Exec", "Start", AUTH_OPERATE},
    {"kin.v1.Exec", "Signal", AUTH_OPERATE},
    {"kin.v1.Exec", "Stop", AUTH_OPERATE},
    {"kin.v1.Exec", "Wait", AUTH_READ},
    {"kin.v1.Exec", "Status", AUTH_READ},
    {"kin.v1.Exec", "List", AUTH_READ},
    {"kin.v1.Exec", "Delete", AUTH_OPERATE},
    {"kin.v1.Exec", "Logs", AUTH_READ},
    {"kin.v1.Exec", "Stdin", AUTH_OPERATE},
    {"kin.v1.Exec", "Resize", AUTH_OPERATE},
    /* Attached is reading and typing: operating it. */
    {"kin.v1.Exec", "Attach", AUTH_OPERATE},

    {"kin.v1.Events", "Subscribe", AUTH_READ},

    {"kin.v1.Images", "Import", AUTH_ADMIN},
    {"kin.v1.Images", "List", AUTH_READ},
    {"kin.v1.Images", "Inspect", AUTH_READ},
    {"kin.v1.Images", "Remove", AUTH_ADMIN},

    {"kin.v1.System", "Poweroff", AUTH_ADMIN},
    {"kin.v1.System", "Reboot", AUTH_ADMIN},
    {"kin.v1.System", "ReloadPolicy", AUTH_ADMIN},
    {"kin.v1.System", "Reexec", AUTH_ADMIN},

    /* Cancel only ever cancels the caller's own call on its connection. */
    {"kin.v1.Route", "Cancel", AUTH_READ},

    {"kin.v1.Vm", "Start", AUTH_ADMIN},
    {"kin.v1.Vm", "List", AUTH_READ},
    {"kin.v1.Vm", "Status", AUTH_READ},
    {"kin.v1.Vm", "Stop", AUTH_ADMIN},

    {"kin.v1.Zones", "Create", AUTH_ADMIN},
    {"kin.v1.Zones", "List", AUTH_READ},
    {"kin.v1.Zones", "Status", AUTH_READ},
    {"kin.v1.Zones", "Stop", AUTH_ADMIN},
    {"kin.v1.Zones", "Kill", AUTH_ADMIN},

    /* Services: starting and stopping is operating them; changing which
     * start at boot (links, masks) and rereading the files is admin. */
    {"kin.v1.Units", "List", AUTH_READ},
    {"kin.v1.Units", "Status", AUTH_READ},
    {"kin.v1.Units", "FileState", AUTH_READ},
    {"kin.v1.Units", "Cat", AUTH_READ},
    {"kin.v1.Units", "Logs", AUTH_READ},
    {"kin.v1.Units", "Job", AUTH_OPERATE},
    {"kin.v1.Units", "DaemonReload", AUTH_ADMIN},
    {"kin.v1.Units", "Enable", AUTH_ADMIN},
    {"kin.v1.Units", "Disable", AUTH_ADMIN},
    {"kin.v1.Units", "Mask", AUTH_ADMIN},
    {"kin.v1.Units", "Unmask", AUTH_ADMIN},
};

static int method_find(const char *service, const char *method)
{
	if (!service || !method)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (strcmp(methods[i].service, service) == 0 &&
		    strcmp(methods[i].method, method) == 0)
			return (int)i;
	return -1;
}

enum auth_role auth_method_role(const char *service, const char *method)
{
	int i = method_find(service, method);
	return i < 0 ? AUTH_ADMIN : methods[i].role;
}

bool auth_method_known(const char *service, const char *method)
{
	return method_find(service, method) >= 0;
}

bool auth_method_changes(const char *service, const char *method)
{
	return auth_method_role(service, method) > AUTH_READ;
}

const char *auth_role_name(enum auth_role role)
{
	switch (role) {
	case AUTH_READ:
		return "read";
	case AUTH_OPERATE:
		return "operate";
	case AUTH_ADMIN:
		return "admin";
	case AUTH_NONE:
		break;
	}
	return "none";
}
