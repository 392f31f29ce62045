/* subnet: the addresses of a kin's zones. Its subnet is cut into /30
 * links for its --net zones and sub-ranges it delegates to them (net.h
 * says how); which links and delegations zones hold is kept here, in two
 * bitmaps, so that the lowest free one is always the one handed out. */
#include "net/net.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(NET_SUBNET_DELEGATIONS <= 32, "net_subnet.delegs holds one bit each");

int net_subnet_parse(const char *cidr, uint32_t *ret_base, unsigned *ret_prefix)
{
	char ip[32];
	const char *slash = strchr(cidr, '/');
	uint32_t prefix;
	struct in_addr a;
	if (!slash || (size_t)(slash - cidr) >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, cidr, (size_t)(slash - cidr));
	ip[slash - cidr] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1 || str_to_u32(slash + 1, &prefix) < 0 || prefix < 8 ||
	    prefix > 30)
		return -EINVAL;
	uint32_t base = ntohl(a.s_addr);
	if (base & (uint32_t)((1ull << (32 - prefix)) - 1))
		return -EINVAL; /* host bits set: say what you mean */
	*ret_base = base;
	*ret_prefix = prefix;
	return 0;
}

static void ip_str(uint32_t host_order, char *buf, size_t size)
{
	struct in_addr a = {.s_addr = htonl(host_order)};
	inet_ntop(AF_INET, &a, buf, (socklen_t)size);
}

uint32_t net_subnet_links(unsigned prefix)
{
	if (prefix < 8 || prefix > 30)
		return 0;
	/* The lower half when the upper one is delegated. */
	return 1u << (30 - prefix - (prefix <= NET_SUBNET_DELEGATE_PREFIX));
}

uint32_t net_subnet_delegations(unsigned prefix)
{
	return prefix >= 8 && prefix <= NET_SUBNET_DELEGATE_PREFIX ? NET_SUBNET_DELEGATIONS : 0;
}

int net_subnet_delegation(uint32_t base, unsigned prefix, uint32_t i, char *ret_cidr, size_t size)
{
	if (i >= net_subnet_delegations(prefix))
		return -ERANGE;
	char ip[INET_ADDRSTRLEN];
	/* 16 = 2^4 equal parts of the upper half: /(P+1+4). */
	ip_str(base + (1u << (31 - prefix)) + i * (1u << (27 - prefix)), ip, sizeof(ip));
	if (snprintf(ret_cidr, size, "%s/%u", ip, prefix + 5) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

int net_subnet_slot(uint32_t base, unsigned prefix, uint32_t slot, char *ret_zone_cidr,
                    size_t zsize, char *ret_gw, char *ret_host_cidr, size_t hsize)
{
	if (slot >= net_subnet_links(prefix))
		return -ERANGE;
	char gw[INET_ADDRSTRLEN], zone[INET_ADDRSTRLEN];
	uint32_t net = base + 4 * slot;
	ip_str(net + 1, gw, sizeof(gw));
	ip_str(net + 2, zone, sizeof(zone));
	snprintf(ret_zone_cidr, zsize, "%s/30", zone);
	snprintf(ret_host_cidr, hsize, "%s/30", gw);
	strcpy(ret_gw, gw);
	return 0;
}

int net_subnet_init(struct net_subnet *s, uint32_t base, unsigned prefix)
{
	uint32_t n = net_subnet_links(prefix);
	*s = (struct net_subnet){.base = base, .prefix = prefix};
	if (!n)
		return -EINVAL;
	/* One bit a link: 1 KiB for a /16, 32 bytes for a zone's /21. */
	s->links = calloc((n + 63) / 64, sizeof(*s->links));
	return s->links ? 0 : -ENOMEM;
}

void net_subnet_free(struct net_subnet *s)
{
	free(s->links);
	*s = (struct net_subnet){0};
}

bool net_subnet_link_held(const struct net_subnet *s, uint32_t slot)
{
	return slot < net_subnet_links(s->prefix) && s->links &&
	       (s->links[slot / 64] >> (slot % 64) & 1);
}

int net_subnet_link_lowest(const struct net_subnet *s, uint32_t *ret)
{
	uint32_t n = s->links ? net_subnet_links(s->prefix) : 0;
	for (uint32_t w = 0; w < (n + 63) / 64; w++) {
		if (s->links[w] == ~0ull)
			continue; /* 64 held: skipped at once */
		uint32_t slot = w * 64 + (uint32_t)__builtin_ctzll(~s->links[w]);
		if (slot >= n)
			break;
		*ret = slot;
		return 0;
	}
	return -ENOSPC;
}

void net_subnet_link_hold(struct net_subnet *s, uint32_t slot, bool held)
{
	if (slot >= net_subnet_links(s->prefix) || !s->links)
		return;
	if (held)
		s->links[slot / 64] |= 1ull << (slot % 64);
	else
		s->links[slot / 64] &= ~(1ull << (slot % 64));
}

bool net_subnet_deleg_held(const struct net_subnet *s, uint32_t i)
{
	return i < net_subnet_delegations(s->prefix) && (s->delegs >> i & 1);
}

int net_subnet_deleg_lowest(const struct net_subnet *s)
{
	for (uint32_t i = 0; i < net_subnet_delegations(s->prefix); i++)
		if (!(s->delegs >> i & 1))
			return (int)i;
	return -1;
}

void net_subnet_deleg_hold(struct net_subnet *s, uint32_t i, bool held)
{
	if (i >= net_subnet_delegations(s->prefix))
		return;
	if (held)
		s->delegs |= 1u << i;
	else
		s->delegs &= ~(1u << i);
}
