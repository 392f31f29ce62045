/* system: kin.v1.System — Poweroff and Reboot. The answer is queued first,
 * then init's stop runs (the same sequence as the signal table), so the
 * caller hears what happens before the connections go. */
#include "api/api-int.h"

#include <string.h>

static int system_power(struct rpc_call *call, bool reboot, const struct rpc_system_ops *ops)
{
	Kin__V1__PowerResponse out = KIN__V1__POWER_RESPONSE__INIT;
	const char *action = NULL;
	/* Ask first whether it can be done; the stop begins once answered. */
	int r = ops->stop(reboot, true, &action, ops->data);
	if (r < 0)
		return rpc_call_fail(call, RPC_FAILED_PRECONDITION,
		                     "%s: not for a %s kin: it can only stop (use poweroff)",
		                     reboot ? "reboot" : "poweroff", ops->role);
	out.action = (char *)action;
	out.role = (char *)ops->role;
	r = rpc_call_reply(call, &out.base);
	ops->stop(reboot, false, &action, ops->data);
	(void)r; /* answered, or the caller is gone: stop either way */
	return 0;
}

static int system_poweroff(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	(void)in;
	return system_power(call, false, userdata);
}

static int system_reboot(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	(void)in;
	return system_power(call, true, userdata);
}

int rpc_system_register(struct rpc_server *s, const struct rpc_system_ops *ops)
{
	/* Static: the server keeps the table by pointer; one System per process. */
	static struct rpc_system_ops saved;
	static const struct rpc_method methods[] = {
	    {"kin.v1.System", "Poweroff", &kin__v1__poweroff_request__descriptor, system_poweroff,
	     0, &saved},
	    {"kin.v1.System", "Reboot", &kin__v1__reboot_request__descriptor, system_reboot, 0,
	     &saved},
	};
	saved = *ops;
	return rpc_server_register(s, methods, ARRAY_SIZE(methods));
}
