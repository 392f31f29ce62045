/* spec: a runtime-spec bundle's config.json, parsed into struct oci_spec.
 *
 * What kin does with each known field:
 *   honoured   ociVersion 1.x; process (args, env, cwd, user uid/gid/umask/
 *              additionalGids, capabilities, rlimits, noNewPrivileges,
 *              oomScoreAdj, terminal and consoleSize: a pty of kin's); root;
 *              hostname; mounts; linux.namespaces (new, or joined by path);
 *              uid/gid mappings; sysctl; maskedPaths,
 *              readonlyPaths; resources memory, cpu, pids, blockIO weight,
 *              unified, devices; linux.devices (nodes); linux.seccomp
 *   recorded   annotations (for the containerd shim)
 *   ignored    process.apparmorProfile, selinuxLabel, linux.mountLabel (noted:
 *              they need a host policy), linux.cgroupsPath (the
 *              cell is the caller's), domainname
 *   refused    a time namespace, hooks (not yet: UNIMPLEMENTED, named), seccomp's
 *              TRACE and NOTIFY actions, realtime cpu, intelRdt, personality
 *   seccomp    turned into kin's profile text (docs/cells.md "Seccomp profiles"), names the
 *              kernel lacks skipped as runc does; architectures and flags
 *              ignored (kin kills every non-native architecture)
 * Every refusal names the JSON path: `config.json: process.args: required`. */
#include "oci/spec-int.h"

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

/* ---- typed getters (path: where the value is, for messages) ------------------------- */

int oci_spec_bad(struct oci_spec_ctx *c, int code, const char *path, const char *fmt, ...)
{
	char what[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(c->err, code == ERR_UNIMPLEMENTED ? -ENOTSUP : -EINVAL, code,
	               "config.json: %s: %s", path, what);
}

int oci_spec_str_at(struct oci_spec_ctx *c, json_t *v, const char *path, bool required, char **ret)
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

int oci_spec_u64_at(struct oci_spec_ctx *c, json_t *v, const char *path, uint64_t max,
                    uint64_t *ret)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return BAD(c, path, "expected a number from 0 to %llu", (unsigned long long)max);
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

int oci_spec_i64_at(struct oci_spec_ctx *c, json_t *v, const char *path, int64_t *ret)
{
	if (!json_is_integer(v))
		return BAD(c, path, "expected a number");
	*ret = (int64_t)json_integer_value(v);
	return 0;
}

int oci_spec_bool_at(struct oci_spec_ctx *c, json_t *v, const char *path, bool *ret)
{
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return BAD(c, path, "expected true or false");
	*ret = json_is_true(v);
	return 0;
}

/* A list of strings (NULL when absent): each checked by check (NULL: any). */
int oci_spec_strv_at(struct oci_spec_ctx *c, json_t *v, const char *path,
                     bool (*check)(const char *), const char *what, char ***ret)
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
		int r = oci_spec_str_at(c, e, sub, true, &out[i]);
		if (r < 0)
			return r;
		if (check && !check(out[i]))
			return BAD(c, sub, "\"%.100s\" is not %s", out[i], what);
	}
	return 0;
}

bool oci_spec_is_absolute(const char *s)
{
	return s[0] == '/';
}

static bool is_env(const char *s)
{
	return strchr(s, '=') && s[0] != '=';
}

void oci_spec_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* ---- process ------------------------------------------------------------------------ */

static int caps_at(struct oci_spec_ctx *c, json_t *v, const char *path, uint64_t *ret)
{
	char **names = NULL;
	int r = oci_spec_strv_at(c, v, path, NULL, NULL, &names);
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
	oci_spec_strv_free(names);
	return r;
}

static int user_at(struct oci_spec_ctx *c, json_t *u)
{
	struct oci_spec *s = c->s;
	uint64_t v;
	json_t *g = json_object_get(u, "additionalGids"), *e;
	size_t i;
	if (!json_is_object(u))
		return BAD(c, "process.user", "required (an object with uid and gid)");
	if (oci_spec_u64_at(c, json_object_get(u, "uid"), "process.user.uid", UINT32_MAX - 1, &v) <
	    0)
		return -EINVAL;
	s->uid = (uint32_t)v;
	if (oci_spec_u64_at(c, json_object_get(u, "gid"), "process.user.gid", UINT32_MAX - 1, &v) <
	    0)
		return -EINVAL;
	s->gid = (uint32_t)v;
	if (json_object_get(u, "umask")) {
		if (oci_spec_u64_at(c, json_object_get(u, "umask"), "process.user.umask", 0777,
		                    &v) < 0)
			return -EINVAL;
		s->umask = (int)v;
	}
	if (g && (!json_is_array(g) || json_array_size(g) > ARRAY_SIZE(s->groups)))
		return BAD(c, "process.user.additionalGids", "expected at most %zu ids",
		           ARRAY_SIZE(s->groups));
	json_array_foreach(g, i, e)
	{
		if (oci_spec_u64_at(c, e, "process.user.additionalGids[]", UINT32_MAX - 1, &v) < 0)
			return -EINVAL;
		s->groups[s->ngroups++] = (uint32_t)v;
	}
	if (json_object_get(u, "username"))
		return oci_spec_bad(c, ERR_UNIMPLEMENTED, "process.user.username",
		                    "is for Windows");
	return 0;
}

static int rlimits_at(struct oci_spec_ctx *c, json_t *v)
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
		if (oci_spec_u64_at(c, json_object_get(e, "soft"), path, UINT64_MAX >> 1,
		                    &l->soft) < 0 ||
		    oci_spec_u64_at(c, json_object_get(e, "hard"), path, UINT64_MAX >> 1,
		                    &l->hard) < 0)
			return -EINVAL;
		if (l->soft > l->hard)
			return BAD(c, path, "soft %llu is above hard %llu",
			           (unsigned long long)l->soft, (unsigned long long)l->hard);
		s->nrlimits++;
	}
	return 0;
}

static int process_at(struct oci_spec_ctx *c, json_t *p)
{
	struct oci_spec *s = c->s;
	json_t *caps = json_object_get(p, "capabilities"), *oom;
	int r;
	if (!json_is_object(p))
		return BAD(c, "process", "required");
	if ((r = oci_spec_bool_at(c, json_object_get(p, "terminal"), "process.terminal",
	                          &s->terminal)) < 0)
		return r;
	json_t *cs = json_object_get(p, "consoleSize");
	if (cs && (r = oci_spec_u64_at(c, json_object_get(cs, "height"),
	                               "process.consoleSize.height", 4096, &s->console_rows)) < 0)
		return r;
	if (cs && (r = oci_spec_u64_at(c, json_object_get(cs, "width"), "process.consoleSize.width",
	                               4096, &s->console_cols)) < 0)
		return r;
	if ((r = user_at(c, json_object_get(p, "user"))) < 0 ||
	    (r = oci_spec_strv_at(c, json_object_get(p, "args"), "process.args", NULL, NULL,
	                          &s->args)) < 0 ||
	    (r = oci_spec_strv_at(c, json_object_get(p, "env"), "process.env", is_env, "NAME=VALUE",
	                          &s->env)) < 0 ||
	    (r = oci_spec_str_at(c, json_object_get(p, "cwd"), "process.cwd", true, &s->cwd)) < 0)
		return r;
	/* Required by the spec, but ctr's generated spec leaves it to the
	 * image: kin takes an argv from the request then (exec_bundle.c). */
	if (s->args && (!s->args[0] || !s->args[0][0]))
		return BAD(c, "process.args", "empty (at least the program)");
	if (!oci_spec_is_absolute(s->cwd))
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
	    (r = oci_spec_bool_at(c, json_object_get(p, "noNewPrivileges"),
	                          "process.noNewPrivileges", &s->no_new_privileges)) < 0)
		return r;
	if ((oom = json_object_get(p, "oomScoreAdj"))) {
		int64_t v = 0;
		if (oci_spec_i64_at(c, oom, "process.oomScoreAdj", &v) < 0 || v < -1000 || v > 1000)
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
	unsigned long flag;
} propagations[] = {
    {"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
    {"shared", MS_SHARED},         {"rshared", MS_SHARED | MS_REC},
    {"slave", MS_SLAVE},           {"rslave", MS_SLAVE | MS_REC},
    {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
};

bool oci_spec_propagation(const char *name, unsigned long *ret)
{
	for (size_t k = 0; k < ARRAY_SIZE(propagations); k++)
		if (!strcmp(name, propagations[k].name)) {
			*ret = propagations[k].flag;
			return true;
		}
	return false;
}

/* One option into flags, propagation or the data text. */
static int mount_option(struct oci_spec_ctx *c, struct oci_mount *m, const char *o,
                        const char *path, char *data, size_t size)
{
	unsigned long set, clear;
	if (mount_option_flag(o, &set, &clear)) { /* lib's table, mount(8)'s words */
		m->flags = (m->flags | set) & ~clear;
		return 0;
	}
	if (oci_spec_propagation(o, &m->propagation))
		return 0;
	if (strchr(o, ',') || strlen(data) + strlen(o) + 2 > size)
		return BAD(c, path, "option \"%.64s\" holds a comma or the options pass %zu bytes",
		           o, size);
	snprintf(data + strlen(data), size - strlen(data), "%s%s", data[0] ? "," : "", o);
	return 0;
}

static int mount_at(struct oci_spec_ctx *c, json_t *j, size_t i, const char *bundle,
                    struct oci_mount *m)
{
	char path[64], sub[96], data[4000] = "";
	char **opts = NULL;
	snprintf(path, sizeof(path), "mounts[%zu]", i);
	snprintf(sub, sizeof(sub), "%s.destination", path);
	int r = oci_spec_str_at(c, json_object_get(j, "destination"), sub, true, &m->destination);
	if (r < 0)
		return r;
	if (!oci_spec_is_absolute(m->destination) || strstr(m->destination, ".."))
		return BAD(c, sub, "\"%.100s\" is not an absolute path without ..", m->destination);
	snprintf(sub, sizeof(sub), "%s.type", path);
	if ((r = oci_spec_str_at(c, json_object_get(j, "type"), sub, false, &m->type)) < 0)
		return r;
	snprintf(sub, sizeof(sub), "%s.source", path);
	if ((r = oci_spec_str_at(c, json_object_get(j, "source"), sub, false, &m->source)) < 0)
		return r;
	snprintf(sub, sizeof(sub), "%s.options", path);
	if ((r = oci_spec_strv_at(c, json_object_get(j, "options"), sub, NULL, NULL, &opts)) < 0) {
		oci_spec_strv_free(opts);
		return r;
	}
	for (size_t k = 0; r >= 0 && opts && opts[k]; k++)
		r = mount_option(c, m, opts[k], sub, data, sizeof(data));
	oci_spec_strv_free(opts);
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

static bool annotation_key_ok(const char *k)
{
	return k[0] && !strchr(k, '=') && strlen(k) < 256;
}

/* annotations: any string keys and values, bounded in count and bytes. */
static int annotations_at(struct oci_spec_ctx *c, json_t *v)
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

/* ---- the whole ---------------------------------------------------------------------- */

static int spec_at(struct oci_spec_ctx *c, json_t *j, const char *bundle)
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
		return oci_spec_bad(c, ERR_UNIMPLEMENTED, "hooks",
		                    "OCI hooks are not supported yet");
	if ((r = process_at(c, json_object_get(j, "process"))) < 0)
		return r;
	if (!json_is_object(root))
		return BAD(c, "root", "required");
	if ((r = oci_spec_str_at(c, json_object_get(root, "path"), "root.path", true, &s->root)) <
	        0 ||
	    (r = oci_spec_bool_at(c, json_object_get(root, "readonly"), "root.readonly",
	                          &s->root_readonly)) < 0 ||
	    (r = oci_spec_str_at(c, json_object_get(j, "hostname"), "hostname", false,
	                         &s->hostname)) < 0)
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
	return oci_spec_linux(c, json_object_get(j, "linux"));
}

int oci_spec_parse_json(const char *json, size_t len, const char *what,
                        int (*at)(struct oci_spec_ctx *c, json_t *j, const void *arg),
                        const void *arg, struct oci_spec **ret, struct err *err)
{
	json_error_t je;
	if (len > OCI_SPEC_JSON_MAX)
		return err_set(err, -EFBIG, ERR_INVALID_ARGUMENT, "%s: more than %d bytes", what,
		               OCI_SPEC_JSON_MAX);
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return err_set(err, -EBADMSG, ERR_INVALID_ARGUMENT,
		               "%s: not JSON: %s at line %d column %d", what, je.text, je.line,
		               je.column);
	struct oci_spec *s = calloc(1, sizeof(*s));
	struct oci_spec_ctx c = {.err = err, .s = s};
	int r = s ? 0 : -ENOMEM;
	if (r == 0) {
		s->umask = -1;
		s->memory_limit = s->memory_reservation = s->memory_swap = s->cpu_quota = -1;
		s->pids_limit = -1;
		r = json_is_object(j) ? at(&c, j, arg) : BAD(&c, "(top)", "not an object");
	}
	json_decref(j);
	if (r < 0) {
		oci_spec_free(s);
		return r == -ENOMEM ? err_set_errno(err, r, "%s: out of memory", what) : r;
	}
	*ret = s;
	return 0;
}

static int spec_top(struct oci_spec_ctx *c, json_t *j, const void *bundle_dir)
{
	return spec_at(c, j, bundle_dir);
}

int oci_spec_parse(const char *json, size_t len, const char *bundle_dir, struct oci_spec **ret,
                   struct err *err)
{
	return oci_spec_parse_json(json, len, "config.json", spec_top, bundle_dir, ret, err);
}

int oci_spec_load(const char *bundle_dir, struct oci_spec **ret, struct err *err)
{
	char path[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (snprintf(path, sizeof(path), "%s/config.json", bundle_dir) >= (int)sizeof(path))
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT, "bundle path too long");
	/* Read in PID 1: a FIFO or a device named config.json must not block. */
	int r = file_read_regular(path, OCI_SPEC_JSON_MAX, &text, &len);
	if (r < 0)
		return err_set(err, r, r == -ENOENT ? ERR_NOT_FOUND : ERR_INVALID_ARGUMENT,
		               "bundle %s: config.json: %s", bundle_dir,
		               r == -EINVAL ? "not a regular file" : strerror(-r));
	return oci_spec_parse(text, len, bundle_dir, ret, err);
}

void oci_spec_free(struct oci_spec *s)
{
	if (!s)
		return;
	oci_spec_strv_free(s->args);
	oci_spec_strv_free(s->env);
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
	oci_spec_strv_free(s->sysctl);
	oci_spec_strv_free(s->masked);
	oci_spec_strv_free(s->readonly);
	free(s->cpus);
	free(s->mems);
	oci_spec_strv_free(s->unified);
	free(s->devices);
	for (size_t i = 0; s->nodes && i < s->nnodes; i++)
		free(s->nodes[i].path);
	free(s->nodes);
	free(s->seccomp_text);
	oci_spec_strv_free(s->annotations);
	free(s);
}
