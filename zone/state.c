/* state: the zones handed over across a re-exec of kin (zone.h "re-exec",
 * lib/state.h). A zone kin is this kin's child throughout: the next kin
 * tracks it again by pid, still unreaped, and takes its channel, its log
 * pipe and file and its addresses as they were. Tags are never reused. */
#include "zone/zone-int.h"
#include "lib/state.h"

#include <stdio.h>
#include <string.h>

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

static void zone_save(const struct zone *x, struct state_w *w)
{
	size_t at = state_open(w, ZS_ZONE);
	state_put_str(w, Z_NAME, x->info.name);
	state_put_u64(w, Z_PID, (uint64_t)x->info.pid);
	state_put_u64(w, Z_DEPTH, x->info.depth);
	state_put_u64(w, Z_NET, x->info.net);
	state_put_str(w, Z_HOST_IF, x->info.host_if);
	state_put_str(w, Z_ADDR, x->info.addr);
	state_put_str(w, Z_GATEWAY, x->info.gateway);
	state_put_str(w, Z_SUBNET, x->info.subnet);
	state_put_fd(w, Z_RPC_FD, x->info.rpc_fd);
	state_put_u64(w, Z_STARTED, x->info.started_ns);
	state_put_u64(w, Z_SLOT, x->slot);
	state_put_i64(w, Z_DELEG, x->deleg);
	state_put_fd(w, Z_LOG_PIPE, x->log.src.fd);
	state_put_fd(w, Z_LOG_FILE, x->log.file_fd);
	state_put_u64(w, Z_LOG_SIZE, x->log.size);
	state_close(w, at);
}

void zones_save(struct zones *z, struct state_w *w, uint16_t tag)
{
	size_t at = state_open(w, tag);
	const struct zone *x;
	list_for_each(x, &z->list, node)
		zone_save(x, w);
	for (unsigned i = 0; i < z->kept.n; i++)
		state_put_str(w, ZS_KEPT, z->kept.path[i]);
	state_close(w, at);
}

/* ---- the next kin's side ---- */

struct zone_in {
	struct zone_info info;
	uint64_t pid, depth, net, started, slot, log_size;
	int64_t deleg;
	int log_pipe, log_file;
};

static int zone_read(struct state_in *in, const struct state_field *f, struct zone_in *zi)
{
	struct state_r r;
	struct state_field g;
	int e = 0;
	*zi = (struct zone_in){.info = {.rpc_fd = -1}, .deleg = -1, .log_pipe = -1, .log_file = -1};
	state_get_record(f, &r);
	while (e == 0 && (e = state_next(&r, &g)) > 0) {
		e = 0;
		switch (g.tag) {
		case Z_NAME:
			e = state_get_str(&g, zi->info.name, sizeof(zi->info.name));
			break;
		case Z_PID:
			e = state_get_u64(&g, &zi->pid);
			break;
		case Z_DEPTH:
			e = state_get_u64(&g, &zi->depth);
			break;
		case Z_NET:
			e = state_get_u64(&g, &zi->net);
			break;
		case Z_HOST_IF:
			e = state_get_str(&g, zi->info.host_if, sizeof(zi->info.host_if));
			break;
		case Z_ADDR:
			e = state_get_str(&g, zi->info.addr, sizeof(zi->info.addr));
			break;
		case Z_GATEWAY:
			e = state_get_str(&g, zi->info.gateway, sizeof(zi->info.gateway));
			break;
		case Z_SUBNET:
			e = state_get_str(&g, zi->info.subnet, sizeof(zi->info.subnet));
			break;
		case Z_RPC_FD:
			if (zi->info.rpc_fd < 0)
				e = state_get_fd(in, &g, &zi->info.rpc_fd);
			break;
		case Z_STARTED:
			e = state_get_u64(&g, &zi->started);
			break;
		case Z_SLOT:
			e = state_get_u64(&g, &zi->slot);
			break;
		case Z_DELEG:
			e = state_get_i64(&g, &zi->deleg);
			break;
		case Z_LOG_PIPE:
			if (zi->log_pipe < 0)
				e = state_get_fd(in, &g, &zi->log_pipe);
			break;
		case Z_LOG_FILE:
			if (zi->log_file < 0)
				e = state_get_fd(in, &g, &zi->log_file);
			break;
		case Z_LOG_SIZE:
			e = state_get_u64(&g, &zi->log_size);
			break;
		}
	}
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
	if (!zi->net && zi->info.host_if[0])
		return "a link without a network";
	if (zone_find((struct zones *)z, zi->info.name))
		return "a second zone of that name";
	if (z->count >= ZONES_MAX)
		return "one zone too many";
	if (!zi->pid || zi->pid > INT32_MAX || zi->pid == (uint64_t)getpid())
		return "no valid pid";
	if (zi->depth != z->depth + 1)
		return "another depth";
	if (zi->info.rpc_fd < 0)
		return "no channel";
	bool net = zi->net != 0;
	if (net && (!z->has_subnet || zi->slot >= zone_subnet_links(z->subnet_prefix) ||
	            !str_startswith(zi->info.host_if, "kz")))
		return "a link outside this kin's subnet";
	if (zi->deleg >= 0 && (!z->has_subnet || zi->deleg >= (int64_t)ZONE_SUBNET_DELEGATIONS ||
	                       (uint64_t)zi->deleg >= zone_subnet_delegations(z->subnet_prefix)))
		return "a delegation outside this kin's subnet";
	if (zi->deleg < -1)
		return "a bad delegation";
	const struct zone *x;
	list_for_each(x, &z->list, node) {
		if ((net && x->info.net && x->slot == zi->slot) ||
		    (zi->deleg >= 0 && x->deleg == zi->deleg))
			return "an address another zone holds";
	}
	return NULL;
}

/* A zone that cannot be taken back: its kin and everything in its cell
 * die (cgroup.kill), the cell goes once empty, its veth with it. */
static void zone_give_up(struct zones *z, struct zone_in *zi, const char *why)
{
	char cell[CELLS_PATH_MAX];
	/* Not the cell of a name held already: that one is another zone's. */
	bool kill = name_is_valid(zi->info.name) && !zone_find(z, zi->info.name);
	log_error("re-exec: zone \"%.64s\" (pid %llu) cannot be taken over: %s%s", zi->info.name,
	          (unsigned long long)zi->pid, why, kill ? "; killed" : "");
	zone_in_close(zi);
	if (!kill)
		return;
	snprintf(cell, sizeof(cell), ZONE_CELL_PARENT "/%s", zi->info.name);
	cell_kill(z->cells, cell, NULL);
	cell_delete(z->cells, cell, true, NULL, NULL, NULL);
}

static int zone_take(struct zones *z, struct zone_in *zi)
{
	const char *why = zone_in_check(z, zi);
	if (why) {
		zone_give_up(z, zi, why);
		return 0;
	}
	struct zone *x = calloc(1, sizeof(*x));
	if (!x) {
		zone_give_up(z, zi, "out of memory");
		return 0;
	}
	*x = (struct zone){.z = z,
	                   .timer = {.fd = -1},
	                   .report = {.fd = -1},
	                   .slot = (uint32_t)zi->slot,
	                   .deleg = (int)zi->deleg};
	x->info = zi->info;
	x->info.state = ZONE_RUNNING;
	x->info.pid = (pid_t)zi->pid;
	x->info.depth = (unsigned)zi->depth;
	x->info.net = zi->net != 0;
	x->info.started_ns = zi->started;
	snprintf(x->info.cell, sizeof(x->info.cell), ZONE_CELL_PARENT "/%s", x->info.name);
	/* Its name fitted when the zone was made, under the same state dir. */
	int r = snprintf(x->info.log, sizeof(x->info.log), "%s/%s.log", z->state_dir,
	                 x->info.name) >= (int)sizeof(x->info.log)
	            ? -ENAMETOOLONG
	            : 0;
	zone_log_init(&x->log);
	if (r == 0)
		r = zone_log_adopt(&x->log, z->loop, x->info.log, z->log_bytes, zi->log_pipe,
		                   zi->log_file, zi->log_size);
	else
		zone_in_close_logs(zi);
	zi->log_pipe = zi->log_file = -1; /* taken, or closed */
	if (r == 0)
		r = child_adopt(z->children, x->info.pid, zone_on_exit, x, &x->child);
	if (r < 0) {
		zone_log_close(&x->log, z->loop);
		zi->info = x->info; /* the rpc fd, closed there */
		free(x);
		zone_give_up(z, zi, r == -ECHILD ? "it is not this kin's child" : strerror(-r));
		return 0;
	}
	zi->info.rpc_fd = -1; /* the zone's now */
	list_append(&z->list, &x->node);
	z->count++;
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
	return e < 0 ? e : n;
}
