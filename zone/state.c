/* state: the zones handed over across a re-exec of kin (zone.h "re-exec",
 * lib/state.h). A zone kin is this kin's child throughout: the next kin
 * tracks it again by pid, still unreaped, and takes its channel, its log
 * pipe and file and its addresses as they were. Tags are never reused. */
#include "zone/zone-int.h"
#include "lib/state.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

enum { ZS_ZONE = 1, ZS_KEPT };
enum {
	Z_NAME = 1,
	Z_PID,
	Z_DEPTH,
	Z_NET,
	Z_HOST_IF,
	Z_ADDR,
	Z_GATEWAY,
	Z_SUBNET,
	Z_RPC_FD,
	Z_STARTED,
	Z_SLOT,
	Z_DELEG,
	Z_LOG_PIPE,
	Z_LOG_FILE,
	Z_LOG_SIZE,
	Z_LOG_INO,   /* a file state's: the log pipe, found again among the kept fds */
	Z_RECONNECT, /* its kin listens on its reconnect socket */
};

bool zones_settled(const struct zones *z, char *why, size_t size)
{
	const struct zone *x;
	list_for_each(x, &z->list, node) {
		if (x->info.state != ZONE_RUNNING || x->starting || x->cleaning || x->done) {
			snprintf(why, size, "zone \"%s\" is %s", x->info.name,
			         x->cleaning ? "being cleaned up"
			                     : zone_state_name(x->starting ? ZONE_STARTING
			                                                   : x->info.state));
			return false;
		}
	}
	return true;
}

size_t zones_children(const struct zones *z)
{
	size_t n = 0;
	const struct zone *x;
	list_for_each(x, &z->list, node)
		n += x->child != NULL;
	return n;
}

/* The numbers of a zone's record, as both sides hold them. */
struct zone_nums {
	uint64_t pid, depth, net, started, slot, log_size, log_ino, reconnect;
	int64_t deleg;
};
static const struct state_num zone_nums[] = {
    STATE_NUM(Z_PID, struct zone_nums, pid),
    STATE_NUM(Z_DEPTH, struct zone_nums, depth),
    STATE_NUM(Z_NET, struct zone_nums, net),
    STATE_NUM(Z_STARTED, struct zone_nums, started),
    STATE_NUM(Z_SLOT, struct zone_nums, slot),
    STATE_NUM(Z_LOG_SIZE, struct zone_nums, log_size),
    STATE_NUM(Z_DELEG, struct zone_nums, deleg),
    STATE_NUM(Z_LOG_INO, struct zone_nums, log_ino),
    STATE_NUM(Z_RECONNECT, struct zone_nums, reconnect),
};

static void zone_save(const struct zone *x, struct state_w *w)
{
	struct zone_nums nums = {.pid = (uint64_t)x->info.pid,
	                         .depth = x->info.depth,
	                         .net = x->info.net,
	                         .started = x->info.started_ns,
	                         .slot = x->slot,
	                         .log_size = x->log.size,
	                         .log_ino = w->file ? fd_ino(x->log.src.fd) : 0,
	                         .reconnect = x->reconnect,
	                         .deleg = x->deleg};
	size_t at = state_open(w, ZS_ZONE);
	state_put_str(w, Z_NAME, x->info.name);
	state_put_str(w, Z_HOST_IF, x->info.host_if);
	state_put_str(w, Z_ADDR, x->info.addr);
	state_put_str(w, Z_GATEWAY, x->info.gateway);
	state_put_str(w, Z_SUBNET, x->info.subnet);
	state_put_fd(w, Z_RPC_FD, x->info.rpc_fd);
	state_put_fd(w, Z_LOG_PIPE, x->log.src.fd);
	state_put_fd(w, Z_LOG_FILE, x->log.file_fd);
	state_put_nums(w, &nums, zone_nums, ARRAY_SIZE(zone_nums));
	state_close(w, at);
}

void zones_save(struct zones *z, struct state_w *w, uint16_t tag)
{
	size_t at = state_open(w, tag);
	const struct zone *x;
	/* A file state: only the zones a successor can adopt (one starting
	 * or ending is removed by it). */
	list_for_each(x, &z->list, node)
		if (!w->file || (x->reconnect && x->info.state != ZONE_GONE && !x->starting &&
		                 !x->cleaning && x->child))
			zone_save(x, w);
	for (unsigned i = 0; i < z->kept.n && !w->file; i++)
		state_put_str(w, ZS_KEPT, z->kept.path[i]);
	state_close(w, at);
}

/* ---- the next kin's side ---- */

struct zone_in {
	struct zone_info info;
	struct zone_nums n;
	int log_pipe, log_file;
};

/* A string field into its buffer, an fd taken once; other tags: 0. */
static int zone_field(struct state_in *in, const struct state_field *g, struct zone_in *zi)
{
	struct zone_info *i = &zi->info;
	switch (g->tag) {
	case Z_NAME:
		return state_get_str(g, i->name, sizeof(i->name));
	case Z_HOST_IF:
		return state_get_str(g, i->host_if, sizeof(i->host_if));
	case Z_ADDR:
		return state_get_str(g, i->addr, sizeof(i->addr));
	case Z_GATEWAY:
		return state_get_str(g, i->gateway, sizeof(i->gateway));
	case Z_SUBNET:
		return state_get_str(g, i->subnet, sizeof(i->subnet));
	case Z_RPC_FD:
	case Z_LOG_PIPE:
	case Z_LOG_FILE:
		if (!in) /* a file state has no fds */
			return -EBADMSG;
		break;
	}
	switch (g->tag) {
	case Z_RPC_FD:
		return i->rpc_fd < 0 ? state_get_fd(in, g, &i->rpc_fd) : 0;
	case Z_LOG_PIPE:
		return zi->log_pipe < 0 ? state_get_fd(in, g, &zi->log_pipe) : 0;
	case Z_LOG_FILE:
		return zi->log_file < 0 ? state_get_fd(in, g, &zi->log_file) : 0;
	}
	return 0;
}

static int zone_read(struct state_in *in, const struct state_field *f, struct zone_in *zi)
{
	struct state_r r;
	struct state_field g;
	int e = 0;
	*zi = (struct zone_in){
	    .info = {.rpc_fd = -1}, .n = {.deleg = -1}, .log_pipe = -1, .log_file = -1};
	state_get_record(f, &r);
	while (e == 0 && (e = state_next(&r, &g)) > 0)
		if ((e = state_get_num(&g, &zi->n, zone_nums, ARRAY_SIZE(zone_nums))) == 0)
			e = zone_field(in, &g, zi);
		else
			e = e < 0 ? e : 0; /* a number, taken */
	return e;
}

static void zone_in_close_logs(struct zone_in *zi)
{
	closep(&zi->log_pipe);
	closep(&zi->log_file);
	zi->log_pipe = zi->log_file = -1;
}

static void zone_in_close(struct zone_in *zi)
{
	closep(&zi->info.rpc_fd);
	zi->info.rpc_fd = -1;
	zone_in_close_logs(zi);
}

/* Everything a record says, checked: NULL when it is sound. */
static const char *zone_in_check(const struct zones *z, const struct zone_in *zi)
{
	if (!name_is_valid(zi->info.name) || !str_is_hostname(zi->info.name))
		return "no valid name";
	if (!zi->n.net && zi->info.host_if[0])
		return "a link without a network";
	if (zone_find((struct zones *)z, zi->info.name))
		return "a second zone of that name";
	if (z->count >= ZONES_MAX)
		return "one zone too many";
	if (!zi->n.pid || zi->n.pid > INT32_MAX || zi->n.pid == (uint64_t)getpid())
		return "no valid pid";
	if (zi->n.depth != z->depth + 1)
		return "another depth";
	bool net = zi->n.net != 0;
	if (net && (!z->has_subnet || zi->n.slot >= net_subnet_links(z->subnet.prefix) ||
	            !str_startswith(zi->info.host_if, "kz")))
		return "a link outside this kin's subnet";
	if (zi->n.deleg >= 0 && (!z->has_subnet || zi->n.deleg >= (int64_t)NET_SUBNET_DELEGATIONS ||
	                         (uint64_t)zi->n.deleg >= net_subnet_delegations(z->subnet.prefix)))
		return "a delegation outside this kin's subnet";
	if (zi->n.deleg < -1)
		return "a bad delegation";
	if ((net && net_subnet_link_held(&z->subnet, (uint32_t)zi->n.slot)) ||
	    (zi->n.deleg >= 0 && net_subnet_deleg_held(&z->subnet, (uint32_t)zi->n.deleg)))
		return "an address another zone holds";
	return NULL;
}

/* A zone that cannot be taken back: its kin and everything in its cell
 * die (cgroup.kill), the cell goes once empty, its veth with it. */
static void zone_give_up_as(struct zones *z, struct zone_in *zi, const char *how, const char *why)
{
	char cell[CELLS_PATH_MAX];
	/* Not the cell of a name held already: that one is another zone's. */
	bool kill = name_is_valid(zi->info.name) && !zone_find(z, zi->info.name);
	log_error("%s: zone \"%.64s\" (pid %llu) cannot be taken over: %s%s", how, zi->info.name,
	          (unsigned long long)zi->n.pid, why, kill ? "; killed" : "");
	zone_in_close(zi);
	if (!kill)
		return;
	snprintf(cell, sizeof(cell), ZONE_CELL_PARENT "/%s", zi->info.name);
	cell_kill(z->cells, cell, NULL);
	cell_delete(z->cells, cell, true, NULL, NULL, NULL);
}

static void zone_give_up(struct zones *z, struct zone_in *zi, const char *why)
{
	zone_give_up_as(z, zi, "re-exec", why);
}

static bool is_zone_kin(struct zones *z, const char *cell, pid_t pid);

/* A zone kin that is not our child (adopted after a kill), through a
 * pidfd: -ECHILD when pid is not that zone's kin. */
static int zone_watch_again(struct zones *z, struct zone *x)
{
	int pidfd = (int)syscall(SYS_pidfd_open, x->info.pid, 0);
	if (pidfd < 0)
		return errno == ESRCH ? -ECHILD : -errno;
	if (!is_zone_kin(z, x->info.cell, x->info.pid)) {
		close(pidfd);
		return -ECHILD;
	}
	return child_watch(z->children, x->info.pid, pidfd, zone_on_exit, x, &x->child);
}

/* A record's zone, listed nowhere yet, its log taken (zi's log fds are
 * gone either way): NULL with *ret_r < 0 when its log could not be (then
 * nothing is kept) or there is no memory. */
static struct zone *zone_of_record(struct zones *z, struct zone_in *zi, int *ret_r)
{
	struct zone *x = calloc(1, sizeof(*x));
	if (!x) {
		zone_in_close_logs(zi);
		*ret_r = -ENOMEM;
		return NULL;
	}
	*x = (struct zone){.z = z,
	                   .timer = {.fd = -1},
	                   .report = {.fd = -1},
	                   .slot = (uint32_t)zi->n.slot,
	                   .deleg = (int)zi->n.deleg,
	                   .reconnect = zi->n.reconnect != 0};
	x->info = zi->info;
	x->info.state = ZONE_RUNNING;
	x->info.pid = (pid_t)zi->n.pid;
	x->info.depth = (unsigned)zi->n.depth;
	x->info.net = zi->n.net != 0;
	x->info.started_ns = zi->n.started;
	snprintf(x->info.cell, sizeof(x->info.cell), ZONE_CELL_PARENT "/%s", x->info.name);
	/* Its name fitted when the zone was made, under the same state dir. */
	int r = snprintf(x->info.log, sizeof(x->info.log), "%s/%s.log", z->state_dir,
	                 x->info.name) >= (int)sizeof(x->info.log)
	            ? -ENAMETOOLONG
	            : 0;
	zone_log_init(&x->log);
	if (r == 0)
		r = zone_log_adopt(&x->log, z->loop, x->info.log, z->log_bytes, zi->log_pipe,
		                   zi->log_file, zi->n.log_size);
	else
		zone_in_close_logs(zi);
	zi->log_pipe = zi->log_file = -1; /* taken, or closed */
	*ret_r = r;
	if (r < 0) {
		free(x);
		return NULL;
	}
	return x;
}

/* A zone taken: tracked by r's child (0), listed; or forgotten (r < 0). */
static int zone_list_taken(struct zones *z, struct zone *x, struct zone_in *zi, int r)
{
	if (r < 0) {
		zone_log_close(&x->log, z->loop);
		zi->info.rpc_fd = x->info.rpc_fd; /* closed by the caller's give-up */
		free(x);
		return r;
	}
	zi->info.rpc_fd = -1; /* the zone's now */
	zone_addrs_hold(x, true);
	list_append(&z->list, &x->node);
	z->count++;
	return 0;
}

static int zone_take(struct zones *z, struct zone_in *zi)
{
	const char *why = zi->info.rpc_fd < 0 ? "no channel" : zone_in_check(z, zi);
	int r;
	if (why) {
		zone_give_up(z, zi, why);
		return 0;
	}
	struct zone *x = zone_of_record(z, zi, &r);
	if (x) {
		r = child_adopt(z->children, x->info.pid, zone_on_exit, x, &x->child);
		if (r == -ECHILD) /* a zone a kin that was killed ran: watched again */
			r = zone_watch_again(z, x);
		r = zone_list_taken(z, x, zi, r);
	}
	if (r < 0) {
		zone_give_up(z, zi,
		             r == -ECHILD ? "it is not this kin's child, nor that zone's kin"
		                          : strerror(-r));
		return 0;
	}
	return 1;
}

int zones_restore(struct zones *z, struct state_in *in, const struct state_field *f)
{
	struct state_r r;
	struct state_field g;
	int e, n = 0;
	state_get_record(f, &r);
	while ((e = state_next(&r, &g)) > 0) {
		if (g.tag == ZS_KEPT) {
			char path[PATH_MAX];
			/* Only our own logs: an old kin's list names nothing else. */
			if (state_get_str(&g, path, sizeof(path)) == 0 &&
			    str_startswith(path, z->state_dir) && !strstr(path, "/.."))
				zone_logs_keep(&z->kept, path);
			continue;
		}
		if (g.tag != ZS_ZONE)
			continue;
		struct zone_in zi;
		int k = zone_read(in, &g, &zi);
		if (k < 0)
			zone_give_up(z, &zi, "its record does not read");
		else
			n += zone_take(z, &zi);
	}
	if (n > 0)
		zones_keep_exe(z);
	return e < 0 ? e : n;
}

/* ---- after a kill: the successor adopts ---- */

/* Whether pid is the kin of zone cell: in the cell or below it (a zone
 * kin moves into a leaf), PID 1 of its own pid namespace (NSpid's last
 * field), and not a zombie. */
static bool is_zone_kin(struct zones *z, const char *cell, pid_t pid)
{
	char file[64];
	_cleanup_free_ char *st = NULL;
	size_t len;
	snprintf(file, sizeof(file), "/proc/%d/status", (int)pid);
	if (!cell_holds_below(z->cells, cell, pid) || file_read_small(file, 16384, &st, &len) < 0)
		return false;
	const char *ns = strstr(st, "\nNSpid:");
	const char *eol = ns ? strchr(ns + 1, '\n') : NULL;
	return eol && eol - ns > 3 && !strncmp(eol - 2, "\t1", 2) && !strstr(st, "\nState:\tZ") &&
	       !strstr(st, "\nState:\tX");
}

/* The channel: a new connection to the zone kin's reconnect socket. */
static int reconnect(const struct zones *z, const char *name, int *ret)
{
	struct sockaddr_un sa;
	int r = zone_reconnect_addr(z, name, &sa);
	if (r < 0)
		return r;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret = fd;
	return 0;
}

/* The log pipe a keeper held, by inode, and the log file appended to. */
static void adopt_logs(struct zones *z, struct zone_in *zi, int *kept, size_t nkept)
{
	struct stat st;
	char log[PATH_MAX];
	for (size_t i = 0; zi->n.log_ino && i < nkept; i++)
		if (fd_ino(kept[i]) == zi->n.log_ino) {
			zi->log_pipe = kept[i];
			kept[i] = -1;
			fd_set_nonblock(zi->log_pipe, true);
			break;
		}
	if (snprintf(log, sizeof(log), "%s/%s.log", z->state_dir, zi->info.name) < (int)sizeof(log))
		zi->log_file =
		    open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
	zi->n.log_size =
	    zi->log_file >= 0 && fstat(zi->log_file, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* One zone of a killed kin's record: adopted (1), or killed and removed. */
static int zone_adopt(struct zones *z, struct zone_in *zi, int *kept, size_t nkept)
{
	char cell[CELLS_PATH_MAX];
	const char *why = zone_in_check(z, zi);
	int pidfd = -1, r = 0;
	if (!why) {
		snprintf(cell, sizeof(cell), ZONE_CELL_PARENT "/%s", zi->info.name);
		/* The pidfd first: the checks below are then of this process. */
		pidfd = (int)syscall(SYS_pidfd_open, (pid_t)zi->n.pid, 0);
		if (pidfd < 0)
			why = "its kin has ended";
		else if (!is_zone_kin(z, cell, (pid_t)zi->n.pid))
			why = "its kin has ended, or its pid is another process's";
		else if ((r = reconnect(z, zi->info.name, &zi->info.rpc_fd)) < 0)
			why = r == -ENOENT ? "it has no reconnect socket" : strerror(-r);
	}
	if (why) {
		if (pidfd >= 0)
			close(pidfd);
		zone_give_up_as(z, zi, "adopt", why);
		return 0;
	}
	adopt_logs(z, zi, kept, nkept);
	zi->n.reconnect = 1; /* it listens there: a later successor connects again */
	struct zone *x = zone_of_record(z, zi, &r);
	if (x) {
		r = child_watch(z->children, x->info.pid, pidfd, zone_on_exit, x, &x->child);
		pidfd = -1; /* taken, or closed */
		r = zone_list_taken(z, x, zi, r);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (r < 0) {
		zone_give_up_as(z, zi, "adopt", strerror(-r));
		return 0;
	}
	if (x->log.src.fd < 0)
		log_warn("adopt: zone \"%s\": its log pipe was not kept; its output is lost",
		         x->info.name);
	else if (z->keeper.keep)
		z->keeper.keep(&x->log.src.fd, 1, z->keeper.data);
	log_info("adopt: zone \"%s\": kin pid %d adopted", x->info.name, (int)x->info.pid);
	return 1;
}

/* The cells zones/NAME no zone was adopted for, gathered (the visit must
 * not delete under itself); at most as many as a parent could make. */
struct strays {
	char path[ZONES_MAX][CELLS_PATH_MAX];
	size_t n;
	struct zones *z;
};

static int stray_note(const struct cell_info *info, void *data)
{
	struct strays *s = data;
	const char *name = info->path + STRLEN(ZONE_CELL_PARENT "/");
	if (info->depth == 2 && !zone_find(s->z, name) && s->n < ZONES_MAX)
		str_copy(s->path[s->n++], CELLS_PATH_MAX, info->path);
	return 0;
}

/* Killed and removed, each with a log line. */
static void strays_remove(struct zones *z)
{
	struct strays *s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->z = z;
	cell_list(z->cells, ZONE_CELL_PARENT, stray_note, s, NULL);
	for (size_t i = 0; i < s->n; i++) {
		log_warn("adopt: cell %s, left by the previous kin, is no zone it ran that could "
		         "be adopted: killed and removed",
		         s->path[i]);
		cell_kill(z->cells, s->path[i], NULL);
		cell_delete(z->cells, s->path[i], true, NULL, NULL, NULL);
	}
	free(s);
}

int zones_adopt(struct zones *z, const struct state_field *f, int *kept, size_t nkept)
{
	struct state_r r;
	struct state_field g;
	int e = 0, n = 0;
	if (f) {
		state_get_record(f, &r);
		while ((e = state_next(&r, &g)) > 0) {
			if (g.tag != ZS_ZONE)
				continue;
			struct zone_in zi;
			if (zone_read(NULL, &g, &zi) < 0)
				zone_give_up_as(z, &zi, "adopt", "its record does not read");
			else
				n += zone_adopt(z, &zi, kept, nkept);
		}
	}
	strays_remove(z);
	if (z->count == 0) /* none left: the zones cell goes too, as after the last zone */
		cell_delete(z->cells, ZONE_CELL_PARENT, true, NULL, NULL, NULL);
	return e < 0 ? e : n;
}
