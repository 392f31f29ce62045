/* auth: init's side of authorization — the policy kin was given (its
 * file, and kin.rpc.uids=/gids= as rules), installed as the RPC server's
 * guard, re-read on SIGHUP and System/ReloadPolicy, and the audit line of
 * every change and every denial. The model itself is auth/; rpc/ asks the
 * guard about each request without knowing what a policy is. */
#include "init/init.h"
#include "auth/auth.h"
#include "rpc/rpc.h"

#include <string.h>

struct init_auth {
	const struct init_rpc_config *cfg;
	struct auth_policy *policy;
	struct auth_audit audit;
};

static const char *transport_name(const struct rpc_peer *p)
{
	switch (p->transport) {
	case RPC_TRANSPORT_UNIX:
		return "unix";
	case RPC_TRANSPORT_VSOCK:
		return "vsock";
	case RPC_TRANSPORT_TLS:
		return "tls";
	default:
		return "channel";
	}
}

static void peer_to_auth(const struct rpc_peer *rp, struct auth_peer *ret)
{
	*ret = (struct auth_peer){.transport = transport_name(rp), .superuser = rp->superuser};
	if (rp->transport == RPC_TRANSPORT_UNIX) {
		ret->has_ids = true;
		ret->uid = rp->uid;
		ret->gid = rp->gid;
		for (size_t i = 0; i < rp->n_groups && i < AUTH_GROUPS_MAX; i++)
			ret->groups[ret->n_groups++] = rp->groups[i];
	}
	for (size_t i = 0; i < rp->n_names && i < AUTH_NAMES_MAX; i++)
		ret->names[ret->n_names++] = rp->names[i];
}

static void audit(struct init_auth *a, const struct rpc_call_info *info, int code, bool denial)
{
	struct auth_peer p;
	char who[AUTH_NAME_MAX + 8], object[160];
	peer_to_auth(info->peer, &p);
	auth_peer_name(&p, who, sizeof(who));
	auth_request_object(info->payload, info->payload_len, object, sizeof(object));
	struct auth_audit_entry e = {.who = who,
	                             .via = p.transport,
	                             .service = info->service,
	                             .method = info->method,
	                             .target = info->target ? info->target : "",
	                             .object = object,
	                             .code = code,
	                             .denial = denial};
	auth_audit_log(&a->audit, &e, now_monotonic_ns());
}

static int guard_admit(const struct rpc_call_info *info, struct err *err, void *data)
{
	struct init_auth *a = data;
	struct auth_peer p;
	/* Every call passes here: a superuser needs no policy walk. */
	if (info->peer->superuser)
		return auth_method_changes(info->service, info->method) ? 1 : 0;
	peer_to_auth(info->peer, &p);
	int r = auth_check(a->policy, &p, info->service, info->method, info->target, err);
	if (r < 0) {
		audit(a, info, err->code ? err->code : ERR_PERMISSION_DENIED, true);
		return r;
	}
	return auth_method_changes(info->service, info->method) ? 1 : 0;
}

static void guard_ended(const struct rpc_call_info *info, int code, void *data)
{
	audit(data, info, code, false);
}

/* The policy file (if any) and the shorthand rules, as one policy. */
static int policy_build(const struct init_rpc_config *cfg, struct auth_policy **ret,
                        struct err *err)
{
	const struct auth_policy_sources src = {.file = cfg->policy,
	                                        .uids = cfg->uids,
	                                        .n_uids = cfg->n_uids,
	                                        .gids = cfg->gids,
	                                        .n_gids = cfg->n_gids};
	return auth_policy_build(&src, ret, err);
}

int init_auth_check(const struct init_rpc_config *cfg, struct err *err)
{
	struct auth_policy *p = NULL;
	int r = policy_build(cfg, &p, err);
	auth_policy_free(p);
	return r;
}

bool init_auth_socket_open(const struct init_rpc_config *cfg)
{
	return cfg->policy[0] || cfg->n_uids || cfg->n_gids;
}

int init_auth_start(const struct init_rpc_config *cfg, struct rpc_server *rpc,
                    struct init_auth **ret)
{
	struct err err = {0};
	struct init_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->cfg = cfg;
	int r = policy_build(cfg, &a->policy, &err);
	if (r < 0) {
		/* Nobody but root and kin's own uid gets in: the safe side. */
		log_error("rpc: policy refused, only root and kin's own uid may call: %s",
		          err.msg[0] ? err.msg : strerror(-r));
		if (auth_policy_new(&a->policy) < 0) {
			free(a);
			return -ENOMEM;
		}
	} else if (cfg->policy[0]) {
		log_info("rpc: policy %s: %zu rules", cfg->policy, auth_policy_count(a->policy));
	}
	rpc_server_set_guard(
	    rpc, &(struct rpc_guard){.admit = guard_admit, .ended = guard_ended, .data = a});
	*ret = a;
	return r < 0 ? r : 0;
}

int init_auth_reload(struct init_auth *a, const char **ret_source, size_t *ret_rules,
                     struct err *err)
{
	struct auth_policy *p = NULL;
	int r = policy_build(a->cfg, &p, err);
	if (ret_source)
		*ret_source = a->cfg->policy;
	if (r < 0) {
		log_error("rpc: policy reload refused, the old one stays: %s", err->msg);
		if (!err->code)
			err->code = ERR_INVALID_ARGUMENT;
		return r;
	}
	auth_policy_free(a->policy);
	a->policy = p;
	if (ret_rules)
		*ret_rules = auth_policy_count(p);
	log_info("rpc: policy %s reloaded: %zu rules",
	         a->cfg->policy[0] ? a->cfg->policy : "(none)", auth_policy_count(p));
	return 0;
}

/* SIGHUP: a reload with no caller; audited as the signal's (the RPC's
 * own line comes from the guard). */
void init_auth_reload_signal(struct init_auth *a)
{
	struct err err = {0};
	int r = init_auth_reload(a, NULL, NULL, &err);
	struct auth_audit_entry e = {.who = "signal",
	                             .via = "signal",
	                             .service = "SIGHUP",
	                             .method = "policy-reload",
	                             .target = "",
	                             .object = a->cfg->policy,
	                             .code = r < 0 ? (err.code ? err.code : ERR_INVALID_ARGUMENT)
	                                           : ERR_OK};
	auth_audit_log(&a->audit, &e, now_monotonic_ns());
}

void init_auth_tick(struct init_auth *a)
{
	if (a)
		auth_audit_tick(&a->audit, now_monotonic_ns());
}

void init_auth_free(struct init_auth *a)
{
	if (!a)
		return;
	auth_audit_tick(&a->audit, UINT64_MAX);
	auth_policy_free(a->policy);
	free(a);
}
