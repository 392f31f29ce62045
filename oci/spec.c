/* spec: a runtime-spec bundle's config.json, parsed into struct oci_spec.
 *
 * What kin does with each known field:
 *   honoured   ociVersion 1.x; process (args, env, cwd, user uid/gid/umask/
 *              additionalGids, capabilities, rlimits, noNewPrivileges,
 *              oomScoreAdj); root; hostname; mounts; linux.namespaces (new, or
 *              joined by path); uid/gid mappings; sysctl; maskedPaths,
 *              readonlyPaths; resources memory, cpu, pids, blockIO weight,
 *              unified, devices
 *   recorded   annotations (for the containerd shim)
 *   ignored    process.apparmorProfile, selinuxLabel, linux.mountLabel (noted:
 *              they need a host policy), linux.cgroupsPath (the
 *              cell is the caller's), domainname
 *   refused    process.terminal true (kin captures output; no console),
 *              a time namespace, hooks (not yet: UNIMPLEMENTED, named), seccomp's
 *              TRACE and NOTIFY actions, realtime cpu, intelRdt, personality
 *   seccomp    turned into kin's profile text (README "Seccomp"), names the
 *              kernel lacks skipped as runc does; architectures and flags
 *              ignored (kin kills every non-native architecture)
 * Every refusal names the JSON path: `config.json: process.args: required`. */
#include "oci/oci-int.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

static const char *const cap_names[] = {
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
};

static const struct {
	const char *name;
	int type;
} rlimit_names[] = {
    {"RLIMIT_CPU", RLIMIT_CPU},           {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_DATA", RLIMIT_DATA},         {"RLIMIT_STACK", RLIMIT_STACK},
    {"RLIMIT_CORE", RLIMIT_CORE},         {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_NPROC", RLIMIT_NPROC},       {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},   {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},       {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},     {"RLIMIT_RTTIME", RLIMIT_RTTIME},
};

static const char *const ns_names[OCI_NS_COUNT] = {"pid", "network", "mount", "ipc",
                                                   "uts", "user",    "cgroup"};

struct ctx {
	struct err *err;
	struct oci_spec *s;
};

static int bad(struct ctx *c, int code, const char *path, const char *fmt, ...) _printf_(4, 5);
static int bad(struct ctx *c, int code, const char *path, const char *fmt, ...)
{
	char what[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(c->err, code == ERR_UNIMPLEMENTED ? -ENOTSUP : -EINVAL, code,
	               "config.json: %s: %s", path, what);
}
#define BAD(c, path, ...) bad(c, ERR_INVALID_ARGUMENT, path, __VA_ARGS__)

/* ---- typed getters (path: where the value is, for messages) ------------------------- */

static int str_at(struct ctx *c, json_t *v, const char *path, bool required, char **ret)
{
	*ret = NULL;
	if (!v || json_is_null(v))
		return required ? BAD(c, path, "required") : 0;
	if (!json_is_string(v))
		return BAD(c, path, "expected a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return BAD(c, path, "holds a NUL byte");
	if (json_string_length(v) > PATH_MAX)
		return BAD(c, path, "longer than %d bytes", PATH_MAX);
	return (*ret = strdup(json_string_value(v))) ? 0 : -ENOMEM;
}

static int u64_at(struct ctx *c, json_t *v, const char *path, uint64_t max, uint64_t *ret)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return BAD(c, path, "expected a number from 0 to %llu", (unsigned long long)max);
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

static int i64_at(struct ctx *c, json_t *v, const char *path, int64_t *ret)
{
	if (!json_is_integer(v))
		return BAD(c, path, "expected a number");
	*ret = (int64_t)json_integer_value(v);
	return 0;
}

static int bool_at(struct ctx *c, json_t *v, const char *path, bool *ret)
{
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return BAD(c, path, "expected true or false");
	*ret = json_is_true(v);
	return 0;
}

/* A list of strings (NULL when absent): each checked by check (NULL: any). */
static int strv_at(struct ctx *c, json_t *v, const char *path, bool (*check)(const char *),
                   const char *what, char ***ret)
{
	char sub[128];
	size_t i;
	json_t *e;
	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > OCI_SPEC_LIST_MAX)
		return BAD(c, path, "expected a list of at most %d strings", OCI_SPEC_LIST_MAX);
	char **out = calloc(json_array_size(v) + 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	*ret = out;
	json_array_foreach(v, i, e)
	{
		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		int r = str_at(c, e, sub, true, &out[i]);
		if (r < 0)
			return r;
		if (check && !check(out[i]))
			return BAD(c, sub, "\"%.100s\" is not %s", out[i], what);
	}
	return 0;
}

static bool is_absolute(const char *s)
{
	return s[0] == '/';
}

static bool is_env(const char *s)
{
	return strchr(s, '=') && s[0] != '=';
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* ---- process ------------------------------------------------------------------------ */

static int caps_at(struct ctx *c, json_t *v, const char *path, uint64_t *ret)
{
	char **names = NULL;
	int r = strv_at(c, v, path, NULL, NULL, &names);
	*ret = 0;
	for (size_t i = 0; r >= 0 && names && names[i]; i++) {
		size_t k = 0;
		const char *n = str_startswith(names[i], "CAP_") ? names[i] + 4 : "";
		while (k < ARRAY_SIZE(cap_names) && strcmp(cap_names[k], n) != 0)
			k++;
		if (k == ARRAY_SIZE(cap_names))
			r = BAD(c, path, "unknown capability \"%.64s\"", names[i]);
		else
			*ret |= 1ull << k;
	}
	strv_free(names);
	return r;
}

static int user_at(struct ctx *c, json_t *u)
{
	struct oci_spec *s = c->s;
	uint64_t v;
	json_t *g = json_object_get(u, "additionalGids"), *e;
	size_t i;
	if (!json_is_object(u))
		return BAD(c, "process.user", "required (an object with uid and gid)");
	if (u64_at(c, json_object_get(u, "uid"), "process.user.uid", UINT32_MAX - 1, &v) < 0)
		return -EINVAL;
	s->uid = (uint32_t)v;
	if (u64_at(c, json_object_get(u, "gid"), "process.user.gid", UINT32_MAX - 1, &v) < 0)
		return -EINVAL;
	s->gid = (uint32_t)v;
	if (json_object_get(u, "umask")) {
		if (u64_at(c, json_object_get(u, "umask"), "process.user.umask", 0777, &v) < 0)
			return -EINVAL;
		s->umask = (int)v;
	}
	if (g && (!json_is_array(g) || json_array_size(g) > ARRAY_SIZE(s->groups)))
		return BAD(c, "process.user.additionalGids", "expected at most %zu ids",
		           ARRAY_SIZE(s->groups));
	json_array_foreach(g, i, e)
	{
		if (u64_at(c, e, "process.user.additionalGids[]", UINT32_MAX - 1, &v) < 0)
			return -EINVAL;
		s->groups[s->ngroups++] = (uint32_t)v;
	}
	if (json_object_get(u, "username"))
		return bad(c, ERR_UNIMPLEMENTED, "process.user.username", "is for Windows");
	return 0;
}

static int rlimits_at(struct ctx *c, json_t *v)
{
	struct oci_spec *s = c->s;
	size_t i;
	json_t *e;
	char path[64];
	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > ARRAY_SIZE(s->rlimits))
		return BAD(c, "process.rlimits", "expected at most %zu entries",
		           ARRAY_SIZE(s->rlimits));
	json_array_foreach(v, i, e)
	{
		const char *type = json_string_value(json_object_get(e, "type"));
		struct oci_rlimit *l = &s->rlimits[s->nrlimits];
		size_t k = 0;
		snprintf(path, sizeof(path), "process.rlimits[%zu]", i);
		while (type && k < ARRAY_SIZE(rlimit_names) && strcmp(rlimit_names[k].name, type))
			k++;
		if (!type || k == ARRAY_SIZE(rlimit_names))
			return BAD(c, path, "unknown type \"%.32s\"", type ? type : "");
		l->type = rlimit_names[k].type;
		if (u64_at(c, json_object_get(e, "soft"), path, UINT64_MAX >> 1, &l->soft) < 0 ||
		    u64_at(c, json_object_get(e, "hard"), path, UINT64_MAX >> 1, &l->hard) < 0)
			return -EINVAL;
		if (l->soft > l->hard)
			return BAD(c, path, "soft %llu is above hard %llu",
			           (unsigned long long)l->soft, (unsigned long long)l->hard);
		s->nrlimits++;
	}
	return 0;
}

static int process_at(struct ctx *c, json_t *p)
{
	struct oci_spec *s = c->s;
	json_t *caps = json_object_get(p, "capabilities"), *oom;
	int r;
	if (!json_is_object(p))
		return BAD(c, "process", "required");
	if ((r = bool_at(c, json_object_get(p, "terminal"), "process.terminal", &s->terminal)) < 0)
		return r;
	if (s->terminal)
		return bad(c, ERR_UNIMPLEMENTED, "process.terminal",
		           "true: kin captures output and has no console to give (set it false)");
	if ((r = user_at(c, json_object_get(p, "user"))) < 0 ||
	    (r = strv_at(c, json_object_get(p, "args"), "process.args", NULL, NULL, &s->args)) <
	        0 ||
	    (r = strv_at(c, json_object_get(p, "env"), "process.env", is_env, "NAME=VALUE",
	                 &s->env)) < 0 ||
	    (r = str_at(c, json_object_get(p, "cwd"), "process.cwd", true, &s->cwd)) < 0)
		return r;
	/* Required by the spec, but ctr's generated spec leaves it to the
	 * image: kin takes an argv from the request then (exec_bundle.c). */
	if (s->args && (!s->args[0] || !s->args[0][0]))
		return BAD(c, "process.args", "empty (at least the program)");
	if (!is_absolute(s->cwd))
		return BAD(c, "process.cwd", "\"%.100s\" is not an absolute path", s->cwd);
	if (caps) {
		s->caps_given = true;
		if ((r = caps_at(c, json_object_get(caps, "bounding"),
		                 "process.capabilities.bounding", &s->cap_bounding)) < 0 ||
		    (r = caps_at(c, json_object_get(caps, "effective"),
		                 "process.capabilities.effective", &s->cap_effective)) < 0 ||
		    (r = caps_at(c, json_object_get(caps, "permitted"),
		                 "process.capabilities.permitted", &s->cap_permitted)) < 0 ||
		    (r = caps_at(c, json_object_get(caps, "inheritable"),
		                 "process.capabilities.inheritable", &s->cap_inheritable)) < 0 ||
		    (r = caps_at(c, json_object_get(caps, "ambient"),
		                 "process.capabilities.ambient", &s->cap_ambient)) < 0)
			return r;
	}
	if ((r = rlimits_at(c, json_object_get(p, "rlimits"))) < 0 ||
	    (r = bool_at(c, json_object_get(p, "noNewPrivileges"), "process.noNewPrivileges",
	                 &s->no_new_privileges)) < 0)
		return r;
	if ((oom = json_object_get(p, "oomScoreAdj"))) {
		int64_t v = 0;
		if (i64_at(c, oom, "process.oomScoreAdj", &v) < 0 || v < -1000 || v > 1000)
			return BAD(c, "process.oomScoreAdj", "expected -1000 to 1000");
		s->oom_score_adj = (int)v;
		s->oom_score_adj_given = true;
	}
	if (json_object_get(p, "apparmorProfile") || json_object_get(p, "selinuxLabel"))
		snprintf(s->note, sizeof(s->note),
		         "process.apparmorProfile and selinuxLabel are ignored (no host policy)");
	return 0;
}

/* ---- mounts ------------------------------------------------------------------------- */

static const struct {
	const char *name;
	bool clear;
	unsigned long flag;
} mount_flags[] = {
    {"ro", false, MS_RDONLY},
    {"rw", true, MS_RDONLY},
    {"nosuid", false, MS_NOSUID},
    {"suid", true, MS_NOSUID},
    {"nodev", false, MS_NODEV},
    {"dev", true, MS_NODEV},
    {"noexec", false, MS_NOEXEC},
    {"exec", true, MS_NOEXEC},
    {"sync", false, MS_SYNCHRONOUS},
    {"async", true, MS_SYNCHRONOUS},
    {"dirsync", false, MS_DIRSYNC},
    {"remount", false, MS_REMOUNT},
    {"mand", false, MS_MANDLOCK},
    {"nomand", true, MS_MANDLOCK},
    {"atime", true, MS_NOATIME},
    {"noatime", false, MS_NOATIME},
    {"diratime", true, MS_NODIRATIME},
    {"nodiratime", false, MS_NODIRATIME},
    {"relatime", false, MS_RELATIME},
    {"norelatime", true, MS_RELATIME},
    {"strictatime", false, MS_STRICTATIME},
    {"nostrictatime", true, MS_STRICTATIME},
    {"bind", false, MS_BIND},
    {"rbind", false, MS_BIND | MS_REC},
};

static const struct {
	const char *name;
	unsigned long flag;
} propagations[] = {
    {"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
    {"shared", MS_SHARED},         {"rshared", MS_SHARED | MS_REC},
    {"slave", MS_SLAVE},           {"rslave", MS_SLAVE | MS_REC},
    {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
};

/* One option into flags, propagation or the data text. */
static int mount_option(struct ctx *c, struct oci_mount *m, const char *o, const char *path,
                        char *data, size_t size)
{
	for (size_t k = 0; k < ARRAY_SIZE(mount_flags); k++)
		if (!strcmp(o, mount_flags[k].name)) {
			if (mount_flags[k].clear)
				m->flags &= ~mount_flags[k].flag;
			else
				m->flags |= mount_flags[k].flag;
			return 0;
		}
	for (size_t k = 0; k < ARRAY_SIZE(propagations); k++)
		if (!strcmp(o, propagations[k].name)) {
			m->propagation = propagations[k].flag;
			return 0;
		}
	if (strchr(o, ',') || strlen(data) + strlen(o) + 2 > size)
		return BAD(c, path, "option \"%.64s\" holds a comma or the options pass %zu bytes",
		           o, size);
	snprintf(data + strlen(data), size - strlen(data), "%s%s", data[0] ? "," : "", o);
	return 0;
}

static int mount_at(struct ctx *c, json_t *j, size_t i, const char *bundle, struct oci_mount *m)
{
	char path[64], sub[96], data[4000] = "";
	char **opts = NULL;
	snprintf(path, sizeof(path), "mounts[%zu]", i);
	snprintf(sub, sizeof(sub), "%s.destination", path);
	int r = str_at(c, json_object_get(j, "destination"), sub, true, &m->destination);
	if (r < 0)
		return r;
	if (!is_absolute(m->destination) || strstr(m->destination, ".."))
		return BAD(c, sub, "\"%.100s\" is not an absolute path without ..", m->destination);
	snprintf(sub, sizeof(sub), "%s.type", path);
	if ((r = str_at(c, json_object_get(j, "type"), sub, false, &m->type)) < 0)
		return r;
	snprintf(sub, sizeof(sub), "%s.source", path);
	if ((r = str_at(c, json_object_get(j, "source"), sub, false, &m->source)) < 0)
		return r;
	snprintf(sub, sizeof(sub), "%s.options", path);
	if ((r = strv_at(c, json_object_get(j, "options"), sub, NULL, NULL, &opts)) < 0) {
		strv_free(opts);
		return r;
	}
	for (size_t k = 0; r >= 0 && opts && opts[k]; k++)
		r = mount_option(c, m, opts[k], sub, data, sizeof(data));
	strv_free(opts);
	if (r < 0)
		return r;
	if (m->type && !strcmp(m->type, "bind"))
		m->flags |= MS_BIND;
	if ((m->flags & MS_BIND) && (!m->source || !m->source[0]))
		return BAD(c, path, "a bind mount needs a source");
	if (!(m->flags & MS_BIND) && (!m->type || !m->type[0]))
		return BAD(c, path, "needs a type (or the bind option)");
	/* A relative bind source is the bundle's. */
	if ((m->flags & MS_BIND) && m->source[0] != '/') {
		char *abs = NULL;
		if (asprintf(&abs, "%s/%s", bundle, m->source) < 0)
			return -ENOMEM;
		free(m->source);
		m->source = abs;
	}
	return (m->data = strdup(data)) ? 0 : -ENOMEM;
}

/* ---- linux ------------------------------------------------------------------------- */

static int namespaces_at(struct ctx *c, json_t *v)
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
			return bad(c, ERR_UNIMPLEMENTED, path, "time namespaces are not supported");
		while (type && k < OCI_NS_COUNT && strcmp(ns_names[k], type))
			k++;
		if (!type || k == OCI_NS_COUNT)
			return BAD(c, path, "unknown type \"%.32s\"", type ? type : "");
		if (s->ns[k])
			return BAD(c, path, "%s is listed twice", type);
		s->ns[k] = true;
		char sub[96];
		snprintf(sub, sizeof(sub), "%s.path", path);
		int r = str_at(c, json_object_get(e, "path"), sub, false, &s->ns_path[k]);
		if (r < 0)
			return r;
		if (s->ns_path[k] && !is_absolute(s->ns_path[k]))
			return BAD(c, sub, "not an absolute path");
	}
	return 0;
}

static int idmaps_at(struct ctx *c, json_t *v, const char *path, struct oci_idmap *m, size_t *n)
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
		if (u64_at(c, json_object_get(e, "containerID"), path, UINT32_MAX, &a) < 0 ||
		    u64_at(c, json_object_get(e, "hostID"), path, UINT32_MAX, &b) < 0 ||
		    u64_at(c, json_object_get(e, "size"), path, UINT32_MAX, &z) < 0)
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
static int kv_at(struct ctx *c, json_t *v, const char *path, bool (*check)(const char *),
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

static bool annotation_key_ok(const char *k)
{
	return k[0] && !strchr(k, '=') && strlen(k) < 256;
}

/* annotations: any string keys and values, bounded in count and bytes. */
static int annotations_at(struct ctx *c, json_t *v)
{
	const char *k;
	json_t *e;
	size_t n = 0, bytes = 0;
	if (!v)
		return 0;
	if (!json_is_object(v) || json_object_size(v) > 256)
		return BAD(c, "annotations", "expected an object of at most 256 strings");
	if (!(c->s->annotations = calloc(json_object_size(v) + 1, sizeof(char *))))
		return -ENOMEM;
	json_object_foreach(v, k, e)
	{
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e) ||
		    !annotation_key_ok(k))
			return BAD(c, "annotations", "\"%.64s\": expected a string key and value",
			           k);
		bytes += strlen(k) + json_string_length(e) + 2;
		if (bytes > 64 * 1024)
			return BAD(c, "annotations", "more than 64 KiB");
		if (asprintf(&c->s->annotations[n++], "%s=%s", k, json_string_value(e)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int devices_at(struct ctx *c, json_t *v)
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
		if ((maj && !json_is_null(maj) && i64_at(c, maj, path, &d->major) < 0) ||
		    (min && !json_is_null(min) && i64_at(c, min, path, &d->minor) < 0))
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

static int resources_at(struct ctx *c, json_t *res)
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
	    i64_at(c, v, "linux.resources.memory.limit", &s->memory_limit) < 0)
		return -EINVAL;
	if ((v = json_object_get(mem, "reservation")) &&
	    i64_at(c, v, "linux.resources.memory.reservation", &s->memory_reservation) < 0)
		return -EINVAL;
	if ((v = json_object_get(mem, "swap")) &&
	    i64_at(c, v, "linux.resources.memory.swap", &s->memory_swap) < 0)
		return -EINVAL;
	if ((v = json_object_get(cpu, "shares")) &&
	    u64_at(c, v, "linux.resources.cpu.shares", 262144, &s->cpu_shares) < 0)
		return -EINVAL;
	if ((v = json_object_get(cpu, "quota")) &&
	    i64_at(c, v, "linux.resources.cpu.quota", &s->cpu_quota) < 0)
		return -EINVAL;
	if ((v = json_object_get(cpu, "period")) &&
	    u64_at(c, v, "linux.resources.cpu.period", 1000000, &s->cpu_period) < 0)
		return -EINVAL;
	if ((json_integer_value(json_object_get(cpu, "realtimeRuntime")) ||
	     json_integer_value(json_object_get(cpu, "realtimePeriod"))))
		return bad(c, ERR_UNIMPLEMENTED, "linux.resources.cpu.realtimeRuntime",
		           "realtime cpu is not supported");
	if ((r = str_at(c, json_object_get(cpu, "cpus"), "linux.resources.cpu.cpus", false,
	                &s->cpus)) < 0 ||
	    (r = str_at(c, json_object_get(cpu, "mems"), "linux.resources.cpu.mems", false,
	                &s->mems)) < 0)
		return r;
	if ((v = json_object_get(pids, "limit")) &&
	    i64_at(c, v, "linux.resources.pids.limit", &s->pids_limit) < 0)
		return -EINVAL;
	if ((v = json_object_get(blk, "weight")) &&
	    u64_at(c, v, "linux.resources.blockIO.weight", 1000, &s->blkio_weight) < 0)
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
static int action_at(struct ctx *c, json_t *v, json_t *eno, uint64_t def_eno, const char *path,
                     char *out, size_t size)
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
		if (eno && u64_at(c, eno, path, 4095, &e) < 0)
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
		return bad(c, ERR_UNIMPLEMENTED, path, "%s is not supported", a);
	return BAD(c, path, "unknown action \"%.40s\"", a);
}

static int seccomp_args_at(struct ctx *c, json_t *args, const char *path, struct text *t)
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
		if (u64_at(c, json_object_get(a, "index"), sub, 5, &idx) < 0 ||
		    u64_at(c, json_object_get(a, "value"), sub, UINT64_MAX >> 1, &v1) < 0 ||
		    (json_object_get(a, "valueTwo") &&
		     u64_at(c, json_object_get(a, "valueTwo"), sub, UINT64_MAX >> 1, &v2) < 0))
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

static int seccomp_at(struct ctx *c, json_t *sc)
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
	    u64_at(c, json_object_get(sc, "defaultErrnoRet"), "linux.seccomp.defaultErrnoRet", 4095,
	           &def_eno) < 0)
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

static int linux_at(struct ctx *c, json_t *l)
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
		return bad(c, ERR_UNIMPLEMENTED, "linux",
		           "intelRdt and personality are not supported");
	if ((r = namespaces_at(c, json_object_get(l, "namespaces"))) < 0 ||
	    (r = idmaps_at(c, json_object_get(l, "uidMappings"), "linux.uidMappings", s->uid_map,
	                   &s->nuid_map)) < 0 ||
	    (r = idmaps_at(c, json_object_get(l, "gidMappings"), "linux.gidMappings", s->gid_map,
	                   &s->ngid_map)) < 0 ||
	    (r = kv_at(c, json_object_get(l, "sysctl"), "linux.sysctl", sysctl_key_ok,
	               &s->sysctl)) < 0 ||
	    (r = strv_at(c, json_object_get(l, "maskedPaths"), "linux.maskedPaths", is_absolute,
	                 "an absolute path", &s->masked)) < 0 ||
	    (r = strv_at(c, json_object_get(l, "readonlyPaths"), "linux.readonlyPaths", is_absolute,
	                 "an absolute path", &s->readonly)) < 0)
		return r;
	s->masked_given = json_object_get(l, "maskedPaths") != NULL;
	s->readonly_given = json_object_get(l, "readonlyPaths") != NULL;
	if (json_object_get(l, "devices") && json_array_size(json_object_get(l, "devices")))
		return bad(c, ERR_UNIMPLEMENTED, "linux.devices",
		           "device nodes to create are not supported yet (kin's /dev has null, "
		           "zero, full, random, urandom, tty, ptmx)");
	return resources_at(c, json_object_get(l, "resources"));
}

/* ---- the whole ---------------------------------------------------------------------- */

static int spec_at(struct ctx *c, json_t *j, const char *bundle)
{
	struct oci_spec *s = c->s;
	const char *ver = json_string_value(json_object_get(j, "ociVersion"));
	json_t *root = json_object_get(j, "root"), *mounts = json_object_get(j, "mounts"), *m;
	size_t i;
	int r;
	if (!ver)
		return BAD(c, "ociVersion", "required");
	if (!str_startswith(ver, "1."))
		return BAD(c, "ociVersion", "\"%.32s\": kin runs runtime-spec 1.x", ver);
	if (json_object_get(j, "hooks") && json_object_size(json_object_get(j, "hooks")))
		return bad(c, ERR_UNIMPLEMENTED, "hooks", "OCI hooks are not supported yet");
	if ((r = process_at(c, json_object_get(j, "process"))) < 0)
		return r;
	if (!json_is_object(root))
		return BAD(c, "root", "required");
	if ((r = str_at(c, json_object_get(root, "path"), "root.path", true, &s->root)) < 0 ||
	    (r = bool_at(c, json_object_get(root, "readonly"), "root.readonly",
	                 &s->root_readonly)) < 0 ||
	    (r = str_at(c, json_object_get(j, "hostname"), "hostname", false, &s->hostname)) < 0)
		return r;
	if (s->root[0] != '/') {
		char *abs = NULL;
		if (asprintf(&abs, "%s/%s", bundle, s->root) < 0)
			return -ENOMEM;
		free(s->root);
		s->root = abs;
	}
	if (mounts && (!json_is_array(mounts) || json_array_size(mounts) > OCI_SPEC_LIST_MAX))
		return BAD(c, "mounts", "expected a list of at most %d", OCI_SPEC_LIST_MAX);
	if (!(s->mounts = calloc(json_array_size(mounts) + 1, sizeof(*s->mounts))))
		return -ENOMEM;
	json_array_foreach(mounts, i, m)
	{
		s->nmounts++; /* counted first: what a failed one got is freed too */
		if ((r = mount_at(c, m, i, bundle, &s->mounts[i])) < 0)
			return r;
	}
	if ((r = annotations_at(c, json_object_get(j, "annotations"))) < 0)
		return r;
	return linux_at(c, json_object_get(j, "linux"));
}

int oci_spec_parse(const char *json, size_t len, const char *bundle_dir, struct oci_spec **ret,
                   struct err *err)
{
	json_error_t je;
	if (len > OCI_SPEC_JSON_MAX)
		return err_set(err, -EFBIG, ERR_INVALID_ARGUMENT, "config.json: more than %d bytes",
		               OCI_SPEC_JSON_MAX);
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return err_set(err, -EBADMSG, ERR_INVALID_ARGUMENT,
		               "config.json: not JSON: %s at line %d column %d", je.text, je.line,
		               je.column);
	struct oci_spec *s = calloc(1, sizeof(*s));
	struct ctx c = {.err = err, .s = s};
	int r = s ? 0 : -ENOMEM;
	if (r == 0) {
		s->umask = -1;
		s->memory_limit = s->memory_reservation = s->memory_swap = s->cpu_quota = -1;
		s->pids_limit = -1;
		r = json_is_object(j) ? spec_at(&c, j, bundle_dir)
		                      : BAD(&c, "(top)", "not an object");
	}
	json_decref(j);
	if (r < 0) {
		oci_spec_free(s);
		return r == -ENOMEM ? err_set_errno(err, r, "config.json: out of memory") : r;
	}
	*ret = s;
	return 0;
}

int oci_spec_load(const char *bundle_dir, struct oci_spec **ret, struct err *err)
{
	char path[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (snprintf(path, sizeof(path), "%s/config.json", bundle_dir) >= (int)sizeof(path))
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT, "bundle path too long");
	int r = file_read_small(path, OCI_SPEC_JSON_MAX, &text, &len);
	if (r < 0)
		return err_set(err, r, r == -ENOENT ? ERR_NOT_FOUND : ERR_INVALID_ARGUMENT,
		               "bundle %s: config.json: %s", bundle_dir, strerror(-r));
	return oci_spec_parse(text, len, bundle_dir, ret, err);
}

void oci_spec_free(struct oci_spec *s)
{
	if (!s)
		return;
	strv_free(s->args);
	strv_free(s->env);
	free(s->cwd);
	free(s->root);
	free(s->hostname);
	for (size_t i = 0; s->mounts && i < s->nmounts; i++) {
		free(s->mounts[i].destination);
		free(s->mounts[i].type);
		free(s->mounts[i].source);
		free(s->mounts[i].data);
	}
	free(s->mounts);
	for (int i = 0; i < OCI_NS_COUNT; i++)
		free(s->ns_path[i]);
	strv_free(s->sysctl);
	strv_free(s->masked);
	strv_free(s->readonly);
	free(s->cpus);
	free(s->mems);
	strv_free(s->unified);
	free(s->devices);
	free(s->seccomp_text);
	strv_free(s->annotations);
	free(s);
}
