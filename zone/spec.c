/* spec: a zone's spec, checked before zone_create has any side effect,
 * and the command line of the zone kin it becomes. See zone-int.h. */
#include "zone/zone-int.h"

#include <stdio.h>
#include <string.h>

/* A pod's sysctls: key=value, each of a namespace the zone has of its
 * own (never the parent's: those would change the host). */
static int sysctls_check(const struct zone_spec *spec, struct err *err)
{
	size_t n = 0;
	for (char *const *kv = spec->sysctls; kv && *kv; kv++, n++) {
		const char *eq = strchr(*kv, '=');
		bool net = str_startswith(*kv, "net.");
		bool ipc = str_startswith(*kv, "kernel.shm") || str_startswith(*kv, "kernel.msg") ||
		           str_startswith(*kv, "kernel.sem") || str_startswith(*kv, "fs.mqueue.");
		if (n == 64 || !eq || eq == *kv || eq - *kv > 200 || strstr(*kv, "..") ||
		    strchr(*kv, '/') || strchr(*kv, '\n'))
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "zone \"%s\": sysctl \"%.64s\": not key=value (at most 64)",
			               spec->name, *kv);
		if (!(net && (spec->net || spec->netns)) && !(ipc && !spec->host_ipc))
			return err_set(
			    err, -EINVAL, ERR_INVALID_ARGUMENT,
			    "zone \"%s\": sysctl \"%.64s\" is not of a namespace the zone "
			    "has of its own (net.* needs a network namespace, "
			    "kernel.shm/msg/sem and fs.mqueue.* an IPC one, not the host's)",
			    spec->name, *kv);
	}
	return 0;
}

int zone_spec_check(struct zones *z, const struct zone_spec *spec, struct err *err)
{
	if (!name_is_valid(spec->name))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "zone \"%.64s\": a name is 1-64 of [A-Za-z0-9_.-], not . or ..",
		               spec->name);
	if (!str_is_hostname(spec->name))
		return err_set(
		    err, -EINVAL, ERR_INVALID_ARGUMENT,
		    "zone \"%s\": the name is the zone's hostname and must be a valid one",
		    spec->name);
	if (zone_find(z, spec->name))
		return err_set(err, -EEXIST, ERR_ALREADY_EXISTS, "zone \"%s\" already exists",
		               spec->name);
	if (z->count >= ZONES_MAX)
		return err_set(err, -ENOSPC, ERR_RESOURCE_EXHAUSTED,
		               "zone \"%s\": this kin already runs %d zones", spec->name,
		               ZONES_MAX);
	if (z->depth + 1 > z->depth_max)
		return err_set(
		    err, -ELOOP, ERR_FAILED_PRECONDITION,
		    "zone \"%s\": depth limit reached (this kin is at depth %u, the limit "
		    "is %u)",
		    spec->name, z->depth, z->depth_max);
	if (spec->root) {
		if (spec->root[0] != '/' || strlen(spec->root) >= PATH_MAX - 64)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "zone \"%s\": root \"%s\" is not an absolute path",
			               spec->name, spec->root);
		/* Whether it is a directory is the zone's setup's first step
		 * (ZSTEP_ROOT_CHECK): a stat() here could hang PID 1 on a dead
		 * mount. */
	}
	if (spec->net && spec->netns)
		return err_set(
		    err, -EINVAL, ERR_INVALID_ARGUMENT,
		    "zone \"%s\": a network namespace of its own or one to join, not both",
		    spec->name);
	if (spec->netns && spec->netns[0] != '/')
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "zone \"%s\": netns \"%.200s\" is not an absolute path", spec->name,
		               spec->netns);
	if (spec->hostname && !str_is_hostname(spec->hostname))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "zone \"%s\": \"%.200s\" is not a valid hostname", spec->name,
		               spec->hostname);
	if (!spec->share_src != !spec->share_dst ||
	    (spec->share_src &&
	     (spec->share_src[0] != '/' || !str_startswith(spec->share_dst, "/run/") ||
	      strstr(spec->share_dst, "/..") || strlen(spec->share_dst) > PATH_MAX / 2)))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "zone \"%s\": a shared directory needs an absolute source and a "
		               "destination below /run",
		               spec->name);
	int r = sysctls_check(spec, err);
	if (r < 0)
		return r;
	int layers = !!spec->root_lowerdirs + !!spec->root_upperdir + !!spec->root_workdir;
	if (layers && (layers != 3 || !spec->root ||
	               strlen(spec->root_lowerdirs) + strlen(spec->root_upperdir) +
	                       strlen(spec->root_workdir) + 40 >
	                   ZONE_OVERLAY_MAX))
		return err_set(
		    err, -EINVAL, ERR_INVALID_ARGUMENT,
		    "zone \"%s\": an overlay root needs lower, upper and work directories "
		    "in under %d bytes",
		    spec->name, ZONE_OVERLAY_MAX);
	size_t n = 0;
	for (char *const *a = spec->argv; a && *a; a++)
		n++;
	if (n + 23 > ZONE_ARGS_MAX) /* ours, with --zone-max-depth and NULL */
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
		               "zone \"%s\": workload has more than %d arguments", spec->name,
		               ZONE_ARGS_MAX - 23);
	r = cell_limits_validate(&spec->limits, err);
	if (r < 0)
		return r;
	uint32_t slot;
	if (spec->net && !z->has_subnet)
		return err_set(err, -ENOENT, ERR_FAILED_PRECONDITION,
		               "zone \"%s\": this kin has no subnet for --net zones (its parent "
		               "delegated none)",
		               spec->name);
	if (spec->net && net_subnet_link_lowest(&z->subnet, &slot) < 0)
		return err_set(err, -ENOSPC, ERR_RESOURCE_EXHAUSTED,
		               "zone \"%s\": no free /30 left in the zones' subnet", spec->name);
	return 0;
}

void zone_spec_argv(const struct zones *z, const struct zone *x, const struct zone_spec *spec,
                    char depth[16], char depth_max[16], char *argv[ZONE_ARGS_MAX])
{
	size_t n = 0;
	snprintf(depth, 16, "%u", x->info.depth);
	snprintf(depth_max, 16, "%u", z->depth_max);
#define ARG(s) argv[n++] = (char *)(s)
	ARG("kin");
	ARG("init");
	ARG("--zone");
	ARG(x->info.name);
	ARG("--zone-depth");
	ARG(depth);
	ARG("--zone-max-depth"); /* the limit holds all the way down */
	ARG(depth_max);
	ARG("--rpc-fd");
	ARG("3");
	if (x->reconnect) {
		ARG("--parent-listen-fd");
		ARG("4");
	}
	if (z->log_level[0]) {
		ARG("--log-level");
		ARG(z->log_level);
	}
	if (z->image_store[0]) {
		ARG("--image-store");
		ARG(z->image_store);
	}
	if (x->info.subnet[0]) {
		ARG("--zone-subnet");
		ARG(x->info.subnet);
	}
	if (spec->net) {
		ARG("--net-addr");
		ARG(x->info.addr);
		ARG("--net-gw");
		ARG(x->info.gateway);
	}
	if (spec->argv && spec->argv[0]) {
		ARG("--");
		for (char *const *a = spec->argv; *a; a++)
			ARG(*a);
	}
	argv[n] = NULL;
#undef ARG
}
