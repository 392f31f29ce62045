/* api internals shared by the service files (never included outside api/
 * and its tests): the generated messages and what one service asks of
 * another. */
#pragma once

#include "api/api.h"
#include "rpc/internal.h"
#include "proto/kin.pb-c.h"
#include "proto/system.pb-c.h"
#include "proto/vm.pb-c.h"

/* VM zones (api/zones.c) are VMs of the Vm service (api/vm.c) reached by a
 * route of their own name instead of vm/NAME. Start answers an RPC code
 * (err: the sentence); exited runs once the VMM has exited, after the
 * route was closed. Stop begins Poweroff, Ctrl-Alt-Del, SIGKILL. */
struct vm_spec;
struct vm_info;
struct rpc_vm_service;
typedef void (*rpc_vm_exited_fn)(const struct vm_info *info, void *data);
int rpc_vm_start_as(struct rpc_vm_service *svc, const struct vm_spec *spec, const char *route,
                    rpc_vm_exited_fn exited, void *data, char *err, size_t size);
int rpc_vm_stop_as(struct rpc_vm_service *svc, const char *name, uint64_t timeout_ms);
int rpc_vm_kill_as(struct rpc_vm_service *svc, const char *name);
int rpc_vm_get_as(struct rpc_vm_service *svc, const char *name, struct vm_info *ret,
                  bool *ret_ready);
