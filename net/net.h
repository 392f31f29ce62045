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
