/* system: kin.v1.System — Poweroff and Reboot: the answer is queued first,
 * then init's stop runs (the same sequence as the signal table), so the
 * caller hears what happens before the connections go. ReloadPolicy: init
 * re-reads the authorization policy. Reexec: the handover's (keep_reexec_*),
 * answered as kin is about to exec. */
#include "api/api-int.h"
#include "keep/keep.h"
#include "lib/state.h"

#include <string.h>

struct api_system {
	struct api_system_ops ops;
	struct keep *keep;
	struct api_binding binding;
};

static int system_power(struct rpc_call *call, bool reboot, const struct api_system_ops *ops)
{
	Kin__V1__PowerResponse out = KIN__V1__POWER_RESPONSE__INIT;
	const char *action = NULL;
	/* Ask first whether it can be done; the stop begins once answered. */
	int r = ops->stop(reboot, true, &action, ops->data);
	if (r < 0)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "%s: not for a %s kin: it can only stop (use poweroff)",
		                     reboot ? "reboot" : "poweroff", ops->role);
	out.action = (char *)action;
	out.role = (char *)ops->role;
	r = rpc_call_reply(call, &out.base);
	ops->stop(reboot, false, &action, ops->data);
	(void)r; /* answered, or the caller is gone: stop either way */
	return 0;
}

static int serve_system_poweroff(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	(void)in;
	return system_power(call, false, &((const struct api_system *)userdata)->ops);
}

static int serve_system_reboot(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	(void)in;
	return system_power(call, true, &((const struct api_system *)userdata)->ops);
}

static int serve_system_reload_policy(struct rpc_call *call, const ProtobufCMessage *in,
                                      void *userdata)
{
	const struct api_system_ops *ops = &((const struct api_system *)userdata)->ops;
	struct err err = {0};
	const char *source = "";
	size_t rules = 0;
	(void)in;
	if (!ops->reload_policy)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "this %s kin has no authorization policy to reload",
		                     ops->role);
	int r = ops->reload_policy(&source, &rules, &err, ops->data);
	if (r < 0)
		return rpc_call_fail_err(call, &err, r);
	Kin__V1__ReloadPolicyResponse out = KIN__V1__RELOAD_POLICY_RESPONSE__INIT;
	out.source = (char *)source;
	out.rules = (uint32_t)rules;
	return rpc_call_reply(call, &out.base);
}

static void reexec_done(int result, const struct err *err, const char *binary, uint64_t reexecs,
                        void *call_data)
{
	struct rpc_call *call = call_data;
	if (result < 0) {
		rpc_call_fail_err(call, err, result);
		return;
	}
	Kin__V1__ReexecResponse out = KIN__V1__REEXEC_RESPONSE__INIT;
	out.binary = (char *)binary;
	out.state_format = STATE_FORMAT;
	out.reexecs = reexecs;
	rpc_call_reply(call, &out.base);
}

static void reexec_cancelled(struct rpc_call *call, void *data)
{
	const struct api_system *sys = data;
	keep_reexec_cancel(sys->keep, call);
}

static int serve_system_reexec(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const struct api_system *sys = userdata;
	const Kin__V1__ReexecRequest *req = (const Kin__V1__ReexecRequest *)in;
	struct err err = {0};
	if (!sys->keep)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "a %s kin does not re-execute itself", sys->ops.role);
	int r = keep_reexec_begin(sys->keep, req->binary, reexec_done, call, &err);
	if (r < 0)
		return rpc_call_fail_err(call, &err, r);
	rpc_call_on_cancel(call, reexec_cancelled, userdata);
	return 0;
}

static const struct api_method system_methods[] = {
    {serve_system_poweroff, 0},
    {serve_system_reboot, 0},
    {serve_system_reload_policy, 0},
    {serve_system_reexec, 0},
};
static const struct api_handlers system_handlers = {&kin__v1__system__descriptor, system_methods,
                                                    ARRAY_SIZE(system_methods), NULL};

static int system_start(struct api *api, const struct api_config *cfg)
{
	_cleanup_free_ struct api_system *sys = calloc(1, sizeof(*sys));
	if (!sys)
		return -ENOMEM;
	sys->ops = cfg->system;
	sys->keep = cfg->keep;
	int r = api_bind(cfg->rpc, &sys->binding, &system_handlers, sys);
	if (r < 0)
		return r;
	api->system = TAKE_PTR(sys);
	return 0;
}

static void system_free(struct api *api)
{
	if (api->system)
		api_binding_release(&api->system->binding);
	free(api->system);
	api->system = NULL;
}

const struct api_service api_service_system = {
    .name = "the System service", .start = system_start, .free = system_free};
