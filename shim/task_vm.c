/* task_vm: what a kin-vm pod does differently. The pod's zone is a microVM
 * (kin the guest's PID 1) booted from the shim's config (shim/config.c),
 * with the pod directory shared in over virtio-9p at the same path a
 * namespace zone sees it, so containers' roots and configs reach the guest
 * the same way; its NIC is a tap in the pod's network namespace with tc
 * redirecting eth0 to it and back, the guest taking eth0's address, route
 * and MAC (kata's "tcfilter", net_pod_tap). What cannot cross into a guest is relayed:
 * containerd's FIFOs stay on this side, each process's output followed
 * from the guest kin's log ring (Exec/Logs) and written to them, its stdin
 * read here and sent with Exec/Stdin. Pids, Stats and OOM kills come from
 * the guest kin's answers, not from a cgroup tree here.
 *
 * A relay goes along a re-exec of this kin: the FIFOs' fds, stdin read
 * but not taken by the guest yet, and each output stream's position up to
 * what reached its FIFO (the guest's ring counts bytes since the process
 * first started); the next kin follows again from there (LogsRequest's
 * resume), so output queued here and not written yet comes again, not
 * twice, and the previous kin's follower in the guest is cancelled. A
 * Stdin call in flight is waited for first (task_vm_relay_busy). */
#include "shim/task-int.h"
#include "lib/state.h"
#include "net/net.h"
#include "oci/oci.h"
#include "proto/cells.pb-c.h"
#include "vm/vm.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#define POD_IF         "eth0"
#define POD_TAP        "tap0"
#define RELAY_OUT_MAX  (4u << 20) /* unwritten output per stream; beyond it is dropped */
#define RELAY_IN_CHUNK (64 * 1024)
#define RELAY_IN_RETRY 20 /* ms before sending stdin again to a full pipe */

/* ---- the pod's VM ------------------------------------------------------------------ */

int task_vm_spec_check(const struct oci_spec *o, bool sandbox, const char *id, struct err *err)
{
	if (sandbox && !o->ns[OCI_NS_PID])
		return err_set(err, -EOPNOTSUPP, ERR_INVALID_ARGUMENT,
		               "task %s: a kin-vm pod cannot share the host's PID namespace "
		               "(hostPID): its processes run on its VM's kernel",
		               id);
	if (sandbox && !o->ns[OCI_NS_IPC])
		return err_set(err, -EOPNOTSUPP, ERR_INVALID_ARGUMENT,
		               "task %s: a kin-vm pod cannot share the host's IPC namespace "
		               "(hostIPC): its processes run on its VM's kernel",
		               id);
	for (size_t i = 0; i < o->nmounts; i++)
		if (o->mounts[i].propagation & MS_SHARED)
			return err_set(
			    err, -EOPNOTSUPP, ERR_INVALID_ARGUMENT,
			    "task %s: mounts[%zu] (%.100s): a kin-vm pod's volume cannot "
			    "propagate mounts back to the host (rshared, Bidirectional): "
			    "what the VM mounts stays in its kernel",
			    id, i, o->mounts[i].destination);
	return 0;
}

/* The pod's sysctls on the guest's command line (sysctl.KEY=VALUE, which
 * the kernel writes before it runs the guest's kin): the whole VM is the
 * pod's. A value the command line cannot carry is refused. */
static int vm_sysctls(const struct oci_spec *o, char *cmdline, size_t size, struct err *err)
{
	for (char **kv = o ? o->sysctl : NULL; kv && *kv; kv++) {
		size_t n = strlen(cmdline);
		if (strpbrk(*kv, " \t\"'\\") || snprintf(cmdline + n, size - n, "%ssysctl.%s",
		                                         n ? " " : "", *kv) >= (int)(size - n)) {
			cmdline[n] = '\0';
			return err_set(
			    err, -EINVAL, ERR_INVALID_ARGUMENT,
			    "the pod's sysctl \"%.100s\" does not fit the VM's command line "
			    "(no blanks or quotes, %d bytes in all)",
			    *kv, (int)size);
		}
	}
	return 0;
}

int task_vm_zone_start(struct shim_task *svc, const struct oci_spec *o, struct err *err)
{
	struct shim_vm_config c;
	int r = shim_vm_config_load(&c, err);
	if (r < 0)
		return r;
	struct vm_spec spec = c.spec; /* shim.conf's, read by vm/'s option table */
	str_copy(spec.name, sizeof(spec.name), SHIM_ZONE_NAME);
	str_copy(spec.share, sizeof(spec.share), svc->cfg->pod_dir);
	str_copy(spec.share_at, sizeof(spec.share_at), SHIM_POD_IN_ZONE);
	if (o && o->hostname && str_is_hostname(o->hostname))
		snprintf(spec.cmdline, sizeof(spec.cmdline), "kin.hostname=%s", o->hostname);
	r = vm_sysctls(o, spec.cmdline, sizeof(spec.cmdline), err);
	if (r < 0)
		return r;
	if (o && o->ns[OCI_NS_NET] && o->ns_path[OCI_NS_NET]) {
		struct net_link_info info;
		r = net_pod_tap(o->ns_path[OCI_NS_NET], POD_IF, POD_TAP, &info, err);
		if (r < 0)
			return r;
		struct net_config guest = {.ifname = "eth0"};
		str_copy(guest.addr, sizeof(guest.addr), info.addr);
		str_copy(guest.gateway, sizeof(guest.gateway), info.gateway);
		if (net_format_ip_option(&guest, spec.guest_ip, sizeof(spec.guest_ip)) < 0)
			return err_set(err, -EINVAL, ERR_FAILED_PRECONDITION,
			               "the pod's network: address %s", info.addr);
		str_copy(spec.netns, sizeof(spec.netns), o->ns_path[OCI_NS_NET]);
		str_copy(spec.tap, sizeof(spec.tap), POD_TAP);
		snprintf(spec.mac, sizeof(spec.mac), "%02x:%02x:%02x:%02x:%02x:%02x", info.mac[0],
		         info.mac[1], info.mac[2], info.mac[3], info.mac[4], info.mac[5]);
		log_info("shim: the pod's VM takes %s (%s, via %s) from %s", info.addr, spec.mac,
		         info.gateway[0] ? info.gateway : "no gateway", spec.netns);
	}
	return svc->pods.create_vm(svc->pods.impl, &spec, task_zone_ready, task_zone_gone, svc,
	                           err);
}

/* ---- stdio relay --------------------------------------------------------------------- */

struct task_relay;
struct relay_out {
	struct task_relay *rl;
	int fd; /* containerd's FIFO, O_RDWR|O_NONBLOCK; -1 none or closed */
	struct ev_source src;
	bool armed; /* waiting for EPOLLOUT */
	struct buf_out q;
	uint64_t dropped;
};

/* A Stdin call in flight: finds its relay again, or nothing if it went. */
struct stdin_ticket {
	struct task_relay *rl;
};

struct task_relay {
	struct shim_task *svc;
	struct tproc *p;
	uint32_t stream; /* the Logs stream on the zone's route; 0 ended */
	struct relay_out out[2];
	uint64_t seen[2]; /* per stream: bytes since the first start, received or missed */
	/* stdin: containerd's FIFO read here, sent to the guest's pipe */
	int in_fd;
	struct ev_source in_src, in_timer;
	bool in_armed;
	uint8_t *pending;
	size_t pending_off, pending_len;
	bool in_eof;     /* containerd closed its end */
	bool close_sent; /* and the guest's pipe is being closed */
	struct stdin_ticket *ticket;
};

static void out_close(struct task_relay *rl, struct relay_out *o)
{
	if (o->fd < 0)
		return;
	if (o->armed)
		ev_del(rl->svc->loop, &o->src);
	close(o->fd);
	o->fd = -1;
	o->armed = false;
	if (o->dropped)
		log_warn("shim: task %s: %" PRIu64 " bytes of output dropped (nobody read them)",
		         rl->p->t->id, o->dropped);
	buf_out_free(&o->q);
}

/* Writes what the FIFO takes; the rest waits for EPOLLOUT. Closed once
 * drained after the stream ended: containerd then sees EOF. */
static void out_flush(struct task_relay *rl, struct relay_out *o)
{
	if (o->fd < 0)
		return;
	int r = buf_out_pending(&o->q) ? buf_out_flush(&o->q, o->fd, false) : 0;
	if (r < 0 && r != -EAGAIN) {
		log_warn("shim: task %s: writing output: %s", rl->p->t->id, strerror(-r));
		out_close(rl, o);
		return;
	}
	bool want = buf_out_pending(&o->q) > 0;
	if (!want && !rl->stream) {
		out_close(rl, o);
		return;
	}
	if (want != o->armed) {
		int e = want ? ev_add(rl->svc->loop, &o->src, EPOLLOUT)
		             : ev_del(rl->svc->loop, &o->src);
		if (e == 0)
			o->armed = want;
	}
}

static void on_out(struct ev_source *src, uint32_t events)
{
	struct relay_out *o = src->data;
	(void)events;
	out_flush(o->rl, o);
}

static void on_chunk(const uint8_t *payload, size_t len, void *data)
{
	struct task_relay *rl = data;
	Kin__V1__LogChunk *c = kin__v1__log_chunk__unpack(NULL, len, payload);
	if (!c)
		return;
	int s = c->stream == KIN__V1__LOG_STREAM__STDERR;
	struct relay_out *o = &rl->out[s];
	rl->seen[s] += c->dropped + c->data.len;
	o->dropped += c->dropped;
	if (o->fd >= 0 && c->data.len) {
		if (buf_out_append(&o->q, c->data.data, c->data.len) < 0)
			o->dropped += c->data.len;
		out_flush(rl, o);
	}
	kin__v1__log_chunk__free_unpacked(c, NULL);
}

static void on_stream_end(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct task_relay *rl = data;
	(void)payload, (void)len;
	rl->stream = 0;
	if (st->code != ERR_OK)
		log_warn("shim: task %s: its output from the pod's VM ended: %s", rl->p->t->id,
		         st->msg);
	out_flush(rl, &rl->out[0]);
	out_flush(rl, &rl->out[1]);
}

static void in_stop(struct task_relay *rl)
{
	if (rl->in_fd >= 0) {
		if (rl->in_armed)
			ev_del(rl->svc->loop, &rl->in_src);
		close(rl->in_fd);
	}
	rl->in_fd = -1;
	rl->in_armed = false;
	if (rl->in_timer.fd >= 0) {
		ev_del(rl->svc->loop, &rl->in_timer);
		close(rl->in_timer.fd);
		rl->in_timer.fd = -1;
	}
	free(rl->pending);
	rl->pending = NULL;
}

static void in_arm(struct task_relay *rl, bool on)
{
	if (rl->in_fd < 0 || on == rl->in_armed)
		return;
	int e =
	    on ? ev_add(rl->svc->loop, &rl->in_src, EPOLLIN) : ev_del(rl->svc->loop, &rl->in_src);
	if (e == 0)
		rl->in_armed = on;
}

static void stdin_sent(const struct err *st, const uint8_t *payload, size_t len, void *data);

/* Sends what is pending (or the close after EOF) with one Stdin call. */
static void in_send(struct task_relay *rl)
{
	struct stdin_ticket *tk = calloc(1, sizeof(*tk));
	Kin__V1__StdinRequest in = KIN__V1__STDIN_REQUEST__INIT;
	in.cell = rl->p->t->cell;
	in.name = rl->p->kname;
	in.data.data = rl->pending ? rl->pending + rl->pending_off : NULL;
	in.data.len = rl->pending_len - rl->pending_off;
	in.close = rl->in_eof && in.data.len == 0;
	rl->close_sent = in.close;
	int r = tk ? rpc_route_call(rl->svc->rpc, SHIM_ZONE_NAME, "kin.v1.Exec", "Stdin", &in.base,
	                            stdin_sent, tk)
	           : -ENOMEM;
	if (r < 0) {
		free(tk);
		log_warn("shim: task %s: stdin to the pod's VM: %s", rl->p->t->id, strerror(-r));
		in_stop(rl);
		return;
	}
	tk->rl = rl;
	rl->ticket = tk;
}

static void stdin_sent(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct stdin_ticket *tk = data;
	struct task_relay *rl = tk->rl;
	free(tk);
	if (!rl)
		return;
	rl->ticket = NULL;
	if (st->code != ERR_OK) { /* its process ended, or the VM did */
		log_debug("shim: task %s: stdin: %s", rl->p->t->id, st->msg);
		in_stop(rl);
		return;
	}
	Kin__V1__StdinResponse *m = kin__v1__stdin_response__unpack(NULL, len, payload);
	uint64_t written = m ? m->written : 0;
	kin__v1__stdin_response__free_unpacked(m, NULL);
	size_t left = rl->pending_len - rl->pending_off;
	rl->pending_off += written < left ? (size_t)written : left;
	if (rl->pending_off < rl->pending_len) { /* the pipe was full: again, a little later */
		struct itimerspec its = {.it_value = {0, RELAY_IN_RETRY * 1000000L}};
		if (rl->in_timer.fd < 0 || timerfd_settime(rl->in_timer.fd, 0, &its, NULL) < 0)
			in_stop(rl);
		return;
	}
	rl->pending_off = rl->pending_len = 0;
	if (rl->close_sent)
		in_stop(rl);
	else if (rl->in_eof)
		in_send(rl); /* now the close */
	else
		in_arm(rl, true);
}

static void on_in_timer(struct ev_source *src, uint32_t events)
{
	struct task_relay *rl = src->data;
	uint64_t n;
	(void)events;
	if (read(src->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	if (!rl->ticket && rl->in_fd >= 0)
		in_send(rl);
}

static void on_in(struct ev_source *src, uint32_t events)
{
	struct task_relay *rl = src->data;
	(void)events;
	if (rl->ticket)
		return;
	if (!rl->pending && !(rl->pending = malloc(RELAY_IN_CHUNK))) {
		in_stop(rl);
		return;
	}
	ssize_t n = read(rl->in_fd, rl->pending, RELAY_IN_CHUNK);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			in_stop(rl);
		return;
	}
	in_arm(rl, false);
	rl->pending_off = 0;
	rl->pending_len = (size_t)n;
	if (n == 0) /* containerd closed its end */
		rl->in_eof = true;
	in_send(rl);
}

static struct task_relay *relay_new(struct tproc *p)
{
	struct task_relay *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return NULL;
	*rl = (struct task_relay){.svc = p->t->svc, .p = p, .in_fd = -1};
	rl->in_src = (struct ev_source){.fd = -1, .fn = on_in, .data = rl};
	rl->in_timer = (struct ev_source){.fd = -1, .fn = on_in_timer, .data = rl};
	for (int i = 0; i < 2; i++) {
		struct relay_out *o = &rl->out[i];
		o->rl = rl;
		o->fd = -1;
		buf_out_init(&o->q, RELAY_OUT_MAX, 64 * 1024, 0, NULL);
		o->src = (struct ev_source){.fd = -1, .fn = on_out, .data = o};
	}
	p->relay = rl;
	return rl;
}

/* Its stdin FIFO (open already) read from now on. */
static void relay_in_watch(struct task_relay *rl)
{
	rl->in_timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (rl->in_fd < 0 || rl->in_timer.fd < 0 ||
	    ev_add(rl->svc->loop, &rl->in_timer, EPOLLIN) < 0) {
		log_warn("shim: task %s: stdin %s: %m", rl->p->t->id, rl->p->stdio[0]);
		in_stop(rl);
		return;
	}
	rl->in_src.fd = rl->in_fd;
}

/* The process's output followed in the guest from what was seen on. */
static void relay_follow(struct task_relay *rl)
{
	if (rl->out[0].fd < 0 && rl->out[1].fd < 0)
		return;
	Kin__V1__LogsRequest in = KIN__V1__LOGS_REQUEST__INIT;
	in.cell = rl->p->t->cell;
	in.name = rl->p->kname;
	in.stream = KIN__V1__LOG_STREAM__BOTH;
	in.follow = true;
	in.resume = true;
	in.stdout_from = rl->seen[0];
	in.stderr_from = rl->seen[1];
	int r = rpc_route_stream(rl->svc->rpc, SHIM_ZONE_NAME, "kin.v1.Exec", "Logs", &in.base,
	                         on_chunk, on_stream_end, rl, &rl->stream);
	if (r < 0) {
		log_warn("shim: task %s: cannot follow its output in the pod's VM: %s",
		         rl->p->t->id, strerror(-r));
		rl->stream = 0;
		out_close(rl, &rl->out[0]);
		out_close(rl, &rl->out[1]);
	}
}

int task_vm_relay_start(struct tproc *p)
{
	struct task_relay *rl = relay_new(p);
	if (!rl)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		struct relay_out *o = &rl->out[i];
		struct stat st;
		const char *path = p->stdio[i + 1];
		/* O_RDWR: never ENXIO, and containerd's reader may come back */
		if (path[0] && stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
			o->fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		else if (path[0])
			o->fd =
			    open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (path[0] && o->fd < 0)
			log_warn("shim: task %s: %s: %m", p->t->id, path);
		o->src.fd = o->fd;
	}
	if (p->stdio[0][0]) {
		rl->in_fd = open(p->stdio[0], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		relay_in_watch(rl);
		in_arm(rl, true);
	}
	relay_follow(rl);
	return 0;
}

/* ---- across a re-exec ---- */

enum {
	RL_STREAM = 1, /* the previous kin's Logs stream, to cancel */
	RL_OUT_FD,
	RL_ERR_FD,
	RL_OUT_AT, /* what reached the FIFO: the next kin follows from there */
	RL_ERR_AT,
	RL_IN_FD,
	RL_IN_PENDING, /* read from the FIFO, not taken by the guest yet */
	RL_IN_EOF,
};

bool task_vm_relay_busy(const struct tproc *p)
{
	return p->relay && p->relay->ticket;
}

void task_vm_relay_save(const struct tproc *p, struct state_w *w, uint16_t tag)
{
	const struct task_relay *rl = p->relay;
	if (!rl)
		return;
	size_t at = state_open(w, tag);
	state_put_u64(w, RL_STREAM, rl->stream);
	for (int i = 0; i < 2; i++) {
		const struct relay_out *o = &rl->out[i];
		if (o->fd < 0)
			continue;
		state_put_fd(w, RL_OUT_FD + i, o->fd);
		state_put_u64(w, RL_OUT_AT + i, rl->seen[i] - buf_out_pending(&o->q));
	}
	if (rl->in_fd >= 0) {
		state_put_fd(w, RL_IN_FD, rl->in_fd);
		if (rl->pending_off < rl->pending_len)
			state_put_bytes(w, RL_IN_PENDING, rl->pending + rl->pending_off,
			                rl->pending_len - rl->pending_off);
		state_put_u64(w, RL_IN_EOF, rl->in_eof);
	}
	state_close(w, at);
}

int task_vm_relay_take(struct tproc *p, struct state_in *in, const struct state_field *f)
{
	struct task_relay *rl = p->relay ? p->relay : relay_new(p);
	if (!rl)
		return -ENOMEM;
	struct state_r r;
	struct state_field g;
	uint64_t v;
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		switch (g.tag) {
		case RL_STREAM:
			if ((k = state_get_u64(&g, &v)) == 0)
				rl->stream = v <= UINT32_MAX ? (uint32_t)v : 0;
			break;
		case RL_OUT_FD:
		case RL_ERR_FD: {
			struct relay_out *o = &rl->out[g.tag - RL_OUT_FD];
			if (o->fd < 0 && (k = state_get_fd(in, &g, &o->fd)) == 0)
				o->src.fd = o->fd;
			break;
		}
		case RL_OUT_AT:
		case RL_ERR_AT:
			k = state_get_u64(&g, &rl->seen[g.tag - RL_OUT_AT]);
			break;
		case RL_IN_FD:
			if (rl->in_fd < 0)
				k = state_get_fd(in, &g, &rl->in_fd);
			break;
		case RL_IN_PENDING:
			if (g.len > RELAY_IN_CHUNK || rl->pending) {
				k = -EBADMSG;
				break;
			}
			if (!(rl->pending = malloc(RELAY_IN_CHUNK))) {
				k = -ENOMEM;
				break;
			}
			memcpy(rl->pending, g.data, g.len);
			rl->pending_off = 0;
			rl->pending_len = g.len;
			break;
		case RL_IN_EOF:
			if ((k = state_get_u64(&g, &v)) == 0)
				rl->in_eof = v != 0;
			break;
		}
		if (k < 0)
			return k;
	}
	return k;
}

void task_vm_relay_resume(struct tproc *p)
{
	struct task_relay *rl = p->relay;
	if (!rl)
		return;
	if (rl->stream) /* the previous kin's follower in the guest ends */
		rpc_route_cancel(rl->svc->rpc, SHIM_ZONE_NAME, rl->stream);
	rl->stream = 0;
	if (rl->in_fd >= 0) {
		relay_in_watch(rl);
		if (rl->in_fd >= 0 && (rl->pending_len || rl->in_eof))
			in_send(rl); /* what the guest had not taken yet, or the close */
		else
			in_arm(rl, true);
	}
	relay_follow(rl);
}

void task_vm_relay_free(struct tproc *p)
{
	struct task_relay *rl = p->relay;
	if (!rl)
		return;
	p->relay = NULL;
	if (rl->stream)
		rpc_route_cancel(rl->svc->rpc, SHIM_ZONE_NAME, rl->stream);
	rl->stream = 0;
	if (rl->ticket)
		rl->ticket->rl = NULL;
	in_stop(rl);
	for (int i = 0; i < 2; i++) {
		out_close(rl, &rl->out[i]);
		buf_out_free(&rl->out[i].q);
	}
	free(rl);
}

/* ---- what the guest answers: an exit's OOM check, Pids, Stats ------------------------- */

struct vm_exit {
	struct zref *z;
	uint32_t status;
};

static void exit_checked(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct vm_exit *x = data;
	struct tproc *p = zref_proc(x->z);
	uint32_t status = x->status;
	free(x->z);
	free(x);
	if (!p || p->state == T_STOPPED)
		return;
	Kin__V1__ShowCellResponse *m =
	    st->code == ERR_OK ? kin__v1__show_cell_response__unpack(NULL, len, payload) : NULL;
	uint64_t kills = m && m->stats ? m->stats->memory_events_oom_kill : 0;
	kin__v1__show_cell_response__free_unpacked(m, NULL);
	if (kills > p->t->oom_kills) {
		p->t->oom_kills = kills;
		log_info("shim: task %s: OOM kill in its cell in the pod's VM", p->t->id);
		Kin__Shim__TaskOOM ev = KIN__SHIM__TASK_OOM__INIT;
		ev.container_id = p->t->id;
		task_publish(p->t->svc, "/tasks/oom", "containerd.events.TaskOOM", &ev.base);
	}
	proc_exited(p, status);
}

void task_vm_exited(struct tproc *p, uint32_t status)
{
	struct shim_task *svc = p->t->svc;
	struct vm_exit *x = p == &p->t->init ? calloc(1, sizeof(*x)) : NULL;
	if (x) {
		Kin__V1__CellRequest in = KIN__V1__CELL_REQUEST__INIT;
		in.path = p->t->cell;
		x->z = zref_new(svc, p->t->id, p->exec_id);
		x->status = status;
		if (x->z && rpc_route_call(svc->rpc, SHIM_ZONE_NAME, "kin.v1.Cells", "Show",
		                           &in.base, exit_checked, x) == 0)
			return; /* the OOM check first: an OOM kill is told before its exit */
		free(x->z);
		free(x);
	}
	proc_exited(p, status);
}

static void pids_listed(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct rpc_call *call = zref_reply_to(data, st);
	if (!call)
		return;
	Kin__V1__ListExecResponse *m = kin__v1__list_exec_response__unpack(NULL, len, payload);
	size_t n = m ? m->n_executables : 0;
	Kin__Shim__ProcessInfo *infos = calloc(n + 1, sizeof(*infos));
	Kin__Shim__ProcessInfo **ptrs = calloc(n + 1, sizeof(*ptrs));
	Kin__Shim__PidsResponse out = KIN__SHIM__PIDS_RESPONSE__INIT;
	for (size_t i = 0; infos && ptrs && i < n; i++) {
		const Kin__V1__ExecStatus *es = m->executables[i];
		if (es->exited || es->pid <= 0)
			continue;
		Kin__Shim__ProcessInfo *pi = &infos[out.n_processes];
		kin__shim__process_info__init(pi);
		pi->pid = (uint32_t)es->pid; /* the guest's: containerd cannot reach it anyway */
		ptrs[out.n_processes++] = pi;
	}
	out.processes = ptrs;
	if (infos && ptrs)
		rpc_call_reply(call, &out.base);
	else
		rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED, "out of memory");
	free(infos);
	free(ptrs);
	kin__v1__list_exec_response__free_unpacked(m, NULL);
}

int task_vm_pids(struct rpc_call *call, struct task *t)
{
	Kin__Shim__PidsResponse out = KIN__SHIM__PIDS_RESPONSE__INIT;
	Kin__Shim__ProcessInfo pi = KIN__SHIM__PROCESS_INFO__INIT, *ptr = &pi;
	if (t->sandbox) { /* the VMM: what containerd knows as the sandbox */
		pi.pid = t->init.pid;
		out.n_processes = t->init.pid ? 1 : 0;
		out.processes = &ptr;
		return rpc_call_reply(call, &out.base);
	}
	Kin__V1__ListExecRequest in = KIN__V1__LIST_EXEC_REQUEST__INIT;
	in.cell = t->cell;
	return zone_call_for(call, t->svc, t->id, NULL, "kin.v1.Exec", "List", &in.base,
	                     pids_listed);
}

static void stats_shown(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct rpc_call *call = zref_reply_to(data, st);
	if (!call)
		return;
	Kin__V1__ShowCellResponse *m = kin__v1__show_cell_response__unpack(NULL, len, payload);
	const Kin__V1__CellStats *s = m ? m->stats : NULL;
	if (!s) {
		kin__v1__show_cell_response__free_unpacked(m, NULL);
		rpc_call_fail(call, ERR_INTERNAL, "the pod's VM answered no stats");
		return;
	}
	Kin__Shim__PidsStat pids = KIN__SHIM__PIDS_STAT__INIT;
	Kin__Shim__CPUStat cpu = KIN__SHIM__CPUSTAT__INIT;
	Kin__Shim__MemoryStat mem = KIN__SHIM__MEMORY_STAT__INIT;
	Kin__Shim__MemoryEvents mev = KIN__SHIM__MEMORY_EVENTS__INIT;
	Kin__Shim__Metrics metrics = KIN__SHIM__METRICS__INIT;
	pids.current = s->has_pids ? s->pids_current : s->procs;
	cpu.usage_usec = s->cpu_usage_us;
	cpu.user_usec = s->cpu_user_us;
	cpu.system_usec = s->cpu_system_us;
	cpu.nr_periods = s->cpu_nr_periods;
	cpu.nr_throttled = s->cpu_nr_throttled;
	cpu.throttled_usec = s->cpu_throttled_us;
	mem.usage = s->memory_current;
	mev.low = s->memory_events_low;
	mev.high = s->memory_events_high;
	mev.max = s->memory_events_max;
	mev.oom = s->memory_events_oom;
	mev.oom_kill = s->memory_events_oom_kill;
	for (size_t i = 0; m->cell && i < m->cell->n_limits; i++) {
		const Kin__V1__Limit *l = m->cell->limits[i];
		uint64_t v;
		if (strcmp(l->key, "memory.max") == 0 && str_to_u64(l->value, UINT64_MAX, &v) == 0)
			mem.usage_limit = v;
		else if (strcmp(l->key, "pids.max") == 0 &&
		         str_to_u64(l->value, UINT64_MAX, &v) == 0)
			pids.limit = v;
	}
	metrics.pids = &pids;
	metrics.cpu = &cpu;
	metrics.memory = &mem;
	metrics.memory_events = &mev;
	int r = task_reply_metrics(call, &metrics);
	if (r < 0)
		rpc_call_fail(call, ERR_INTERNAL, "metrics: %s", strerror(-r));
	kin__v1__show_cell_response__free_unpacked(m, NULL);
}

int task_vm_stats(struct rpc_call *call, struct task *t)
{
	Kin__V1__CellRequest in = KIN__V1__CELL_REQUEST__INIT;
	in.path = t->cell;
	return zone_call_for(call, t->svc, t->id, NULL, "kin.v1.Cells", "Show", &in.base,
	                     stats_shown);
}
