/* zone-driver: drives the zone library from a script on stdin, in its own
 * ev_loop, as a parent kin would (until rpc/ routes kin-target calls):
 *   zone-driver [--base REL] [--depth N] [--depth-max N] [--subnet CIDR]
 *               [--state-dir DIR] [--log-level L] < script
 * Commands (one a line; "> line" echoed, then the answer):
 *   create NAME [net] [root=DIR] [-- ARGV...]   ok create NAME pid P ...
 *   version NAME      Health/Version over the zone's RPC socketpair
 *   stop NAME         SIGTERM; waits until gone: "stopped NAME status S"
 *   kill NAME         cgroup.kill; waits until gone: "killed NAME status S"
 *   wait NAME         until the zone ends by itself: "gone NAME status S"
 *   list              "zone NAME STATE pid P"
 *   sh CMD...         /bin/sh -c, with ZPID ZIF ZADDR ZGW ZCELLDIR of the
 *                     last zone created in the environment
 * Errors print "error CODE: sentence". */
#include "cells/cells.h"
#include "rpc/kin.pb-c.h"
#include "rpc/rpc.h"
#include "zone/zone.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define WORDS_MAX 64

static struct ev_loop *loop;
static struct cells *cells;
static struct zones *zones;
static bool gone_flag;
static int gone_status;
static char gone_name[NAME_MAX_LEN + 1];

static void print_err(const struct cells_err *err)
{
	printf("error %s: %s\n", cells_code_name(err->code), err->msg);
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

static void cmd_version(const char *name)
{
	struct zone_info info;
	struct cells_err err = {0};
	if (zone_get(zones, name, &info, &err) < 0) {
		print_err(&err);
		return;
	}
	Kin__V1__VersionRequest req = KIN__V1__VERSION_REQUEST__INIT;
	uint8_t *buf = NULL, hdr[RPC_HEADER_SIZE];
	size_t len;
	static uint32_t stream = 1;
	int r = rpc_request_encode(stream, 0, "kin.v1.Health", "Version", &req.base, NULL, 0, 0,
				   &buf, &len);
	stream += 2;
	/* The zone kin answers from its own loop; ours is not needed. */
	fd_set_nonblock(info.rpc_fd, false);
	if (r == 0)
		r = write_all(info.rpc_fd, buf, len);
	free(buf);
	struct rpc_header h;
	if (r == 0)
		r = read_full(info.rpc_fd, hdr, sizeof(hdr));
	if (r < 0) {
		printf("error UNAVAILABLE: zone \"%s\": rpc: %s\n", name, strerror(-r));
		return;
	}
	rpc_header_decode(hdr, &h);
	uint8_t *data = malloc(h.length + 1);
	if (!data || read_full(info.rpc_fd, data, h.length) < 0) {
		free(data);
		printf("error UNAVAILABLE: zone \"%s\": short answer\n", name);
		return;
	}
	struct rpc_status st;
	ProtobufCMessage *out = NULL;
	r = rpc_response_decode(data, h.length, &kin__v1__version_response__descriptor, &st, &out);
	free(data);
	if (r < 0 || st.code != 0) {
		printf("error %s: %s\n", rpc_code_name(r < 0 ? RPC_INTERNAL : st.code),
		       r < 0 ? "bad answer" : st.message);
		return;
	}
	Kin__V1__VersionResponse *v = (Kin__V1__VersionResponse *)out;
	printf("version role=%s zone=%s pid=%u hostname=%s\n", v->role, v->zone, v->pid,
	       v->hostname);
	protobuf_c_message_free_unpacked(out, NULL);
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

static void cmd_create(char **w, int n)
{
	struct zone_spec spec = {0};
	struct cells_err err = {0};
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
	if (zone_create(zones, &spec, &err) < 0) {
		print_err(&err);
		return;
	}
	struct zone_info info;
	zone_get(zones, spec.name, &info, NULL);
	export_info(&info);
	printf("ok create %s pid %d depth %u cell %s if %s addr %s gw %s\n", info.name,
	       (int)info.pid, info.depth, info.cell, info.host_if[0] ? info.host_if : "-",
	       info.addr[0] ? info.addr : "-", info.gateway[0] ? info.gateway : "-");
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

static void command(char **w, int n)
{
	struct cells_err err = {0};
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
	} else if (!strcmp(w[0], "list"))
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

int main(int argc, char **argv)
{
	struct cells_config ccfg = {.own_leaf = true};
	struct zones_config zcfg = {0};
	struct child_table *children;
	struct cells_err err = {0};
	char line[8192];
	uint32_t u;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--base") && i + 1 < argc)
			ccfg.base = argv[++i];
		else if (!strcmp(argv[i], "--depth") && i + 1 < argc && !str_to_u32(argv[i + 1], &u))
			zcfg.depth = u, i++;
		else if (!strcmp(argv[i], "--depth-max") && i + 1 < argc &&
			 !str_to_u32(argv[i + 1], &u))
			zcfg.depth_max = u, i++;
		else if (!strcmp(argv[i], "--subnet") && i + 1 < argc)
			zcfg.subnet = argv[++i];
		else if (!strcmp(argv[i], "--state-dir") && i + 1 < argc)
			zcfg.state_dir = argv[++i];
		else if (!strcmp(argv[i], "--log-level") && i + 1 < argc)
			zcfg.log_level = argv[++i];
		else if (!strcmp(argv[i], "--self") && i + 1 < argc)
			zcfg.self = argv[++i];
		else {
			fprintf(stderr, "usage: zone-driver [--base REL] [--depth N] [--depth-max N] "
					"[--subnet CIDR] [--state-dir DIR] [--log-level L] < script\n");
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
