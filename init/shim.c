/* shim: kin run by containerd as its runtime v2 shim. start and delete are
 * shim/'s and end there; the daemon start leaves is init's daemon loop,
 * with its RPC socket, zone logs and cgroup in the pod's state directory
 * and containerd's Task service (shim/) beside its services, wired here
 * to api's Zones service, which makes its pod's zone. */
#include "init/init.h"
#include "api/api.h"
#include "shim/shim.h"

#include <stdio.h>
#include <string.h>

int init_shim_main(int argc, char **argv)
{
	static struct shim_serve serve; /* the services keep pointers into it */
	static char zone_dir[PATH_MAX + 8], vm_dir[PATH_MAX + 8];
	int r = shim_main(argc, argv, &serve);
	if (r != SHIM_MAIN_SERVE)
		return r;
	struct init_config cfg;
	init_config_defaults(&cfg);
	cfg.exec_ns = now_monotonic_ns();
	log_set_level(LOG_INFO_);
	str_copy(cfg.rpc.socket, sizeof(cfg.rpc.socket), serve.kin_socket);
	snprintf(zone_dir, sizeof(zone_dir), "%s/zones", serve.state);
	cfg.zone_dir = zone_dir;
	snprintf(vm_dir, sizeof(vm_dir), "%s/" SHIM_VM_DIR, serve.state);
	cfg.vm_dir = vm_dir;
	cfg.cgroup = serve.cgroup;
	cfg.shim = &serve;
	/* containerd stops a shim with Shutdown; SIGTERM (a stop by hand)
	 * ends it the same way, killing the pod. */
	r = init_run(&cfg, INIT_ROLE_DAEMON);
	shim_cleanup(&serve);
	return r;
}

struct shim_task *init_shim_task_start(const struct shim_task_config *cfg, struct api *api)
{
	struct shim_task_config c = *cfg;
	struct shim_task *task;
	c.pods = (struct shim_pod_ops){.create = api_pod_create,
	                               .create_vm = api_pod_create_vm,
	                               .own = api_pod_own,
	                               .info = api_pod_info,
	                               .end = api_pod_end,
	                               .freeze = api_pod_freeze,
	                               .impl = api};
	int r = shim_task_start(&c, &task);
	if (r < 0) {
		log_error("rpc: cannot register the Task service (containerd shim): %s",
		          strerror(-r));
		return NULL;
	}
	return task;
}
