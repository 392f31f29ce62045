/* state_spec: an executable's spec in the state a re-executing kin hands
 * over (lib/state.h) — every field tagged, so a kin of another version
 * reads what it knows. Tags are never reused: append only. */
#include "cells/cells-int.h"
#include "lib/state.h"

#include <stddef.h>
#include <string.h>

static const struct state_num spec_nums[] = {
    STATE_NUM(1, struct exec_spec, uid),
    STATE_NUM(2, struct exec_spec, gid),
    STATE_NUM(3, struct exec_spec, umask),
    STATE_NUM(4, struct exec_spec, caps),
    STATE_NUM(5, struct exec_spec, ambient),
    STATE_FLAG(6, struct exec_spec, no_new_privs),
    STATE_NUM(7, struct exec_spec, seccomp),
    STATE_NUM(8, struct exec_spec, namespaces),
    STATE_FLAG(9, struct exec_spec, root_readonly),
    STATE_FLAG(10, struct exec_spec, caps_split),
    STATE_NUM(11, struct exec_spec, caps_effective),
    STATE_NUM(12, struct exec_spec, caps_permitted),
    STATE_NUM(13, struct exec_spec, caps_inheritable),
    STATE_FLAG(14, struct exec_spec, oom_score_adj_set),
    STATE_NUM(15, struct exec_spec, oom_score_adj),
    STATE_FLAG(16, struct exec_spec, devices_set),
    STATE_FLAG(17, struct exec_spec, stdin_pipe),
    STATE_NUM(18, struct exec_spec, log_bytes),
    STATE_FLAG(19, struct exec_spec, listen_env),
    STATE_FLAG(20, struct exec_spec, nice_set),
    STATE_NUM(21, struct exec_spec, nice),
    STATE_NUM(22, struct exec_spec, restart),
    STATE_NUM(23, struct exec_spec, backoff_base_ms),
    STATE_NUM(24, struct exec_spec, backoff_cap_ms),
    STATE_FLAG(25, struct exec_spec, release_carried),
    STATE_NUM(26, struct exec_spec, root_propagation),
    STATE_FLAG(27, struct exec_spec, terminal),
    STATE_NUM(28, struct exec_spec, rows),
    STATE_NUM(29, struct exec_spec, cols),
};
static const struct state_num rlimit_nums[] = {
    STATE_NUM(1, struct exec_rlimit, resource),
    STATE_NUM(2, struct exec_rlimit, soft),
    STATE_NUM(3, struct exec_rlimit, hard),
};
static const struct state_num idmap_nums[] = {
    STATE_NUM(1, struct exec_idmap, inside),
    STATE_NUM(2, struct exec_idmap, outside),
    STATE_NUM(3, struct exec_idmap, count),
};
static const struct state_num mount_nums[] = {
    STATE_NUM(5, struct exec_mount, flags),
    STATE_NUM(6, struct exec_mount, propagation),
};
static const struct state_num device_nums[] = {
    STATE_FLAG(1, struct exec_device_rule, allow), STATE_NUM(2, struct exec_device_rule, type),
    STATE_NUM(3, struct exec_device_rule, major),  STATE_NUM(4, struct exec_device_rule, minor),
    STATE_NUM(5, struct exec_device_rule, access),
};
static const struct state_num node_nums[] = {
    STATE_NUM(2, struct exec_device_node, type),  STATE_NUM(3, struct exec_device_node, major),
    STATE_NUM(4, struct exec_device_node, minor), STATE_NUM(5, struct exec_device_node, mode),
    STATE_NUM(6, struct exec_device_node, uid),   STATE_NUM(7, struct exec_device_node, gid),
};

enum {
	T_GROUP = 40,
	T_RLIMIT,
	T_UID_MAP,
	T_GID_MAP,
	T_MOUNT,
	T_JOIN,
	T_DEVICE,
	T_NODE,
	T_VEC = 100, /* + SPEC_VECS index: one field per element */
	T_STR = 120, /* + SPEC_STRS index */
};

static void record_put(struct state_w *w, uint16_t tag, const void *base, const struct state_num *t,
                       size_t n, const char *const *strs, size_t nstrs)
{
	size_t at = state_open(w, tag);
	state_put_nums(w, base, t, n);
	for (size_t k = 0; k < nstrs; k++)
		state_put_str(w, (uint16_t)(1 + k + 16), strs[k]);
	state_close(w, at);
}

void exec_spec_save(struct state_w *w, uint16_t tag, const struct exec_spec *s)
{
	size_t at = state_open(w, tag);
	char *const *const *vecs[] = SPEC_VECS(s);
	const char *const *strs[] = SPEC_STRS(s);
	state_put_nums(w, s, spec_nums, ARRAY_SIZE(spec_nums));
	for (size_t k = 0; k < ARRAY_SIZE(vecs); k++)
		for (size_t i = 0; *vecs[k] && (*vecs[k])[i]; i++)
			state_put_str(w, (uint16_t)(T_VEC + k), (*vecs[k])[i]);
	for (size_t k = 0; k < ARRAY_SIZE(strs); k++)
		state_put_str(w, (uint16_t)(T_STR + k), *strs[k]);
	for (size_t i = 0; i < s->ngroups; i++)
		state_put_u64(w, T_GROUP, s->groups[i]);
	for (size_t i = 0; i < s->nrlimits; i++)
		record_put(w, T_RLIMIT, &s->rlimits[i], rlimit_nums, ARRAY_SIZE(rlimit_nums), NULL,
		           0);
	for (size_t i = 0; i < s->nuid_map; i++)
		record_put(w, T_UID_MAP, &s->uid_map[i], idmap_nums, ARRAY_SIZE(idmap_nums), NULL,
		           0);
	for (size_t i = 0; i < s->ngid_map; i++)
		record_put(w, T_GID_MAP, &s->gid_map[i], idmap_nums, ARRAY_SIZE(idmap_nums), NULL,
		           0);
	for (size_t i = 0; i < s->nmounts; i++) {
		const struct exec_mount *m = &s->mounts[i];
		const char *ms[] = {m->source, m->target, m->type, m->data};
		record_put(w, T_MOUNT, m, mount_nums, ARRAY_SIZE(mount_nums), ms, ARRAY_SIZE(ms));
	}
	for (size_t i = 0; i < s->njoins && i < EXEC_JOINS_MAX; i++) {
		size_t j = state_open(w, T_JOIN);
		state_put_u64(w, 1, s->joins[i].ns);
		state_put_str(w, 17, s->joins[i].path);
		state_close(w, j);
	}
	for (size_t i = 0; i < s->ndevices; i++)
		record_put(w, T_DEVICE, &s->devices[i], device_nums, ARRAY_SIZE(device_nums), NULL,
		           0);
	for (size_t i = 0; i < s->ndevice_nodes; i++) {
		const char *ns[] = {s->device_nodes[i].path};
		record_put(w, T_NODE, &s->device_nodes[i], node_nums, ARRAY_SIZE(node_nums), ns, 1);
	}
	state_close(w, at);
}

/* ---- reading: into a scratch spec whose strings and arrays it owns ---- */

struct spec_in {
	/* Reset for each spec: */
	struct exec_spec s;
	size_t nvec[6];
	size_t nowned;
	/* Written before they are read: */
	char *vec_store[6][EXEC_ARGS_MAX > EXEC_ENV_MAX ? EXEC_ARGS_MAX + 1 : EXEC_ENV_MAX + 1];
	struct exec_mount mounts[EXEC_MOUNTS_MAX];
	struct exec_device_rule devices[EXEC_DEVICES_MAX];
	struct exec_device_node nodes[EXEC_NODES_MAX];
	char *owned[4096 + EXEC_NODES_MAX]; /* every string made for s */
};

/* One scratch for a whole restore (about 60 KiB: zeroing it for each of
 * a thousand executables would cost more than reading them). */
static struct spec_in *scratch;

void exec_spec_restore_end(void)
{
	free(scratch);
	scratch = NULL;
}

static int own_str(struct spec_in *in, const struct state_field *f, const char **ret)
{
	if (in->nowned == ARRAY_SIZE(in->owned))
		return -E2BIG;
	char *s;
	int r = state_get_strdup(f, &s);
	if (r < 0)
		return r;
	in->owned[in->nowned++] = s;
	*ret = s;
	return 0;
}

static void spec_in_clear(struct spec_in *in)
{
	for (size_t i = 0; i < in->nowned; i++)
		free(in->owned[i]);
	in->nowned = 0;
}

/* A record of numbers and strings (tags 17...): into base and strs. */
static int record_get(struct spec_in *in, const struct state_field *f, void *base,
                      const struct state_num *t, size_t n, const char **strs, size_t nstrs)
{
	struct state_r r;
	struct state_field g;
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		if (g.tag >= 17 && g.tag < 17 + nstrs)
			k = own_str(in, &g, &strs[g.tag - 17]);
		else
			k = state_get_num(&g, base, t, n);
		if (k < 0)
			return k;
	}
	return k;
}

static int spec_field(struct spec_in *in, const struct state_field *f)
{
	struct exec_spec *s = &in->s;
	const char **strs[] = SPEC_STRS(s);
	int r = state_get_num(f, s, spec_nums, ARRAY_SIZE(spec_nums));
	if (r != 0)
		return r;
	if (f->tag >= T_VEC && f->tag < T_VEC + 6) {
		size_t k = f->tag - T_VEC;
		if (in->nvec[k] + 1 >= ARRAY_SIZE(in->vec_store[k]))
			return -E2BIG;
		return own_str(in, f, (const char **)&in->vec_store[k][in->nvec[k]++]);
	}
	if (f->tag >= T_STR && f->tag < T_STR + ARRAY_SIZE(strs))
		return own_str(in, f, strs[f->tag - T_STR]);
	uint64_t v;
	switch (f->tag) {
	case T_GROUP:
		if (s->ngroups == EXEC_GROUPS_MAX || state_get_u64(f, &v) < 0)
			return -EBADMSG;
		s->groups[s->ngroups++] = (uint32_t)v;
		return 0;
	case T_RLIMIT:
		if (s->nrlimits == EXEC_RLIMITS_MAX)
			return -E2BIG;
		return record_get(in, f, &s->rlimits[s->nrlimits++], rlimit_nums,
		                  ARRAY_SIZE(rlimit_nums), NULL, 0);
	case T_UID_MAP:
	case T_GID_MAP: {
		size_t *n = f->tag == T_UID_MAP ? &s->nuid_map : &s->ngid_map;
		struct exec_idmap *m = f->tag == T_UID_MAP ? s->uid_map : s->gid_map;
		if (*n == EXEC_IDMAP_MAX)
			return -E2BIG;
		return record_get(in, f, &m[(*n)++], idmap_nums, ARRAY_SIZE(idmap_nums), NULL, 0);
	}
	case T_MOUNT: {
		if (s->nmounts == EXEC_MOUNTS_MAX)
			return -E2BIG;
		struct exec_mount *m = &in->mounts[s->nmounts++];
		const char *ms[4] = {0};
		*m = (struct exec_mount){0};
		r = record_get(in, f, m, mount_nums, ARRAY_SIZE(mount_nums), ms, 4);
		m->source = ms[0], m->target = ms[1], m->type = ms[2], m->data = ms[3];
		return r;
	}
	case T_JOIN: {
		if (s->njoins == EXEC_JOINS_MAX)
			return -E2BIG;
		static const struct state_num join_nums[] = {STATE_NUM(1, struct exec_ns_join, ns)};
		struct exec_ns_join *j = &s->joins[s->njoins++];
		return record_get(in, f, j, join_nums, 1, &j->path, 1);
	}
	case T_DEVICE:
		if (s->ndevices == EXEC_DEVICES_MAX)
			return -E2BIG;
		in->devices[s->ndevices] = (struct exec_device_rule){0};
		return record_get(in, f, &in->devices[s->ndevices++], device_nums,
		                  ARRAY_SIZE(device_nums), NULL, 0);
	case T_NODE:
		if (s->ndevice_nodes == EXEC_NODES_MAX)
			return -E2BIG;
		struct exec_device_node *nd = &in->nodes[s->ndevice_nodes++];
		*nd = (struct exec_device_node){0};
		return record_get(in, f, nd, node_nums, ARRAY_SIZE(node_nums), &nd->path, 1);
	}
	return 0; /* a newer kin's field */
}

int exec_spec_restore(const struct state_field *f, struct exec_spec **ret, struct err *err)
{
	if (!scratch && !(scratch = malloc(sizeof(*scratch))))
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "spec: out of memory");
	struct spec_in *in = scratch;
	memset(in, 0, offsetof(struct spec_in, vec_store));
	exec_spec_init(&in->s);
	struct state_r r;
	struct state_field g;
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0)
		if ((k = spec_field(in, &g)) < 0)
			break;
	struct exec_spec *s = &in->s;
	char *const **vecs[] = SPEC_VECS(s);
	for (size_t i = 0; i < 6; i++)
		if (in->nvec[i]) {
			in->vec_store[i][in->nvec[i]] = NULL;
			*vecs[i] = in->vec_store[i];
		}
	s->mounts = in->mounts;
	s->devices = in->devices;
	s->device_nodes = in->nodes;
	if (k == 0 && !s->argv)
		k = -EBADMSG;
	if (k == 0)
		k = exec_spec_validate(s, err);
	else
		err_set(err, k, ERR_INTERNAL, "spec: %s", strerror(-k));
	if (k == 0)
		k = exec_spec_copy(s, ret);
	spec_in_clear(in);
	return k;
}
