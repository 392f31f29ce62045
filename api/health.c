/* health: the kin.v1.Health service — is this kin alive (Check) and what
 * is it (Version). What only init knows comes in api_health_info; the
 * hostname and kernel come from uname(2) at each call (they can change). */
#include "api/api-int.h"
#include "keep/keep.h"

#include <string.h>
#include <sys/utsname.h>

struct api_health {
	struct api_health_info info;
	struct keep *keep; /* re-execs so far, and why the last fell back */
	struct api_binding binding;
};

static int serve_health_check(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const struct api_health_info *info = &((const struct api_health *)userdata)->info;
	Kin__V1__CheckResponse out = KIN__V1__CHECK_RESPONSE__INIT;
	(void)in;
	out.status = info->stopping && info->stopping(info->data)
	                 ? KIN__V1__CHECK_RESPONSE__SERVING_STATUS__STOPPING
	                 : KIN__V1__CHECK_RESPONSE__SERVING_STATUS__SERVING;
	return rpc_call_reply(call, &out.base);
}

static int serve_health_version(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const struct api_health_info *info = &((const struct api_health *)userdata)->info;
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
	const char *reexec_error = "";
	keep_reexec_count(((const struct api_health *)userdata)->keep, &out.reexecs, &reexec_error);
	out.reexec_error = (char *)reexec_error;
	return rpc_call_reply(call, &out.base);
}

static const struct api_method health_methods[] = {
    {serve_health_check, 0},
    {serve_health_version, 0},
};
static const struct api_handlers health_handlers = {&kin__v1__health__descriptor, health_methods,
                                                    ARRAY_SIZE(health_methods), NULL};

static int health_start(struct api *api, const struct api_config *cfg)
{
	_cleanup_free_ struct api_health *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->info = cfg->health;
	h->keep = cfg->keep;
	int r = api_bind(cfg->rpc, &h->binding, &health_handlers, h);
	if (r < 0)
		return r;
	api->health = TAKE_PTR(h);
	return 0;
}

static void health_free(struct api *api)
{
	if (api->health)
		api_binding_release(&api->health->binding);
	free(api->health);
	api->health = NULL;
}

const struct api_service api_service_health = {
    .name = "the Health service", .start = health_start, .free = health_free};
