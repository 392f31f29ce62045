/* api internals shared by the service files (never included outside api/
 * and its tests): the running services, the one way a service registers
 * its handlers, the generated messages, and what one service asks of
 * another. */
#pragma once

#include "api/api.h"
#include "keep/keep.h"
#include "proto/kin.pb-c.h"
#include "proto/system.pb-c.h"
#include "proto/vm.pb-c.h"
#include "proto/images.pb-c.h"

#include <limits.h>

#define API_SERVICES_MAX API_SERVICES_MAX_LIST
#define API_METHODS_MAX  16 /* methods of one protobuf service */

struct api {
	struct rpc_server *rpc;
	struct keep *keep; /* the handover's participants (NULL: none) */
	const struct api_service *started[API_SERVICES_MAX];
	size_t n_started;
	/* Each service's own state, NULL when it did not start. */
	struct api_health *health;
	struct api_system *system;
	struct api_cells *cells;
	struct api_vm *vm;
	struct api_zones *zones;
	struct api_images *images;
	struct api_units *units;
};

/* ---- registration (api/service.c) -------------------------------------------------------- */

/* One method's handler and its RPC_METHOD_* flags (the .proto's `stream`
 * is not in protoc-c's descriptors). */
struct api_method {
	rpc_handler_fn fn;
	unsigned flags;
};

/* A service's handlers: desc (protoc-c's, e.g. kin__v1__health__descriptor)
 * names the service, its methods and their inputs; methods[i] serves
 * desc->methods[i], n == desc->n_methods. ready, if set, runs before every
 * handler and returns false once it has answered the call itself (the
 * service cannot serve now: FAILED_PRECONDITION naming why). */
struct api_handlers {
	const ProtobufCServiceDescriptor *desc;
	const struct api_method *methods;
	size_t n;
	bool (*ready)(struct rpc_call *call, void *userdata);
};

/* What the server keeps by pointer for one registered service: lives in
 * the service's state until after rpc_server_free. */
struct api_binding {
	const struct api_handlers *h;
	void *userdata; /* every handler's */
	/* One allocation of exactly the service's methods: every zone kin
	 * runs every service, so room for more would be memory per zone. */
	struct rpc_method *table;
	struct api_binding_slot {
		struct api_binding *b;
		const struct api_method *m;
	} * slots;
};

/* Registers h's methods with userdata. -EINVAL when the table does not
 * match the descriptor; rpc_server_register's errors. */
int api_bind(struct rpc_server *s, struct api_binding *b, const struct api_handlers *h,
             void *userdata);
/* Frees what api_bind allocated; after rpc_server_free. */
void api_binding_release(struct api_binding *b);

/* rpc_route_call to the first method of desc that takes in's type (a
 * zone's Health/Check, a VM's System/Poweroff). */
int api_route_call(struct rpc_server *s, const char *route, const ProtobufCServiceDescriptor *desc,
                   const ProtobufCMessage *in, rpc_route_done_fn done, void *data);

/* A service's state goes along a re-exec and an adoption as a participant
 * of the handover (keep/keep.h): registered at its start with data its
 * hooks get (logged when it cannot be), removed at its free. */
void api_keep_add(struct api *api, const struct keep_part *part, void *data);
void api_keep_remove(struct api *api, void *data);

/* ---- Vm, as Zones uses it (api/vm.c) ---------------------------------------------------- */

/* VM zones (api/zones.c) are VMs of the Vm service reached by a route of
 * their own name instead of vm/NAME. Start answers an RPC code (err: the
 * sentence); exited runs once the VMM has exited, after the route was
 * closed, or once a start failed after Start returned (start_err says why,
 * NULL for an exit; the VM is forgotten then). Stop begins Poweroff,
 * Ctrl-Alt-Del, SIGKILL. */
struct vm_spec;
struct vm_info;
typedef void (*api_vm_exited_fn)(const struct vm_info *info, const struct err *start_err,
                                 void *data);
int api_vm_start_as(struct api_vm *svc, const struct vm_spec *spec, const char *route,
                    api_vm_exited_fn exited, void *data, struct err *e);
int api_vm_stop_as(struct api_vm *svc, const char *name, uint64_t timeout_ms);
int api_vm_kill_as(struct api_vm *svc, const char *name);
/* Its VMM paused or resumed (vm_request): 1 with done to follow, or -errno
 * with e. */
int api_vm_pause_as(struct api_vm *svc, const char *name, bool pause,
                    void (*done)(int result, const struct err *err, void *data), void *data,
                    struct err *e);
int api_vm_get_as(struct api_vm *svc, const char *name, struct vm_info *ret, bool *ret_ready);
/* Every running VM powers off (api_stop_all); returns how many. */
size_t api_vm_stop_all(struct api_vm *svc, uint64_t timeout_ms);
size_t api_vm_running(struct api_vm *svc);
/* Re-exec, as the zones' below: the Vm service's VMs go along (a VM's
 * VMM and link), VM zones' too, whose owner binds each again with
 * api_vm_own (after api_vm_restore; -ENOENT: no such VM zone). */
struct state_w;
struct state_in;
struct state_field;
bool api_vm_settled(const struct api_vm *svc, char *why, size_t size);
size_t api_vm_children(const struct api_vm *svc);
void api_vm_save(struct api_vm *svc, struct state_w *w, uint16_t tag);
int api_vm_restore(struct api_vm *svc, const struct state_field *f, const char *how);
int api_vm_own(struct api_vm *svc, const char *name, api_vm_exited_fn exited, void *data);
/* api_adopt's (f NULL: no record): the VMs taken, then the cells under
 * vms/ nobody took removed. */
int api_vm_adopt(struct api_vm *svc, const struct state_field *f);

/* ---- Images, as Exec and Zones use it (api/images.c) ------------------------------------ */

struct oci_image;
struct oci_store;
/* The store, opened at its first use (FAILED_PRECONDITION naming why when
 * it cannot be). */
int api_images_store(struct api_images *svc, struct oci_store **ret, struct err *e);
/* Resolves name_or_digest and counts one more user of it (Remove is
 * refused while it has any); api_images_release gives the use back. */
int api_images_acquire(struct api_images *svc, const char *name_or_digest, struct oci_image *ret,
                       struct err *e);
void api_images_release(struct api_images *svc, const char *digest);

/* What a container (an executable, or a zone made from an image) holds of
 * an image: one use of it, and a writable layer CONTAINERS/ID with root/,
 * upper/ and work/ (ID.EPOCH.N, unique across restarts; '/' becomes '+'), its root an
 * overlay of lower (the image's layers, top first) and upper, mounted by
 * whoever starts it. The containers directory is /run/kin/containers. */
struct api_container {
	struct api_images *svc;
	struct list_node node; /* in svc's containers */
	char digest[72];
	char dir[PATH_MAX - 8];
	char root[PATH_MAX], upper[PATH_MAX], work[PATH_MAX];
	char lower[8192];
};
/* Acquires image (a name or digest; *ret_img filled) and makes the dirs. */
int api_container_new(struct api_images *svc, const char *image, const char *id,
                      struct api_container **ret, struct oci_image *ret_img, struct err *e);
/* Gives the image back and removes the writable layer (in a child of kin:
 * a tree can be large). NULL is fine. */
void api_container_release(struct api_container *k);
/* After an adoption: a writable layer that no container of the state
 * names, but of the same killed kin (its name's epoch is the one its
 * state file gives, or one of its containers': made in the last moments
 * before the kill, before the state file named it), is removed with a
 * log line. Others' layers are never touched. */
void api_containers_sweep(struct api_images *svc, const char *dead_epoch);
/* Re-exec: a container goes along as a record of tag (its image's digest
 * and its layer's directory, which stays as it is); api_container_restore
 * makes it again in the next kin — one use of the image again, the paths
 * made anew from the store — or says why not (the record names no layer
 * of the containers directory, the image is gone). */
void api_container_save(const struct api_container *k, struct state_w *w, uint16_t tag);
int api_container_restore(struct api_images *svc, const struct state_field *f,
                          struct api_container **ret, struct err *e);

/* ---- Zones (api/zones.c) ---------------------------------------------------------------- */

void api_zones_stop_all(struct api_zones *svc);
/* A namespace zone this kin makes for itself (a shim's pod): listed and
 * routed like any (kin ctl --target NAME reaches it). ready runs once: 0
 * when its kin answers, or -errno with err (it is gone by then, and gone
 * does not follow); gone runs once it has ended after being ready. */
struct zone_spec;
struct zone_info;
struct api_zone_owner {
	void (*ready)(int result, const struct err *err, void *data);
	void (*gone)(int status, void *data);
	void *data;
};
int api_zones_create_own(struct api_zones *svc, const struct zone_spec *spec,
                         const struct api_zone_owner *owner, struct err *err);
/* After a re-exec: owner (its gone; it was ready before) takes the zone
 * NAME it made back. -ENOENT when there is none (it ended). */
int api_zones_own(struct api_zones *svc, const char *name, const struct api_zone_owner *owner);
/* The same for a VM zone (a kin-vm shim's pod): ready once its guest's
 * kin answers through the route, gone with its VMM. */
struct vm_spec;
int api_zones_create_own_vm(struct api_zones *svc, const struct vm_spec *spec,
                            const struct api_zone_owner *owner, struct err *err);
/* A zone's facts; for a VM zone its VMM's pid, state and cell. */
int api_zones_info(struct api_zones *svc, const char *name, struct zone_info *ret);
/* zone_stop (kill false) or zone_kill of a namespace zone; for a VM zone
 * a power-off (SIGKILL of the VMM after API_ZONES_VM_STOP_MS) or SIGKILL. */
#define API_ZONES_VM_STOP_MS 10000
int api_zones_end(struct api_zones *svc, const char *name, bool kill);
bool api_zones_all_gone(const struct api_zones *svc);
bool api_zones_settled(const struct api_zones *svc, char *why, size_t size);
/* The zones' log pipes to the keeper again (zones_keep_all). */
void api_zones_keep_pipes(struct api_zones *svc);
size_t api_zones_children(const struct api_zones *svc);
void api_zones_save(struct api_zones *svc, struct state_w *w, uint16_t tag);
int api_zones_restore(struct api_zones *svc, struct state_in *in, const struct state_field *f);
/* After kin was killed: api_zones_save into a file state writes what a
 * successor adopts; api_zones_adopt takes it back (f NULL: no record):
 * zones_adopt, then each adopted zone listed, routed and asked
 * Health/Check, a zone from an image given its container back (the layer
 * of one not adopted removed). Returns how many zones. */
int api_zones_adopt(struct api_zones *svc, const struct state_field *f, int *kept, size_t nkept);
/* Both as the handover's participant (keep/keep.h). */
extern const struct keep_part api_zones_part;

/* An executable's output as a LogChunk server stream (api/logs.c), one way
 * for Exec/Logs and Units/Logs: with follow false what its rings keep, then
 * the end; else followed until it ends, the client cancels, or
 * api_logs_end. streams: a bit per exec_stream. The stream is kept in list
 * (the calling service's) while it runs. from: each stream's first byte
 * (LogsRequest's resume), or NULL for the oldest kept. 0 once the call is
 * answered or streaming; -errno with err, nothing sent, when it cannot be
 * followed. */
struct cells;
int api_logs_serve(struct list_node *list, struct cells *cells, struct rpc_call *call,
                   const char *cell, const char *exec, unsigned streams, bool follow,
                   const uint64_t *from, struct err *err);
/* kin is stopping: every stream of list ends UNAVAILABLE, before cells_free. */
void api_logs_end(struct list_node *list);
/* What is left of list, after the server is gone. */
void api_logs_free(struct list_node *list);
