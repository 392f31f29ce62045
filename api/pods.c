/* pods: the zones a containerd shim's Task service (shim/) makes for its
 * pod, from the Zones service: its struct shim_pod_ops, which init fills
 * with these (api never includes shim/, nor shim api/). impl is the
 * struct api; each is the Zones service's own-zone call with the owner
 * the shim's callbacks make. */
#include "api/cells-int.h"
#include "api/zones-int.h"
#include "zone/zone.h"

int api_pod_create(void *impl, const struct zone_spec *spec,
                   void (*ready)(int result, const struct err *err, void *data),
                   void (*gone)(int status, void *data), void *data, struct err *err)
{
	const struct api_zone_owner owner = {.ready = ready, .gone = gone, .data = data};
	return api_zones_create_own(((struct api *)impl)->zones, spec, &owner, err);
}

int api_pod_create_vm(void *impl, const struct vm_spec *spec,
                      void (*ready)(int result, const struct err *err, void *data),
                      void (*gone)(int status, void *data), void *data, struct err *err)
{
	const struct api_zone_owner owner = {.ready = ready, .gone = gone, .data = data};
	return api_zones_create_own_vm(((struct api *)impl)->zones, spec, &owner, err);
}

int api_pod_own(void *impl, const char *name, void (*gone)(int status, void *data), void *data)
{
	const struct api_zone_owner owner = {.gone = gone, .data = data};
	return api_zones_own(((struct api *)impl)->zones, name, &owner);
}

int api_pod_info(void *impl, const char *name, struct zone_info *ret)
{
	return api_zones_info(((struct api *)impl)->zones, name, ret);
}

int api_pod_end(void *impl, const char *name, bool kill)
{
	return api_zones_end(((struct api *)impl)->zones, name, kill);
}

int api_pod_freeze(void *impl, const char *name, bool freeze,
                   void (*done)(int result, const struct err *err, void *data), void *data,
                   struct err *err)
{
	struct api *api = impl;
	struct zrec *r = api->zones ? api_zrec_find(api->zones, name) : NULL;
	struct zone_info info;
	if (r && r->vm)
		return api_vm_pause_as(api->vm, name, freeze, done, data, err);
	if (!r || api_zones_info(api->zones, name, &info) < 0)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "zone \"%s\" is not running", name);
	if (!api->cells || !api->cells->cells)
		return err_set(err, -ENODEV, ERR_FAILED_PRECONDITION, "zone \"%s\": no cells here",
		               name);
	return cell_freeze(api->cells->cells, info.cell, freeze, done, data, err);
}
