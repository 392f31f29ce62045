/* service: what every kin.v1 service shares — registration from the
 * generated service descriptor and a handler table (so no service or
 * method name is typed twice), and the one list init starts, shuts down
 * and frees. The glue lives here, not in rpc/: the server keeps method
 * tables by pointer, so whoever owns a service's state owns its table too,
 * and the readiness check before a handler is a service's concern. */
#include "api/api-int.h"
#include "api/cells-int.h"
#include "lib/state.h"

#include <string.h>

const struct api_service *const api_services[] = {
    &api_service_health, &api_service_images, &api_service_cells, &api_service_system,
    &api_service_vm,     &api_service_zones,  &api_service_units,
};
const size_t api_services_count = ARRAY_SIZE(api_services);

static int dispatch_when_ready(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const struct api_binding_slot *slot = userdata;
	void *data = slot->b->userdata;
	if (!slot->b->h->ready(call, data))
		return 0;
	return slot->m->fn(call, in, data);
}

int api_bind(struct rpc_server *s, struct api_binding *b, const struct api_handlers *h,
             void *userdata)
{
	if (h->n != h->desc->n_methods || h->n > API_METHODS_MAX)
		return -EINVAL;
	b->h = h;
	b->userdata = userdata;
	b->table = calloc(1, h->n * (sizeof(*b->table) + sizeof(*b->slots)));
	if (!b->table)
		return -ENOMEM;
	b->slots = (struct api_binding_slot *)(void *)(b->table + h->n);
	for (size_t i = 0; i < h->n; i++) {
		const ProtobufCMethodDescriptor *md = &h->desc->methods[i];
		b->slots[i] = (struct api_binding_slot){b, &h->methods[i]};
		b->table[i] = (struct rpc_method){
		    .service = h->desc->name,
		    .method = md->name,
		    .input = md->input,
		    .handler = h->ready ? dispatch_when_ready : h->methods[i].fn,
		    .flags = h->methods[i].flags,
		    .userdata = h->ready ? (void *)&b->slots[i] : userdata,
		};
	}
	int r = rpc_server_register(s, b->table, h->n);
	if (r < 0)
		api_binding_release(b);
	return r;
}

void api_binding_release(struct api_binding *b)
{
	free(b->table);
	b->table = NULL;
	b->slots = NULL;
}

int api_route_call(struct rpc_server *s, const char *route, const ProtobufCServiceDescriptor *desc,
                   const ProtobufCMessage *in, rpc_route_done_fn done, void *data)
{
	for (unsigned i = 0; i < desc->n_methods; i++)
		if (desc->methods[i].input == in->descriptor)
			return rpc_route_call(s, route, desc->name, desc->methods[i].name, in, done,
			                      data);
	return -EINVAL;
}

int api_start(const struct api_config *cfg, const struct api_service *const *list, size_t n,
              struct api **ret)
{
	if (!list) {
		list = api_services;
		n = api_services_count;
	}
	if (n > API_SERVICES_MAX)
		return -E2BIG;
	struct api *api = calloc(1, sizeof(*api));
	if (!api)
		return -ENOMEM;
	api->rpc = cfg->rpc;
	for (size_t i = 0; i < n; i++) {
		int r = list[i]->start(api, cfg);
		if (r < 0) {
			log_error("rpc: cannot register %s: %s", list[i]->name, strerror(-r));
			continue;
		}
		api->started[api->n_started++] = list[i];
	}
	*ret = api;
	return 0;
}

size_t api_stop_all(struct api *api, uint64_t vm_timeout_ms)
{
	if (!api)
		return 0;
	api_zones_stop_all(api->zones);
	return api_vm_stop_all(api->vm, vm_timeout_ms);
}

size_t api_vms_running(struct api *api)
{
	return api ? api_vm_running(api->vm) : 0;
}

bool api_zones_idle(struct api *api)
{
	return !api || api_zones_all_gone(api->zones);
}

/* The services' record: one field per service that carries state. */
enum { AS_ZONES = 1, AS_VMS, AS_EXEC_IMAGES, AS_TASK, AS_LAYER_EPOCH };

void api_keep_pipes(struct api *api)
{
	if (api)
		api_zones_keep_pipes(api->zones);
}

void api_carry(struct api *api, const struct api_carried *c)
{
	api->carried = *c;
}

const char *api_uncarried(const struct api *api)
{
	return api && api->carried.uncarried ? api->carried.uncarried(api->carried.data) : NULL;
}

bool api_settled(const struct api *api, char *why, size_t size)
{
	return !api ||
	       (api_zones_settled(api->zones, why, size) && api_vm_settled(api->vm, why, size) &&
	        (!api->carried.settled || api->carried.settled(api->carried.data, why, size)));
}

size_t api_children(const struct api *api)
{
	return api ? api_zones_children(api->zones) + api_vm_children(api->vm) : 0;
}

void api_save(struct api *api, struct state_w *w, uint16_t tag)
{
	if (!api)
		return;
	size_t at = state_open(w, tag);
	api_zones_save(api->zones, w, AS_ZONES);
	api_vm_save(api->vm, w, AS_VMS);
	if (api->cells)
		api_exec_images_save(api->cells, w, AS_EXEC_IMAGES);
	if (api->carried.save)
		api->carried.save(api->carried.data, w, AS_TASK);
	state_close(w, at);
}

int api_restore(struct api *api, struct state_in *in, const struct state_field *f)
{
	struct state_r r;
	struct state_field g;
	int e, n;
	if (!api)
		return -ENODEV;
	/* The VMs first: a VM zone's owner binds its VM again. */
	state_get_record(f, &r);
	while ((e = state_next(&r, &g)) > 0) {
		if (g.tag != AS_VMS)
			continue;
		if ((n = api_vm_restore(api->vm, &g, "re-exec")) < 0)
			log_error("re-exec: the VMs could not be taken over: %s", strerror(-n));
		else if (n)
			log_info("re-exec: %d VMs taken over", n);
	}
	state_get_record(f, &r);
	while ((e = state_next(&r, &g)) > 0) {
		const char *what = g.tag == AS_ZONES         ? "zones"
		                   : g.tag == AS_EXEC_IMAGES ? "executables' containers"
		                                             : NULL;
		if (!what)
			continue;
		n = g.tag == AS_ZONES ? api_zones_restore(api->zones, in, &g)
		    : api->cells      ? api_exec_images_restore(api->cells, &g, "re-exec")
		                      : -ENODEV;
		if (n < 0)
			log_error("re-exec: the %s could not be taken over: %s", what,
			          strerror(-n));
		else if (n)
			log_info("re-exec: %d %s taken over", n, what);
	}
	/* The shim's tasks last: the pod's zone is there to own again. */
	state_get_record(f, &r);
	while ((e = state_next(&r, &g)) > 0)
		if (g.tag == AS_TASK) {
			n = api->carried.restore ? api->carried.restore(api->carried.data, in, &g)
			                         : -ENODEV;
			if (n < 0)
				log_error("re-exec: the shim's tasks could not be taken over: %s",
				          strerror(-n));
			else
				log_info("re-exec: the shim's tasks taken over: %d", n);
		}
	return e;
}

void api_save_adoptable(struct api *api, struct state_w *w, uint16_t tag)
{
	if (!api)
		return;
	size_t at = state_open(w, tag);
	if (api->vm)
		api_vm_save(api->vm, w, AS_VMS);
	if (api->cells)
		api_exec_images_save(api->cells, w, AS_EXEC_IMAGES);
	api_zones_save(api->zones, w, AS_ZONES);
	if (api_images_epoch(api->images))
		state_put_str(w, AS_LAYER_EPOCH, api_images_epoch(api->images));
	state_close(w, at);
}

int api_adopt(struct api *api, const struct state_field *f, int *kept, size_t nkept)
{
	struct state_r r;
	struct state_field g, vms = {0}, zones = {0};
	char epoch[32] = "";
	int n = 0;
	if (!api)
		return 0;
	if (f && f->tag) {
		state_get_record(f, &r);
		while (state_next(&r, &g) > 0) {
			if (g.tag == AS_VMS)
				vms = g;
			else if (g.tag == AS_ZONES)
				zones = g;
			else if (g.tag == AS_LAYER_EPOCH &&
			         state_get_str(&g, epoch, sizeof(epoch)) < 0)
				epoch[0] = '\0';
			else if (g.tag == AS_EXEC_IMAGES && api->cells &&
			         (n = api_exec_images_restore(api->cells, &g, "adopt")) > 0)
				log_info("adopt: %d executables' containers adopted", n);
		}
	}
	/* The VMs first: a VM zone's owner binds its VM again. */
	if (api->vm && (n = api_vm_adopt(api->vm, vms.tag ? &vms : NULL)) > 0)
		log_info("adopt: %d VMs adopted", n);
	n = api_zones_adopt(api->zones, zones.tag ? &zones : NULL, kept, nkept);
	if (n > 0)
		log_info("adopt: %d zones adopted", n);
	api_containers_sweep(api->images, epoch);
	return n;
}

void api_shutdown(struct api *api)
{
	for (size_t i = api ? api->n_started : 0; i-- > 0;)
		if (api->started[i]->shutdown)
			api->started[i]->shutdown(api);
}

void api_free(struct api *api)
{
	if (!api)
		return;
	for (size_t i = api->n_started; i-- > 0;)
		api->started[i]->free(api);
	free(api);
}
