/* link: netlink requests through libnl-route: links, addresses, the
 * default route, veth pairs; a VM's tap and the tc redirect that joins it
 * to a pod's interface. Each public call opens its own short-lived socket
 * (these run at boot or on an RPC, never in a hot path, and keep no state
 * in PID 1 between them); net_bring_up does all its steps on one. */
#include "net/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_tun.h>
#include <linux/pkt_cls.h>
#include <linux/tc_act/tc_mirred.h>
#include <netlink/netlink.h>
#include <netlink/route/act/mirred.h>
#include <netlink/route/addr.h>
#include <netlink/route/classifier.h>
#include <netlink/route/cls/u32.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/route.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

static void sock_freep(struct nl_sock **s)
{
	if (*s)
		nl_socket_free(*s);
}
#define _cleanup_nlsock_ _cleanup_(sock_freep)

/* libnl's errors are its own numbers; map the common ones back to errno. */
static int nl_to_errno(int nlerr)
{
	switch (-nlerr < 0 ? nlerr : -nlerr) {
	case NLE_EXIST:
		return -EEXIST;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_NODEV:
	case NLE_OBJ_NOTFOUND:
		return -ENODEV;
	case NLE_INVAL:
		return -EINVAL;
	case NLE_NOADDR:
		return -EADDRNOTAVAIL;
	default:
		return -EIO;
	}
}

static int nl_open(struct nl_sock **ret)
{
	struct nl_sock *s = nl_socket_alloc();
	if (!s)
		return -ENOMEM;
	int r = nl_connect(s, NETLINK_ROUTE);
	if (r < 0) {
		nl_socket_free(s);
		return nl_to_errno(r);
	}
	*ret = s;
	return 0;
}

/* Builds an nl_addr from dotted IPv4 and a prefix with inet_pton, never
 * through nl_addr_parse, whose name fallback would reach NSS. */
static int ipv4_addr(const char *ip, int prefix, struct nl_addr **ret)
{
	struct in_addr a;
	if (inet_pton(AF_INET, ip, &a) != 1)
		return -EINVAL;
	struct nl_addr *addr = nl_addr_build(AF_INET, &a, sizeof(a));
	if (!addr)
		return -ENOMEM;
	nl_addr_set_prefixlen(addr, prefix);
	*ret = addr;
	return 0;
}

static int ifindex_of(struct nl_sock *s, const char *ifname, int *ret)
{
	struct rtnl_link *link = NULL;
	int r = rtnl_link_get_kernel(s, 0, ifname, &link);
	if (r < 0)
		return nl_to_errno(r);
	*ret = rtnl_link_get_ifindex(link);
	rtnl_link_put(link);
	return 0;
}

/* A name the kernel holds whole (it would cut a longer one). */
static bool ifname_valid(const char *ifname)
{
	return ifname && ifname[0] && strnlen(ifname, IF_NAMESIZE) < IF_NAMESIZE;
}

/* Link up, and its MTU set unless mtu is 0. */
static int link_up_mtu(struct nl_sock *s, const char *ifname, unsigned mtu)
{
	int ifindex;
	int r = ifindex_of(s, ifname, &ifindex);
	if (r < 0)
		return r;
	struct rtnl_link *change = rtnl_link_alloc();
	if (!change)
		return -ENOMEM;
	rtnl_link_set_ifindex(change, ifindex);
	rtnl_link_set_flags(change, IFF_UP);
	if (mtu)
		rtnl_link_set_mtu(change, mtu);
	struct rtnl_link *orig = rtnl_link_alloc();
	if (!orig) {
		rtnl_link_put(change);
		return -ENOMEM;
	}
	rtnl_link_set_ifindex(orig, ifindex);
	r = rtnl_link_change(s, orig, change, 0);
	rtnl_link_put(change);
	rtnl_link_put(orig);
	return r < 0 ? nl_to_errno(r) : 0;
}

static int link_up(struct nl_sock *s, const char *ifname)
{
	return link_up_mtu(s, ifname, 0);
}

static int addr_add(struct nl_sock *s, const char *ifname, const char *cidr)
{
	struct nl_addr *local = NULL;
	int ifindex;
	int r = ifindex_of(s, ifname, &ifindex);
	if (r < 0)
		return r;
	char ip[NET_ADDR_MAX];
	const char *slash = strchr(cidr, '/');
	uint32_t prefix = 32;
	if (str_copy(ip, sizeof(ip), cidr) < 0)
		return -EINVAL;
	if (slash) {
		ip[slash - cidr] = '\0';
		if (str_to_u32(slash + 1, &prefix) < 0 || prefix > 32)
			return -EINVAL;
	}
	r = ipv4_addr(ip, (int)prefix, &local);
	if (r < 0)
		return r;
	struct rtnl_addr *addr = rtnl_addr_alloc();
	if (!addr) {
		nl_addr_put(local);
		return -ENOMEM;
	}
	rtnl_addr_set_ifindex(addr, ifindex);
	rtnl_addr_set_local(addr, local);
	r = rtnl_addr_add(s, addr, 0);
	rtnl_addr_put(addr);
	nl_addr_put(local);
	return r < 0 ? nl_to_errno(r) : 0;
}

static int route_add_default(struct nl_sock *s, const char *ifname, const char *gateway)
{
	struct nl_addr *gw = NULL, *dst = NULL;
	int ifindex;
	int r = ifindex_of(s, ifname, &ifindex);
	if (r < 0)
		return r;
	r = ipv4_addr(gateway, 32, &gw);
	if (r < 0)
		return r;
	r = ipv4_addr("0.0.0.0", 0, &dst);
	if (r < 0) {
		nl_addr_put(gw);
		return r;
	}
	struct rtnl_route *route = rtnl_route_alloc();
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	if (!route || !nh) {
		if (route)
			rtnl_route_put(route);
		if (nh)
			rtnl_route_nh_free(nh);
		nl_addr_put(gw);
		nl_addr_put(dst);
		return -ENOMEM;
	}
	rtnl_route_set_family(route, AF_INET);
	rtnl_route_set_dst(route, dst);
	rtnl_route_set_table(route, RT_TABLE_MAIN);
	rtnl_route_set_protocol(route, RTPROT_BOOT);
	rtnl_route_set_scope(route, RT_SCOPE_UNIVERSE);
	rtnl_route_nh_set_ifindex(nh, ifindex);
	rtnl_route_nh_set_gateway(nh, gw);
	rtnl_route_add_nexthop(route, nh); /* route owns nh now */
	r = rtnl_route_add(s, route, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_route_put(route);
	nl_addr_put(gw);
	nl_addr_put(dst);
	return r < 0 ? nl_to_errno(r) : 0;
}

/* The public calls: one short-lived socket each. */
#define WITH_SOCK(call)                                                                            \
	do {                                                                                       \
		_cleanup_nlsock_ struct nl_sock *s_ = NULL;                                        \
		int r_ = nl_open(&s_);                                                             \
		return r_ < 0 ? r_ : (call);                                                       \
	} while (0)

int net_link_up(const char *ifname)
{
	WITH_SOCK(link_up(s_, ifname));
}
int net_addr_add(const char *ifname, const char *cidr)
{
	WITH_SOCK(addr_add(s_, ifname, cidr));
}
int net_route_add_default(const char *ifname, const char *gateway)
{
	WITH_SOCK(route_add_default(s_, ifname, gateway));
}

static int link_delete(struct nl_sock *s, const char *ifname)
{
	int ifindex;
	int r = ifindex_of(s, ifname, &ifindex);
	if (r < 0)
		return r;
	struct rtnl_link *link = rtnl_link_alloc();
	if (!link)
		return -ENOMEM;
	rtnl_link_set_ifindex(link, ifindex);
	r = rtnl_link_delete(s, link);
	rtnl_link_put(link);
	return r < 0 ? nl_to_errno(r) : 0;
}
int net_link_delete(const char *ifname)
{
	WITH_SOCK(link_delete(s_, ifname));
}

static int link_exists(struct nl_sock *s, const char *ifname)
{
	int ifindex;
	int r = ifindex_of(s, ifname, &ifindex);
	return r == -ENODEV ? 0 : r < 0 ? r : 1;
}
int net_link_exists(const char *ifname)
{
	WITH_SOCK(link_exists(s_, ifname));
}

static int veth_create(struct nl_sock *s, const char *host_if, const char *peer_if, pid_t pid)
{
	if (strlen(host_if) >= IF_NAMESIZE || strlen(peer_if) >= IF_NAMESIZE)
		return -EINVAL;
	int r = rtnl_link_veth_add(s, host_if, peer_if, pid ? pid : getpid());
	return r < 0 ? nl_to_errno(r) : 0;
}
int net_veth_create(const char *host_if, const char *peer_if, pid_t peer_pid)
{
	WITH_SOCK(veth_create(s_, host_if, peer_if, peer_pid));
}

int net_veth_setup_host(const char *host_if, const char *cidr)
{
	_cleanup_nlsock_ struct nl_sock *s = NULL;
	int r = nl_open(&s);
	if (r == 0)
		r = addr_add(s, host_if, cidr);
	if (r == 0)
		r = link_up(s, host_if);
	return r;
}

int net_bring_up(const struct net_config *cfg)
{
	_cleanup_nlsock_ struct nl_sock *s = NULL; /* one socket for every step */
	int r = nl_open(&s);
	if (r < 0)
		return r;
	r = link_up(s, "lo");
	if (r < 0)
		return r;
	if (!cfg->ifname[0])
		return 0;
	r = link_up(s, cfg->ifname);
	if (r < 0)
		return r;
	if (cfg->addr[0]) {
		r = addr_add(s, cfg->ifname, cfg->addr);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	if (cfg->gateway[0]) {
		r = route_add_default(s, cfg->ifname, cfg->gateway);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

/* ---- a VM in a pod's network namespace ------------------------------------------ */

/* "a.b.c.d/len" (or "a.b.c.d" when prefix < 0) from a 4-byte nl_addr. */
static void ipv4_format(struct nl_addr *a, int prefix, char *buf, size_t size)
{
	char ip[INET_ADDRSTRLEN];
	if (!inet_ntop(AF_INET, nl_addr_get_binary_addr(a), ip, sizeof(ip)))
		ip[0] = '\0';
	if (prefix < 0)
		snprintf(buf, size, "%s", ip);
	else
		snprintf(buf, size, "%s/%d", ip, prefix);
}

static bool is_ipv4(struct nl_addr *a)
{
	return a && nl_addr_get_family(a) == AF_INET && nl_addr_get_len(a) == 4;
}

static int first_ipv4_addr(struct nl_sock *s, int ifindex, char *buf, size_t size)
{
	struct nl_cache *cache = NULL;
	int r = rtnl_addr_alloc_cache(s, &cache);
	if (r < 0)
		return nl_to_errno(r);
	for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;
		struct nl_addr *local = rtnl_addr_get_local(a);
		if (rtnl_addr_get_ifindex(a) == ifindex && is_ipv4(local)) {
			ipv4_format(local, rtnl_addr_get_prefixlen(a), buf, size);
			break;
		}
	}
	nl_cache_free(cache);
	return 0;
}

/* The gateway of the first IPv4 default route in the main table that leaves
 * through ifindex. */
static int default_gateway(struct nl_sock *s, int ifindex, char *buf, size_t size)
{
	struct nl_cache *cache = NULL;
	int r = rtnl_route_alloc_cache(s, AF_INET, 0, &cache);
	if (r < 0)
		return nl_to_errno(r);
	for (struct nl_object *o = nl_cache_get_first(cache); o && !buf[0];
	     o = nl_cache_get_next(o)) {
		struct rtnl_route *route = (struct rtnl_route *)o;
		struct nl_addr *dst = rtnl_route_get_dst(route);
		if (rtnl_route_get_table(route) != RT_TABLE_MAIN ||
		    rtnl_route_get_type(route) != RTN_UNICAST ||
		    (dst && nl_addr_get_prefixlen(dst)))
			continue;
		for (int i = 0; i < rtnl_route_get_nnexthops(route); i++) {
			struct rtnl_nexthop *nh = rtnl_route_nexthop_n(route, i);
			struct nl_addr *gw = rtnl_route_nh_get_gateway(nh);
			if (rtnl_route_nh_get_ifindex(nh) == ifindex && is_ipv4(gw)) {
				ipv4_format(gw, -1, buf, size);
				break;
			}
		}
	}
	nl_cache_free(cache);
	return 0;
}

static int link_info(struct nl_sock *s, const char *ifname, struct net_link_info *ret)
{
	struct rtnl_link *link = NULL;
	int r = rtnl_link_get_kernel(s, 0, ifname, &link);
	if (r < 0)
		return nl_to_errno(r);
	struct net_link_info info = {
	    .ifindex = rtnl_link_get_ifindex(link),
	    .mtu = rtnl_link_get_mtu(link),
	};
	struct nl_addr *ll = rtnl_link_get_addr(link);
	if (ll && nl_addr_get_len(ll) == sizeof(info.mac))
		memcpy(info.mac, nl_addr_get_binary_addr(ll), sizeof(info.mac));
	rtnl_link_put(link);
	r = first_ipv4_addr(s, info.ifindex, info.addr, sizeof(info.addr));
	if (r == 0)
		r = default_gateway(s, info.ifindex, info.gateway, sizeof(info.gateway));
	if (r < 0)
		return r;
	*ret = info;
	return 0;
}
int net_link_info(const char *ifname, struct net_link_info *ret)
{
	if (!ifname_valid(ifname))
		return -EINVAL;
	WITH_SOCK(link_info(s_, ifname, ret));
}

int net_tap_create(const char *ifname, unsigned mtu)
{
	if (!ifname_valid(ifname))
		return -EINVAL;
	_cleanup_close_ int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* TUN_EXCL: without it TUNSETIFF would attach to a tap already there. */
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_TUN_EXCL};
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		return errno == EBUSY ? -EEXIST : -errno;
	if (ioctl(fd, TUNSETPERSIST, 1) < 0)
		return -errno; /* closing fd takes the tap away */
	_cleanup_nlsock_ struct nl_sock *s = NULL;
	int r = nl_open(&s);
	if (r == 0)
		r = link_up_mtu(s, ifname, mtu);
	if (r < 0)
		(void)ioctl(fd, TUNSETPERSIST, 0); /* and closing fd removes it */
	return r;
}

/* An ingress qdisc on ifindex; -EEXIST when one (or clsact) is there. */
static int ingress_qdisc_add(struct nl_sock *s, int ifindex)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
	rtnl_tc_set_parent(TC_CAST(q), TC_H_INGRESS);
	rtnl_tc_set_handle(TC_CAST(q), TC_H_MAKE(TC_H_INGRESS, 0));
	int r = rtnl_tc_set_kind(TC_CAST(q), "ingress");
	if (r == 0)
		r = rtnl_qdisc_add(s, q, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_qdisc_put(q);
	return r < 0 ? nl_to_errno(r) : 0;
}

/* tc filter add dev FROM ingress prio 1 handle 800::800 protocol all
 *   u32 match u32 0 0 action mirred egress redirect dev TO
 * u32 rather than matchall: every kernel has it (matchall is an option
 * some leave out). The fixed handle makes a second call -EEXIST. */
static int redirect_filter_add(struct nl_sock *s, int from, int to)
{
	struct rtnl_cls *cls = rtnl_cls_alloc();
	struct rtnl_act *act = rtnl_act_alloc();
	int r = -NLE_NOMEM;
	if (!cls || !act)
		goto out;
	rtnl_tc_set_ifindex(TC_CAST(cls), from);
	/* ffff:fff2 names the ingress hook of an ingress qdisc and of clsact. */
	rtnl_tc_set_parent(TC_CAST(cls), TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS));
	rtnl_cls_set_prio(cls, 1);
	rtnl_cls_set_protocol(cls, ETH_P_ALL);
	rtnl_u32_set_handle(cls, 0x800, 0, 0x800);
	if ((r = rtnl_tc_set_kind(TC_CAST(cls), "u32")) < 0 ||
	    (r = rtnl_u32_add_key_uint32(cls, 0, 0, 0, 0)) < 0 ||
	    (r = rtnl_u32_set_flags(cls, TC_U32_TERMINAL)) < 0 ||
	    (r = rtnl_tc_set_kind(TC_CAST(act), "mirred")) < 0 ||
	    (r = rtnl_mirred_set_action(act, TCA_EGRESS_REDIR)) < 0 ||
	    (r = rtnl_mirred_set_policy(act, TC_ACT_STOLEN)) < 0 ||
	    (r = rtnl_mirred_set_ifindex(act, (uint32_t)to)) < 0 ||
	    (r = rtnl_u32_add_action(cls, act)) < 0)
		goto out;
	r = rtnl_cls_add(s, cls, NLM_F_CREATE | NLM_F_EXCL);
out:
	if (act)
		rtnl_act_put(act);
	if (cls)
		rtnl_cls_put(cls);
	return r < 0 ? nl_to_errno(r) : 0;
}

static int tc_redirect(struct nl_sock *s, const char *from, const char *to)
{
	int from_index, to_index;
	int r = ifindex_of(s, from, &from_index);
	if (r == 0)
		r = ifindex_of(s, to, &to_index);
	if (r < 0)
		return r;
	r = ingress_qdisc_add(s, from_index);
	if (r < 0 && r != -EEXIST)
		return r;
	return redirect_filter_add(s, from_index, to_index);
}
int net_tc_redirect(const char *from, const char *to)
{
	if (!ifname_valid(from) || !ifname_valid(to))
		return -EINVAL;
	WITH_SOCK(tc_redirect(s_, from, to));
}
