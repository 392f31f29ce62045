/* spec-int: what the two halves of the config.json parser share — spec.c
 * (process, root, mounts, the whole) and spec_linux.c (namespaces, id
 * maps, sysctl, resources, devices, seccomp): the parse context, errors
 * naming the JSON path, and typed getters that check and copy. */
#pragma once

#include "oci/oci-int.h"

#include <jansson.h>

struct oci_spec_ctx {
	struct err *err;
	struct oci_spec *s;
};

/* JSON text (at most OCI_SPEC_JSON_MAX bytes, one object) into a new spec
 * with "not given" defaults, by at; errors start with what. */
int oci_spec_parse_json(const char *json, size_t len, const char *what,
                        int (*at)(struct oci_spec_ctx *c, json_t *j, const void *arg),
                        const void *arg, struct oci_spec **ret, struct err *err);

/* INVALID_ARGUMENT (or code) with "config.json: PATH: what". */
int oci_spec_bad(struct oci_spec_ctx *c, int code, const char *path, const char *fmt, ...)
    _printf_(4, 5);
#define BAD(c, path, ...) oci_spec_bad(c, ERR_INVALID_ARGUMENT, path, __VA_ARGS__)

/* Each checks v's type and range and names path when it is wrong. */
int oci_spec_str_at(struct oci_spec_ctx *c, json_t *v, const char *path, bool required, char **ret);
int oci_spec_u64_at(struct oci_spec_ctx *c, json_t *v, const char *path, uint64_t max,
                    uint64_t *ret);
int oci_spec_i64_at(struct oci_spec_ctx *c, json_t *v, const char *path, int64_t *ret);
int oci_spec_bool_at(struct oci_spec_ctx *c, json_t *v, const char *path, bool *ret);
/* A list of strings (NULL when absent), each checked by check. */
int oci_spec_strv_at(struct oci_spec_ctx *c, json_t *v, const char *path,
                     bool (*check)(const char *), const char *what, char ***ret);
bool oci_spec_is_absolute(const char *s);
/* "rprivate", "rslave", "shared", ...: its MS_* flags; false if unknown. */
bool oci_spec_propagation(const char *name, unsigned long *ret);
void oci_spec_strv_free(char **v);

/* linux.* (spec_linux.c). */
int oci_spec_linux(struct oci_spec_ctx *c, json_t *l);
