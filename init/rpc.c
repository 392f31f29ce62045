/* rpc: init's side of the RPC server — which sockets a role listens on
 * and which listen failures stop kin. The server itself is rpc/, its
 * services api/ (init → api → rpc, never back). */
#include "init/init.h"
#include "rpc/rpc.h"
#include "api/api.h"

#include <string.h>

static int server_new(const struct init_config *cfg, struct ev_loop *loop, struct rpc_server **ret)
{
	struct rpc_server_config scfg;
	rpc_server_config_defaults(&scfg);
	if (cfg->rpc.max_conns)
		scfg.max_conns = cfg->rpc.max_conns;
	if (cfg->rpc.frame_timeout_ms)
		scfg.frame_timeout_ms = cfg->rpc.frame_timeout_ms;
	/* Others may connect when a policy may let them in (init/auth.c). */
	scfg.socket_open = init_auth_socket_open(&cfg->rpc);
	/* Many connections need many fds; the soft limit is often 1024. */
	fd_limit_raise((unsigned long)scfg.max_conns + 256);
	int r = rpc_server_new(loop, &scfg, ret);
	if (r == 0 && (r = rpc_route_names_set(*ret, &api_route_names)) < 0) {
		rpc_server_free(*ret); /* "vm/NAME" is one hop: api/'s grammar */
		*ret = NULL;
	}
	return r;
}

int init_rpc_serve_handed(const struct init_config *cfg, struct ev_loop *loop,
                          const struct rpc_listen_fd *l, size_t n, bool keep,
                          struct rpc_server **ret)
{
	struct rpc_server *s;
	*ret = NULL;
	int r = server_new(cfg, loop, &s);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			close(l[i].fd);
		log_error("rpc: cannot create the server: %s", strerror(-r));
		return r;
	}
	size_t listening = 0;
	for (size_t i = 0; i < n; i++) {
		r = rpc_server_listen_handed(s, &l[i]);
		if (r < 0)
			log_error("rpc: cannot serve the handed-over %s socket %s: %s",
			          l[i].transport == RPC_TRANSPORT_VSOCK ? "vsock" : "unix",
			          l[i].path, strerror(-r));
		else
			listening++;
	}
	if (!listening && !keep) {
		rpc_server_free(s);
		return 0;
	}
	*ret = s;
	return 0;
}

int init_rpc_start(const struct init_config *cfg, enum init_role role, struct ev_loop *loop,
                   struct rpc_server **ret)
{
	struct rpc_server *s;
	bool explicit = cfg->rpc.socket[0] != '\0';
	/* A container init is tini: no socket unless asked (its /run may be
	 * the host's). The vsock port is machine-wide: only machine init
	 * takes the default; nested kins would fight over it. */
	const char *path = explicit                      ? cfg->rpc.socket
	                   : role == INIT_ROLE_CONTAINER ? "none"
	                                                 : RPC_SOCKET_DEFAULT;
	uint32_t vsock = cfg->rpc.vsock_set          ? cfg->rpc.vsock_port
	                 : role == INIT_ROLE_MACHINE ? RPC_VSOCK_PORT_DEFAULT
	                                             : 0;
	bool want_unix = strcmp(path, "none") != 0;
	int r, listening = 0;

	*ret = NULL;
	if (!want_unix && !vsock && !cfg->rpc_fd)
		return 0;
	r = server_new(cfg, loop, &s);
	if (r < 0) {
		log_error("rpc: cannot create the server: %s", strerror(-r));
		return role == INIT_ROLE_DAEMON && explicit ? r : 0;
	}
	if (want_unix) {
		r = rpc_server_listen_unix(s, path);
		if (r < 0) {
			log_error("rpc: cannot listen on %s: %s%s", path, strerror(-r),
			          r == -EADDRINUSE ? " (another kin serves there)" : "");
			if (role == INIT_ROLE_DAEMON && explicit) {
				rpc_server_free(s);
				return r;
			}
		} else {
			log_info("rpc: listening on %s", path);
			listening++;
		}
	}
	if (vsock) {
		r = rpc_server_listen_vsock(s, vsock);
		if (r == -EAFNOSUPPORT)
			log_info("rpc: no vsock in this kernel; not listening on vsock port %u",
			         vsock);
		else if (r < 0)
			log_warn("rpc: cannot listen on vsock port %u: %s", vsock, strerror(-r));
		else {
			log_info("rpc: listening on vsock port %u", vsock);
			listening++;
		}
	}
	if (cfg->rpc_fd) {
		/* The parent kin's end of a socketpair: it made us, it may call. */
		struct rpc_peer peer = {.transport = RPC_TRANSPORT_OTHER,
		                        .allowed = true,
		                        .superuser = true,
		                        .relay_hop = true,
		                        .carry =
		                            true}; /* its only channel up: kept across a re-exec */
		fd_set_cloexec(cfg->rpc_fd, true); /* not for our workload */
		r = rpc_server_add_conn(s, cfg->rpc_fd, &peer);
		if (r < 0)
			log_error("rpc: cannot serve fd %d: %s", cfg->rpc_fd, strerror(-r));
		else {
			log_info("rpc: serving the parent's channel on fd %d", cfg->rpc_fd);
			listening++;
		}
	}
	if (cfg->parent_listen_fd) {
		fd_set_cloexec(cfg->parent_listen_fd, true);
		r = rpc_server_listen_parent(s, cfg->parent_listen_fd);
		if (r < 0)
			log_error("rpc: cannot listen for the parent's successor on fd %d: %s",
			          cfg->parent_listen_fd, strerror(-r));
	}
	if (!listening) {
		rpc_server_free(s);
		return 0;
	}
	*ret = s;
	return 0;
}
