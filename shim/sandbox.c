/* sandbox: containerd's Sandbox API (containerd.runtime.sandbox.v1.Sandbox)
 * beside the Task service, on the same socket. A sandbox is the pod's zone
 * with no pause container: CreateSandbox makes it (SHIM_ZONE_NAME, in the
 * network namespace CRI made, with the PodSandboxConfig's hostname, IPC
 * and sysctls: the Task service's own zone start, from a spec made here),
 * StartSandbox answers its kin's pid (a kin-vm pod's VMM's), and the
 * Task API's containers then join it as they join a sandbox task's.
 * Status and metrics come from the zone and its cell; Stop ends it, Wait
 * answers once it ended, Shutdown ends the shim. The Task methods are
 * also served as containerd.task.v3.Task (the same messages), which
 * containerd 2.x calls when `start` answers bootstrap version 3. */
#include "shim/task-int.h"
#include "cells/cells.h"
#include "oci/oci.h"
#include "proto/sandbox.pb-c.h"
#include "zone/zone.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <unistd.h>

#define SANDBOX_SERVICE "containerd.runtime.sandbox.v1.Sandbox"
#define TASK_V3_SERVICE "containerd.task.v3.Task"
#define POD_CONFIG_URL  "runtime.v1.PodSandboxConfig"
#define SYSCTLS_MAX     64
#define SB_WAITERS_MAX  16
#define STOP_SECS_MAX   3600 /* StopSandbox's timeout_secs, at most */

enum sbstate { SB_NONE, SB_STARTING, SB_READY, SB_GONE };

struct shim_sandbox {
	struct shim_task *svc;
	enum sbstate state;
	bool shutdown;
	struct timespec created_at, exited_at;
	uint32_t exit_status;
	struct rpc_call *create_call;
	struct rpc_call *starters[SB_WAITERS_MAX]; /* StartSandbox while the zone starts */
	struct rpc_call *waiters[SB_WAITERS_MAX];  /* WaitSandbox, StopSandbox until it ended */
	struct ev_source kill_timer; /* StopSandbox's timeout_secs: then killed (fd -1: none) */
	struct rpc_method methods[9];
	struct rpc_method v3[ARRAY_SIZE(((struct shim_task *)0)->methods)];
};

/* ---- parked calls ---------------------------------------------------------------------- */

static void parked_cancelled(struct rpc_call *call, void *data)
{
	struct rpc_call **slots = data;
	for (size_t i = 0; i < SB_WAITERS_MAX; i++)
		if (slots[i] == call)
			slots[i] = NULL;
}

static int park(struct rpc_call **slots, struct rpc_call *call, const char *what)
{
	for (size_t i = 0; i < SB_WAITERS_MAX; i++)
		if (!slots[i]) {
			slots[i] = call;
			rpc_call_on_cancel(call, parked_cancelled, slots);
			return 0;
		}
	return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED, "sandbox: %d %s calls wait already",
	                     SB_WAITERS_MAX, what);
}

static struct rpc_call *unpark(struct rpc_call **slot)
{
	struct rpc_call *call = *slot;
	*slot = NULL;
	if (call)
		rpc_call_on_cancel(call, NULL, NULL);
	return call;
}

static void ts_of(const struct timespec *t, Kin__Shim__Timestamp *ret)
{
	task_timestamp(t, ret);
}

static int reply_started(struct shim_sandbox *sb, struct rpc_call *call)
{
	Kin__Shim__Timestamp ts;
	ts_of(&sb->created_at, &ts);
	Kin__Sandbox__StartSandboxResponse out = KIN__SANDBOX__START_SANDBOX_RESPONSE__INIT;
	out.pid = (uint32_t)sb->svc->zone_pid;
	out.created_at = &ts;
	return rpc_call_reply(call, &out.base);
}

/* ---- the zone's news, from the Task service --------------------------------------------- */

void sandbox_zone_ready(struct shim_task *svc, int result, const struct err *err)
{
	struct shim_sandbox *sb = svc->sandbox;
	if (!sb || sb->state != SB_STARTING)
		return;
	const char *why = err && err->msg[0] ? err->msg : strerror(-result);
	struct rpc_call *call = unpark(&sb->create_call);
	if (result < 0) {
		sb->state = SB_GONE;
		clock_gettime(CLOCK_REALTIME, &sb->exited_at);
		sb->exit_status = 128 + SIGKILL;
		if (call)
			rpc_call_fail(call, ERR_UNAVAILABLE, "sandbox %s: the pod's zone: %s",
			              svc->cfg->group, why);
		for (size_t i = 0; i < SB_WAITERS_MAX; i++)
			if ((call = unpark(&sb->starters[i])))
				rpc_call_fail(call, ERR_UNAVAILABLE,
				              "sandbox %s: the pod's zone: %s", svc->cfg->group,
				              why);
		sandbox_zone_gone(svc, 128 + SIGKILL);
		return;
	}
	sb->state = SB_READY;
	if (call) {
		Kin__Sandbox__CreateSandboxResponse out =
		    KIN__SANDBOX__CREATE_SANDBOX_RESPONSE__INIT;
		rpc_call_reply(call, &out.base);
	}
	for (size_t i = 0; i < SB_WAITERS_MAX; i++)
		if ((call = unpark(&sb->starters[i])))
			reply_started(sb, call);
}

void sandbox_zone_gone(struct shim_task *svc, int status)
{
	struct shim_sandbox *sb = svc->sandbox;
	if (!sb || sb->state == SB_NONE)
		return;
	if (sb->state != SB_GONE) {
		sb->state = SB_GONE;
		sb->exit_status = (uint32_t)status;
		clock_gettime(CLOCK_REALTIME, &sb->exited_at);
	}
	Kin__Shim__Timestamp ts;
	ts_of(&sb->exited_at, &ts);
	for (size_t i = 0; i < SB_WAITERS_MAX; i++) {
		struct rpc_call *call = unpark(&sb->waiters[i]);
		if (!call)
			continue;
		if (strcmp(rpc_call_method(call), "StopSandbox") == 0) {
			Kin__Sandbox__StopSandboxResponse out =
			    KIN__SANDBOX__STOP_SANDBOX_RESPONSE__INIT;
			rpc_call_reply(call, &out.base);
			continue;
		}
		Kin__Sandbox__WaitSandboxResponse out = KIN__SANDBOX__WAIT_SANDBOX_RESPONSE__INIT;
		out.exit_status = sb->exit_status;
		out.exited_at = &ts;
		rpc_call_reply(call, &out.base);
	}
}

bool sandbox_holds(const struct shim_task *svc)
{
	return svc->sandbox && svc->sandbox->state != SB_NONE && !svc->sandbox->shutdown;
}

/* ---- checks ---------------------------------------------------------------------------- */

/* The call names this shim's pod, and (unless any_state) its sandbox was
 * created here. 1: go on; else answered. */
static int check_id(struct shim_sandbox *sb, struct rpc_call *call, const char *id, bool any_state)
{
	const char *pod = sb->svc->cfg->group;
	if (strcmp(id, pod) != 0)
		return rpc_call_fail(call, ERR_NOT_FOUND,
		                     "sandbox \"%.80s\" not found: this shim serves pod %s", id,
		                     pod);
	if (!any_state && sb->state == SB_NONE)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "sandbox %s: not created (CreateSandbox first)", pod);
	return 1;
}

/* path is a network namespace (nsfs, CLONE_NEWNET). */
static int netns_check(const char *path, struct err *err)
{
	if (path[0] != '/' || strlen(path) >= PATH_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "netns_path \"%.200s\" is not an absolute path", path);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct statfs fs;
	if (fd < 0)
		return err_set_errno(err, -errno, "netns_path %.200s: %m", path);
	if (fstatfs(fd, &fs) < 0 || fs.f_type != NSFS_MAGIC ||
	    ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "netns_path %.200s is not a network namespace", path);
	return 0;
}

/* The PodSandboxConfig of options (NULL when none came); err says why not. */
static int pod_config(const Kin__Shim__Any *any, Kin__Sandbox__PodSandboxConfig **ret,
                      struct err *err)
{
	*ret = NULL;
	if (!any || (!any->type_url[0] && !any->value.len))
		return 0;
	const char *slash = strrchr(any->type_url, '/');
	const char *name = slash ? slash + 1 : any->type_url;
	if (strcmp(name, POD_CONFIG_URL) != 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "options: type \"%.100s\", expected " POD_CONFIG_URL, any->type_url);
	*ret = kin__sandbox__pod_sandbox_config__unpack(NULL, any->value.len, any->value.data);
	if (!*ret)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "options: not a valid " POD_CONFIG_URL " (%zu bytes)",
		               any->value.len);
	return 0;
}

/* The zone's spec, as a sandbox's OCI spec would give it: the netns,
 * the hostname, the PID and IPC namespaces (the host's for hostPID and
 * hostIPC), the sysctls
 * ("k=v" in kv, at most SYSCTLS_MAX). */
static int spec_of(const Kin__Sandbox__CreateSandboxRequest *m,
                   const Kin__Sandbox__PodSandboxConfig *pc, struct oci_spec *o,
                   char *kv[SYSCTLS_MAX + 1], struct err *err)
{
	const Kin__Sandbox__LinuxPodSandboxConfig *lx = pc ? pc->linux_config : NULL;
	const Kin__Sandbox__NamespaceOption *nso =
	    lx && lx->security_context ? lx->security_context->namespace_options : NULL;
	bool host_net = nso && nso->network == KIN__SANDBOX__NAMESPACE_MODE__NODE;
	int r;
	if (!host_net && !m->netns_path[0])
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "sandbox %s: no netns_path (a pod with its own network joins the "
		               "namespace CRI made)",
		               m->sandbox_id);
	if (!host_net && (r = netns_check(m->netns_path, err)) < 0)
		return r;
	o->ns[OCI_NS_NET] = !host_net;
	o->ns_path[OCI_NS_NET] = host_net ? NULL : m->netns_path;
	o->ns[OCI_NS_IPC] = !(nso && nso->ipc == KIN__SANDBOX__NAMESPACE_MODE__NODE);
	o->ns[OCI_NS_PID] = !(nso && nso->pid == KIN__SANDBOX__NAMESPACE_MODE__NODE);
	if (pc && pc->hostname[0]) {
		if (!str_is_hostname(pc->hostname))
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "sandbox %s: hostname \"%.80s\" is not a hostname",
			               m->sandbox_id, pc->hostname);
		o->hostname = pc->hostname;
	}
	size_t n = lx ? lx->n_sysctls : 0;
	if (n > SYSCTLS_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
		               "sandbox %s: %zu sysctls, at most %d", m->sandbox_id, n,
		               SYSCTLS_MAX);
	for (size_t i = 0; i < n; i++) {
		const char *k = lx->sysctls[i]->key, *v = lx->sysctls[i]->value;
		if (!k[0] || strlen(k) > 256 || strlen(v) > 4096 || strchr(k, '=') ||
		    asprintf(&kv[i], "%s=%s", k, v) < 0) {
			kv[i] = NULL;
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "sandbox %s: sysctl \"%.80s\" is not a key and value",
			               m->sandbox_id, k);
		}
	}
	o->sysctl = n ? kv : NULL;
	return 0;
}

/* ---- the calls -------------------------------------------------------------------------- */

static void create_cancelled(struct rpc_call *call, void *data)
{
	struct shim_sandbox *sb = data;
	(void)call;
	sb->create_call = NULL;
}

static int serve_create(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	struct shim_task *svc = sb->svc;
	const Kin__Sandbox__CreateSandboxRequest *m =
	    (const Kin__Sandbox__CreateSandboxRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, true);
	if (r <= 0)
		return r;
	if (sb->state != SB_NONE || svc->zone != ZN_NONE)
		return rpc_call_fail(call, ERR_ALREADY_EXISTS, "sandbox %s: this pod has its zone",
		                     m->sandbox_id);
	struct err err = {0};
	Kin__Sandbox__PodSandboxConfig *pc = NULL;
	struct oci_spec o = {0};
	char *kv[SYSCTLS_MAX + 1] = {0};
	r = pod_config(m->options, &pc, &err);
	if (r == 0)
		r = spec_of(m, pc, &o, kv, &err);
	if (r == 0)
		r = task_zone_start(svc, &o, &err);
	for (size_t i = 0; kv[i]; i++)
		free(kv[i]);
	if (pc)
		kin__sandbox__pod_sandbox_config__free_unpacked(pc, NULL);
	if (r < 0)
		return rpc_call_fail_err(call, &err, r);
	sb->state = SB_STARTING;
	clock_gettime(CLOCK_REALTIME, &sb->created_at);
	log_info("shim: sandbox %s: creating its zone (netns %.200s)", m->sandbox_id,
	         m->netns_path[0] ? m->netns_path : "the host's");
	sb->create_call = call;
	rpc_call_on_cancel(call, create_cancelled, sb);
	if (svc->zone == ZN_READY) /* not so far: the zone answers from the loop */
		sandbox_zone_ready(svc, 0, NULL);
	return 0;
}

static int serve_start(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	const Kin__Sandbox__StartSandboxRequest *m = (const Kin__Sandbox__StartSandboxRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, false);
	if (r <= 0)
		return r;
	if (sb->state == SB_READY)
		return reply_started(sb, call);
	if (sb->state == SB_STARTING)
		return park(sb->starters, call, "StartSandbox");
	return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "sandbox %s: has ended", m->sandbox_id);
}

static int serve_platform(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	const Kin__Sandbox__PlatformRequest *m = (const Kin__Sandbox__PlatformRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, true);
	if (r <= 0)
		return r;
	struct utsname u;
	uname(&u);
	/* GOARCH's names, as OCI platforms spell them */
	static const char *const arch[][2] = {
	    {"x86_64", "amd64"},    {"aarch64", "arm64"}, {"i686", "386"},       {"armv7l", "arm"},
	    {"ppc64le", "ppc64le"}, {"s390x", "s390x"},   {"riscv64", "riscv64"}};
	Kin__Sandbox__Platform p = KIN__SANDBOX__PLATFORM__INIT;
	p.os = (char *)"linux";
	p.architecture = u.machine;
	for (size_t i = 0; i < ARRAY_SIZE(arch); i++)
		if (strcmp(u.machine, arch[i][0]) == 0)
			p.architecture = (char *)arch[i][1];
	Kin__Sandbox__PlatformResponse out = KIN__SANDBOX__PLATFORM_RESPONSE__INIT;
	out.platform = &p;
	return rpc_call_reply(call, &out.base);
}

static void on_kill_timer(struct ev_source *src, uint32_t events)
{
	struct shim_sandbox *sb = src->data;
	uint64_t n;
	(void)events;
	if (read(src->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	if (sb->state == SB_READY || sb->state == SB_STARTING) {
		log_info("shim: sandbox %s: not stopped within its timeout: killed",
		         sb->svc->cfg->group);
		sb->svc->pods.end(sb->svc->pods.impl, SHIM_ZONE_NAME, true);
	}
}

/* The zone killed secs from now if it has not ended by then. */
static void kill_after(struct shim_sandbox *sb, uint32_t secs)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = secs < STOP_SECS_MAX ? secs : STOP_SECS_MAX}};
	if (sb->kill_timer.fd < 0) {
		sb->kill_timer = (struct ev_source){
		    .fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
		    .fn = on_kill_timer,
		    .data = sb};
		if (sb->kill_timer.fd >= 0 && ev_add(sb->svc->loop, &sb->kill_timer, EPOLLIN) < 0)
			ev_close(NULL, &sb->kill_timer);
	}
	if (sb->kill_timer.fd >= 0)
		timerfd_settime(sb->kill_timer.fd, 0, &its, NULL);
}

/* Stop: the zone stopped (its kin stops what it runs; a VM powers off),
 * killed after timeout_secs if given, answered once it ended. */
static int serve_stop(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	struct shim_task *svc = sb->svc;
	const Kin__Sandbox__StopSandboxRequest *m = (const Kin__Sandbox__StopSandboxRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, false);
	if (r <= 0)
		return r;
	if (sb->state == SB_GONE) {
		Kin__Sandbox__StopSandboxResponse out = KIN__SANDBOX__STOP_SANDBOX_RESPONSE__INIT;
		return rpc_call_reply(call, &out.base);
	}
	r = park(sb->waiters, call, "StopSandbox/WaitSandbox");
	if (r == 0 && (r = svc->pods.end(svc->pods.impl, SHIM_ZONE_NAME, false)) < 0 &&
	    r != -ENOENT) {
		for (size_t i = 0; i < SB_WAITERS_MAX; i++)
			if (sb->waiters[i] == call)
				unpark(&sb->waiters[i]);
		return rpc_call_fail(call, ERR_INTERNAL, "sandbox %s: stopping its zone: %s",
		                     m->sandbox_id, strerror(-r));
	}
	if (r >= 0 && m->timeout_secs)
		kill_after(sb, m->timeout_secs);
	return 0;
}

static int serve_wait(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	const Kin__Sandbox__WaitSandboxRequest *m = (const Kin__Sandbox__WaitSandboxRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, false);
	if (r <= 0)
		return r;
	r = park(sb->waiters, call, "StopSandbox/WaitSandbox");
	if (r == 0 && sb->state == SB_GONE)
		sandbox_zone_gone(sb->svc, (int)sb->exit_status);
	return r;
}

static int serve_status(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	const Kin__Sandbox__SandboxStatusRequest *m =
	    (const Kin__Sandbox__SandboxStatusRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, false);
	if (r <= 0)
		return r;
	Kin__Shim__Timestamp created, exited;
	char pid[16];
	Kin__Sandbox__SandboxStatusResponse__InfoEntry e[3];
	Kin__Sandbox__SandboxStatusResponse__InfoEntry *ep[3] = {&e[0], &e[1], &e[2]};
	static const char *const names[] = {[SB_NONE] = "none",
	                                    [SB_STARTING] = "starting",
	                                    [SB_READY] = "running",
	                                    [SB_GONE] = "stopped"};
	Kin__Sandbox__SandboxStatusResponse out = KIN__SANDBOX__SANDBOX_STATUS_RESPONSE__INIT;
	out.sandbox_id = m->sandbox_id;
	out.pid = sb->state == SB_GONE ? 0 : (uint32_t)sb->svc->zone_pid;
	out.state = (char *)(sb->state == SB_READY ? "SANDBOX_READY" : "SANDBOX_NOTREADY");
	ts_of(&sb->created_at, &created);
	out.created_at = &created;
	if (sb->state == SB_GONE) {
		ts_of(&sb->exited_at, &exited);
		out.exited_at = &exited;
	}
	if (m->verbose) {
		snprintf(pid, sizeof(pid), "%d", (int)sb->svc->zone_pid);
		const char *kv[3][2] = {{"zone", names[sb->state]},
		                        {"flavor", sb->svc->vm ? "kin-vm" : "kin"},
		                        {"zone_pid", pid}};
		for (size_t i = 0; i < 3; i++) {
			kin__sandbox__sandbox_status_response__info_entry__init(&e[i]);
			e[i].key = (char *)kv[i][0];
			e[i].value = (char *)kv[i][1];
		}
		out.n_info = 3;
		out.info = ep;
	}
	return rpc_call_reply(call, &out.base);
}

static int serve_ping(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	const Kin__Sandbox__PingRequest *m = (const Kin__Sandbox__PingRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, false);
	if (r <= 0)
		return r;
	if (sb->state != SB_READY || kill(sb->svc->zone_pid, 0) < 0)
		return rpc_call_fail(call, ERR_UNAVAILABLE, "sandbox %s: its zone is not running",
		                     m->sandbox_id);
	Kin__Sandbox__PingResponse out = KIN__SANDBOX__PING_RESPONSE__INIT;
	return rpc_call_reply(call, &out.base);
}

/* Shutdown: the shim ends (its zone killed with it, every container's
 * mounts and the pod's state undone as at any shim's end). */
static int serve_shutdown(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	struct shim_task *svc = sb->svc;
	const Kin__Sandbox__ShutdownSandboxRequest *m =
	    (const Kin__Sandbox__ShutdownSandboxRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, true);
	if (r <= 0)
		return r;
	const char *action;
	if (!svc->stop || svc->stop(false, true, &action, svc->stop_data) < 0)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "sandbox %s: the shim cannot stop now", m->sandbox_id);
	Kin__Sandbox__ShutdownSandboxResponse out = KIN__SANDBOX__SHUTDOWN_SANDBOX_RESPONSE__INIT;
	rpc_call_reply(call, &out.base);
	sb->shutdown = true;
	if (svc->zone == ZN_READY || svc->zone == ZN_STARTING)
		svc->pods.end(svc->pods.impl, SHIM_ZONE_NAME, true);
	if (!svc->shutting_down) {
		svc->shutting_down = true;
		log_info("shim: sandbox %s: shutdown", m->sandbox_id);
		svc->stop(false, false, &action, svc->stop_data);
	}
	return 0;
}

/* Metrics: the zone's cell (a kin-vm pod's: its VMM's) as containerd's
 * cgroups v2 Metrics, in a containerd.types.Metric. */
static int serve_metrics(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_sandbox *sb = data;
	struct shim_task *svc = sb->svc;
	const Kin__Sandbox__SandboxMetricsRequest *m =
	    (const Kin__Sandbox__SandboxMetricsRequest *)in;
	int r = check_id(sb, call, m->sandbox_id, false);
	if (r <= 0)
		return r;
	char dir[PATH_MAX];
	if (sb->state != SB_READY || task_zone_cell_dir(svc, dir, sizeof(dir)) < 0)
		return rpc_call_fail(call, ERR_UNAVAILABLE,
		                     "sandbox %s: no running zone to measure", m->sandbox_id);
	struct task_metrics tm;
	task_metrics_read(dir, &tm);
	uint8_t buf[1024];
	size_t n = protobuf_c_message_get_packed_size(&tm.m.base);
	if (n > sizeof(buf))
		return rpc_call_fail(call, ERR_INTERNAL, "sandbox %s: metrics too large",
		                     m->sandbox_id);
	protobuf_c_message_pack(&tm.m.base, buf);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	Kin__Shim__Timestamp ts;
	ts_of(&now, &ts);
	Kin__Shim__Any any = KIN__SHIM__ANY__INIT;
	any.type_url = (char *)"io.containerd.cgroups.v2.Metrics";
	any.value = (ProtobufCBinaryData){n, buf};
	Kin__Sandbox__Metric metric = KIN__SANDBOX__METRIC__INIT;
	metric.timestamp = &ts;
	metric.id = m->sandbox_id;
	metric.data = &any;
	Kin__Sandbox__SandboxMetricsResponse out = KIN__SANDBOX__SANDBOX_METRICS_RESPONSE__INIT;
	out.metrics = &metric;
	return rpc_call_reply(call, &out.base);
}

static const struct {
	const char *name;
	const ProtobufCMessageDescriptor *input;
	rpc_handler_fn fn;
} sandbox_methods[] = {
    {"CreateSandbox", &kin__sandbox__create_sandbox_request__descriptor, serve_create},
    {"StartSandbox", &kin__sandbox__start_sandbox_request__descriptor, serve_start},
    {"Platform", &kin__sandbox__platform_request__descriptor, serve_platform},
    {"StopSandbox", &kin__sandbox__stop_sandbox_request__descriptor, serve_stop},
    {"WaitSandbox", &kin__sandbox__wait_sandbox_request__descriptor, serve_wait},
    {"SandboxStatus", &kin__sandbox__sandbox_status_request__descriptor, serve_status},
    {"PingSandbox", &kin__sandbox__ping_request__descriptor, serve_ping},
    {"ShutdownSandbox", &kin__sandbox__shutdown_sandbox_request__descriptor, serve_shutdown},
    {"SandboxMetrics", &kin__sandbox__sandbox_metrics_request__descriptor, serve_metrics},
};

int sandbox_start(struct shim_task *svc)
{
	struct shim_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return -ENOMEM;
	sb->svc = svc;
	sb->kill_timer.fd = -1;
	static_assert(ARRAY_SIZE(sandbox_methods) == ARRAY_SIZE(sb->methods), "methods");
	for (size_t i = 0; i < ARRAY_SIZE(sandbox_methods); i++)
		sb->methods[i] = (struct rpc_method){.service = SANDBOX_SERVICE,
		                                     .method = sandbox_methods[i].name,
		                                     .input = sandbox_methods[i].input,
		                                     .handler = sandbox_methods[i].fn,
		                                     .userdata = sb};
	/* Task v3: v2's methods and messages under 2.x's name. */
	for (size_t i = 0; i < ARRAY_SIZE(sb->v3); i++) {
		sb->v3[i] = svc->methods[i];
		sb->v3[i].service = TASK_V3_SERVICE;
	}
	int r = rpc_server_register(svc->rpc, sb->methods, ARRAY_SIZE(sb->methods));
	if (r == 0)
		r = rpc_server_register(svc->rpc, sb->v3, ARRAY_SIZE(sb->v3));
	if (r < 0) {
		free(sb);
		return r;
	}
	svc->sandbox = sb;
	return 0;
}

void sandbox_shutdown(struct shim_task *svc)
{
	struct shim_sandbox *sb = svc ? svc->sandbox : NULL;
	if (!sb)
		return;
	ev_close(svc->loop, &sb->kill_timer);
	struct rpc_call *call = unpark(&sb->create_call);
	if (call)
		rpc_call_fail(call, ERR_UNAVAILABLE, "sandbox: the shim is stopping");
	for (size_t i = 0; i < SB_WAITERS_MAX; i++) {
		if ((call = unpark(&sb->starters[i])))
			rpc_call_fail(call, ERR_UNAVAILABLE, "sandbox: the shim is stopping");
		if ((call = unpark(&sb->waiters[i])))
			rpc_call_fail(call, ERR_UNAVAILABLE, "sandbox: the shim is stopping");
	}
}

void sandbox_free(struct shim_task *svc)
{
	if (svc) {
		free(svc->sandbox);
		svc->sandbox = NULL;
	}
}
