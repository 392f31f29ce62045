/* net: kin's network plumbing through netlink (libnl-route): links up,
 * addresses, routes; and the parsers for the kernel's ip= convention and
 * kin.net=; veth pairs for zones; a VM's tap in a pod's network namespace,
 * joined to the pod's interface by tc (net/pod.c). */
#pragma once

#include "lib/lib.h"

#include <net/if.h>

#define NET_ADDR_MAX 64

/* One interface's static configuration. */
struct net_config {
	char ifname[IF_NAMESIZE];   /* "" = none (only lo) */
	char addr[NET_ADDR_MAX];    /* "10.0.2.15/24", "" = leave unaddressed */
	char gateway[NET_ADDR_MAX]; /* "10.0.2.2", "" = no default route */
};

/* The kernel's ip= convention (Documentation/admin-guide/nfs/nfsroot.rst):
 * ip=<client>:<server>:<gw>:<netmask>:<host>:<device>:<autoconf>[:...].
 * Static only: kin does no DHCP, so autoconf other than off/none/static is
 * refused (-EOPNOTSUPP); "ip=off"/"ip=none" leave cfg empty. */
int net_parse_ip_option(const char *value, struct net_config *cfg);
/* The other way: the whole kernel option "ip=ADDR::GW:MASK::IFNAME:off"
 * for cfg (addr "a.b.c.d/P", its prefix 32 when it names none; gateway ""
 * none): what a guest is told to configure. -EINVAL on a bad prefix,
 * -ENAMETOOLONG when size is short. */
int net_format_ip_option(const struct net_config *cfg, char *buf, size_t size);
/* kin.net=IFNAME[,ADDR/PREFIX[,GATEWAY]] */
int net_parse_kin_option(const char *value, struct net_config *cfg);
/* "a.b.c.d" netmask to a prefix length; -EINVAL if not contiguous. */
int net_netmask_to_prefix(const char *mask);

int net_link_up(const char *ifname);
int net_addr_add(const char *ifname, const char *cidr);
int net_route_add_default(const char *ifname, const char *gateway);
/* Deletes a link (a veth takes its peer with it); -ENODEV when absent. */
int net_link_delete(const char *ifname);
/* 1 when ifname exists here, 0 when not, or -errno. */
int net_link_exists(const char *ifname);
/* A veth pair: host_if in this network namespace, peer_if created straight
 * in the network namespace of process peer_pid (0: here). Names are at most
 * IF_NAMESIZE-1 bytes. */
int net_veth_create(const char *host_if, const char *peer_if, pid_t peer_pid);
/* The host end of a veth: address cidr, link up (one socket). */
int net_veth_setup_host(const char *host_if, const char *cidr);
/* lo up, then cfg's interface up with its address and default route.
 * Returns the first error; what failed is logged at debug level only. */
int net_bring_up(const struct net_config *cfg);

/* ---- subnet.c: zones' addresses ---------------------------------------
 * A kin's subnet S = BASE/P (8 <= P <= 30) serves its --net zones' links
 * and, so that zones can make --net zones of their own without reusing
 * any address of an ancestor, sub-ranges delegated to its zones:
 *  - P <= 24: the lower half of S is cut into /30 links (slot i is
 *    BASE + 4i: .1 ours, .2 the zone's), the upper half into 16 equal
 *    delegations /(P+5) (delegation i starts at BASE + 2^(31-P) +
 *    i * 2^(27-P)). Every zone, --net or not, takes the lowest free
 *    delegation while one is free and gets it as `--zone-subnet`.
 *    Delegations and links never overlap, and a delegation is cut the
 *    same way one level down, so no two kins of a tree share an address.
 *  - P > 24: all of S is /30 links; nothing is delegated.
 * From 10.88.0.0/16: links 10.88.0.0/17 (the first zone 10.88.0.2/30),
 * delegations 10.88.128.0/21, 10.88.136.0/21, ...; a zone given
 * 10.88.128.0/21 links its zones from 10.88.128.0/22 and delegates
 * 10.88.132.0/26, ...; a /26 delegates nothing, so with the default
 * subnet zones at depth 3 can still have --net zones of their own but
 * not pass the ability further (a /8 goes four levels deep). */
#define NET_SUBNET_DELEGATIONS     16 /* sub-ranges a subnet of /24 or more hands on */
#define NET_SUBNET_DELEGATE_PREFIX 24 /* subnets this size or larger delegate */

/* "10.88.0.0/16": base address (host order) and prefix (8..30). */
int net_subnet_parse(const char *cidr, uint32_t *ret_base, unsigned *ret_prefix);
/* How many /30 links a subnet of this prefix holds (0 for a bad prefix). */
uint32_t net_subnet_links(unsigned prefix);
/* How many sub-ranges it delegates: NET_SUBNET_DELEGATIONS or 0. */
uint32_t net_subnet_delegations(unsigned prefix);
/* Link slot i of a subnet: the zone's CIDR, our address, our CIDR. */
int net_subnet_slot(uint32_t base, unsigned prefix, uint32_t slot, char *ret_zone_cidr,
                    size_t zsize, char *ret_gw, char *ret_host_cidr, size_t hsize);
/* Delegation i of a subnet as "a.b.c.d/p"; -ERANGE past the last. */
int net_subnet_delegation(uint32_t base, unsigned prefix, uint32_t i, char *ret_cidr, size_t size);

/* A subnet's links and delegations, and which of them zones hold. Its
 * owner says when one is taken and let go; the lowest free is handed out. */
struct net_subnet {
	uint32_t base;
	unsigned prefix; /* 0: none, nothing to hand out */
	uint32_t delegs; /* bit i: delegation i is held */
	uint64_t *links; /* bit i: link slot i is held */
};
/* s for base/prefix (as net_subnet_parse gives them), nothing held;
 * -EINVAL for a bad prefix, -ENOMEM. net_subnet_free undoes it. */
int net_subnet_init(struct net_subnet *s, uint32_t base, unsigned prefix);
void net_subnet_free(struct net_subnet *s);
/* The lowest link no one holds (it stays free until held); -ENOSPC. */
int net_subnet_link_lowest(const struct net_subnet *s, uint32_t *ret);
bool net_subnet_link_held(const struct net_subnet *s, uint32_t slot);
/* Holds or lets go of a link; a slot outside the subnet is ignored. */
void net_subnet_link_hold(struct net_subnet *s, uint32_t slot, bool held);
/* The same for delegations; the lowest free one, or -1 when all are held
 * (or the subnet delegates none). */
int net_subnet_deleg_lowest(const struct net_subnet *s);
bool net_subnet_deleg_held(const struct net_subnet *s, uint32_t i);
void net_subnet_deleg_hold(struct net_subnet *s, uint32_t i, bool held);

/* A pod interface's facts, for a VM that takes its place (kata-containers'
 * "tcfilter" networking): the guest takes its MAC, address and gateway. */
struct net_link_info {
	int ifindex;
	unsigned mtu;
	uint8_t mac[6];
	char addr[NET_ADDR_MAX];    /* its first IPv4 address "10.1.2.3/24", "" = none */
	char gateway[NET_ADDR_MAX]; /* an IPv4 default route's gateway through it, "" = none */
};
/* ifname's facts in this network namespace; -ENODEV when absent. These
 * three calls refuse a name the kernel could not hold whole (-EINVAL). */
int net_link_info(const char *ifname, struct net_link_info *ret);
/* A persistent tap ifname (IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, what QEMU's
 * -netdev tap,ifname=IFNAME,vnet_hdr=on attaches to), its MTU set (0: the
 * default), up. -EEXIST when a link of that name is there. */
int net_tap_create(const char *ifname, unsigned mtu);
/* Every frame that arrives on from leaves through to: an ingress qdisc on
 * from (one already there is kept) and a catch-all u32 filter whose action
 * is a mirred egress redirect. Call it once each way; -EEXIST when from's
 * redirect filter is already there. */
int net_tc_redirect(const char *from, const char *to);

/* A VM in the place of pod_if of the network namespace at path netns (a
 * pod's, CNI's): entered for this call only, there pod_if's facts read
 * into *ret, tap made with its MTU (net_tap_create) and each redirected
 * to the other (net_tc_redirect); a tap and redirects there already (a
 * shim started again for the pod) are taken as they are. err names the
 * step and netns, or says pod_if has no IPv4 address (the guest takes
 * it: FAILED_PRECONDITION). */
int net_pod_tap(const char *netns, const char *pod_if, const char *tap, struct net_link_info *ret,
                struct err *err);
