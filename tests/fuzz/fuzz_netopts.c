/* Fuzz target: ip= and kin.net= parsers (kernel command line input) and
 * --zone-subnet's (a parent's argument to a zone kin). */
#include "net/net.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct net_config *c)
{
	/* Whatever is accepted is terminated and fits its field. */
	if (strnlen(c->ifname, sizeof(c->ifname)) == sizeof(c->ifname) ||
	    strnlen(c->addr, sizeof(c->addr)) == sizeof(c->addr) ||
	    strnlen(c->gateway, sizeof(c->gateway)) == sizeof(c->gateway))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct net_config c;
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&c, 0, sizeof(c));
	if (net_parse_ip_option(s, &c) == 0)
		check(&c);
	memset(&c, 0, sizeof(c));
	if (net_parse_kin_option(s, &c) == 0)
		check(&c);
	if (net_netmask_to_prefix(s) > 32)
		__builtin_trap();
	uint32_t base;
	unsigned prefix;
	if (net_subnet_parse(s, &base, &prefix) == 0 &&
	    (prefix < 8 || prefix > 30 || (base & (uint32_t)((1ull << (32 - prefix)) - 1))))
		__builtin_trap(); /* accepted: a network of 8..30 bits, host bits clear */
	free(s);
	return 0;
}
