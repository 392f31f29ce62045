/* net: the subnet maths of zones' addresses (links, delegations, and that
 * no two kins of a tree share an address) and the table of which links and
 * delegations are held. */
#include "net/net.h"
#include "unit.h"

#include <arpa/inet.h>

static uint32_t ip(const char *s)
{
	struct in_addr a;
	return inet_pton(AF_INET, s, &a) == 1 ? ntohl(a.s_addr) : 0;
}

TEST(net_subnet_parse)
{
	uint32_t base;
	unsigned prefix;
	CHECK_EQ(net_subnet_parse("10.88.0.0/16", &base, &prefix), 0);
	CHECK_EQ(base, ip("10.88.0.0"));
	CHECK_EQ(prefix, 16);
	CHECK_EQ(net_subnet_parse("10.0.0.0/8", &base, &prefix), 0);
	CHECK_EQ(net_subnet_parse("192.168.7.4/30", &base, &prefix), 0);
	const char *bad[] = {"10.88.0.1/16",
	                     "10.88.0.0",
	                     "10.88.0.0/7",
	                     "10.88.0.0/31",
	                     "10.88.0.0/",
	                     "10.88.0.0/16x",
	                     "10.88.0/16",
	                     "fe80::/64",
	                     "10.88.0.0/-1",
	                     "/16",
	                     "1234567890123456789012345678901234/8"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(net_subnet_parse(bad[i], &base, &prefix), -EINVAL);
}

TEST(net_subnet_counts)
{
	CHECK_EQ(net_subnet_links(16), 8192); /* the lower half, /17, in /30s */
	CHECK_EQ(net_subnet_delegations(16), NET_SUBNET_DELEGATIONS);
	CHECK_EQ(net_subnet_links(8), 1u << 21);
	CHECK_EQ(net_subnet_links(21), 256);
	CHECK_EQ(net_subnet_links(24), 32);
	CHECK_EQ(net_subnet_delegations(24), 16);
	CHECK_EQ(net_subnet_links(25), 32); /* too small to delegate: all links */
	CHECK_EQ(net_subnet_delegations(25), 0);
	CHECK_EQ(net_subnet_links(26), 16);
	CHECK_EQ(net_subnet_links(30), 1);
	CHECK_EQ(net_subnet_links(31), 0);
	CHECK_EQ(net_subnet_links(7), 0);
	CHECK_EQ(net_subnet_delegations(7), 0);
}

TEST(net_subnet_slots)
{
	char zc[32], gw[32], hc[32];
	uint32_t base = ip("10.88.0.0");
	CHECK_EQ(net_subnet_slot(base, 16, 0, zc, sizeof(zc), gw, hc, sizeof(hc)), 0);
	CHECK_STR(zc, "10.88.0.2/30");
	CHECK_STR(gw, "10.88.0.1");
	CHECK_STR(hc, "10.88.0.1/30");
	CHECK_EQ(net_subnet_slot(base, 16, 1, zc, sizeof(zc), gw, hc, sizeof(hc)), 0);
	CHECK_STR(zc, "10.88.0.6/30");
	CHECK_EQ(net_subnet_slot(base, 16, 8191, zc, sizeof(zc), gw, hc, sizeof(hc)), 0);
	CHECK_STR(zc, "10.88.127.254/30"); /* the last link stays in the lower half */
	CHECK_EQ(net_subnet_slot(base, 16, 8192, zc, sizeof(zc), gw, hc, sizeof(hc)), -ERANGE);
	CHECK_EQ(net_subnet_slot(ip("192.168.7.4"), 30, 0, zc, sizeof(zc), gw, hc, sizeof(hc)), 0);
	CHECK_STR(zc, "192.168.7.6/30");
	CHECK_EQ(net_subnet_slot(ip("192.168.7.4"), 30, 1, zc, sizeof(zc), gw, hc, sizeof(hc)),
	         -ERANGE);
}

TEST(net_subnet_delegation)
{
	char c[32];
	uint32_t base = ip("10.88.0.0");
	CHECK_EQ(net_subnet_delegation(base, 16, 0, c, sizeof(c)), 0);
	CHECK_STR(c, "10.88.128.0/21");
	CHECK_EQ(net_subnet_delegation(base, 16, 1, c, sizeof(c)), 0);
	CHECK_STR(c, "10.88.136.0/21");
	CHECK_EQ(net_subnet_delegation(base, 16, 15, c, sizeof(c)), 0);
	CHECK_STR(c, "10.88.248.0/21");
	CHECK_EQ(net_subnet_delegation(base, 16, 16, c, sizeof(c)), -ERANGE);
	/* One level down, as docs/zones.md says. */
	CHECK_EQ(net_subnet_delegation(ip("10.88.128.0"), 21, 0, c, sizeof(c)), 0);
	CHECK_STR(c, "10.88.132.0/26");
	CHECK_EQ(net_subnet_delegation(ip("10.88.132.0"), 26, 0, c, sizeof(c)), -ERANGE);
	CHECK_EQ(net_subnet_delegation(ip("10.0.0.0"), 24, 15, c, sizeof(c)), 0);
	CHECK_STR(c, "10.0.0.248/29");
	CHECK_EQ(net_subnet_delegation(base, 16, 0, c, 8), -ENAMETOOLONG);
	/* Every delegation parses back as a subnet (host bits clear). */
	uint32_t b;
	unsigned p;
	for (uint32_t i = 0; i < 16; i++) {
		net_subnet_delegation(ip("10.0.0.0"), 8, i, c, sizeof(c));
		CHECK_EQ(net_subnet_parse(c, &b, &p), 0);
		CHECK_EQ(p, 13);
	}
}

/* Walks a tree of kins down from base/prefix: every link and delegation
 * lies inside its kin's subnet, and no two links anywhere in the tree
 * overlap (so no address is used twice by kins of one tree). */
struct range {
	uint32_t lo, n;
};

static void walk(uint32_t base, unsigned prefix, struct range *links, size_t *nlinks, size_t cap,
                 int *bad)
{
	uint32_t size = 1u << (32 - prefix);
	uint32_t nl = net_subnet_links(prefix), nd = net_subnet_delegations(prefix);
	/* A few links of each kin: the first, the second and the last. */
	uint32_t pick[] = {0, 1, nl - 1};
	for (size_t i = 0; i < 3 && nl; i++) {
		uint32_t lo = base + 4 * pick[i];
		if (lo < base || lo + 4 > base + size)
			(*bad)++;
		if (*nlinks < cap)
			links[(*nlinks)++] = (struct range){lo, 4};
	}
	for (uint32_t d = 0; d < nd; d++) {
		char c[32];
		uint32_t b;
		unsigned p;
		if (net_subnet_delegation(base, prefix, d, c, 32) < 0 ||
		    net_subnet_parse(c, &b, &p) < 0) {
			(*bad)++;
			continue;
		}
		if (b < base || b + (1u << (32 - p)) > base + size)
			(*bad)++;
		/* Not over any of our links: all sit in the lower half. */
		if (b < base + 4 * nl)
			(*bad)++;
		walk(b, p, links, nlinks, cap, bad);
	}
}

TEST(net_subnet_tree_never_overlaps)
{
	static struct range links[20000];
	size_t n = 0;
	int bad = 0;
	/* 10.0.0.0/12: kins at /17, /22 and /27 below it (1 + 16 + 256 + 4096). */
	walk(ip("10.0.0.0"), 12, links, &n, sizeof(links) / sizeof(links[0]), &bad);
	CHECK_EQ(bad, 0);
	CHECK_EQ(n, 3 * (1 + 16 + 256 + 4096));
	int overlaps = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (links[i].lo < links[j].lo + links[j].n &&
			    links[j].lo < links[i].lo + links[i].n)
				overlaps++;
	CHECK_EQ(overlaps, 0);
}

TEST(net_subnet_holds_lowest_free)
{
	struct net_subnet s;
	uint32_t slot;
	CHECK_EQ(net_subnet_init(&s, ip("10.88.128.0"), 21), 0);
	CHECK_EQ(net_subnet_link_lowest(&s, &slot), 0);
	CHECK_EQ(slot, 0);
	for (uint32_t i = 0; i < 70; i++)
		net_subnet_link_hold(&s, i, true);
	CHECK_EQ(net_subnet_link_lowest(&s, &slot), 0);
	CHECK_EQ(slot, 70); /* past the first 64-bit word */
	net_subnet_link_hold(&s, 3, false);
	CHECK(!net_subnet_link_held(&s, 3));
	CHECK(net_subnet_link_held(&s, 4));
	CHECK_EQ(net_subnet_link_lowest(&s, &slot), 0);
	CHECK_EQ(slot, 3);
	net_subnet_link_hold(&s, 256, true); /* outside the /22 of links: ignored */
	CHECK(!net_subnet_link_held(&s, 256));
	for (uint32_t i = 0; i < 256; i++)
		net_subnet_link_hold(&s, i, true);
	CHECK_EQ(net_subnet_link_lowest(&s, &slot), -ENOSPC);
	CHECK_EQ(net_subnet_deleg_lowest(&s), 0);
	net_subnet_deleg_hold(&s, 0, true);
	net_subnet_deleg_hold(&s, 2, true);
	CHECK(net_subnet_deleg_held(&s, 2));
	CHECK_EQ(net_subnet_deleg_lowest(&s), 1);
	for (uint32_t i = 0; i < NET_SUBNET_DELEGATIONS; i++)
		net_subnet_deleg_hold(&s, i, true);
	CHECK_EQ(net_subnet_deleg_lowest(&s), -1);
	net_subnet_free(&s);
	/* A /26 delegates nothing; a /30 has one link; no subnet hands out nothing. */
	CHECK_EQ(net_subnet_init(&s, ip("10.88.132.0"), 26), 0);
	CHECK_EQ(net_subnet_deleg_lowest(&s), -1);
	net_subnet_free(&s);
	CHECK_EQ(net_subnet_init(&s, ip("192.168.7.4"), 30), 0);
	CHECK_EQ(net_subnet_link_lowest(&s, &slot), 0);
	net_subnet_link_hold(&s, 0, true);
	CHECK_EQ(net_subnet_link_lowest(&s, &slot), -ENOSPC);
	net_subnet_free(&s);
	CHECK_EQ(net_subnet_init(&s, 0, 31), -EINVAL);
	net_subnet_free(&s);
	struct net_subnet none = {0};
	CHECK_EQ(net_subnet_link_lowest(&none, &slot), -ENOSPC);
	CHECK_EQ(net_subnet_deleg_lowest(&none), -1);
}
