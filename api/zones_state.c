/* zones_state: the Zones service's records across a re-exec of kin and
 * after a kill (a participant of the handover, keep/keep.h): namespace zones go
 * through zone/, VM zones' VMs through the Vm service (restored first,
 * bound to their zones again here), zones from images with their
 * containers. */
#include "api/zones-int.h"
#include "lib/state.h"

#include <stdio.h>
#include <string.h>

enum { ZA_ZONES = 1, ZA_NOT_READY, ZA_CONTAINER, ZA_VM_ZONE };
enum { ZC_NAME = 1, ZC_CONTAINER };

void api_zones_keep_pipes(struct api_zones *svc)
{
	if (svc)
		zones_keep_all(svc->zones);
}

int api_zones_own(struct api_zones *svc, const char *name, const struct api_zone_owner *owner)
{
	struct zrec *r = svc ? api_zrec_find(svc, name) : NULL;
	if (!r || r->gone)
		return -ENOENT;
	r->owner = *owner;
	r->owner.ready = NULL; /* it was, before the re-exec */
	return 0;
}

bool api_zones_settled(const struct api_zones *svc, char *why, size_t size)
{
	const struct zrec *r;
	if (!svc)
		return true;
	list_for_each(r, &svc->recs, node) {
		bool waited = r->create_call || r->checking || (!r->gone && r->owner.ready);
		for (size_t i = 0; i < ZONE_STOP_WAITERS_MAX; i++)
			waited = waited || r->waiters[i];
		if (waited) {
			snprintf(why, size, "zone \"%s\" is %s", r->name,
			         r->gone ? "being cleaned up" : "starting or stopping");
			return false;
		}
	}
	return !svc->zones || zones_settled(svc->zones, why, size);
}

size_t api_zones_children(const struct api_zones *svc)
{
	return svc && svc->zones ? zones_children(svc->zones) : 0;
}

/* A zone from an image: its name and container, as a record. */
static void layer_save(const struct zrec *r, struct state_w *w)
{
	if (r->gone || !r->container)
		return;
	size_t at = state_open(w, ZA_CONTAINER);
	state_put_str(w, ZC_NAME, r->name);
	api_container_save(r->container, w, ZC_CONTAINER);
	state_close(w, at);
}

void api_zones_save(struct api_zones *svc, struct state_w *w, uint16_t tag)
{
	if (!svc)
		return;
	size_t at = state_open(w, tag);
	if (svc->zones)
		zones_save(svc->zones, w, ZA_ZONES);
	const struct zrec *r;
	list_for_each(r, &svc->recs, node) {
		if (!r->gone && !r->ready)
			state_put_str(w, ZA_NOT_READY, r->name);
		if (!r->gone && r->vm) /* its VM goes along with the VMs */
			state_put_str(w, ZA_VM_ZONE, r->name);
		layer_save(r, w);
	}
	state_close(w, at);
}

/* A zone from an image: its container again (the zone kin runs on in its
 * root either way; without it the layer is not removed when it ends). */
static void container_back(struct api_zones *svc, const struct state_field *f, const char *how)
{
	struct state_r rr;
	struct state_field g, kf = {0};
	char name[NAME_MAX_LEN + 1] = "";
	struct err err = {0};
	struct zrec *r = NULL;
	int e;
	state_get_record(f, &rr);
	while ((e = state_next(&rr, &g)) > 0) {
		if (g.tag == ZC_NAME)
			e = state_get_str(&g, name, sizeof(name));
		else if (g.tag == ZC_CONTAINER)
			kf = g;
		if (e < 0)
			break;
	}
	if (e >= 0 && kf.tag && !api_zrec_find(svc, name) && !strcmp(how, "adopt")) {
		/* A zone that was not adopted (it is removed): its layer too. */
		struct api_container *k = NULL;
		if (api_container_restore(svc->images, &kf, &k, &err) < 0) {
			log_error("adopt: zone \"%s\": its writable layer is not removed: %s", name,
			          err.msg);
			return;
		}
		log_info("adopt: zone \"%s\" is not adopted: its writable layer %s is removed",
		         name, k->dir);
		api_container_release(k);
		return;
	}
	if (e < 0 || !kf.tag || !(r = api_zrec_find(svc, name)) || r->container)
		e = err_set(&err, -EBADMSG, ERR_INTERNAL, "%s",
		            !r ? "no such zone was taken over" : "its record does not read");
	else
		e = api_container_restore(svc->images, &kf, &r->container, &err);
	if (e < 0)
		log_error("%s: zone \"%s\": its container is not taken over: %s", how, name,
		          err.msg);
}

static void rec_restored(const struct zone_info *info, void *data)
{
	struct api_zones *svc = data;
	struct zrec *r = api_zrec_new(svc, info->name, false);
	if (!r) { /* listed nowhere, so not left running */
		log_error("re-exec: zone \"%s\": out of memory; killed", info->name);
		zone_kill(svc->zones, info->name, NULL);
		return;
	}
	r->started_ns = info->started_ns;
	r->ready = rpc_route_state(svc->rpc, info->name) == RPC_ROUTE_READY;
}

/* A VM zone: its record again, its VM (restored by the Vm service) its
 * own again; one whose VM did not come back is not listed. */
static int vm_zone_back(struct api_zones *svc, const char *name, const char *how)
{
	struct zrec *r = api_zrec_find(svc, name) ? NULL : api_zrec_new(svc, name, true);
	if (!r || api_vm_own(svc->vms, name, api_zrec_vm_exited, r) < 0) {
		log_error("%s: VM zone \"%s\" cannot be taken over: %s", how, name,
		          r ? "its VM was not" : "out of memory or a second zone of that name");
		if (r)
			api_zrec_free(r);
		else
			api_vm_kill_as(svc->vms, name);
		return 0;
	}
	r->ready = rpc_route_state(svc->rpc, name) == RPC_ROUTE_READY;
	return 1;
}

int api_zones_restore(struct api_zones *svc, struct state_in *in, const struct state_field *f)
{
	struct state_r rr;
	struct state_field g;
	int e, n = 0;
	if (!svc)
		return -ENODEV;
	state_get_record(f, &rr);
	while ((e = state_next(&rr, &g)) > 0)
		if (g.tag == ZA_ZONES && n == 0 && svc->zones &&
		    (n = zones_restore(svc->zones, in, &g)) > 0)
			zone_foreach(svc->zones, rec_restored, svc);
	n = n < 0 ? 0 : n;
	state_get_record(f, &rr);
	while (state_next(&rr, &g) > 0) {
		char name[NAME_MAX_LEN + 1];
		if (g.tag == ZA_VM_ZONE && state_get_str(&g, name, sizeof(name)) == 0)
			n += vm_zone_back(svc, name, "re-exec");
	}
	state_get_record(f, &rr);
	while (state_next(&rr, &g) > 0) {
		char name[NAME_MAX_LEN + 1];
		struct zrec *r;
		if (g.tag == ZA_NOT_READY && state_get_str(&g, name, sizeof(name)) == 0 &&
		    (r = api_zrec_find(svc, name)))
			r->ready = false;
		else if (g.tag == ZA_CONTAINER)
			container_back(svc, &g, "re-exec");
	}
	return e < 0 ? e : n;
}

static void rec_adopted(const struct zone_info *info, void *data)
{
	struct api_zones *svc = data;
	struct zrec *r =
	    api_zrec_find(svc, info->name) ? NULL : api_zrec_new(svc, info->name, false);
	if (!r) { /* listed nowhere, so not left running */
		log_error("adopt: zone \"%s\": out of memory; killed", info->name);
		zone_kill(svc->zones, info->name, NULL);
		return;
	}
	r->started_ns = info->started_ns;
	api_zrec_created(0, NULL, r); /* routed, then asked Health/Check: ready */
}

int api_zones_adopt(struct api_zones *svc, const struct state_field *f, int *kept, size_t nkept)
{
	struct state_r rr;
	struct state_field g, zf = {0};
	int n;
	if (!svc || !svc->zones) {
		if (f)
			log_error("adopt: zones are not available here (%s): the cells of a killed "
			          "kin's zones are left",
			          svc ? svc->why : "no Zones service");
		return 0;
	}
	if (f) {
		state_get_record(f, &rr);
		while (state_next(&rr, &g) > 0)
			if (g.tag == ZA_ZONES && !zf.tag)
				zf = g;
	}
	n = zones_adopt(svc->zones, zf.tag ? &zf : NULL, kept, nkept);
	if (n > 0)
		zone_foreach(svc->zones, rec_adopted, svc);
	if (!f)
		return n;
	state_get_record(f, &rr);
	while (state_next(&rr, &g) > 0) {
		char name[NAME_MAX_LEN + 1];
		if (g.tag == ZA_CONTAINER)
			container_back(svc, &g, "adopt");
		else if (g.tag == ZA_VM_ZONE && state_get_str(&g, name, sizeof(name)) == 0)
			n += vm_zone_back(svc, name, "adopt");
	}
	return n;
}

/* The zones as a participant of the handover: after the VMs (a VM zone's
 * VM is bound to its zone again here). */
static int zones_keep_start(void *data, const struct keep_from *from)
{
	int n = 0;
	if (from->how == KEEP_REEXEC && from->record)
		n = api_zones_restore(data, from->in, from->record);
	else if (from->how == KEEP_ADOPT)
		n = api_zones_adopt(data, from->record, from->kept, from->nkept);
	if (n > 0)
		log_info("%s: %d zones %s", from->how_name, n,
		         from->how == KEEP_ADOPT ? "adopted" : "taken over");
	return n < 0 ? n : 0;
}

static int zones_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	(void)err;
	api_zones_save(data, w, tag);
	return 0;
}

static bool zones_keep_settled(void *data, char *why, size_t size)
{
	return api_zones_settled(data, why, size);
}

static size_t zones_keep_children(void *data)
{
	return api_zones_children(data);
}

/* A keeper started anew holds no zone's log pipe. */
static void zones_keep_keeper(void *data, const struct keep_keeper *k, bool fresh)
{
	if (k && fresh)
		api_zones_keep_pipes(data);
}

const struct keep_part api_zones_part = {.name = "the zones",
                                         .tag = KEEP_TAG_ZONES,
                                         .level = KEEP_LEVEL_ZONES,
                                         .start = zones_keep_start,
                                         .save = zones_keep_save,
                                         .settled = zones_keep_settled,
                                         .children = zones_keep_children,
                                         .set_keeper = zones_keep_keeper};
