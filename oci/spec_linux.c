/* spec_linux: the linux object of a runtime-spec config.json —
 * namespaces (new, or joined by path), id maps, sysctl, masked and
 * read-only paths, resources and device rules, and seccomp, which becomes
 * a profile in kin's own text form (docs/cells.md "Seccomp profiles"; the names a kernel
 * lacks skipped, as runc does). What is refused is listed in spec.c. */
#include "oci/spec-int.h"

#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

static const char *const ns_names[OCI_NS_COUNT] = {"pid", "network", "mount", "ipc",
                                                   "uts", "user",    "cgroup"};

/* ---- linux ------------------------------------------------------------------------- */

static int namespaces_at(struct oci_spec_ctx *c, json_t *v)
{
	struct oci_spec *s = c->s;
	size_t i;
	json_t *e;
	char path[64];
	if (v && !json_is_array(v))
		return BAD(c, "linux.namespaces", "expected a list");
	json_array_foreach(v, i, e)
	{
		const char *type = json_string_value(json_object_get(e, "type"));
		int k = 0;
		snprintf(path, sizeof(path), "linux.namespaces[%zu]", i);
		if (type && !strcmp(type, "time"))
			return oci_spec_bad(c, ERR_UNIMPLEMENTED, path,
			                    "time namespaces are not supported");
		while (type && k < OCI_NS_COUNT && strcmp(ns_names[k], type))
			k++;
		if (!type || k == OCI_NS_COUNT)
			return BAD(c, path, "unknown type \"%.32s\"", type ? type : "");
		if (s->ns[k])
			return BAD(c, path, "%s is listed twice", type);
		s->ns[k] = true;
		char sub[96];
		snprintf(sub, sizeof(sub), "%s.path", path);
		int r = oci_spec_str_at(c, json_object_get(e, "path"), sub, false, &s->ns_path[k]);
		if (r < 0)
			return r;
		if (s->ns_path[k] && !oci_spec_is_absolute(s->ns_path[k]))
			return BAD(c, sub, "not an absolute path");
	}
	return 0;
}

static int idmaps_at(struct oci_spec_ctx *c, json_t *v, const char *path, struct oci_idmap *m,
                     size_t *n)
{
	size_t i;
	json_t *e;
	uint64_t a, b, z;
	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > 8)
		return BAD(c, path, "expected at most 8 entries");
	json_array_foreach(v, i, e)
	{
		if (oci_spec_u64_at(c, json_object_get(e, "containerID"), path, UINT32_MAX, &a) <
		        0 ||
		    oci_spec_u64_at(c, json_object_get(e, "hostID"), path, UINT32_MAX, &b) < 0 ||
		    oci_spec_u64_at(c, json_object_get(e, "size"), path, UINT32_MAX, &z) < 0)
			return -EINVAL;
		if (!z || a + z > UINT32_MAX || b + z > UINT32_MAX)
			return BAD(c, path, "a range is empty or passes 2^32");
		m[(*n)++] = (struct oci_idmap){(uint32_t)a, (uint32_t)b, (uint32_t)z};
	}
	return 0;
}

static bool sysctl_key_ok(const char *k)
{
	if (!k[0] || strstr(k, ".."))
		return false;
	for (const char *p = k; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("_.-/", *p)))
			return false;
	return true;
}

/* A map of strings into "key=value" (sysctl, unified). */
static int kv_at(struct oci_spec_ctx *c, json_t *v, const char *path, bool (*check)(const char *),
                 char ***ret)
{
	const char *k;
	json_t *e;
	size_t n = 0;
	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_object(v) || json_object_size(v) > 64)
		return BAD(c, path, "expected an object of at most 64 strings");
	char **out = calloc(json_object_size(v) + 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	*ret = out;
	json_object_foreach(v, k, e)
	{
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e))
			return BAD(c, path, "\"%.64s\": expected a string", k);
		if (!check(k) || strchr(json_string_value(e), '\n'))
			return BAD(c, path,
			           "\"%.64s\" is not a valid key, or its value holds a newline", k);
		if (asprintf(&out[n++], "%s=%s", k, json_string_value(e)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int devices_at(struct oci_spec_ctx *c, json_t *v)
{
	struct oci_spec *s = c->s;
	size_t i;
	json_t *e;
	char path[64];
	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > OCI_SPEC_LIST_MAX)
		return BAD(c, "linux.resources.devices", "expected at most %d rules",
		           OCI_SPEC_LIST_MAX);
	if (!(s->devices = calloc(json_array_size(v) + 1, sizeof(*s->devices))))
		return -ENOMEM;
	json_array_foreach(v, i, e)
	{
		struct oci_device_rule *d = &s->devices[s->ndevices];
		const char *type = json_string_value(json_object_get(e, "type"));
		const char *access = json_string_value(json_object_get(e, "access"));
		json_t *maj = json_object_get(e, "major"), *min = json_object_get(e, "minor");
		snprintf(path, sizeof(path), "linux.resources.devices[%zu]", i);
		if (!json_is_boolean(json_object_get(e, "allow")))
			return BAD(c, path, "allow: required, true or false");
		d->allow = json_is_true(json_object_get(e, "allow"));
		d->type = type ? type[0] : 'a';
		if (type && (strlen(type) != 1 || !strchr("abc", type[0])))
			return BAD(c, path, "type \"%.8s\": expected a, b or c", type);
		d->major = d->minor = -1;
		if ((maj && !json_is_null(maj) && oci_spec_i64_at(c, maj, path, &d->major) < 0) ||
		    (min && !json_is_null(min) && oci_spec_i64_at(c, min, path, &d->minor) < 0))
			return -EINVAL;
		if (d->major < -1 || d->minor < -1 || d->major > 0xfff || d->minor > 0xfffff)
			return BAD(c, path, "major or minor out of range");
		for (const char *a = access ? access : "rwm"; *a; a++) {
			const char *at = strchr("rwm", *a);
			if (!at)
				return BAD(c, path, "access \"%.8s\": expected letters of rwm",
				           access);
			d->access |= 1u << (at - "rwm");
		}
		s->ndevices++;
	}
	return 0;
}

static int resources_at(struct oci_spec_ctx *c, json_t *res)
{
	struct oci_spec *s = c->s;
	json_t *mem = json_object_get(res, "memory"), *cpu = json_object_get(res, "cpu");
	json_t *pids = json_object_get(res, "pids"), *blk = json_object_get(res, "blockIO"), *v;
	int r;
	if (!res)
		return 0;
	if (!json_is_object(res))
		return BAD(c, "linux.resources", "expected an object");
	if ((v = json_object_get(mem, "limit")) &&
	    oci_spec_i64_at(c, v, "linux.resources.memory.limit", &s->memory_limit) < 0)
		return -EINVAL;
	if ((v = json_object_get(mem, "reservation")) &&
	    oci_spec_i64_at(c, v, "linux.resources.memory.reservation", &s->memory_reservation) < 0)
		return -EINVAL;
	if ((v = json_object_get(mem, "swap")) &&
	    oci_spec_i64_at(c, v, "linux.resources.memory.swap", &s->memory_swap) < 0)
		return -EINVAL;
	if ((v = json_object_get(cpu, "shares")) &&
	    oci_spec_u64_at(c, v, "linux.resources.cpu.shares", 262144, &s->cpu_shares) < 0)
		return -EINVAL;
	if ((v = json_object_get(cpu, "quota")) &&
	    oci_spec_i64_at(c, v, "linux.resources.cpu.quota", &s->cpu_quota) < 0)
		return -EINVAL;
	if ((v = json_object_get(cpu, "period")) &&
	    oci_spec_u64_at(c, v, "linux.resources.cpu.period", 1000000, &s->cpu_period) < 0)
		return -EINVAL;
	if ((json_integer_value(json_object_get(cpu, "realtimeRuntime")) ||
	     json_integer_value(json_object_get(cpu, "realtimePeriod"))))
		return oci_spec_bad(c, ERR_UNIMPLEMENTED, "linux.resources.cpu.realtimeRuntime",
		                    "realtime cpu is not supported");
	if ((r = oci_spec_str_at(c, json_object_get(cpu, "cpus"), "linux.resources.cpu.cpus", false,
	                         &s->cpus)) < 0 ||
	    (r = oci_spec_str_at(c, json_object_get(cpu, "mems"), "linux.resources.cpu.mems", false,
	                         &s->mems)) < 0)
		return r;
	if ((v = json_object_get(pids, "limit")) &&
	    oci_spec_i64_at(c, v, "linux.resources.pids.limit", &s->pids_limit) < 0)
		return -EINVAL;
	if ((v = json_object_get(blk, "weight")) &&
	    oci_spec_u64_at(c, v, "linux.resources.blockIO.weight", 1000, &s->blkio_weight) < 0)
		return -EINVAL;
	if ((r = kv_at(c, json_object_get(res, "unified"), "linux.resources.unified", sysctl_key_ok,
	               &s->unified)) < 0)
		return r;
	return devices_at(c, json_object_get(res, "devices"));
}

/* ---- seccomp: runtime-spec's JSON into kin's profile text ----------------------------- */

#define SECCOMP_TEXT_MAX (64 * 1024)

struct text {
	char *buf;
	size_t len;
	bool full;
};

static void put(struct text *t, const char *fmt, ...) _printf_(2, 3);
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->buf + t->len, SECCOMP_TEXT_MAX - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= SECCOMP_TEXT_MAX - t->len)
		t->full = true;
	else
		t->len += (size_t)n;
}

/* An action (and its errno) as kin's profile words. */
static int action_at(struct oci_spec_ctx *c, json_t *v, json_t *eno, uint64_t def_eno,
                     const char *path, char *out, size_t size)
{
	static const struct {
		const char *oci, *kin;
	} map[] = {
	    {"SCMP_ACT_ALLOW", "allow"},
	    {"SCMP_ACT_KILL", "kill-thread"},
	    {"SCMP_ACT_KILL_THREAD", "kill-thread"},
	    {"SCMP_ACT_KILL_PROCESS", "kill"},
	    {"SCMP_ACT_TRAP", "trap"},
	    {"SCMP_ACT_LOG", "log"},
	};
	const char *a = json_string_value(v);
	uint64_t e = def_eno;
	if (!a)
		return BAD(c, path, "required (a string)");
	if (!strcmp(a, "SCMP_ACT_ERRNO")) {
		if (eno && oci_spec_u64_at(c, eno, path, 4095, &e) < 0)
			return -EINVAL;
		snprintf(out, size, "errno %llu", (unsigned long long)(e ? e : EPERM));
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (!strcmp(a, map[i].oci)) {
			snprintf(out, size, "%s", map[i].kin);
			return 0;
		}
	if (!strcmp(a, "SCMP_ACT_TRACE") || !strcmp(a, "SCMP_ACT_NOTIFY"))
		return oci_spec_bad(c, ERR_UNIMPLEMENTED, path, "%s is not supported", a);
	return BAD(c, path, "unknown action \"%.40s\"", a);
}

static int seccomp_args_at(struct oci_spec_ctx *c, json_t *args, const char *path, struct text *t)
{
	static const struct {
		const char *oci, *kin;
	} ops[] = {{"SCMP_CMP_NE", "ne"},       {"SCMP_CMP_LT", "lt"}, {"SCMP_CMP_LE", "le"},
	           {"SCMP_CMP_EQ", "eq"},       {"SCMP_CMP_GE", "ge"}, {"SCMP_CMP_GT", "gt"},
	           {"SCMP_CMP_MASKED_EQ", "me"}};
	size_t i;
	json_t *a;
	char sub[128];
	if (args && (!json_is_array(args) || json_array_size(args) > 6))
		return BAD(c, path, "args: expected at most 6 conditions");
	json_array_foreach(args, i, a)
	{
		uint64_t idx, v1 = 0, v2 = 0;
		const char *op = json_string_value(json_object_get(a, "op"));
		size_t k = 0;
		snprintf(sub, sizeof(sub), "%s.args[%zu]", path, i);
		if (oci_spec_u64_at(c, json_object_get(a, "index"), sub, 5, &idx) < 0 ||
		    oci_spec_u64_at(c, json_object_get(a, "value"), sub, UINT64_MAX >> 1, &v1) <
		        0 ||
		    (json_object_get(a, "valueTwo") &&
		     oci_spec_u64_at(c, json_object_get(a, "valueTwo"), sub, UINT64_MAX >> 1, &v2) <
		         0))
			return -EINVAL;
		while (op && k < ARRAY_SIZE(ops) && strcmp(ops[k].oci, op))
			k++;
		if (!op || k == ARRAY_SIZE(ops))
			return BAD(c, sub, "unknown op \"%.32s\"", op ? op : "");
		if (k == 6)
			put(t, " arg%llu me %llu:%llu", (unsigned long long)idx,
			    (unsigned long long)v1, (unsigned long long)v2);
		else
			put(t, " arg%llu %s %llu", (unsigned long long)idx, ops[k].kin,
			    (unsigned long long)v1);
	}
	return 0;
}

static bool syscall_name_ok(const char *s)
{
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return s[0] && strlen(s) < 64;
}

static int seccomp_at(struct oci_spec_ctx *c, json_t *sc)
{
	json_t *rules = json_object_get(sc, "syscalls"), *rule;
	uint64_t def_eno = EPERM;
	char action[32], path[64], sub[96];
	size_t i;
	if (!sc)
		return 0;
	if (!json_is_object(sc))
		return BAD(c, "linux.seccomp", "expected an object");
	struct text t = {.buf = malloc(SECCOMP_TEXT_MAX)};
	if (!t.buf)
		return -ENOMEM;
	c->s->seccomp_text = t.buf;
	if (json_object_get(sc, "defaultErrnoRet") &&
	    oci_spec_u64_at(c, json_object_get(sc, "defaultErrnoRet"),
	                    "linux.seccomp.defaultErrnoRet", 4095, &def_eno) < 0)
		return -EINVAL;
	if (action_at(c, json_object_get(sc, "defaultAction"), NULL, def_eno,
	              "linux.seccomp.defaultAction", action, sizeof(action)) < 0)
		return -EINVAL;
	put(&t, "unknown skip\ndefault %s\n", action);
	if (rules && (!json_is_array(rules) || json_array_size(rules) > 1024))
		return BAD(c, "linux.seccomp.syscalls", "expected a list of at most 1024 rules");
	json_array_foreach(rules, i, rule)
	{
		json_t *names = json_object_get(rule, "names"), *n;
		size_t k;
		snprintf(path, sizeof(path), "linux.seccomp.syscalls[%zu]", i);
		snprintf(sub, sizeof(sub), "%s.action", path);
		if (action_at(c, json_object_get(rule, "action"), json_object_get(rule, "errnoRet"),
		              def_eno, sub, action, sizeof(action)) < 0)
			return -EINVAL;
		if (!json_is_array(names) || json_array_size(names) > 1024)
			return BAD(c, path, "names: expected a list of syscall names");
		json_array_foreach(names, k, n)
		{
			const char *name = json_string_value(n);
			snprintf(sub, sizeof(sub), "%s.names[%zu]", path, k);
			if (!name || !syscall_name_ok(name))
				return BAD(c, sub, "not a syscall name");
			put(&t, "%s %s", name, action);
			if (seccomp_args_at(c, json_object_get(rule, "args"), path, &t) < 0)
				return -EINVAL;
			put(&t, "\n");
		}
	}
	if (t.full)
		return BAD(c, "linux.seccomp", "the profile passes %d bytes in kin's form",
		           SECCOMP_TEXT_MAX);
	return 0;
}

/* linux.devices: nodes to make in the container's /dev. */
static int nodes_at(struct oci_spec_ctx *c, json_t *v)
{
	struct oci_spec *s = c->s;
	size_t i;
	json_t *e;
	char path[64];
	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > OCI_SPEC_NODES_MAX)
		return BAD(c, "linux.devices", "expected a list of at most %d devices",
		           OCI_SPEC_NODES_MAX);
	if (!(s->nodes = calloc(json_array_size(v) + 1, sizeof(*s->nodes))))
		return -ENOMEM;
	json_array_foreach(v, i, e)
	{
		struct oci_device_node *d = &s->nodes[s->nnodes++];
		const char *type = json_string_value(json_object_get(e, "type"));
		uint64_t n = 0;
		snprintf(path, sizeof(path), "linux.devices[%zu]", i);
		int r = oci_spec_str_at(c, json_object_get(e, "path"), path, true, &d->path);
		if (r < 0)
			return r;
		if (!str_startswith(d->path, "/dev/") || strstr(d->path, ".."))
			return BAD(c, path, "path \"%.64s\" is not under /dev", d->path);
		if (!type || strlen(type) != 1 || !strchr("cbpu", type[0]))
			return BAD(c, path, "type: expected c, b, u or p");
		d->type = type[0] == 'u' ? 'c' : type[0];
		if (d->type != 'p' &&
		    (oci_spec_i64_at(c, json_object_get(e, "major"), path, &d->major) < 0 ||
		     oci_spec_i64_at(c, json_object_get(e, "minor"), path, &d->minor) < 0))
			return -EINVAL;
		if (d->major < 0 || d->minor < 0 || d->major > 0xfff || d->minor > 0xfffff)
			return BAD(c, path, "major or minor out of range");
		d->mode = 0666;
		if (json_object_get(e, "fileMode")) {
			if (oci_spec_u64_at(c, json_object_get(e, "fileMode"), path, 07777, &n) < 0)
				return -EINVAL;
			d->mode = (uint32_t)n;
		}
		if (json_object_get(e, "uid") &&
		    oci_spec_u64_at(c, json_object_get(e, "uid"), path, UINT32_MAX - 1, &n) < 0)
			return -EINVAL;
		d->uid = json_object_get(e, "uid") ? (uint32_t)n : 0;
		if (json_object_get(e, "gid") &&
		    oci_spec_u64_at(c, json_object_get(e, "gid"), path, UINT32_MAX - 1, &n) < 0)
			return -EINVAL;
		d->gid = json_object_get(e, "gid") ? (uint32_t)n : 0;
	}
	return 0;
}

int oci_spec_linux(struct oci_spec_ctx *c, json_t *l)
{
	struct oci_spec *s = c->s;
	int r;
	if (!l)
		return 0;
	if (!json_is_object(l))
		return BAD(c, "linux", "expected an object");
	if ((r = seccomp_at(c, json_object_get(l, "seccomp"))) < 0)
		return r;
	if (json_object_get(l, "intelRdt") || json_object_get(l, "personality"))
		return oci_spec_bad(c, ERR_UNIMPLEMENTED, "linux",
		                    "intelRdt and personality are not supported");
	if ((r = namespaces_at(c, json_object_get(l, "namespaces"))) < 0 ||
	    (r = idmaps_at(c, json_object_get(l, "uidMappings"), "linux.uidMappings", s->uid_map,
	                   &s->nuid_map)) < 0 ||
	    (r = idmaps_at(c, json_object_get(l, "gidMappings"), "linux.gidMappings", s->gid_map,
	                   &s->ngid_map)) < 0 ||
	    (r = kv_at(c, json_object_get(l, "sysctl"), "linux.sysctl", sysctl_key_ok,
	               &s->sysctl)) < 0 ||
	    (r = oci_spec_strv_at(c, json_object_get(l, "maskedPaths"), "linux.maskedPaths",
	                          oci_spec_is_absolute, "an absolute path", &s->masked)) < 0 ||
	    (r = oci_spec_strv_at(c, json_object_get(l, "readonlyPaths"), "linux.readonlyPaths",
	                          oci_spec_is_absolute, "an absolute path", &s->readonly)) < 0)
		return r;
	json_t *rp = json_object_get(l, "rootfsPropagation");
	if (rp && (!json_is_string(rp) ||
	           !oci_spec_propagation(json_string_value(rp), &s->root_propagation) ||
	           (s->root_propagation & ~MS_REC) == MS_UNBINDABLE))
		return BAD(c, "linux.rootfsPropagation",
		           "expected private, slave or shared (r- for recursive)");
	s->masked_given = json_object_get(l, "maskedPaths") != NULL;
	s->readonly_given = json_object_get(l, "readonlyPaths") != NULL;
	if ((r = nodes_at(c, json_object_get(l, "devices"))) < 0)
		return r;
	return resources_at(c, json_object_get(l, "resources"));
}

static int resources_top(struct oci_spec_ctx *c, json_t *j, const void *arg)
{
	(void)arg;
	return resources_at(c, j);
}

int oci_resources_parse(const char *json, size_t len, struct oci_spec **ret, struct err *err)
{
	return oci_spec_parse_json(json, len, "resources", resources_top, NULL, ret, err);
}

int oci_cgroup_limits(const struct oci_spec *o, oci_limit_set_fn set, void *limits, struct err *err)
{
	char v[64];
	int r = 0;
#define SET(key, ...)                                                                              \
	do {                                                                                       \
		snprintf(v, sizeof(v), __VA_ARGS__);                                               \
		if (r >= 0)                                                                        \
			r = set(limits, key, v, err);                                              \
	} while (0)
	if (o->memory_limit > 0)
		SET("memory.max", "%lld", (long long)o->memory_limit);
	if (o->memory_reservation > 0)
		SET("memory.low", "%lld", (long long)o->memory_reservation);
	if (o->memory_swap > 0 && o->memory_limit > 0 && o->memory_swap >= o->memory_limit)
		SET("memory.swap.max", "%lld", (long long)(o->memory_swap - o->memory_limit));
	if (o->cpu_shares)
		SET("cpu.weight", "%llu",
		    (unsigned long long)(1 + ((o->cpu_shares < 2 ? 2 : o->cpu_shares) - 2) * 9999 /
		                                 262142));
	if (o->cpu_quota > 0)
		SET("cpu.max", "%lld %llu", (long long)o->cpu_quota,
		    (unsigned long long)(o->cpu_period ? o->cpu_period : 100000));
	if (o->cpus && o->cpus[0])
		SET("cpuset.cpus", "%s", o->cpus);
	if (o->mems && o->mems[0])
		SET("cpuset.mems", "%s", o->mems);
	if (o->pids_limit > 0)
		SET("pids.max", "%lld", (long long)o->pids_limit);
	if (o->blkio_weight >= 10)
		SET("io.weight", "%llu",
		    (unsigned long long)(1 + (o->blkio_weight - 10) * 9999 / 990));
	for (size_t i = 0; r >= 0 && o->unified && o->unified[i]; i++) {
		char key[64];
		const char *eq = strchr(o->unified[i], '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - o->unified[i]), o->unified[i]);
		r = set(limits, key, eq + 1, err);
	}
#undef SET
	if (r < 0)
		err->code = ERR_INVALID_ARGUMENT;
	return r;
}
