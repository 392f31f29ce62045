/* net: ip= and kin.net= parsing; netlink calls in a throwaway network
 * namespace (a forked child, so the test process keeps the host's). */
#include "net/net.h"
#include "unit.h"

#include <sched.h>
#include <stdio.h>
#include <sys/wait.h>

TEST(net_ip_option)
{
	struct net_config c;
	CHECK_EQ(net_parse_ip_option("10.0.2.15::10.0.2.2:255.255.255.0::eth0:off", &c), 0);
	CHECK_STR(c.ifname, "eth0");
	CHECK_STR(c.addr, "10.0.2.15/24");
	CHECK_STR(c.gateway, "10.0.2.2");
	CHECK_EQ(net_parse_ip_option("192.168.1.5:::255.255.0.0:host:enp1s0", &c), 0);
	CHECK_STR(c.addr, "192.168.1.5/16");
	CHECK_STR(c.gateway, "");
	CHECK_STR(c.ifname, "enp1s0");
	CHECK_EQ(net_parse_ip_option("10.1.1.1:::", &c), 0); /* defaults: eth0, /24 */
	CHECK_STR(c.ifname, "eth0");
	CHECK_STR(c.addr, "10.1.1.1/24");
	CHECK_EQ(net_parse_ip_option("off", &c), 0);
	CHECK_STR(c.ifname, "");
	CHECK_EQ(net_parse_ip_option("dhcp", &c), -EOPNOTSUPP);
	CHECK_EQ(net_parse_ip_option("10.0.2.15::10.0.2.2:255.255.255.0::eth0:dhcp", &c),
	         -EOPNOTSUPP);
	CHECK_EQ(net_parse_ip_option("10.0.2.300::10.0.2.2:255.255.255.0::eth0:off", &c), -EINVAL);
	CHECK_EQ(net_parse_ip_option("10.0.2.15::10.0.2.2:255.0.255.0::eth0:off", &c), -EINVAL);
	CHECK_EQ(net_parse_ip_option("10.0.2.15::gw:255.255.255.0::eth0", &c), -EINVAL);
	CHECK_EQ(net_parse_ip_option("10.0.2.15::::h:../x", &c), -EINVAL);
	CHECK_EQ(net_parse_ip_option("", &c), -EINVAL);
}

/* A guest's ip= from a pod interface's facts, read back by the parser. */
TEST(net_ip_option_format)
{
	struct net_config c = {.ifname = "eth0", .addr = "10.88.3.7/20", .gateway = "10.88.0.1"};
	char buf[160];
	CHECK_EQ(net_format_ip_option(&c, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "ip=10.88.3.7::10.88.0.1:255.255.240.0::eth0:off");
	struct net_config back;
	CHECK_EQ(net_parse_ip_option(buf + 3, &back), 0);
	CHECK_STR(back.addr, c.addr);
	CHECK_STR(back.gateway, c.gateway);
	CHECK_STR(back.ifname, c.ifname);
	struct net_config host = {.ifname = "eth0", .addr = "10.0.0.5"}; /* no prefix: /32 */
	CHECK_EQ(net_format_ip_option(&host, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "ip=10.0.0.5:::255.255.255.255::eth0:off");
	struct net_config bad = {.ifname = "eth0", .addr = "10.0.0.5/33"};
	CHECK_EQ(net_format_ip_option(&bad, buf, sizeof(buf)), -EINVAL);
	CHECK_EQ(net_format_ip_option(&c, buf, 16), -ENAMETOOLONG);
}

TEST(net_kin_option)
{
	struct net_config c;
	CHECK_EQ(net_parse_kin_option("eth0,10.0.2.15/24,10.0.2.2", &c), 0);
	CHECK_STR(c.ifname, "eth0");
	CHECK_STR(c.addr, "10.0.2.15/24");
	CHECK_STR(c.gateway, "10.0.2.2");
	CHECK_EQ(net_parse_kin_option("eth1", &c), 0);
	CHECK_STR(c.addr, "");
	CHECK_EQ(net_parse_kin_option("eth0,10.0.2.15", &c), -EINVAL); /* no prefix */
	CHECK_EQ(net_parse_kin_option("eth0,10.0.2.15/33", &c), -EINVAL);
	CHECK_EQ(net_parse_kin_option("eth0,10.0.2.15/24,x", &c), -EINVAL);
	CHECK_EQ(net_parse_kin_option("eth0,1.2.3.4/8,1.1.1.1,extra", &c), -EINVAL);
	CHECK_EQ(net_parse_kin_option("averyveryverylongifname", &c), -EINVAL);
	CHECK_EQ(net_parse_kin_option("", &c), -EINVAL);
	CHECK_EQ(net_netmask_to_prefix("255.255.255.255"), 32);
	CHECK_EQ(net_netmask_to_prefix("0.0.0.0"), 0);
	CHECK_EQ(net_netmask_to_prefix("255.255.128.0"), 17);
}

/* Names the kernel would cut are refused before any syscall. */
TEST(net_tap_names)
{
	struct net_link_info li;
	const char *longname = "tap0123456789abc"; /* IF_NAMESIZE bytes */
	CHECK_EQ(net_link_info(longname, &li), -EINVAL);
	CHECK_EQ(net_link_info("", &li), -EINVAL);
	CHECK_EQ(net_tap_create(longname, 1500), -EINVAL);
	CHECK_EQ(net_tap_create(NULL, 1500), -EINVAL);
	CHECK_EQ(net_tc_redirect("eth0", longname), -EINVAL);
	CHECK_EQ(net_tc_redirect("", "tap0"), -EINVAL);
}

TEST(net_netlink_in_netns)
{
	if (getuid() != 0) {
		printf("    (not root: netlink part skipped)\n");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWNET) < 0)
			_exit(10);
		struct net_config c = {
		    .ifname = "lo", .addr = "10.9.0.1/24", .gateway = "10.9.0.2"};
		if (net_bring_up(&c) < 0)
			_exit(11);
		if (net_link_up("nosuchif0") != -ENODEV)
			_exit(12);
		if (net_addr_add("lo", "10.9.0.1/24") != -EEXIST)
			_exit(13);
		if (net_bring_up(&c) < 0) /* idempotent: EEXIST is fine */
			_exit(14);
		struct net_link_info li;
		if (net_link_info("lo", &li) < 0 || li.ifindex != 1 || li.mtu != 65536 ||
		    strcmp(li.addr, "127.0.0.1/8") != 0 || strcmp(li.gateway, "10.9.0.2") != 0)
			_exit(16);
		if (net_link_info("nosuchif0", &li) != -ENODEV)
			_exit(17);
		FILE *f = popen("ip -4 route show default 2>/dev/null", "r");
		char line[256] = "";
		if (f) {
			if (!fgets(line, sizeof(line), f))
				line[0] = '\0';
			pclose(f);
		}
		_exit(strstr(line, "via 10.9.0.2") ? 0 : 15);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}
