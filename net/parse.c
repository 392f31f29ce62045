/* parse: ip= and kin.net= into a net_config. Pure string work, unit-tested
 * and fuzzed: both come from the kernel command line. */
#include "net/net.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static bool valid_ifname(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= IF_NAMESIZE || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (const char *p = s; *p; p++)
		if (*p == '/' || *p == ':' || *p == ',' || *p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

static bool valid_ipv4(const char *s)
{
	struct in_addr a;
	return inet_pton(AF_INET, s, &a) == 1;
}

int net_netmask_to_prefix(const char *mask)
{
	struct in_addr a;
	if (inet_pton(AF_INET, mask, &a) != 1)
		return -EINVAL;
	uint32_t m = ntohl(a.s_addr);
	int prefix = 0;
	while (prefix < 32 && (m & (0x80000000u >> prefix)))
		prefix++;
	if (prefix < 32 && (m << prefix) != 0)
		return -EINVAL; /* holes: 255.0.255.0 */
	return prefix;
}

static int valid_cidr(const char *s)
{
	char ip[NET_ADDR_MAX];
	const char *slash = strchr(s, '/');
	uint32_t prefix;
	if (!slash || (size_t)(slash - s) >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, s, (size_t)(slash - s));
	ip[slash - s] = '\0';
	if (!valid_ipv4(ip) || str_to_u32(slash + 1, &prefix) < 0 || prefix > 32)
		return -EINVAL;
	return 0;
}

/* Splits s at sep into at most max fields (in place); returns the count. */
static size_t split(char *s, char sep, char **fields, size_t max)
{
	size_t n = 0;
	fields[n++] = s;
	for (char *p = s; *p && n < max; p++)
		if (*p == sep) {
			*p = '\0';
			fields[n++] = p + 1;
		}
	return n;
}

int net_parse_ip_option(const char *value, struct net_config *cfg)
{
	char buf[256], *f[9] = {0};
	struct net_config out = {0};

	if (str_copy(buf, sizeof(buf), value) < 0)
		return -EINVAL;
	if (strcmp(buf, "off") == 0 || strcmp(buf, "none") == 0) {
		*cfg = out;
		return 0;
	}
	size_t n = split(buf, ':', f, 9);
	if (n == 1 && (strcmp(buf, "dhcp") == 0 || strcmp(buf, "on") == 0 ||
	               strcmp(buf, "any") == 0 || strcmp(buf, "bootp") == 0))
		return -EOPNOTSUPP;
	if (n < 4)
		return -EINVAL;
	const char *client = f[0], *gw = f[2], *mask = f[3];
	const char *dev = n > 5 && f[5][0] ? f[5] : "eth0";
	const char *autoconf = n > 6 ? f[6] : "";
	if (autoconf[0] && strcmp(autoconf, "off") != 0 && strcmp(autoconf, "none") != 0 &&
	    strcmp(autoconf, "static") != 0)
		return -EOPNOTSUPP;
	if (!valid_ipv4(client) || !valid_ifname(dev))
		return -EINVAL;
	int prefix = mask[0] ? net_netmask_to_prefix(mask) : 24;
	if (prefix < 0)
		return -EINVAL;
	if (gw[0] && !valid_ipv4(gw))
		return -EINVAL;
	str_copy(out.ifname, sizeof(out.ifname), dev);
	snprintf(out.addr, sizeof(out.addr), "%s/%d", client, prefix);
	str_copy(out.gateway, sizeof(out.gateway), gw);
	*cfg = out;
	return 0;
}

int net_format_ip_option(const struct net_config *cfg, char *buf, size_t size)
{
	char addr[NET_ADDR_MAX];
	str_copy(addr, sizeof(addr), cfg->addr);
	char *slash = strchr(addr, '/');
	uint32_t prefix = 32;
	if (slash) {
		*slash = '\0';
		if (str_to_u32(slash + 1, &prefix) < 0 || prefix > 32)
			return -EINVAL;
	}
	uint32_t mask = prefix ? 0xffffffffu << (32 - prefix) : 0;
	int n = snprintf(buf, size, "ip=%s::%s:%u.%u.%u.%u::%s:off", addr, cfg->gateway, mask >> 24,
	                 (mask >> 16) & 0xff, (mask >> 8) & 0xff, mask & 0xff, cfg->ifname);
	return n < (int)size ? 0 : -ENAMETOOLONG;
}

int net_parse_kin_option(const char *value, struct net_config *cfg)
{
	char buf[256], *f[4] = {0};
	struct net_config out = {0};

	if (str_copy(buf, sizeof(buf), value) < 0)
		return -EINVAL;
	size_t n = split(buf, ',', f, 4);
	if (n > 3 || !valid_ifname(f[0]))
		return -EINVAL;
	str_copy(out.ifname, sizeof(out.ifname), f[0]);
	if (n > 1) {
		if (valid_cidr(f[1]) < 0)
			return -EINVAL;
		str_copy(out.addr, sizeof(out.addr), f[1]);
	}
	if (n > 2) {
		if (!valid_ipv4(f[2]))
			return -EINVAL;
		str_copy(out.gateway, sizeof(out.gateway), f[2]);
	}
	*cfg = out;
	return 0;
}
