/* zone: the subnet maths (links, delegations, and that no two kins of a
 * tree share an address), the checks zone_create makes before any side
 * effect (names, depth, a subnet for --net), the config checks, the log
 * file's rotation and the kept logs, and kin init's --zone-subnet. The
 * namespaces and cgroups side runs in tests/ns/zone.test.sh. */
#include "init/init.h"
#include "zone/zone-int.h"
#include "unit.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

static uint32_t ip(const char *s)
{
	struct in_addr a;
	return inet_pton(AF_INET, s, &a) == 1 ? ntohl(a.s_addr) : 0;
}

TEST(zone_subnet_parse)
{
	uint32_t base;
	unsigned prefix;
	CHECK_EQ(zone_subnet_parse("10.88.0.0/16", &base, &prefix), 0);
	CHECK_EQ(base, ip("10.88.0.0"));
	CHECK_EQ(prefix, 16);
	CHECK_EQ(zone_subnet_parse("10.0.0.0/8", &base, &prefix), 0);
	CHECK_EQ(zone_subnet_parse("192.168.7.4/30", &base, &prefix), 0);
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
		CHECK_EQ(zone_subnet_parse(bad[i], &base, &prefix), -EINVAL);
}

TEST(zone_subnet_counts)
{
	CHECK_EQ(zone_subnet_links(16), 8192); /* the lower half, /17, in /30s */
	CHECK_EQ(zone_subnet_delegations(16), ZONE_SUBNET_DELEGATIONS);
	CHECK_EQ(zone_subnet_links(8), 1u << 21);
	CHECK_EQ(zone_subnet_links(21), 256);
	CHECK_EQ(zone_subnet_links(24), 32);
	CHECK_EQ(zone_subnet_delegations(24), 16);
	CHECK_EQ(zone_subnet_links(25), 32); /* too small to delegate: all links */
	CHECK_EQ(zone_subnet_delegations(25), 0);
	CHECK_EQ(zone_subnet_links(26), 16);
	CHECK_EQ(zone_subnet_links(30), 1);
	CHECK_EQ(zone_subnet_links(31), 0);
	CHECK_EQ(zone_subnet_links(7), 0);
	CHECK_EQ(zone_subnet_delegations(7), 0);
}

TEST(zone_subnet_slots)
{
	char zc[32], gw[32], hc[32];
	uint32_t base = ip("10.88.0.0");
	CHECK_EQ(zone_subnet_slot(base, 16, 0, zc, sizeof(zc), gw, hc, sizeof(hc)), 0);
	CHECK_STR(zc, "10.88.0.2/30");
	CHECK_STR(gw, "10.88.0.1");
	CHECK_STR(hc, "10.88.0.1/30");
	CHECK_EQ(zone_subnet_slot(base, 16, 1, zc, sizeof(zc), gw, hc, sizeof(hc)), 0);
	CHECK_STR(zc, "10.88.0.6/30");
	CHECK_EQ(zone_subnet_slot(base, 16, 8191, zc, sizeof(zc), gw, hc, sizeof(hc)), 0);
	CHECK_STR(zc, "10.88.127.254/30"); /* the last link stays in the lower half */
	CHECK_EQ(zone_subnet_slot(base, 16, 8192, zc, sizeof(zc), gw, hc, sizeof(hc)), -ERANGE);
	CHECK_EQ(zone_subnet_slot(ip("192.168.7.4"), 30, 0, zc, sizeof(zc), gw, hc, sizeof(hc)), 0);
	CHECK_STR(zc, "192.168.7.6/30");
	CHECK_EQ(zone_subnet_slot(ip("192.168.7.4"), 30, 1, zc, sizeof(zc), gw, hc, sizeof(hc)),
	         -ERANGE);
}

TEST(zone_subnet_delegation)
{
	char c[32];
	uint32_t base = ip("10.88.0.0");
	CHECK_EQ(zone_subnet_delegation(base, 16, 0, c, sizeof(c)), 0);
	CHECK_STR(c, "10.88.128.0/21");
	CHECK_EQ(zone_subnet_delegation(base, 16, 1, c, sizeof(c)), 0);
	CHECK_STR(c, "10.88.136.0/21");
	CHECK_EQ(zone_subnet_delegation(base, 16, 15, c, sizeof(c)), 0);
	CHECK_STR(c, "10.88.248.0/21");
	CHECK_EQ(zone_subnet_delegation(base, 16, 16, c, sizeof(c)), -ERANGE);
	/* One level down, as docs/zones.md says. */
	CHECK_EQ(zone_subnet_delegation(ip("10.88.128.0"), 21, 0, c, sizeof(c)), 0);
	CHECK_STR(c, "10.88.132.0/26");
	CHECK_EQ(zone_subnet_delegation(ip("10.88.132.0"), 26, 0, c, sizeof(c)), -ERANGE);
	CHECK_EQ(zone_subnet_delegation(ip("10.0.0.0"), 24, 15, c, sizeof(c)), 0);
	CHECK_STR(c, "10.0.0.248/29");
	CHECK_EQ(zone_subnet_delegation(base, 16, 0, c, 8), -ENAMETOOLONG);
	/* Every delegation parses back as a subnet (host bits clear). */
	uint32_t b;
	unsigned p;
	for (uint32_t i = 0; i < 16; i++) {
		zone_subnet_delegation(ip("10.0.0.0"), 8, i, c, sizeof(c));
		CHECK_EQ(zone_subnet_parse(c, &b, &p), 0);
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
	uint32_t nl = zone_subnet_links(prefix), nd = zone_subnet_delegations(prefix);
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
		if (zone_subnet_delegation(base, prefix, d, c, 32) < 0 ||
		    zone_subnet_parse(c, &b, &p) < 0) {
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

TEST(zone_subnet_tree_never_overlaps)
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

static struct zones *zones_for(const struct zones_config *cfg, struct err *err)
{
	struct zones *z = NULL;
	/* No loop, children or cells: every case here is refused before
	 * zone_create would touch them. */
	if (zones_new(NULL, NULL, NULL, cfg, NULL, &z, err) < 0)
		return NULL;
	return z;
}

TEST(zone_create_checks_first)
{
	struct err err = {0};
	struct zones_config cfg = {.depth = 4, .depth_max = 4};
	struct zones *z = zones_for(&cfg, &err);
	CHECK(z != NULL);
	if (!z)
		return;
	struct zone_spec spec = {.name = "deep"};
	CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -ELOOP);
	CHECK_EQ(err.code, ERR_FAILED_PRECONDITION);
	CHECK_STR(err.msg,
	          "zone \"deep\": depth limit reached (this kin is at depth 4, the limit is 4)");
	const char *bad[] = {
	    "",    ".",    "..",
	    "a/b", "../x", "-x",
	    "a b", "a_b",  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		str_copy(spec.name, sizeof(spec.name), bad[i]);
		err = (struct err){0};
		int r = zone_create(z, &spec, NULL, NULL, &err);
		if (r != -EINVAL)
			printf("    name \"%s\": %d %s\n", bad[i], r, err.msg);
		CHECK_EQ(r, -EINVAL);
		CHECK_EQ(err.code, ERR_INVALID_ARGUMENT);
	}
	/* Names are checked before the depth: a bad one says so at any depth. */
	str_copy(spec.name, sizeof(spec.name), "a/b");
	CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -EINVAL);
	CHECK_EQ(zone_count(z), 0);
	zones_free(z);
	/* Below the limit: a bad root is refused before anything is made. */
	cfg = (struct zones_config){0};
	z = zones_for(&cfg, &err);
	CHECK(z != NULL);
	if (!z)
		return;
	spec = (struct zone_spec){.name = "r", .root = "relative"};
	CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -EINVAL);
	CHECK_EQ(zone_count(z), 0);
	/* Whether the root is a directory is the zone setup's first step, in
	 * the child (ns/zone's root_not_dir): a stat() in kin could hang. */
	zones_free(z);
}

TEST(zone_net_needs_a_subnet)
{
	struct err err = {0};
	/* A zone kin without --zone-subnet: no --net zones, even below the
	 * depth limit; the check comes before any side effect. */
	struct zones_config cfg = {.depth = 1};
	struct zones *z = zones_for(&cfg, &err);
	CHECK(z != NULL);
	if (!z)
		return;
	struct zone_spec spec = {.name = "n", .net = true};
	CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -ENOENT);
	CHECK_EQ(err.code, ERR_FAILED_PRECONDITION);
	CHECK(strstr(err.msg, "no subnet for --net zones") != NULL);
	zones_free(z);
	cfg = (struct zones_config){.depth = 0, .subnet = "none"};
	z = zones_for(&cfg, &err);
	CHECK(z != NULL);
	if (z) {
		CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -ENOENT);
		zones_free(z);
	}
}

TEST(zones_config_checks)
{
	struct err err = {0};
	struct zones *z = NULL;
	struct zones_config cfg = {.subnet = "10.88.0.1/16"};
	CHECK_EQ(zones_new(NULL, NULL, NULL, &cfg, NULL, &z, &err), -EINVAL);
	CHECK(strstr(err.msg, "subnet \"10.88.0.1/16\"") != NULL);
	cfg = (struct zones_config){.log_bytes = 100};
	CHECK_EQ(zones_new(NULL, NULL, NULL, &cfg, NULL, &z, &err), -EINVAL);
	cfg = (struct zones_config){.depth = 5, .depth_max = 4};
	CHECK_EQ(zones_new(NULL, NULL, NULL, &cfg, NULL, &z, &err), -EINVAL);
	CHECK_STR(err.msg, "zones: depth 5 is past the limit 4");
	cfg = (struct zones_config){.depth = 1, .subnet = "10.88.128.0/21"};
	CHECK_EQ(zones_new(NULL, NULL, NULL, &cfg, NULL, &z, &err), 0);
	zones_free(z);
	zones_free(NULL);
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

TEST(zone_log_rotates_at_cap)
{
	char dir[] = "/tmp/kin-unit-zlog.XXXXXX", path[128], old[136];
	struct ev_loop *loop = NULL;
	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ(ev_loop_new(&loop), 0);
	snprintf(path, sizeof(path), "%s/z.log", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	struct zone_log l;
	int wfd = -1;
	zone_log_init(&l);
	CHECK_EQ(zone_log_open(&l, loop, path, 4096, &wfd), 0);
	char buf[10000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)('a' + i % 26);
	zone_log_write(&l, buf, sizeof(buf)); /* 4096 + 4096 + 1808: rotated twice */
	CHECK_EQ(file_size(old), 4096);
	CHECK_EQ(file_size(path), 10000 - 8192);
	/* What the pipe holds when the zone ends is written, then it closes. */
	CHECK_EQ(write(wfd, "bye\n", 4), 4);
	close(wfd);
	zone_log_close(&l, loop);
	CHECK_EQ(file_size(path), 10000 - 8192 + 4);
	CHECK_EQ(l.src.fd, -1);
	CHECK_EQ(l.file_fd, -1);
	zone_log_close(&l, loop); /* twice: harmless */
	/* Reopened for a new zone of the same name: both files start over. */
	CHECK_EQ(zone_log_open(&l, loop, path, 4096, &wfd), 0);
	CHECK_EQ(file_size(path), 0);
	CHECK_EQ(file_size(old), -1);
	close(wfd);
	zone_log_close(&l, loop);
	unlink(path);
	rmdir(dir);
	ev_loop_free(loop);
}

TEST(zone_logs_kept_bounded)
{
	char dir[] = "/tmp/kin-unit-zkept.XXXXXX", path[128];
	CHECK(mkdtemp(dir) != NULL);
	static struct zone_logs_kept k;
	for (int i = 0; i < ZONE_LOGS_KEPT + 2; i++) {
		snprintf(path, sizeof(path), "%s/z%d.log", dir, i);
		close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
		zone_logs_keep(&k, path);
	}
	CHECK_EQ(k.n, ZONE_LOGS_KEPT);
	snprintf(path, sizeof(path), "%s/z0.log", dir);
	CHECK_EQ(file_size(path), -1); /* the oldest two are gone */
	snprintf(path, sizeof(path), "%s/z1.log", dir);
	CHECK_EQ(file_size(path), -1);
	snprintf(path, sizeof(path), "%s/z2.log", dir);
	CHECK_EQ(file_size(path), 0);
	/* A new zone named z2 owns its log: forgotten, never removed for the old. */
	zone_logs_forget(&k, path);
	CHECK_EQ(k.n, ZONE_LOGS_KEPT - 1);
	for (int i = 0; i < ZONE_LOGS_KEPT + 2; i++) {
		char p[128];
		snprintf(p, sizeof(p), "%s/n%d.log", dir, i);
		zone_logs_keep(&k, p);
	}
	CHECK_EQ(file_size(path), 0);
	for (int i = 0; i < ZONE_LOGS_KEPT + 2; i++) {
		snprintf(path, sizeof(path), "%s/z%d.log", dir, i);
		unlink(path);
	}
	CHECK_EQ(rmdir(dir), 0);
	zone_logs_kept_free(&k);
	CHECK_EQ(k.n, 0);
}

TEST(zone_init_flag_subnet)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	char *argv[] = {"init",          "--zone",         "a", "--zone-depth", "1",
	                "--zone-subnet", "10.88.128.0/21", NULL};
	CHECK_EQ(init_flags_parse(7, argv, &cfg), 0);
	CHECK_STR(cfg.zone_subnet, "10.88.128.0/21");
	CHECK_EQ(cfg.zone_depth, 1);
	char *bad1[] = {"init", "--zone-subnet", "10.88.128.1/21", NULL};
	char *bad2[] = {"init", "--zone-subnet", "none", NULL};
	char *bad3[] = {"init", "--zone-subnet", NULL};
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	CHECK_EQ(init_flags_parse(3, bad1, &cfg), -EINVAL);
	CHECK_EQ(init_flags_parse(3, bad2, &cfg), -EINVAL);
	CHECK_EQ(init_flags_parse(2, bad3, &cfg), -EINVAL);
	fclose(stderr);
	stderr = saved;
}
