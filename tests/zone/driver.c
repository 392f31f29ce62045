/* zone-driver: drives the zone library from a script on stdin, in its own
 * ev_loop, as a parent kin would (until rpc/ routes kin-target calls):
 *   zone-driver [--base REL] [--depth N] [--depth-max N] [--subnet CIDR]
 *               [--state-dir DIR] [--log-level L] [--log-bytes N] [--as-zone]
 *               < script
 * --as-zone: run inside a zone as its kin would (depth and subnet from the
 * zone kin's --zone-depth and --zone-subnet in /proc/1/cmdline, kin from
 * /proc/1/exe): the two-level test until the zone kin serves zone RPC.
 * Commands (one a line; "> line" echoed, then the answer):
 *   create NAME [net] [root=DIR] [-- ARGV...]   ok create NAME pid P ...
 *   version NAME      Health/Version over the zone's RPC socketpair
 *   stop NAME         SIGTERM; waits until gone: "stopped NAME status S"
 *   kill NAME         cgroup.kill; waits until gone: "killed NAME status S"
 *   wait NAME         until the zone ends by itself: "gone NAME status S"
 *   list              "zone NAME STATE pid P"
 *   log NAME          the zone's log file (kept after it is gone), "log| " lines
 *   bench-ready N [net]   N times: create, Version answered, stop; median
 *   bench-peer N KIN      N times: unshare --pid --mount --uts --ipc --cgroup
 *                         --fork KIN init --rpc-fd 3, Version answered
 *   bench-siblings N      N zones made one after the other, then stopped
 *                         one after the other; per-zone cost by band, memory
 *   sh CMD...         /bin/sh -c, with ZPID ZIF ZADDR ZGW ZCELLDIR of the
 *                     last zone created in the environment
 * Errors print "error CODE: sentence". */
#include "cells/cells.h"
#include "proto/kin.pb-c.h"
#include "rpc/rpc.h"
#include "zone/zone.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdio.h>
#include <string.h>

#define WORDS_MAX 64

static struct ev_loop *loop;
static struct cells *cells;
static struct zones *zones;
static bool gone_flag;
static int gone_status;
static char gone_name[NAME_MAX_LEN + 1];
static const char *state_dir = "/run/kin/zones";

static void print_err(const struct err *err)
{
	printf("error %s: %s\n", err_code_name(err->code), err->msg);
}

static void on_gone(const struct zone_info *info, int status, void *data)
{
	(void)data;
	printf("event gone %s status %d\n", info->name, status);
	str_copy(gone_name, sizeof(gone_name), info->name);
	gone_status = status;
	gone_flag = true;
}

static void run_until(bool *flag, int max_ms)
{
	uint64_t end = now_monotonic_ns() + (uint64_t)max_ms * 1000000;
	while (!*flag && now_monotonic_ns() < end)
		ev_run_once(loop, 50);
}

static int read_full(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

/* Health/Version over a zone kin's RPC end, blocking: the zone kin answers
 * from its own loop. 0 and *ret, or -errno (with *ret_status on a refusal). */
static int rpc_version(int fd, Kin__V1__VersionResponse **ret, struct err *ret_status)
{
	Kin__V1__VersionRequest req = KIN__V1__VERSION_REQUEST__INIT;
	uint8_t *buf = NULL, hdr[RPC_HEADER_SIZE];
	size_t len;
	static uint32_t stream = 1;
	int r = rpc_request_encode(stream, 0, "kin.v1.Health", "Version", &req.base, NULL, 0, 0,
	                           &buf, &len);
	stream += 2;
	fd_set_nonblock(fd, false);
	if (r == 0)
		r = write_all(fd, buf, len);
	free(buf);
	struct rpc_header h;
	if (r == 0)
		r = read_full(fd, hdr, sizeof(hdr));
	if (r < 0)
		return r;
	rpc_header_decode(hdr, &h);
	uint8_t *data = h.length <= RPC_MESSAGE_MAX ? malloc(h.length + 1) : NULL;
	if (!data || read_full(fd, data, h.length) < 0) {
		free(data);
		return -EPIPE;
	}
	ProtobufCMessage *out = NULL;
	*ret_status = (struct err){0};
	r = rpc_response_decode(data, h.length, &kin__v1__version_response__descriptor, ret_status,
	                        &out);
	free(data);
	if (r < 0)
		return -EBADMSG;
	if (ret_status->code != 0) {
		if (out)
			protobuf_c_message_free_unpacked(out, NULL);
		return -EREMOTEIO;
	}
	*ret = (Kin__V1__VersionResponse *)out;
	return 0;
}

static void cmd_version(const char *name)
{
	struct zone_info info;
	struct err err = {0};
	if (zone_get(zones, name, &info, &err) < 0) {
		print_err(&err);
		return;
	}
	Kin__V1__VersionResponse *v = NULL;
	struct err st;
	int r = rpc_version(info.rpc_fd, &v, &st);
	if (r == -EREMOTEIO || r == -EBADMSG) {
		printf("error %s: %s\n", err_code_name(r == -EBADMSG ? ERR_INTERNAL : st.code),
		       r == -EBADMSG ? "bad answer" : st.msg);
		return;
	}
	if (r < 0) {
		printf("error UNAVAILABLE: zone \"%s\": rpc: %s\n", name, strerror(-r));
		return;
	}
	printf("version role=%s zone=%s pid=%u hostname=%s\n", v->role, v->zone, v->pid,
	       v->hostname);
	protobuf_c_message_free_unpacked(&v->base, NULL);
}

static void export_info(const struct zone_info *info)
{
	char buf[64], dir[4096];
	snprintf(buf, sizeof(buf), "%d", (int)info->pid);
	setenv("ZPID", buf, 1);
	setenv("ZIF", info->host_if, 1);
	setenv("ZADDR", info->addr, 1);
	setenv("ZGW", info->gateway, 1);
	cells_cgroup_dir(cells, info->cell, dir, sizeof(dir));
	setenv("ZCELLDIR", dir, 1);
}

/* zone_create answers from the loop: run it until created is called. */
static bool created_flag;
static int created_r;
static struct err created_err;

static void on_created(int result, const struct err *err, void *data)
{
	(void)data;
	created_r = result;
	if (err)
		created_err = *err;
	created_flag = true;
}

static int create_wait(const struct zone_spec *spec, struct err *err)
{
	created_flag = false;
	created_err = (struct err){0};
	int r = zone_create(zones, spec, on_created, NULL, err);
	if (r < 0)
		return r;
	run_until(&created_flag, 30000);
	if (!created_flag) {
		*err = (struct err){.errnum = -ETIMEDOUT, .code = ERR_DEADLINE_EXCEEDED};
		snprintf(err->msg, sizeof(err->msg), "zone \"%s\": not created after 30 s",
		         spec->name);
		return -ETIMEDOUT;
	}
	if (created_r < 0)
		*err = created_err;
	return created_r;
}

static void cmd_create(char **w, int n)
{
	struct zone_spec spec = {0};
	struct err err = {0};
	if (n < 2) {
		printf("error INVALID_ARGUMENT: create NAME [net] [root=DIR] [-- ARGV]\n");
		return;
	}
	if (str_copy(spec.name, sizeof(spec.name), w[1]) < 0) {
		printf("error INVALID_ARGUMENT: name too long\n");
		return;
	}
	for (int i = 2; i < n; i++) {
		if (!strcmp(w[i], "net"))
			spec.net = true;
		else if (!strncmp(w[i], "root=", 5))
			spec.root = w[i] + 5;
		else if (!strncmp(w[i], "pids.max=", 9))
			cell_limit_parse(&spec.limits, "pids.max", w[i] + 9, NULL);
		else if (!strcmp(w[i], "--")) {
			spec.argv = &w[i + 1];
			break;
		}
	}
	if (create_wait(&spec, &err) < 0) {
		print_err(&err);
		return;
	}
	struct zone_info info;
	zone_get(zones, spec.name, &info, NULL);
	export_info(&info);
	printf("ok create %s pid %d depth %u cell %s if %s addr %s gw %s subnet %s log %s\n",
	       info.name, (int)info.pid, info.depth, info.cell,
	       info.host_if[0] ? info.host_if : "-", info.addr[0] ? info.addr : "-",
	       info.gateway[0] ? info.gateway : "-", info.subnet[0] ? info.subnet : "-", info.log);
}

static void on_done(int status, void *data)
{
	(void)data;
	(void)status;
}

static void wait_gone(const char *name, const char *what)
{
	gone_flag = false;
	run_until(&gone_flag, 30000);
	if (gone_flag && !strcmp(gone_name, name))
		printf("%s %s status %d\n", what, name, gone_status);
	else
		printf("error DEADLINE_EXCEEDED: zone \"%s\" still there after 30 s\n", name);
}

static void print_zone(const struct zone_info *info, void *data)
{
	(void)data;
	printf("zone %s %s pid %d\n", info->name, zone_state_name(info->state), (int)info->pid);
}

static void first_name(const struct zone_info *info, void *data)
{
	char *name = data;
	if (!name[0])
		str_copy(name, NAME_MAX_LEN + 1, info->name);
}

/* ---- benchmarks (tests/bench/zones.sh) ------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* "median M p90 P min m" in microseconds, of n samples in ns (sorted here). */
static void print_stats(const char *what, uint64_t *ns, size_t n)
{
	if (n == 0) {
		printf("%s none\n", what);
		return;
	}
	qsort(ns, n, sizeof(*ns), cmp_u64);
	printf("%s n %zu median_us %.1f p90_us %.1f min_us %.1f\n", what, n, ns[(n - 1) / 2] / 1e3,
	       ns[(n * 9 + 9) / 10 - 1] / 1e3, ns[0] / 1e3);
}

/* Create, then Version answered over the socketpair: the zone is usable. */
static int create_ready(const char *name, bool net, uint64_t *ret_ns)
{
	struct zone_spec spec = {.net = net};
	struct err err = {0};
	struct zone_info info;
	Kin__V1__VersionResponse *v = NULL;
	struct err st;
	str_copy(spec.name, sizeof(spec.name), name);
	uint64_t t0 = now_monotonic_ns();
	if (create_wait(&spec, &err) < 0) {
		print_err(&err);
		return -1;
	}
	zone_get(zones, name, &info, NULL);
	int r = rpc_version(info.rpc_fd, &v, &st);
	*ret_ns = now_monotonic_ns() - t0;
	if (r < 0) {
		printf("error UNAVAILABLE: zone \"%s\": Version: %s\n", name, strerror(-r));
		return -1;
	}
	protobuf_c_message_free_unpacked(&v->base, NULL);
	return 0;
}

static int stop_wait(const char *name, uint64_t *ret_ns)
{
	struct err err = {0};
	uint64_t t0 = now_monotonic_ns();
	gone_flag = false;
	if (zone_stop(zones, name, on_done, NULL, &err) < 0) {
		print_err(&err);
		return -1;
	}
	run_until(&gone_flag, 30000);
	*ret_ns = now_monotonic_ns() - t0;
	return gone_flag ? 0 : -1;
}

static void bench_ready(int n, bool net)
{
	uint64_t *ready = calloc((size_t)n, sizeof(*ready)),
	         *stop = calloc((size_t)n, sizeof(*stop));
	int done = 0;
	for (int i = 0; ready && stop && i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "b%d", i);
		if (create_ready(name, net, &ready[i]) < 0 || stop_wait(name, &stop[i]) < 0)
			break;
		done++;
	}
	print_stats("RESULT ready", ready, (size_t)done);
	print_stats("RESULT stop", stop, (size_t)done);
	free(ready);
	free(stop);
}

/* The peer: the same kin, from disk, as PID 1 of namespaces unshare(1)
 * makes, answering Version on fd 3 (role container, no cell, no root). */
static void bench_peer(int n, const char *kin)
{
	uint64_t *ready = calloc((size_t)n, sizeof(*ready));
	int done = 0;
	for (int i = 0; ready && i < n; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			break;
		uint64_t t0 = now_monotonic_ns();
		pid_t pid = fork();
		if (pid == 0) {
			dup2(sv[1], 3);
			int null = open("/dev/null", O_RDWR);
			dup2(null, 0), dup2(null, 1), dup2(null, 2);
			execlp("unshare", "unshare", "--pid", "--mount", "--uts", "--ipc",
			       "--cgroup", "--fork", "--kill-child", kin, "init", "--socket",
			       "none", "--rpc-fd", "3", NULL);
			_exit(127);
		}
		close(sv[1]);
		Kin__V1__VersionResponse *v = NULL;
		struct err st;
		int r = pid > 0 ? rpc_version(sv[0], &v, &st) : -errno;
		ready[i] = now_monotonic_ns() - t0;
		if (r == 0)
			protobuf_c_message_free_unpacked(&v->base, NULL);
		if (pid > 0) {
			kill(pid, SIGKILL); /* --kill-child: kin goes with unshare */
			waitpid(pid, NULL, 0);
		}
		close(sv[0]);
		if (r < 0) {
			printf("error UNAVAILABLE: peer: Version: %s\n", strerror(-r));
			break;
		}
		done++;
	}
	print_stats("RESULT peer", ready, (size_t)done);
	free(ready);
}

/* smaps_rollup of a process: Rss, Pss, Private_Dirty in KiB. */
static int smaps(pid_t pid, unsigned long *rss, unsigned long *pss, unsigned long *pd)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	*rss = *pss = *pd = 0;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "Rss: %lu", rss);
		sscanf(line, "Pss: %lu", pss);
		sscanf(line, "Private_Dirty: %lu", pd);
	}
	fclose(f);
	return 0;
}

static long mem_available_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static long memory_current(const char *cell)
{
	char dir[4096], path[4200];
	long long v = -1;
	cells_cgroup_dir(cells, cell, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/memory.current", dir);
	FILE *f = fopen(path, "re");
	if (f && fscanf(f, "%lld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return (long)v;
}

struct mem_sum {
	unsigned long rss, pss, pd;
	long current;
	unsigned n, current_n;
};

static void add_mem(const struct zone_info *info, void *data)
{
	struct mem_sum *m = data;
	unsigned long rss, pss, pd;
	if (smaps(info->pid, &rss, &pss, &pd) == 0) {
		m->rss += rss, m->pss += pss, m->pd += pd;
		m->n++;
	}
	long cur = memory_current(info->cell);
	if (cur >= 0) {
		m->current += cur;
		m->current_n++;
	}
}

static void bench_siblings(int n)
{
	static const int bands[][2] = {{1, 10}, {11, 50}, {51, 100}, {101, 256}};
	uint64_t *c = calloc((size_t)n, sizeof(*c)), *d = calloc((size_t)n, sizeof(*d));
	long avail0 = mem_available_kib();
	uint64_t t0 = now_monotonic_ns();
	int made = 0;
	for (int i = 0; c && d && i < n; i++, made++) {
		char name[32];
		snprintf(name, sizeof(name), "s%d", i + 1);
		if (create_ready(name, false, &c[i]) < 0)
			break;
	}
	uint64_t created = now_monotonic_ns() - t0;
	/* Idle: let the zone kins settle before their memory is read. */
	for (uint64_t end = now_monotonic_ns() + 500000000ull; now_monotonic_ns() < end;)
		ev_run_once(loop, 50);
	struct mem_sum m = {0};
	zone_foreach(zones, add_mem, &m);
	long avail1 = mem_available_kib();
	t0 = now_monotonic_ns();
	int gone = 0;
	for (int i = 0; i < made; i++, gone++) {
		char name[32];
		snprintf(name, sizeof(name), "s%d", i + 1);
		if (stop_wait(name, &d[i]) < 0)
			break;
	}
	uint64_t deleted = now_monotonic_ns() - t0;
	printf("RESULT siblings made %d create_total_ms %.1f delete_total_ms %.1f\n", made,
	       created / 1e6, deleted / 1e6);
	for (size_t b = 0; b < ARRAY_SIZE(bands); b++) {
		int lo = bands[b][0], hi = bands[b][1] < made ? bands[b][1] : made;
		if (lo > hi)
			break;
		char what[64];
		snprintf(what, sizeof(what), "RESULT band %d-%d create", lo, hi);
		print_stats(what, &c[lo - 1], (size_t)(hi - lo + 1));
		snprintf(what, sizeof(what), "RESULT band %d-%d delete", lo, hi);
		print_stats(what, &d[lo - 1],
		            (size_t)(hi - lo + 1) <= (size_t)gone ? (size_t)(hi - lo + 1) : 0);
	}
	if (m.n)
		printf("RESULT mem zones %u rss_kib %lu pss_kib %lu private_dirty_kib %lu "
		       "memavail_drop_kib %ld\n",
		       m.n, m.rss / m.n, m.pss / m.n, m.pd / m.n,
		       avail0 >= 0 && avail1 >= 0 ? (avail0 - avail1) / (long)m.n : -1);
	if (m.current_n)
		printf("RESULT memcg zones %u memory_current_kib %ld\n", m.current_n,
		       m.current / (long)m.current_n / 1024);
	free(c);
	free(d);
}

/* The peer's idle memory: kin from disk as PID 1 of unshare's namespaces. */
static void bench_peer_mem(const char *kin)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(sv[1], 3);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0), dup2(null, 1), dup2(null, 2);
		execlp("unshare", "unshare", "--pid", "--mount", "--uts", "--ipc", "--cgroup",
		       "--fork", "--kill-child", kin, "init", "--socket", "none", "--rpc-fd", "3",
		       NULL);
		_exit(127);
	}
	close(sv[1]);
	Kin__V1__VersionResponse *v = NULL;
	struct err st;
	if (pid > 0 && rpc_version(sv[0], &v, &st) == 0) {
		unsigned long rss, pss, pd;
		pid_t kpid = (pid_t)v->pid; /* 1 in its namespace: find it as unshare's child */
		char path[64], buf[64] = "";
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
		FILE *f = fopen(path, "re");
		if (f && fgets(buf, sizeof(buf), f))
			kpid = (pid_t)atoi(buf);
		if (f)
			fclose(f);
		usleep(500000);
		if (smaps(kpid, &rss, &pss, &pd) == 0)
			printf("RESULT peermem rss_kib %lu pss_kib %lu private_dirty_kib %lu\n",
			       rss, pss, pd);
		protobuf_c_message_free_unpacked(&v->base, NULL);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	close(sv[0]);
}

static void cmd_log(const char *name)
{
	char path[8192], line[4096];
	snprintf(path, sizeof(path), "%s/%s.log", state_dir, name);
	FILE *f = fopen(path, "re");
	if (!f) {
		printf("error NOT_FOUND: %s: %s\n", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		printf("log| %s%s", line, strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

static void command(char **w, int n)
{
	struct err err = {0};
	if (!strcmp(w[0], "create"))
		cmd_create(w, n);
	else if (!strcmp(w[0], "version") && n == 2)
		cmd_version(w[1]);
	else if (!strcmp(w[0], "stop") && n == 2) {
		int r = zone_stop(zones, w[1], on_done, NULL, &err);
		if (r < 0)
			print_err(&err);
		else
			wait_gone(w[1], "stopped");
	} else if (!strcmp(w[0], "kill") && n == 2) {
		if (zone_kill(zones, w[1], &err) < 0)
			print_err(&err);
		else
			wait_gone(w[1], "killed");
	} else if (!strcmp(w[0], "wait") && n == 2) {
		struct zone_info info;
		if (zone_get(zones, w[1], &info, &err) < 0)
			print_err(&err);
		else
			wait_gone(w[1], "gone");
	} else if (!strcmp(w[0], "log") && n == 2)
		cmd_log(w[1]);
	else if (!strcmp(w[0], "bench-ready") && n >= 2)
		bench_ready(atoi(w[1]), n > 2 && !strcmp(w[2], "net"));
	else if (!strcmp(w[0], "bench-peer") && n == 3)
		bench_peer(atoi(w[1]), w[2]);
	else if (!strcmp(w[0], "bench-peer-mem") && n == 2)
		bench_peer_mem(w[1]);
	else if (!strcmp(w[0], "bench-siblings") && n == 2)
		bench_siblings(atoi(w[1]));
	else if (!strcmp(w[0], "list"))
		zone_foreach(zones, print_zone, NULL);
	else if (!strcmp(w[0], "sh") && n >= 2) {
		char cmd[8192] = "";
		for (int i = 1; i < n; i++) {
			strncat(cmd, w[i], sizeof(cmd) - strlen(cmd) - 2);
			strcat(cmd, " ");
		}
		fflush(stdout);
		int r = system(cmd);
		(void)r;
	} else
		printf("error INVALID_ARGUMENT: unknown command %s\n", w[0]);
}

/* Inside a zone: our depth and subnet are the zone kin's (PID 1 here). */
static int as_zone(struct zones_config *cfg)
{
	static char buf[8192], subnet[32] = "none";
	FILE *f = fopen("/proc/1/cmdline", "re");
	size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	uint32_t u;
	if (f)
		fclose(f);
	if (len == 0) {
		fprintf(stderr, "zone-driver: --as-zone: cannot read /proc/1/cmdline\n");
		return -1;
	}
	for (char *a = buf; a < buf + len; a += strlen(a) + 1) {
		char *next = a + strlen(a) + 1;
		if (next >= buf + len)
			break;
		if (!strcmp(a, "--zone-depth") && !str_to_u32(next, &u))
			cfg->depth = u;
		else if (!strcmp(a, "--zone-subnet"))
			str_copy(subnet, sizeof(subnet), next);
	}
	cfg->subnet = subnet;
	cfg->self = "/proc/1/exe";
	printf("as-zone depth %u subnet %s\n", cfg->depth, subnet);
	return 0;
}

int main(int argc, char **argv)
{
	struct cells_config ccfg = {.own_leaf = true};
	struct zones_config zcfg = {0};
	struct child_table *children;
	struct err err = {0};
	char line[8192];
	uint32_t u;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--base") && i + 1 < argc)
			ccfg.base = argv[++i];
		else if (!strcmp(argv[i], "--depth") && i + 1 < argc &&
		         !str_to_u32(argv[i + 1], &u))
			zcfg.depth = u, i++;
		else if (!strcmp(argv[i], "--depth-max") && i + 1 < argc &&
		         !str_to_u32(argv[i + 1], &u))
			zcfg.depth_max = u, i++;
		else if (!strcmp(argv[i], "--subnet") && i + 1 < argc)
			zcfg.subnet = argv[++i];
		else if (!strcmp(argv[i], "--state-dir") && i + 1 < argc)
			zcfg.state_dir = state_dir = argv[++i];
		else if (!strcmp(argv[i], "--log-bytes") && i + 1 < argc &&
		         !str_to_u32(argv[i + 1], &u))
			zcfg.log_bytes = u, i++;
		else if (!strcmp(argv[i], "--as-zone")) {
			if (as_zone(&zcfg) < 0)
				return 1;
		} else if (!strcmp(argv[i], "--log-level") && i + 1 < argc)
			zcfg.log_level = argv[++i];
		else if (!strcmp(argv[i], "--self") && i + 1 < argc)
			zcfg.self = argv[++i];
		else {
			fprintf(stderr,
			        "usage: zone-driver [--base REL] [--depth N] [--depth-max N] "
			        "[--subnet CIDR] [--state-dir DIR] [--log-level L] "
			        "[--log-bytes N] [--as-zone] < script\n");
			return 2;
		}
	}
	if (ev_loop_new(&loop) < 0 || child_table_new(loop, &children) < 0)
		return 1;
	if (cells_new(loop, children, &ccfg, &cells, &err) < 0) {
		print_err(&err);
		return 1;
	}
	struct zone_events ev = {.gone = on_gone};
	if (zones_new(loop, children, cells, &zcfg, &ev, &zones, &err) < 0) {
		print_err(&err);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char *w[WORDS_MAX + 1];
		int n = 0;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		printf("> %s\n", line);
		for (char *save = NULL, *t = strtok_r(line, " ", &save); t && n < WORDS_MAX;
		     t = strtok_r(NULL, " ", &save))
			w[n++] = t;
		w[n] = NULL;
		if (n > 0)
			command(w, n);
	}
	/* Nothing outlives the driver: kill what is left. */
	for (int tries = 0; zone_count(zones) > 0 && tries < ZONES_MAX; tries++) {
		char name[NAME_MAX_LEN + 1] = "";
		zone_foreach(zones, first_name, name);
		if (zone_kill(zones, name, &err) < 0)
			break;
		wait_gone(name, "killed");
	}
	zones_free(zones);
	cells_free(cells);
	child_table_free(children);
	ev_loop_free(loop);
	return 0;
}
