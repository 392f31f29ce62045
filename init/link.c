/* link: machine init's end of the VM link. The host kin reaches a guest
 * through a virtio-serial port its command line names (kin.link=; QEMU's
 * "org.kin.rpc" without it), found by vm/ (vm_guest_link_find) as
 * /sys/class/virtio-ports/vportNpM/name; kin serves RPC on
 * /dev/vportNpM as a trusted connection (only the host is on the other
 * end). virtio-serial has its own rules: the port opens once at a time
 * (EBUSY), and while the host side is not connected poll reports HUP and
 * reads return EOF. So: open, serve until the host goes, close, and try
 * again — every 200 ms at first, backing off to 1 s, only while
 * disconnected. Where no such port shows up within 10 s (bare metal, a
 * VMM without it) kin stops looking. */
#include "init/init.h"
#include "api/api.h"
#include "vm/vm.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#define LINK_RETRY_MIN_MS 200
#define LINK_RETRY_MAX_MS 1000
#define LINK_SEARCH_MS    10000 /* give up when no port by that name appears */

struct init_link {
	struct rpc_server *rpc;
	struct ev_loop *loop;
	struct ev_source timer;
	struct vm_guest_kinds kinds; /* the link's kind and the port's name */
	uint64_t started_ns;
	unsigned delay_ms;
	bool connected;
	bool found; /* the port exists: keep trying for good */
	char dev[64];
};

static void link_retry(struct init_link *l)
{
	struct itimerspec its = {.it_value = {.tv_sec = l->delay_ms / 1000,
	                                      .tv_nsec = (long)(l->delay_ms % 1000) * 1000000}};
	timerfd_settime(l->timer.fd, 0, &its, NULL);
	l->delay_ms = l->delay_ms * 2 > LINK_RETRY_MAX_MS ? LINK_RETRY_MAX_MS : l->delay_ms * 2;
}

static void link_closed(void *data)
{
	struct init_link *l = data;
	l->connected = false;
	l->delay_ms = LINK_RETRY_MIN_MS;
	log_debug("rpc: the host left the VM link %s", l->dev);
	link_retry(l);
}

static void link_try(struct init_link *l)
{
	if (!l->found && vm_guest_link_find(&l->kinds, l->dev, sizeof(l->dev)) < 0) {
		if (now_monotonic_ns() - l->started_ns > LINK_SEARCH_MS * 1000000ull) {
			log_debug("rpc: no virtio port named %s; no VM link", l->kinds.link_name);
			return;
		}
		link_retry(l);
		return;
	}
	if (!l->found)
		log_info("rpc: VM link on %s", l->dev);
	l->found = true;
	int fd = open(l->dev, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) { /* EBUSY: still held; ENOENT: not created yet */
		link_retry(l);
		return;
	}
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP)) {
		close(fd); /* the host is not connected: nobody to serve */
		link_retry(l);
		return;
	}
	/* The host's kin: it authorized and audited the calls it relays. */
	struct rpc_peer peer = {.transport = RPC_TRANSPORT_OTHER,
	                        .allowed = true,
	                        .superuser = true,
	                        .relay_hop = true};
	int r = rpc_server_add_conn_notify(l->rpc, fd, &peer, link_closed, l);
	if (r < 0) {
		log_warn("rpc: cannot serve the VM link %s: %s", l->dev, strerror(-r));
		link_retry(l);
		return;
	}
	l->connected = true;
	log_debug("rpc: the host is connected on %s", l->dev);
}

static void link_on_timer(struct ev_source *src, uint32_t events)
{
	struct init_link *l = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	if (!l->connected)
		link_try(l);
}

int init_link_start(struct ev_loop *loop, struct rpc_server *rpc,
                    const struct vm_guest_kinds *kinds, struct init_link **ret)
{
	*ret = NULL;
	if (!rpc)
		return 0;
	struct init_link *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	*l = (struct init_link){.rpc = rpc,
	                        .loop = loop,
	                        .started_ns = now_monotonic_ns(),
	                        .delay_ms = LINK_RETRY_MIN_MS};
	l->kinds = *kinds;
	l->timer =
	    (struct ev_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                       .fn = link_on_timer,
	                       .data = l};
	if (l->timer.fd < 0 || ev_add(loop, &l->timer, EPOLLIN) < 0) {
		int r = -errno;
		if (l->timer.fd >= 0)
			close(l->timer.fd);
		free(l);
		return r;
	}
	link_try(l);
	*ret = l;
	return 0;
}

/* After rpc_server_free (which closes the port without calling back). */
void init_link_free(struct init_link *l)
{
	if (!l)
		return;
	ev_del(l->loop, &l->timer);
	close(l->timer.fd);
	free(l);
}
