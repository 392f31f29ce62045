/* link: netlink requests through libnl-route: links, addresses, the
 * default route, veth pairs. Each public call opens its own short-lived
 * socket (these run at boot or on an RPC, never in a hot path, and keep no
 * state in PID 1 between them); net_bring_up does all its steps on one. */
#include "net/net.h"

#include <arpa/inet.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>
#include <string.h>

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

static int link_up(struct nl_sock *s, const char *ifname)
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
