/* cli: the shim binary as containerd runs it — `start` (find or start the
 * pod's shim, print its address), `delete` (clean up after a task, also
 * when its shim is gone) and the daemon's arguments (`serve`, which only
 * start passes). See shim.h. */
#include "shim/shim.h"
#include "lib/sha256.h"
#include "lib/spawn.h"
#include "oci/oci.h"
#include "proto/shim.pb-c.h"
#include "rpc/rpc.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct args {
	const char *ns, *id, *address, *publish, *bundle, *group, *cgroup, *action;
	bool debug;
	enum shim_flavor flavor;
};

bool shim_argv0_is_shim(const char *argv0)
{
	const char *base = strrchr(argv0, '/');
	base = base ? base + 1 : argv0;
	return str_startswith(base, "containerd-shim-kin");
}

static bool id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > SHIM_ID_MAX || !isalnum((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

static void hash_hex(const char *a, const char *b, const char *c, char out[65])
{
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	sha256_init(&h);
	sha256_update(&h, a, strlen(a));
	sha256_update(&h, "/", 1);
	sha256_update(&h, b, strlen(b));
	sha256_update(&h, "/", 1);
	sha256_update(&h, c, strlen(c));
	sha256_final(&h, d);
	sha256_hex(d, out);
}

int shim_socket_path(const char *address, const char *ns, const char *group, char *buf, size_t size)
{
	char hex[65];
	hash_hex(address, ns, group, hex);
	return snprintf(buf, size, SHIM_SOCKET_DIR "/%s", hex) < (int)size ? 0 : -ENAMETOOLONG;
}

int shim_state_dir(const char *ns, const char *group, char *buf, size_t size)
{
	/* The sockets below it (kin.sock, a kin-vm pod's VM's link.sock and
	 * monitor.sock) must fit a sockaddr_un (108 bytes). */
	if (strlen(SHIM_STATE_ROOT) + strlen(ns) + strlen(group) + 2 +
	        strlen("/" SHIM_VM_DIR "/" SHIM_ZONE_NAME "/monitor.sock") <
	    108)
		return snprintf(buf, size, SHIM_STATE_ROOT "/%s/%s", ns, group) < (int)size
		           ? 0
		           : -ENAMETOOLONG;
	char hex[65];
	hash_hex("state", ns, group, hex);
	return snprintf(buf, size, SHIM_STATE_ROOT "/h-%.32s", hex) < (int)size ? 0 : -ENAMETOOLONG;
}

static int parse(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
	    {"namespace", required_argument, NULL, 'n'},
	    {"id", required_argument, NULL, 'i'},
	    {"address", required_argument, NULL, 'a'},
	    {"publish-binary", required_argument, NULL, 'p'},
	    {"bundle", required_argument, NULL, 'b'},
	    {"debug", no_argument, NULL, 'd'},
	    {"group", required_argument, NULL, 'g'},
	    {"cgroup", required_argument, NULL, 'c'},
	    {"socket", required_argument, NULL, 's'}, /* containerd 1.7's, unused */
	    {NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	opterr = 0;
	/* Go's flag package: -flag and --flag alike, flags before the action. */
	while ((c = getopt_long_only(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			a->ns = optarg;
			break;
		case 'i':
			a->id = optarg;
			break;
		case 'a':
			a->address = optarg;
			break;
		case 'p':
			a->publish = optarg;
			break;
		case 'b':
			a->bundle = optarg;
			break;
		case 'd':
			a->debug = true;
			break;
		case 'g':
			a->group = optarg;
			break;
		case 'c':
			a->cgroup = optarg;
			break;
		case 's':
			break;
		default:
			fprintf(stderr, "%s: unknown flag %s\n", argv[0], argv[optind - 1]);
			return -EINVAL;
		}
	}
	a->action = optind < argc ? argv[optind] : NULL;
	a->flavor = strstr(argv[0], "kin-vm") ? SHIM_FLAVOR_VM : SHIM_FLAVOR_NS;
	if (!a->ns || !id_ok(a->ns) || !a->id || !id_ok(a->id) || !a->action) {
		fprintf(stderr,
		        "usage: %s -namespace NS -id ID [-address A] [-publish-binary B] "
		        "[-bundle DIR] start|delete\n"
		        "(containerd runs this; NS and ID are 1-%d of [A-Za-z0-9_.-])\n",
		        argv[0], SHIM_ID_MAX);
		return -EINVAL;
	}
	if (!a->address)
		a->address = "/run/containerd/containerd.sock";
	return 0;
}

/* What start and delete need of the bundle's config.json: the pod it
 * belongs to (CRI's annotations) and the cgroup it names. */
struct bundle_info {
	char group[SHIM_ID_MAX + 1];
	bool container; /* a CRI container, of sandbox group */
	char cgroup[PATH_MAX];
};

static void bundle_read(const char *bundle, const char *id, struct bundle_info *b)
{
	char path[PATH_MAX];
	struct oci_json *j = NULL;
	struct err err = {0};
	*b = (struct bundle_info){0};
	str_copy(b->group, sizeof(b->group), id);
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	if (oci_json_load(path, &j, &err) < 0)
		return; /* Create says what is wrong with it */
	const char *type = oci_json_annotation(j, "io.kubernetes.cri.container-type");
	const char *sandbox = oci_json_annotation(j, "io.kubernetes.cri.sandbox-id");
	if (type && strcmp(type, "container") == 0 && sandbox && id_ok(sandbox)) {
		b->container = true;
		str_copy(b->group, sizeof(b->group), sandbox);
	}
	/* cgroupfs form only ("/kubepods/pod1/ID"); systemd's "slice:prefix:name"
	 * is not a path. */
	const char *cg = oci_json_cgroups_path(j);
	if (cg && cg[0] == '/' && !strchr(cg, ':') && !strstr(cg, "..") && strlen(cg) < 512)
		str_copy(b->cgroup, sizeof(b->cgroup), cg + 1);
	oci_json_free(j);
}

/* A shim answers there: a Connect call, not just a connect(2) — a shim
 * being killed still has its socket for a moment, and containerd runs
 * delete the moment the connection drops. */
static bool socket_alive(const char *path)
{
	char addr[128];
	struct rpc_client *c = NULL;
	snprintf(addr, sizeof(addr), "unix:%s", path);
	if (rpc_client_connect(addr, 500, &c) < 0)
		return false;
	Kin__Shim__ConnectRequest in = KIN__SHIM__CONNECT_REQUEST__INIT;
	struct err st = {0};
	ProtobufCMessage *out = NULL;
	int r = rpc_client_call(c, "containerd.task.v2.Task", "Connect", &in.base,
	                        &kin__shim__connect_response__descriptor, &st, &out);
	if (out)
		protobuf_c_message_free_unpacked(out, NULL);
	rpc_client_free(c);
	return r == 0 && st.code != ERR_DEADLINE_EXCEEDED;
}

static int write_address(const char *bundle, const char *addr)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/address", bundle);
	return file_create_str(path, addr, 0600);
}

/* fd 3 of a daemon: the listening socket start made, nothing else. */
static bool listen_fd_ok(int fd)
{
	return sock_opt(fd, SO_ACCEPTCONN) > 0;
}

/* The daemon: detached (own session, no inherited stdio: containerd reads
 * start's output to its end), the listening socket as fd 3, its output in
 * STATE/shim.log. */
static int spawn_daemon(char **argv, const struct args *a, const struct bundle_info *b,
                        int listen_fd, const char *state)
{
	char log[PATH_MAX + 16];
	snprintf(log, sizeof(log), "%s/shim.log", state);
	_cleanup_close_ int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	_cleanup_close_ int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (out < 0 || null < 0)
		return -errno;
	char cgroup[PATH_MAX];
	if (b->cgroup[0])
		str_copy(cgroup, sizeof(cgroup), b->cgroup);
	else
		snprintf(cgroup, sizeof(cgroup), "kin-shim/%s-%s", a->ns, b->group);
	const char *args[16];
	size_t n = 0;
	args[n++] = argv[0];
	const char *pairs[][2] = {{"-namespace", a->ns},
	                          {"-id", a->id},
	                          {"-address", a->address},
	                          {"-group", b->group},
	                          {"-cgroup", cgroup}};
	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
		args[n++] = pairs[i][0];
		args[n++] = pairs[i][1];
	}
	if (a->debug)
		args[n++] = "-debug";
	args[n++] = "serve";
	args[n] = NULL;
	/* Cloned straight into its cgroup's leaf (BASE/init, as kin's cells
	 * want it): moving it there later costs a migration's wait. */
	char mnt[PATH_MAX], root[PATH_MAX], leaf[2 * PATH_MAX + 16];
	_cleanup_close_ int cg = -1;
	if (cgroup2_find_mount(mnt, sizeof(mnt), root, sizeof(root)) == 0) {
		snprintf(leaf, sizeof(leaf), "%s/%s/init", mnt, cgroup);
		if (mkdir_p(leaf, 0755) == 0)
			cg = open(leaf, O_PATH | O_DIRECTORY | O_CLOEXEC);
		cgroup2_enable_along(mnt, cgroup);
	}
	struct spawn_proc sp;
	int r = spawn_clone(&(struct spawn_opts){.cgroup_fd = cg}, &sp);
	if (r < 0 && cg >= 0) /* not there: kin moves itself, slower */
		r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &sp);
	if (r < 0)
		return r;
	if (r == 0) {
		close(sp.report_fd);
		setsid();
		if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 ||
		    (listen_fd == 3 ? fd_set_cloexec(3, false) : dup2(listen_fd, 3)) < 0)
			_exit(127);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv("/proc/self/exe", (char **)args);
		_exit(127);
	}
	close(sp.pidfd);
	close(sp.report_fd);
	return 0;
}

static void pod_teardown(const char *state, bool kill);

/* start's answer: the address alone (containerd 1.6, 1.7 and 2.x read it
 * as bootstrap version 2, the Task API as containerd.task.v2.Task), or
 * with SHIM_BOOTSTRAP_ENV=3 in containerd's environment the JSON of
 * containerd 2.x's version 3 (containerd.task.v3.Task: served too). 1.7
 * refuses a version above 2 and 1.6 reads no JSON, hence not by default. */
static void print_address(const char *addr)
{
	const char *v = getenv(SHIM_BOOTSTRAP_ENV);
	if (v && strcmp(v, "3") == 0)
		printf("{\"version\":3,\"address\":\"%s\",\"protocol\":\"ttrpc\"}", addr);
	else
		fputs(addr, stdout);
}

static int cmd_start(char **argv, const struct args *a)
{
	char cwd[PATH_MAX], sock[108], state[PATH_MAX], addr[128];
	const char *bundle = a->bundle ? a->bundle : getcwd(cwd, sizeof(cwd));
	struct bundle_info b;
	if (!bundle) {
		fprintf(stderr, "start: cannot tell the bundle (cwd): %m\n");
		return 1;
	}
	bundle_read(bundle, a->id, &b);
	if (shim_socket_path(a->address, a->ns, b.group, sock, sizeof(sock)) < 0 ||
	    shim_state_dir(a->ns, b.group, state, sizeof(state)) < 0) {
		fprintf(stderr, "start: socket path too long\n");
		return 1;
	}
	snprintf(addr, sizeof(addr), "unix://%s", sock);
	/* A CRI container goes to its pod's shim; so does a second start. */
	if (socket_alive(sock)) {
		if (write_address(bundle, addr) < 0) {
			fprintf(stderr, "start: %s/address: %m\n", bundle);
			return 1;
		}
		print_address(addr);
		return 0;
	}
	if (b.container) {
		fprintf(stderr, "start: container %s: the shim of its pod %s is not running\n",
		        a->id, b.group);
		return 1;
	}
	/* What a shim that died without a delete left (containerd was down):
	 * its pod is killed and its state removed, or the new pod's zone
	 * would find the old one's cgroup and mounts in its way. */
	if (access(state, F_OK) == 0)
		pod_teardown(state, true);
	int r = mkdir_p(state, 0700);
	int fd = -1;
	if (r == 0)
		r = rpc_listen_unix(sock, 0600, &fd);
	if (r == 0)
		r = spawn_daemon(argv, a, &b, fd, state);
	if (fd >= 0)
		close(fd);
	if (r == 0)
		r = write_address(bundle, addr);
	if (r < 0) {
		fprintf(stderr, "start: %s: %s\n", sock, strerror(-r));
		return 1;
	}
	print_address(addr);
	return 0;
}

/* Everything in a dead pod's cgroup killed, the tree removed bottom-up. */
static void cgroup_remove(const char *dir, int depth, uint64_t deadline)
{
	char path[PATH_MAX + 32];
	DIR *d = depth < 16 ? opendir(dir) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			cgroup_remove(path, depth + 1, deadline);
		}
	if (d)
		closedir(d);
	while (rmdir(dir) < 0 && errno == EBUSY && now_monotonic_ns() < deadline)
		usleep(20 * 1000); /* the killed take a moment to leave */
}

/* kill: everything in it killed first (a dead shim's pod); else only
 * this process is there, and leaves for the parent. */
static void pod_cgroup_remove(const char *state, bool kill)
{
	char path[PATH_MAX + 32];
	_cleanup_free_ char *cg = NULL;
	snprintf(path, sizeof(path), "%s/cgroup", state);
	if (file_read_small(path, PATH_MAX, &cg, NULL) < 0 || cg[0] != '/' || strstr(cg, ".."))
		return;
	cg[strcspn(cg, "\n")] = '\0';
	if (kill) {
		snprintf(path, sizeof(path), "%s/cgroup.kill", cg);
		file_write_str(path, "1");
	} else {
		/* Out of it first: to its parent, or to the hierarchy's root
		 * when the parent has controllers enabled (it takes no process
		 * then, and the pod's cgroup would stay busy with us). */
		char self[16], mnt[PATH_MAX], root[PATH_MAX];
		snprintf(path, sizeof(path), "%s/../cgroup.procs", cg);
		snprintf(self, sizeof(self), "%d", (int)getpid());
		if (file_write_str(path, self) < 0 &&
		    cgroup2_find_mount(mnt, sizeof(mnt), root, sizeof(root)) == 0) {
			snprintf(path, sizeof(path), "%s/cgroup.procs", mnt);
			file_write_str(path, self);
		}
	}
	cgroup_remove(cg, 0, now_monotonic_ns() + SHIM_DELETE_WAIT_MS * 1000000ull);
}

static void pod_teardown(const char *state, bool kill)
{
	char path[PATH_MAX + 32];
	pod_cgroup_remove(state, kill);
	/* A lazy unmount of the pod directory takes every bind below it. */
	snprintf(path, sizeof(path), "%s/pod", state);
	shim_unmount_all(path);
	/* containerd runs `delete` as soon as the shim's connection closes,
	 * which can be while the shim is still at this: two removers of one
	 * tree can each find a directory not yet empty. A short retry. */
	for (int i = 0; dir_remove_tree(AT_FDCWD, state, 0) < 0 && i < 25; i++)
		usleep(20 * 1000);
}

static int cmd_delete(const struct args *a)
{
	char cwd[PATH_MAX], sock[108], state[PATH_MAX], rootfs[PATH_MAX + 8];
	const char *bundle = a->bundle ? a->bundle : getcwd(cwd, sizeof(cwd));
	struct bundle_info b;
	if (bundle) {
		bundle_read(bundle, a->id, &b);
		snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
		shim_unmount_all(rootfs);
	} else {
		b = (struct bundle_info){0};
		str_copy(b.group, sizeof(b.group), a->id);
	}
	/* With its shim alive, the pod is the shim's to clean; gone, all of
	 * it goes now. */
	if (shim_socket_path(a->address, a->ns, b.group, sock, sizeof(sock)) == 0 &&
	    shim_state_dir(a->ns, b.group, state, sizeof(state)) == 0 && !socket_alive(sock)) {
		pod_teardown(state, true);
		unlink(sock);
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	Kin__Shim__Timestamp ts = KIN__SHIM__TIMESTAMP__INIT;
	ts.seconds = now.tv_sec;
	ts.nanos = (int32_t)now.tv_nsec;
	Kin__Shim__DeleteResponse resp = KIN__SHIM__DELETE_RESPONSE__INIT;
	resp.exit_status = 128 + SIGKILL;
	resp.exited_at = &ts;
	uint8_t buf[64];
	size_t n = kin__shim__delete_response__pack(&resp, buf);
	return fwrite(buf, 1, n, stdout) == n ? 0 : 1;
}

void shim_cleanup(const struct shim_serve *s)
{
	pod_teardown(s->state, false);
}

int shim_main(int argc, char **argv, struct shim_serve *ret)
{
	struct args a = {0};
	if (parse(argc, argv, &a) < 0)
		return 2;
	if (strcmp(a.action, "start") == 0)
		return cmd_start(argv, &a);
	if (strcmp(a.action, "delete") == 0)
		return cmd_delete(&a);
	if (strcmp(a.action, "serve") != 0 || !a.group || !id_ok(a.group) || !a.cgroup) {
		fprintf(stderr, "%s: unknown action '%s' (start, delete)\n", argv[0], a.action);
		return 2;
	}
	if (!listen_fd_ok(3)) {
		fprintf(stderr, "%s serve: fd 3 is not a listening socket (start passes it)\n",
		        argv[0]);
		return 2;
	}
	struct shim_serve *s = ret;
	*s = (struct shim_serve){.flavor = a.flavor, .listen_fd = 3};
	const char *ttrpc = getenv("TTRPC_ADDRESS");
	if (str_copy(s->ns, sizeof(s->ns), a.ns) < 0 || str_copy(s->id, sizeof(s->id), a.id) < 0 ||
	    str_copy(s->group, sizeof(s->group), a.group) < 0 ||
	    str_copy(s->address, sizeof(s->address), a.address) < 0 ||
	    str_copy(s->ttrpc, sizeof(s->ttrpc), ttrpc ? ttrpc : "") < 0 ||
	    str_copy(s->cgroup, sizeof(s->cgroup), a.cgroup) < 0 ||
	    shim_socket_path(a.address, a.ns, a.group, s->socket, sizeof(s->socket)) < 0 ||
	    shim_state_dir(a.ns, a.group, s->state, sizeof(s->state)) < 0) {
		fprintf(stderr, "%s: an argument is too long\n", argv[0]);
		return 2;
	}
	/* shim_state_dir left room for both. */
	if (str_copy(s->kin_socket, sizeof(s->kin_socket) - 9, s->state) < 0 ||
	    str_copy(s->pod_dir, sizeof(s->pod_dir) - 4, s->state) < 0) {
		fprintf(stderr, "%s: the state directory's path is too long\n", argv[0]);
		return 2;
	}
	strcat(s->kin_socket, "/kin.sock");
	strcat(s->pod_dir, "/pod");
	return SHIM_MAIN_SERVE;
}
