/* zone: the checks zone_create makes before any side effect (names,
 * depth, a subnet for --net), the config checks, the log file's rotation
 * and the kept logs, and kin init's --zone-subnet. The subnet maths is in
 * test_net_subnet.c; the namespaces and cgroups side runs in
 * tests/ns/zone.test.sh. */
#include "init/init.h"
#include "zone/zone-int.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

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

TEST(zone_sysctls_of_its_own_namespaces)
{
	struct err err = {0};
	struct zones_config cfg = {0};
	struct zones *z = zones_for(&cfg, &err);
	CHECK(z != NULL);
	if (!z)
		return;
	/* Refused before any side effect: each names the sysctl and why. */
	char *ipc[] = {"kernel.shm_rmid_forced=1", NULL};
	struct zone_spec spec = {.name = "s", .host_ipc = true, .sysctls = ipc};
	CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -EINVAL);
	CHECK(strstr(err.msg, "\"kernel.shm_rmid_forced=1\" is not of a namespace") != NULL);
	char *net[] = {"net.ipv4.ip_forward=1", NULL}; /* the parent's network */
	spec = (struct zone_spec){.name = "s", .sysctls = net};
	CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -EINVAL);
	char *other[] = {"kernel.hostname=x", NULL}; /* not namespaced here: the host's */
	spec = (struct zone_spec){.name = "s", .sysctls = other};
	CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -EINVAL);
	char *bad[] = {"fs.mqueue.msg_max", "=1", "fs.mqueue/../x=1", "kernel.shm..x=1"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *one[] = {bad[i], NULL};
		spec = (struct zone_spec){.name = "s", .sysctls = one};
		err = (struct err){0};
		CHECK_EQ(zone_create(z, &spec, NULL, NULL, &err), -EINVAL);
		CHECK(strstr(err.msg, "not key=value") != NULL);
	}
	CHECK_EQ(zone_count(z), 0);
	zones_free(z);
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
