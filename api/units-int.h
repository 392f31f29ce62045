/* units-int: what the Units service's files share — the service's state
 * (api/units.c), the unit-file changes and the output of services
 * (api/units_files.c); never included outside api/ and its tests. */
#pragma once

#include "api/api-int.h"
#include "cells/cells.h"
#include "proto/units.pb-c.h"
#include "units/units.h"

#define API_UNITS_NAMES_MAX     64   /* names of one Enable/Disable/Mask/Unmask */
#define API_UNITS_LOG_LINES_MAX 1000 /* lines one Status carries */
#define API_UNITS_CHANGES_MAX   1024 /* links one call reports */

/* A Job call answered once its job ends. The manager cannot withdraw a
 * callback, so the record lives until job_done runs (or the service is
 * freed); a client that leaves only clears call. */
struct api_units_pending {
	struct list_node node; /* in api_units.pending */
	struct api_units *svc;
	struct rpc_call *call;
	char name[UNIT_NAME_MAX + 1];
	char type[32];
};

/* An open Logs stream with follow. */
struct api_units {
	struct units *units; /* NULL: no manager, or kin is stopping (why says which) */
	struct cells *cells; /* where services' output is */
	char why[128];
	struct list_node pending;
	struct list_node streams;
	struct api_binding binding;
};

/* INVALID_ARGUMENT naming it unless name is one unit name within bounds. */
int api_units_check_name(const char *name, struct err *err);
/* A handler's end after a manager call returned r (an -ENOMEM nobody
 * explained goes back to the server). */
int api_units_fail(struct rpc_call *call, int r, const struct err *err);

/* A UnitStatus over st (strings point into st). */
struct api_units_status_msg {
	Kin__V1__UnitStatus m;
};
void api_units_status_fill(struct api_units_status_msg *sm, const struct unit_status *st);

/* The last lines of a service's output (stdout's, then stderr's). */
struct api_units_tail {
	char **lines;
	size_t n;
};
void api_units_log_tail(struct api_units *svc, const char *name, uint32_t max,
                        struct api_units_tail *ret);
void api_units_tail_free(struct api_units_tail *t);

/* The handlers of api/units_files.c. */
int api_units_serve_enable(struct rpc_call *call, const ProtobufCMessage *in, void *userdata);
int api_units_serve_disable(struct rpc_call *call, const ProtobufCMessage *in, void *userdata);
int api_units_serve_mask(struct rpc_call *call, const ProtobufCMessage *in, void *userdata);
int api_units_serve_unmask(struct rpc_call *call, const ProtobufCMessage *in, void *userdata);
int api_units_serve_logs(struct rpc_call *call, const ProtobufCMessage *in, void *userdata);
/* kin is stopping: every open stream ends UNAVAILABLE (before cells go). */
