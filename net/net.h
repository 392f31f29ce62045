/* net: kin's network plumbing through netlink (libnl-route): links up,
 * addresses, routes; and the parsers for the kernel's ip= convention and
 * kin.net=; veth pairs for zones. Later: bridge, tap for VMs. */
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
