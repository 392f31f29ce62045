/* health: the kin.v1.Health service — is this kin alive (Check) and what
 * is it (Version). What only init knows comes in rpc_health_info; the
 * hostname and kernel come from uname(2) at each call (they can change). */
#include "api/api-int.h"

#include <string.h>
#include <sys/utsname.h>

static int health_check(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const struct rpc_health_info *info = userdata;
	Kin__V1__CheckResponse out = KIN__V1__CHECK_RESPONSE__INIT;
	(void)in;
	out.status = info->stopping && info->stopping(info->data)
	                 ? KIN__V1__CHECK_RESPONSE__SERVING_STATUS__STOPPING
	                 : KIN__V1__CHECK_RESPONSE__SERVING_STATUS__SERVING;
	return rpc_call_reply(call, &out.base);
}

static int health_version(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const struct rpc_health_info *info = userdata;
	Kin__V1__VersionResponse out = KIN__V1__VERSION_RESPONSE__INIT;
	struct utsname u;
	(void)in;
	if (uname(&u) < 0)
		return -errno;
	out.version = (char *)(info->version ? info->version : "");
	out.role = (char *)(info->role ? info->role : "");
	out.zone = (char *)(info->zone ? info->zone : "");
	out.hostname = u.nodename;
	out.kernel_release = u.release;
	out.uptime_ns = now_monotonic_ns() - info->started_ns;
	out.pid = (uint32_t)getpid();
	return rpc_call_reply(call, &out.base);
}

int rpc_health_register(struct rpc_server *s, const struct rpc_health_info *info)
{
	/* Static: the server keeps the table by pointer; one Health per process. */
	static struct rpc_health_info saved;
	static struct rpc_method methods[] = {
	    {"kin.v1.Health", "Check", &kin__v1__check_request__descriptor, health_check, 0,
	     &saved},
	    {"kin.v1.Health", "Version", &kin__v1__version_request__descriptor, health_version, 0,
	     &saved},
	};
	saved = *info;
	return rpc_server_register(s, methods, ARRAY_SIZE(methods));
}
