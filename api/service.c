/* service: what every kin.v1 service shares — registration from the
 * generated service descriptor and a handler table (so no service or
 * method name is typed twice), and the one list init starts, shuts down
 * and frees. The glue lives here, not in rpc/: the server keeps method
 * tables by pointer, so whoever owns a service's state owns its table too,
 * and the readiness check before a handler is a service's concern. */
#include "api/api-int.h"
#include "api/cells-int.h"

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

static void api_keep_stop(void *data)
{
	api_shutdown(data);
}

static void api_keep_free(void *data)
{
	api_free(data);
}

/* kin's stop ends the services and frees them (keep_stop, KEEP_LEVEL_API). */
static const struct keep_part api_part = {.name = "the kin.v1 services",
                                          .tag = KEEP_TAG_API,
                                          .level = KEEP_LEVEL_API,
                                          .stop = api_keep_stop,
                                          .free = api_keep_free,
                                          .served = true};

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
	api->keep = cfg->keep;
	for (size_t i = 0; i < n; i++) {
		int r = list[i]->start(api, cfg);
		if (r < 0) {
			log_error("rpc: cannot register %s: %s", list[i]->name, strerror(-r));
			continue;
		}
		api->started[api->n_started++] = list[i];
	}
	api_keep_add(api, &api_part, api);
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

void api_keep_add(struct api *api, const struct keep_part *part, void *data)
{
	struct keep_part p = *part;
	p.data = data;
	int r = api->keep ? keep_register(api->keep, &p) : 0;
	if (r < 0)
		log_error("%s cannot go along a re-exec: %s", p.name, strerror(-r));
}

void api_keep_remove(struct api *api, void *data)
{
	if (api->keep)
		keep_unregister(api->keep, data);
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
	api_keep_remove(api, api);
	for (size_t i = api->n_started; i-- > 0;)
		api->started[i]->free(api);
	free(api);
}
