/* task_events: the shim's events to containerd — Events/Forward calls on
 * TTRPC_ADDRESS, through a private route of this kin's rpc server. One
 * call at a time, so containerd sees them in the order they happened (a
 * TaskStart before its TaskExit); a queue of at most TASK_EVENTS_MAX
 * (older ones dropped, and counted, past that); a containerd that is away
 * (restarting) is reconnected to every second while events wait. */
#include "shim/task-int.h"

#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#define RETRY_MS 1000

static void pump(struct shim_task *svc);

static void retry_arm(struct shim_task *svc)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = RETRY_MS / 1000, .tv_nsec = (RETRY_MS % 1000) * 1000000L}};
	if (svc->retry.fd >= 0)
		timerfd_settime(svc->retry.fd, 0, &its, NULL);
}

static void on_retry(struct ev_source *src, uint32_t events)
{
	struct shim_task *svc = src->data;
	uint64_t n;
	(void)events;
	if (read(src->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_debug("shim: events timer: %m");
	pump(svc);
}

static struct task_event *queue_first(struct shim_task *svc)
{
	return list_first_entry(&svc->events, struct task_event, node);
}

static void forwarded(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct shim_task *svc = data;
	(void)payload, (void)len;
	svc->forwarding = false;
	struct task_event *e = queue_first(svc);
	if (st->code == ERR_UNAVAILABLE) { /* containerd is away: the route goes, we retry */
		rpc_route_remove(svc->rpc, EVENTS_ROUTE, "containerd is away");
		retry_arm(svc);
		return;
	}
	if (st->code != ERR_OK && e)
		log_warn("shim: event %s not taken by containerd: %s", e->topic, st->msg);
	if (e) {
		list_remove(&e->node);
		svc->nevents--;
		free(e);
	}
	pump(svc);
}

static int connect_containerd(struct shim_task *svc)
{
	if (rpc_route_state(svc->rpc, EVENTS_ROUTE) == RPC_ROUTE_READY)
		return 0;
	rpc_route_remove(svc->rpc, EVENTS_ROUTE, NULL);
	struct rpc_address a;
	if (!svc->cfg->ttrpc[0] || rpc_address_parse(svc->cfg->ttrpc, &a) < 0)
		return -EDESTADDRREQ;
	/* A unix connect does not wait for the peer to accept; 100 ms bounds
	 * a full backlog. */
	int fd = rpc_address_connect(&a, 100);
	if (fd < 0)
		return fd;
	int r = rpc_route_add(svc->rpc, EVENTS_ROUTE, fd, RPC_ROUTE_PRIVATE);
	close(fd);
	return r;
}

static void pump(struct shim_task *svc)
{
	struct task_event *e = queue_first(svc);
	if (svc->forwarding || !e)
		return;
	int r = connect_containerd(svc);
	if (r < 0) {
		if (r != -EDESTADDRREQ)
			retry_arm(svc);
		else /* no TTRPC_ADDRESS (run by hand): nobody to tell */
			while ((e = queue_first(svc))) {
				list_remove(&e->node);
				svc->nevents--;
				free(e);
			}
		return;
	}
	Kin__Shim__Timestamp ts;
	task_timestamp(&e->at, &ts);
	Kin__Shim__Any any = KIN__SHIM__ANY__INIT;
	any.type_url = e->type_url;
	any.value = (ProtobufCBinaryData){e->len, e->data};
	Kin__Shim__Envelope env = KIN__SHIM__ENVELOPE__INIT;
	env.timestamp = &ts;
	env.namespace_ = (char *)svc->cfg->ns;
	env.topic = e->topic;
	env.event = &any;
	Kin__Shim__ForwardRequest req = KIN__SHIM__FORWARD_REQUEST__INIT;
	req.envelope = &env;
	r = rpc_route_call(svc->rpc, EVENTS_ROUTE, EVENTS_SERVICE, "Forward", &req.base, forwarded,
	                   svc);
	if (r < 0) {
		rpc_route_remove(svc->rpc, EVENTS_ROUTE, "cannot send");
		retry_arm(svc);
		return;
	}
	svc->forwarding = true;
}

void task_publish(struct shim_task *svc, const char *topic, const char *type,
                  const ProtobufCMessage *msg)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	struct task_event *e = malloc(sizeof(*e) + n);
	if (!e) {
		svc->events_dropped++;
		return;
	}
	clock_gettime(CLOCK_REALTIME, &e->at);
	str_copy(e->topic, sizeof(e->topic), topic);
	str_copy(e->type_url, sizeof(e->type_url), type);
	e->len = protobuf_c_message_pack(msg, e->data);
	if (svc->nevents >= TASK_EVENTS_MAX) {
		/* The oldest not being sent goes. */
		struct task_event *old = queue_first(svc);
		if (svc->forwarding)
			old = list_entry(old->node.next, struct task_event, node);
		list_remove(&old->node);
		free(old);
		svc->nevents--;
		if (svc->events_dropped++ % 100 == 0)
			log_warn("shim: containerd takes no events: %llu dropped so far",
			         (unsigned long long)svc->events_dropped);
	}
	list_append(&svc->events, &e->node);
	svc->nevents++;
	pump(svc);
}

void task_events_kick(struct shim_task *svc)
{
	pump(svc);
}

void task_events_init(struct shim_task *svc)
{
	list_init(&svc->events);
	svc->retry =
	    (struct ev_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                       .fn = on_retry,
	                       .data = svc};
	if (svc->retry.fd >= 0 && ev_add(svc->loop, &svc->retry, EPOLLIN) < 0) {
		close(svc->retry.fd);
		svc->retry.fd = -1;
	}
}

void task_events_free(struct shim_task *svc)
{
	struct task_event *e;
	while ((e = queue_first(svc))) {
		list_remove(&e->node);
		free(e);
	}
	svc->nevents = 0;
	if (svc->retry.fd >= 0) {
		ev_del(svc->loop, &svc->retry);
		close(svc->retry.fd);
		svc->retry.fd = -1;
	}
}
