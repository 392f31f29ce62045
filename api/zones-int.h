/* zones-int: what the Zones service's files share (api/zones.c, the
 * service; api/zones_state.c, its re-exec and adoption); never included
 * outside api/ and its tests. */
#pragma once

#include "api/api-int.h"
#include "zone/zone.h"

#define ZONE_STOP_WAITERS_MAX 8
#define ZONE_LIMITS_MAX       32

struct zrec {
	struct list_node node; /* in api_zones.recs, oldest first */
	struct api_zones *svc;
	char name[NAME_MAX_LEN + 1];
	bool vm;
	bool checking; /* Health/Check in flight through the new route */
	bool ready;    /* it answered */
	bool gone;     /* nothing of it left; freed once not checking */
	int exit_status;
	uint64_t started_ns;
	struct rpc_call *create_call;    /* namespaces: answered when ready */
	struct api_container *container; /* a zone from an image: its layer, released with it */
	struct api_zone_owner owner;     /* a zone this kin made for itself (a shim's pod) */
	struct rpc_call *waiters[ZONE_STOP_WAITERS_MAX];
};

struct api_zones {
	struct rpc_server *rpc;
	struct zones *zones; /* NULL: namespace zones unavailable (why) */
	struct api_vm *vms;
	struct api_images *images;
	char why[ERR_MSG_MAX];
	unsigned depth, depth_max;
	void (*changed)(void *data); /* api_config's: a zone now runs (a file state names it) */
	void *changed_data;
	struct list_node recs;
	struct api_binding binding;
};

/* The record of name, or NULL. */
struct zrec *api_zrec_find(struct api_zones *svc, const char *name);
/* A new record, listed last. NULL: out of memory. */
struct zrec *api_zrec_new(struct api_zones *svc, const char *name, bool vm);
/* Unlisted and freed, its container released. */
void api_zrec_free(struct zrec *r);
/* A namespace zone's kin runs (result 0: routed, then asked Health/Check
 * until ready) or its start failed (nothing of it left). */
void api_zrec_created(int result, const struct err *err, void *data);
/* A VM zone's VMM ended (api_vm_exited_fn; data: the record). */
struct vm_info;
void api_zrec_vm_exited(const struct vm_info *info, const struct err *start_err, void *data);
