/* spec: an executable's spec — defaults, validation (everything that can be
 * checked without touching the system), a deep copy kept for restarts, and
 * parsers for the text forms of capabilities, rlimits and namespaces. */
#include "cells/cells-int.h"

#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/mount.h>

#define BACKOFF_LIMIT_MS (3600ull * 1000)

const char *const exec_masked_default[] = {
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    NULL,
};
const char *const exec_readonly_default[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

void exec_spec_init(struct exec_spec *s)
{
	*s = (struct exec_spec){
	    .umask = 022, .caps = EXEC_CAPS_DEFAULT, .seccomp = EXEC_SECCOMP_DEFAULT};
}

uint64_t exec_backoff_ms(uint32_t attempt, uint64_t base_ms, uint64_t cap_ms)
{
	if (!base_ms)
		base_ms = EXEC_BACKOFF_BASE_MS;
	if (!cap_ms)
		cap_ms = EXEC_BACKOFF_CAP_MS;
	if (base_ms >= cap_ms)
		return cap_ms;
	/* Double only while the result stays under cap: never overflows. */
	uint64_t d = base_ms;
	for (uint32_t i = 0; i < attempt; i++) {
		if (d > cap_ms / 2)
			return cap_ms;
		d <<= 1;
	}
	return d;
}

static size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

#define spec_fail(err, fmt, what) err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, fmt, what)

#define EXEC_PATHS_MAX   128  /* masked or read-only paths */
#define OVERLAY_DATA_MAX 4000 /* mount(2) data is one page */

/* The overlay root's layers and the masked, read-only and writable paths:
 * each list needs a root or a mount namespace to be applied in. */
static int validate_paths(const struct exec_spec *s, size_t *bytes, struct err *err)
{
	int n = !!s->root_lowerdirs + !!s->root_upperdir + !!s->root_workdir;
	if (n && (n != 3 || !s->root))
		return spec_fail(
		    err, "%s: lowerdirs, upperdir and workdir go together, with a root", "overlay");
	if (n &&
	    strlen(s->root_lowerdirs) + strlen(s->root_upperdir) + strlen(s->root_workdir) + 40 >
	        OVERLAY_DATA_MAX)
		return spec_fail(err, "overlay: the mount options pass %d bytes (too many layers)",
		                 OVERLAY_DATA_MAX);
	const char *const *lists[] = {s->masked_paths, s->readonly_paths, s->writable_paths};
	for (size_t k = 0; k < ARRAY_SIZE(lists); k++) {
		size_t m = strv_len((char *const *)lists[k]);
		if (m && !s->root && !(s->namespaces & EXEC_NS_MNT))
			return spec_fail(err,
			                 "%s: masked and read-only paths need a root or a mount "
			                 "namespace",
			                 "root");
		if (m > EXEC_PATHS_MAX)
			return spec_fail(err, "%s: more than 128 masked or read-only paths",
			                 "paths");
		for (size_t i = 0; i < m; i++) {
			if (lists[k][i][0] != '/' || strstr(lists[k][i], ".."))
				return spec_fail(err, "paths: \"%.64s\" is not absolute or has ..",
				                 lists[k][i]);
			*bytes += strlen(lists[k][i]) + 1;
		}
	}
	if (n)
		*bytes += strlen(s->root_lowerdirs) + strlen(s->root_upperdir) +
		          strlen(s->root_workdir) + 3;
	return 0;
}

/* The mount list: absolute targets, a type or an absolute bind source. */
static int validate_mount_list(const struct exec_spec *s, size_t *bytes, struct err *err)
{
	if (s->nmounts && !s->root && !(s->namespaces & EXEC_NS_MNT))
		return spec_fail(err, "%s: a mount list needs a root or a mount namespace",
		                 "mounts");
	if (s->nmounts > EXEC_MOUNTS_MAX)
		return spec_fail(err, "%s: more than 256", "mounts");
	for (size_t i = 0; i < s->nmounts; i++) {
		const struct exec_mount *m = &s->mounts[i];
		if (!m->target || m->target[0] != '/' || strstr(m->target, ".."))
			return spec_fail(err, "mounts: target \"%.64s\" is not absolute or has ..",
			                 m->target ? m->target : "");
		if (!(m->flags & MS_BIND) && !m->type)
			return spec_fail(err, "mounts: \"%.64s\" has no type", m->target);
		if ((m->flags & MS_BIND) && (!m->source || m->source[0] != '/'))
			return spec_fail(err, "mounts: \"%.64s\": a bind needs an absolute source",
			                 m->target);
		const char *strs[] = {m->source, m->target, m->type, m->data};
		for (size_t k = 0; k < ARRAY_SIZE(strs); k++)
			*bytes += strs[k] ? strlen(strs[k]) + 1 : 0;
	}
	return 0;
}

/* sysctls: only of a namespace the executable has of its own, so that
 * none reaches the host's. */
static int validate_sysctls(const struct exec_spec *s, size_t *bytes, struct err *err)
{
	size_t ns = strv_len(s->sysctls);
	if (ns > EXEC_SYSCTLS_MAX)
		return spec_fail(err, "%s: more than 64", "sysctls");
	for (size_t i = 0; i < ns; i++) {
		const char *kv = s->sysctls[i], *eq = strchr(kv, '=');
		bool net = str_startswith(kv, "net.");
		bool ipc = str_startswith(kv, "kernel.shm") || str_startswith(kv, "kernel.msg") ||
		           str_startswith(kv, "kernel.sem") || str_startswith(kv, "fs.mqueue.");
		if (!eq || eq == kv || strstr(kv, "..") || strchr(kv, '\n'))
			return spec_fail(err, "sysctls: \"%.64s\" is not key=value", kv);
		if (!(net && (s->namespaces & EXEC_NS_NET)) &&
		    !(ipc && (s->namespaces & EXEC_NS_IPC)))
			return spec_fail(
			    err,
			    "sysctls: \"%.64s\" is not of a namespace the executable has "
			    "of its own (net.* needs net, kernel.shm/msg/sem and "
			    "fs.mqueue ipc)",
			    kv);
		*bytes += strlen(kv) + 1;
	}
	return 0;
}

/* Namespaces to join: each kind once, never also new, by absolute path. */
static int validate_joins(const struct exec_spec *s, size_t *bytes, struct err *err)
{
	if (s->njoins > ARRAY_SIZE(s->joins))
		return spec_fail(err, "%s: more than 6 to join", "namespaces");
	uint32_t joined = 0;
	for (size_t i = 0; i < s->njoins; i++) {
		uint32_t t = s->joins[i].ns;
		if (!(t == EXEC_NS_NET || t == EXEC_NS_IPC || t == EXEC_NS_UTS ||
		      t == EXEC_NS_CGROUP || t == EXEC_NS_PID || t == EXEC_NS_MNT) ||
		    (joined & t))
			return spec_fail(err,
			                 "%s: pid, mnt, net, ipc, uts and cgroup can be joined, "
			                 "each once",
			                 "namespaces");
		joined |= t;
		if (t == EXEC_NS_MNT && s->root)
			return spec_fail(err,
			                 "%s: a mount namespace joined has its own root, not a "
			                 "root of the spec",
			                 "namespaces");
		if ((s->namespaces & t) || !s->joins[i].path || s->joins[i].path[0] != '/')
			return spec_fail(err,
			                 "%s: one to join is also new, or its path is not absolute",
			                 "namespaces");
		*bytes += strlen(s->joins[i].path) + 1;
	}
	return 0;
}

/* Device cgroup rules in the kernel's ranges, and nodes made under /dev. */
static int validate_devices(const struct exec_spec *s, size_t *bytes, struct err *err)
{
	if (s->ndevices > EXEC_DEVICES_MAX || (s->ndevices && !s->devices))
		return spec_fail(err, "%s: more than 256 rules", "devices");
	for (size_t i = 0; i < s->ndevices; i++) {
		const struct exec_device_rule *d = &s->devices[i];
		if (!strchr("abc", d->type) || !d->type || d->major < -1 || d->minor < -1 ||
		    d->major > 0xfff || d->minor > 0xfffff || !d->access || d->access > 7)
			return spec_fail(err,
			                 "%s: a rule's type, numbers or access are out of range",
			                 "devices");
	}
	if (s->ndevice_nodes > EXEC_NODES_MAX || (s->ndevice_nodes && !s->root))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "device nodes: at most %d, with a root", EXEC_NODES_MAX);
	for (size_t i = 0; i < s->ndevice_nodes; i++) {
		const struct exec_device_node *d = &s->device_nodes[i];
		if (!d->path || !str_startswith(d->path, "/dev/") || strstr(d->path, "..") ||
		    !strchr("cbp", d->type) || !d->type || (d->mode & ~07777u))
			return spec_fail(err, "%s: a path under /dev, type c, b or p, a mode",
			                 "device nodes");
		*bytes += strlen(d->path) + 1;
	}
	return 0;
}

/* What the executable's mount namespace and sandbox are made of: paths,
 * mounts, sysctls, namespaces joined, split caps, devices, the OOM score.
 * Each check adds its strings to *bytes. */
static int validate_mounts(const struct exec_spec *s, size_t *bytes, struct err *err)
{
	int r = validate_paths(s, bytes, err);
	if (r == 0)
		r = validate_mount_list(s, bytes, err);
	if (r == 0)
		r = validate_sysctls(s, bytes, err);
	if (r == 0)
		r = validate_joins(s, bytes, err);
	if (r < 0)
		return r;
	if (s->caps_split && ((s->caps_effective | s->caps_permitted | s->caps_inheritable) &
	                      (CAP_LAST_CAP < 63 ? ~0ull << (CAP_LAST_CAP + 1) : 0)))
		return spec_fail(err, "%s: unknown capability bits", "caps");
	r = validate_devices(s, bytes, err);
	if (r < 0)
		return r;
	if (s->oom_score_adj_set && (s->oom_score_adj < -1000 || s->oom_score_adj > 1000))
		return spec_fail(err, "%s: -1000 to 1000", "oom_score_adj");
	return 0;
}

/* The command: argv, fds to pass, nice, the environment, the program's
 * path; their strings go into *bytes. */
static int validate_command(const struct exec_spec *s, size_t *bytes, struct err *err)
{
	size_t n = strv_len(s->argv);
	if (n == 0 || !s->argv[0][0])
		return spec_fail(err, "%s: argv is empty", "exec");
	if (n > EXEC_ARGS_MAX)
		return spec_fail(err, "%s: more than 256 arguments", "argv");
	for (size_t i = 0; i < n; i++)
		*bytes += strlen(s->argv[i]) + 1;
	if (s->npass_fds > EXEC_PASS_FDS_MAX)
		return spec_fail(err, "%s: more than 64 fds to pass", "pass_fds");
	for (size_t i = 0; i < s->npass_fds; i++)
		if (s->pass_fds[i] < 0)
			return spec_fail(err, "%s: a negative fd", "pass_fds");
	if (s->nice_set && (s->nice < -20 || s->nice > 19))
		return spec_fail(err, "%s: not in -20..19", "nice");
	n = strv_len(s->env);
	if (n > EXEC_ENV_MAX)
		return spec_fail(err, "%s: more than 256 variables", "env");
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(s->env[i], '=');
		if (!eq || eq == s->env[i])
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "env: \"%.64s\" is not NAME=VALUE", s->env[i]);
		*bytes += strlen(s->env[i]) + 1;
	}
	if (s->path && !s->path[0])
		return spec_fail(err, "%s: the program's path is empty", "exec");
	return 0;
}

/* Who it runs as: ids, groups, umask, rlimits. */
static int validate_identity(const struct exec_spec *s, struct err *err)
{
	if (s->ngroups > EXEC_GROUPS_MAX)
		return spec_fail(err, "%s: more than 32 supplementary groups", "groups");
	/* (uid_t)-1 is "leave as is" to setresuid/setresgid: the child would
	 * keep kin's ids (root) while the spec asked for another user. */
	if (s->uid == (uint32_t)-1 || s->gid == (uint32_t)-1)
		return spec_fail(err, "%s: 4294967295 is not an id (it means \"unchanged\")",
		                 "uid/gid");
	for (size_t i = 0; i < s->ngroups; i++)
		if (s->groups[i] == (uint32_t)-1)
			return spec_fail(err, "%s: 4294967295 is not an id", "groups");
	if (s->umask & ~0777u)
		return spec_fail(err, "%s: not an octal mode up to 0777", "umask");
	if (s->nrlimits > EXEC_RLIMITS_MAX)
		return spec_fail(err, "%s: more than 16", "rlimits");
	for (size_t i = 0; i < s->nrlimits; i++)
		if (s->rlimits[i].resource < 0 || s->rlimits[i].resource >= RLIM_NLIMITS ||
		    s->rlimits[i].soft > s->rlimits[i].hard)
			return spec_fail(err, "%s: unknown resource or soft above hard", "rlimits");
	return 0;
}

/* What it may do: capabilities (ambient ones kept in caps) and seccomp. */
static int validate_privileges(const struct exec_spec *s, struct err *err)
{
	if (CAP_LAST_CAP < 63 && (s->caps >> (CAP_LAST_CAP + 1)))
		return spec_fail(err, "%s: unknown capability bits", "caps");
	if (s->ambient & ~s->caps ||
	    (s->caps_split && (s->ambient & ~(s->caps_permitted & s->caps_inheritable))))
		return spec_fail(err, "%s: ambient capabilities must be kept in caps too", "caps");
	if ((unsigned)s->seccomp > EXEC_SECCOMP_TEXT ||
	    (s->seccomp >= EXEC_SECCOMP_FILE && (!s->seccomp_file || !*s->seccomp_file)))
		return spec_fail(err, "%s: a profile file is needed", "seccomp");
	return 0;
}

/* New namespaces: known kinds, id maps only with a user namespace, a
 * hostname only with a uts one. */
static int validate_namespaces(const struct exec_spec *s, struct err *err)
{
	if (s->namespaces & ~0x7fu)
		return spec_fail(err, "%s: unknown namespace bits", "namespaces");
	if ((s->nuid_map || s->ngid_map) && !(s->namespaces & EXEC_NS_USER))
		return spec_fail(err, "%s: id maps need a user namespace", "namespaces");
	if (s->nuid_map > EXEC_IDMAP_MAX || s->ngid_map > EXEC_IDMAP_MAX)
		return spec_fail(err, "%s: more than 8 lines", "id map");
	for (size_t i = 0; i < s->nuid_map + s->ngid_map; i++) {
		const struct exec_idmap *m =
		    i < s->nuid_map ? &s->uid_map[i] : &s->gid_map[i - s->nuid_map];
		if (m->count == 0 || (uint64_t)m->inside + m->count > UINT32_MAX ||
		    (uint64_t)m->outside + m->count > UINT32_MAX)
			return spec_fail(err, "%s: a range is empty or past 2^32", "id map");
	}
	if (s->hostname && !(s->namespaces & EXEC_NS_UTS))
		return spec_fail(err, "%s: needs a uts namespace", "hostname");
	if (s->hostname && !str_is_hostname(s->hostname))
		return spec_fail(err, "hostname: \"%s\" is not a valid hostname", s->hostname);
	return 0;
}

/* Its stdio paths, the read-only root, the log buffer, the restart policy. */
static int validate_io_restart(const struct exec_spec *s, struct err *err)
{
	for (int i = 0; i < 3; i++)
		if (s->stdio_paths[i] && s->stdio_paths[i][0] != '/')
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "%s: \"%s\" is not absolute",
			               i == 0   ? "stdin"
			               : i == 1 ? "stdout"
			                        : "stderr",
			               s->stdio_paths[i]);
	if (s->stdin_pipe && s->stdio_paths[0])
		return spec_fail(err, "%s: a pipe from kin or a path, not both", "stdin");
	unsigned long rp = s->root_propagation & ~MS_REC;
	if (s->root_propagation && rp != MS_PRIVATE && rp != MS_SLAVE && rp != MS_SHARED)
		return spec_fail(err, "%s: private, slave or shared", "root propagation");
	if (s->terminal && (s->stdio_paths[0] || s->stdio_paths[1] || s->stdio_paths[2]))
		return spec_fail(err, "%s: its own, not stdio paths too", "terminal");
	if (s->rows > EXEC_TTY_SIZE_MAX || s->cols > EXEC_TTY_SIZE_MAX || !s->rows != !s->cols)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "terminal: rows and columns are both 1-%d (or both unset)",
		               EXEC_TTY_SIZE_MAX);
	if (s->root_readonly && !s->root)
		return spec_fail(err, "%s: read-only needs a root", "root");
	if (s->log_bytes && (s->log_bytes < EXEC_LOG_MIN || s->log_bytes > EXEC_LOG_MAX))
		return spec_fail(err, "%s: log buffer must be 4 KiB to 64 MiB", "log");
	if ((unsigned)s->restart > EXEC_RESTART_ALWAYS)
		return spec_fail(err, "%s: no, on-failure or always", "restart");
	if (s->backoff_cap_ms > BACKOFF_LIMIT_MS ||
	    (s->backoff_base_ms && s->backoff_cap_ms && s->backoff_base_ms > s->backoff_cap_ms))
		return spec_fail(err, "%s: base above cap, or cap above 1 h", "backoff");
	return 0;
}

/* The checks run in this order, so that a spec wrong in two places is
 * always refused with the same sentence. */
int exec_spec_validate(const struct exec_spec *s, struct err *err)
{
	size_t bytes = 0;
	int r = validate_command(s, &bytes, err);
	if (r < 0)
		return r;
	const char *paths[] = {s->cwd,
	                       s->root,
	                       s->seccomp_file,
	                       s->hostname,
	                       s->stdio_paths[0],
	                       s->stdio_paths[1],
	                       s->stdio_paths[2],
	                       s->path};
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		bytes += paths[i] ? strlen(paths[i]) + 1 : 0;
	r = validate_mounts(s, &bytes, err);
	if (r < 0)
		return r;
	if (bytes > EXEC_STRINGS_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
		               "exec: argv, env and paths exceed %d bytes", EXEC_STRINGS_MAX);
	if (s->cwd && s->cwd[0] != '/')
		return spec_fail(err, "cwd: \"%s\" is not absolute", s->cwd);
	if (s->root && s->root[0] != '/')
		return spec_fail(err, "root: \"%s\" is not absolute", s->root);
	r = validate_identity(s, err);
	if (r == 0)
		r = validate_privileges(s, err);
	if (r == 0)
		r = validate_namespaces(s, err);
	if (r == 0)
		r = validate_io_restart(s, err);
	return r;
}

/* ---- deep copy: one allocation holding the struct, vectors and strings ---- */

static char *put_str(char **cursor, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = memcpy(*cursor, s, n);
	*cursor += n;
	return d;
}

/* The vectors a spec holds (NULL-terminated or NULL) and where the copy's go. */
int exec_spec_copy(const struct exec_spec *src, struct exec_spec **ret)
{
	char *const *const *vecs[] = SPEC_VECS(src);
	const char *const *strs[] = SPEC_STRS(src);
	size_t size =
	    sizeof(struct exec_spec) + sizeof(char *) + src->nmounts * sizeof(struct exec_mount) +
	    src->ndevices * sizeof(struct exec_device_rule) +
	    src->ndevice_nodes * sizeof(struct exec_device_node) + src->npass_fds * sizeof(int);
	for (size_t i = 0; i < src->ndevice_nodes; i++)
		size += strlen(src->device_nodes[i].path) + 1;
	for (size_t i = 0; i < src->nmounts; i++) {
		const struct exec_mount *m = &src->mounts[i];
		const char *ms[] = {m->source, m->target, m->type, m->data};
		for (size_t k = 0; k < ARRAY_SIZE(ms); k++)
			size += ms[k] ? strlen(ms[k]) + 1 : 0;
	}
	for (size_t i = 0; i < src->njoins && i < ARRAY_SIZE(src->joins); i++)
		size += src->joins[i].path ? strlen(src->joins[i].path) + 1 : 0;
	for (size_t k = 0; k < ARRAY_SIZE(vecs); k++) {
		size_t n = strv_len(*vecs[k]);
		size += *vecs[k] ? (n + 1) * sizeof(char *) : 0;
		for (size_t i = 0; i < n; i++)
			size += strlen((*vecs[k])[i]) + 1;
	}
	for (size_t k = 0; k < ARRAY_SIZE(strs); k++)
		size += *strs[k] ? strlen(*strs[k]) + 1 : 0;

	struct exec_spec *d = malloc(size);
	if (!d)
		return -ENOMEM;
	*d = *src;
	char *const **dvecs[] = SPEC_VECS(d);
	const char **dstrs[] = SPEC_STRS(d);
	struct exec_mount *mounts = (struct exec_mount *)(d + 1);
	struct exec_device_rule *devices = (struct exec_device_rule *)(mounts + src->nmounts);
	struct exec_device_node *nodes = (struct exec_device_node *)(devices + src->ndevices);
	int *pass = (int *)(nodes + src->ndevice_nodes);
	if (src->npass_fds)
		memcpy(pass, src->pass_fds, src->npass_fds * sizeof(int));
	d->pass_fds = src->npass_fds ? pass : NULL;
	/* int slots may leave the pointers below unaligned: round up. */
	char **slot = (char **)(((uintptr_t)(pass + src->npass_fds) + sizeof(char *) - 1) &
	                        ~(uintptr_t)(sizeof(char *) - 1));
	if (src->ndevices)
		memcpy(devices, src->devices, src->ndevices * sizeof(*devices));
	d->devices = src->ndevices ? devices : NULL;
	size_t nslots = 0;
	for (size_t k = 0; k < ARRAY_SIZE(vecs); k++)
		nslots += *vecs[k] ? strv_len(*vecs[k]) + 1 : 0;
	char *cur = (char *)(slot + nslots);
	for (size_t k = 0; k < ARRAY_SIZE(vecs); k++) {
		if (!*vecs[k])
			continue;
		size_t n = strv_len(*vecs[k]);
		*dvecs[k] = slot;
		for (size_t i = 0; i < n; i++)
			slot[i] = put_str(&cur, (*vecs[k])[i]);
		slot[n] = NULL;
		slot += n + 1;
	}
	for (size_t k = 0; k < ARRAY_SIZE(strs); k++)
		*dstrs[k] = put_str(&cur, *strs[k]);
	for (size_t i = 0; i < src->nmounts; i++) {
		const struct exec_mount *m = &src->mounts[i];
		mounts[i] = (struct exec_mount){.source = put_str(&cur, m->source),
		                                .target = put_str(&cur, m->target),
		                                .type = put_str(&cur, m->type),
		                                .data = put_str(&cur, m->data),
		                                .flags = m->flags,
		                                .propagation = m->propagation};
	}
	d->mounts = src->nmounts ? mounts : NULL;
	for (size_t i = 0; i < src->njoins && i < ARRAY_SIZE(src->joins); i++)
		d->joins[i].path = put_str(&cur, src->joins[i].path);
	for (size_t i = 0; i < src->ndevice_nodes; i++) {
		nodes[i] = src->device_nodes[i];
		nodes[i].path = put_str(&cur, src->device_nodes[i].path);
	}
	d->device_nodes = src->ndevice_nodes ? nodes : NULL;
	if (d->root)
		d->namespaces |= EXEC_NS_MNT; /* pivot_root needs a mount namespace */
	if ((d->namespaces & EXEC_NS_USER) && !d->nuid_map) {
		d->uid_map[0] = (struct exec_idmap){0, 0, 1};
		d->nuid_map = 1;
	}
	if ((d->namespaces & EXEC_NS_USER) && !d->ngid_map) {
		d->gid_map[0] = (struct exec_idmap){0, 0, 1};
		d->ngid_map = 1;
	}
	*ret = d;
	return 0;
}

void exec_spec_free(struct exec_spec *s)
{
	if (s && s->release)
		s->release(s->release_data);
	free(s);
}

const char *exec_env_get(char *const *env, const char *key)
{
	size_t n = strlen(key);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], key, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

/* ---- text forms ----------------------------------------------------------- */

int exec_caps_parse(const char *list, uint64_t *ret, struct err *err)
{
	uint64_t mask = 0;
	if (!list)
		return -EINVAL;
	if (strcasecmp(list, "all") == 0) {
		*ret = CAP_LAST_CAP >= 63 ? UINT64_MAX : (1ull << (CAP_LAST_CAP + 1)) - 1;
		return 0;
	}
	if (strcasecmp(list, "none") == 0 || !*list) {
		*ret = 0;
		return 0;
	}
	char buf[1024];
	if (str_copy(buf, sizeof(buf), list) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "caps: list too long");
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char name[64];
		cap_value_t v;
		/* libcap knows "cap_chown"; users write CHOWN or CAP_CHOWN. */
		snprintf(name, sizeof(name), "%s%s", strncasecmp(tok, "cap_", 4) ? "cap_" : "",
		         tok);
		for (char *p = name; *p; p++)
			*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
		if (cap_from_name(name, &v) < 0 || v < 0 || v > CAP_LAST_CAP)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "caps: unknown capability \"%s\"", tok);
		mask |= 1ull << v;
	}
	*ret = mask;
	return 0;
}

static const struct {
	const char *name;
	int res;
} rlimit_names[] = {
    {"as", RLIMIT_AS},           {"core", RLIMIT_CORE},         {"cpu", RLIMIT_CPU},
    {"data", RLIMIT_DATA},       {"fsize", RLIMIT_FSIZE},       {"locks", RLIMIT_LOCKS},
    {"memlock", RLIMIT_MEMLOCK}, {"msgqueue", RLIMIT_MSGQUEUE}, {"nice", RLIMIT_NICE},
    {"nofile", RLIMIT_NOFILE},   {"nproc", RLIMIT_NPROC},       {"rss", RLIMIT_RSS},
    {"rtprio", RLIMIT_RTPRIO},   {"rttime", RLIMIT_RTTIME},     {"sigpending", RLIMIT_SIGPENDING},
    {"stack", RLIMIT_STACK},
};

static int rlim_value(const char *s, uint64_t *ret)
{
	if (strcmp(s, "unlimited") == 0 || strcmp(s, "infinity") == 0) {
		*ret = RLIM_INFINITY;
		return 0;
	}
	return str_to_u64(s, UINT64_MAX - 1, ret);
}

int exec_rlimit_parse(const char *s, struct exec_rlimit *ret, struct err *err)
{
	char buf[128];
	if (!s || str_copy(buf, sizeof(buf), s) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "rlimit: too long");
	char *eq = strchr(buf, '=');
	if (!eq)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "rlimit: \"%s\" is not NAME=SOFT[:HARD]", s);
	*eq = '\0';
	int res = -1;
	for (size_t i = 0; i < ARRAY_SIZE(rlimit_names); i++)
		if (strcmp(buf, rlimit_names[i].name) == 0)
			res = rlimit_names[i].res;
	if (res < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "rlimit: unknown resource \"%s\"", buf);
	char *colon = strchr(eq + 1, ':');
	if (colon)
		*colon = '\0';
	struct exec_rlimit rl = {.resource = res};
	if (rlim_value(eq + 1, &rl.soft) < 0 ||
	    rlim_value(colon ? colon + 1 : eq + 1, &rl.hard) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "rlimit %s: values are numbers or \"unlimited\"", buf);
	if (rl.soft > rl.hard)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "rlimit %s: soft limit above hard limit", buf);
	*ret = rl;
	return 0;
}

int exec_ns_parse(const char *list, uint32_t *ret, struct err *err)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} ns[] = {{"pid", EXEC_NS_PID},      {"mnt", EXEC_NS_MNT}, {"net", EXEC_NS_NET},
	          {"uts", EXEC_NS_UTS},      {"ipc", EXEC_NS_IPC}, {"user", EXEC_NS_USER},
	          {"cgroup", EXEC_NS_CGROUP}};
	uint32_t mask = 0;
	char buf[128];
	if (!list || str_copy(buf, sizeof(buf), list) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "namespaces: too long");
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint32_t bit = 0;
		for (size_t i = 0; i < ARRAY_SIZE(ns); i++)
			if (strcmp(tok, ns[i].name) == 0)
				bit = ns[i].bit;
		if (!bit)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "namespaces: unknown \"%s\" (pid, mnt, net, uts, ipc, "
			               "user, cgroup)",
			               tok);
		mask |= bit;
	}
	*ret = mask;
	return 0;
}
