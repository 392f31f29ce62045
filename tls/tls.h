/* tls: kin's RPC over TCP with mutual TLS (OpenSSL 3, TLS 1.3 only, a
 * client certificate required and verified against the CA: chain,
 * validity, key usage, an optional CRL; no anonymous or PSK modes).
 *
 * The handshake and record layer never run in PID 1. kin binds the TCP
 * socket and starts a child of itself in the gateway role (tls_gateway_run)
 * with that listening socket and a SOCK_SEQPACKET control socket. For each
 * peer that completes a handshake, the gateway makes a unix socketpair,
 * hands one end to kin over the control socket (SCM_RIGHTS) with the
 * identity it verified (tls_handoff_*), and relays plaintext between the
 * TLS connection and its own end. kin serves that end as one more RPC
 * connection. A crash in TLS parsing ends only the gateway: kin restarts
 * it; unix, vsock and handed-over connections whose gateway died end, the
 * rest go on.
 *
 * The client side (kin ctl --connect tls:HOST:PORT) is the same relay the
 * other way round, in a child of the client (tls_client_open).
 *
 * Split so PID 1 never touches OpenSSL's pages: handoff.c and serve.c (kin's
 * end: the sockets, the handovers, the re-exec record; no OpenSSL) are
 * what kin links into its loop; gateway.c and client.c use OpenSSL. */
#pragma once

#include "lib/lib.h"

#include <sys/types.h>

#define TLS_HANDSHAKE_MS_DEFAULT   10000 /* a handshake not done by then is cut */
#define TLS_MAX_CONNS_DEFAULT      1024  /* TLS connections at once */
#define TLS_MAX_HANDSHAKES_DEFAULT 64    /* handshakes in progress at once */
#define TLS_RELOAD_CHECK_MS        2000  /* how often the files' mtimes are looked at */

struct tls_files {
	const char *cert; /* PEM: this side's certificate (chain) */
	const char *key;  /* PEM: its private key */
	const char *ca;   /* PEM: the CA(s) the peer's certificate must chain to */
	const char *crl;  /* PEM CRL of that CA, or NULL */
};

/* ---- handoff: gateway -> kin (handoff.c, no OpenSSL) ---------------------------- */

#define TLS_NAMES_MAX   16  /* identities one peer carries (SAN URIs, DNS names, CN) */
#define TLS_NAME_MAX    255 /* bytes of one, after its "uri:"/"dns:"/"cn:" prefix */
#define TLS_HANDOFF_MAX 8192

/* What the gateway verified about a peer. names: "uri:spiffe://x/y",
 * "dns:ops.example", "cn:ops" (printable ASCII, no spaces). */
struct tls_identity {
	char peer[64]; /* "192.0.2.1:40000", "[2001:db8::1]:40000" */
	size_t n_names;
	char names[TLS_NAMES_MAX][TLS_NAME_MAX + 5];
};
/* Sends fd (the caller keeps it) and id as one message. */
int tls_handoff_send(int control_fd, int fd, const struct tls_identity *id);
/* Receives one: 1 and *ret_fd (O_CLOEXEC, the caller's) + *ret_id; 0 when
 * the control socket is closed; -EAGAIN nothing there (non-blocking); -EBADMSG
 * a message that is not a valid handoff (any fd that came with it closed);
 * -errno else. Never trusts the bytes: every field checked. */
int tls_handoff_recv(int control_fd, int *ret_fd, struct tls_identity *ret_id);
/* The parse of a message's bytes, alone (fuzzed). */
int tls_handoff_parse(const uint8_t *buf, size_t len, struct tls_identity *ret_id);

/* ---- the gateway role (gateway.c) ------------------------------------------------ */

struct tls_gateway_config {
	int listen_fd;  /* a listening TCP socket (IPv4 or IPv6) kin bound */
	int control_fd; /* SOCK_SEQPACKET to kin; its close ends the gateway */
	struct tls_files files;
	unsigned max_conns;      /* 0: TLS_MAX_CONNS_DEFAULT */
	unsigned max_handshakes; /* 0: TLS_MAX_HANDSHAKES_DEFAULT */
	unsigned handshake_ms;   /* 0: TLS_HANDSHAKE_MS_DEFAULT */
};
/* Loads the files (an error names the file and what is wrong with it),
 * drops every capability, sets no_new_privs and its seccomp filter, then
 * serves until control_fd closes. SIGHUP, or a change of a file's mtime,
 * reloads the files for new handshakes; a bad new file is refused with a
 * log line naming it and the old ones stay. Returns an exit code. */
int tls_gateway_run(const struct tls_gateway_config *cfg);
/* `kin gateway --cert F --key F --ca F [--crl F] [--handshake-ms N]`: the
 * role's entry, with fds 3 and 4 as tls_serve passes them; an exit code. */
int tls_gateway_main(int argc, char **argv);
/* Checks the files as the gateway would load them (for kin's options:
 * refusing a bad --tls-cert before anything starts), in a child process
 * so OpenSSL never runs in the caller. 0, or -errno with err naming
 * file and cause. */
int tls_files_check(const struct tls_files *files, bool server, struct err *err);

/* ---- kin's end of the gateway (serve.c, no OpenSSL) ------------------------------------ */

/* "A.B.C.D:PORT" or "[V6]:PORT" (port 1-65535) into ret (NULL: only
 * checks). -EINVAL if malformed. */
struct sockaddr_storage;
int tls_addr_parse(const char *s, struct sockaddr_storage *ret);

#define TLS_GATEWAY_STOP_MS 5000 /* a gateway stopped: SIGTERM, then SIGKILL */

struct tls_serve_config {
	const char *listen;     /* "ADDR:PORT" (tls_addr_parse) */
	struct tls_files files; /* the gateway's */
	unsigned handshake_ms;  /* 0: the gateway's default */
};

/* What kin's end asks of its owner: to run the gateway (kin's runs it as
 * an executable of cells, restarted with cells' own policy and backoff)
 * and to take the connections it hands over. */
struct tls_serve_ops {
	/* Starts the gateway: argv run as /proc/self/exe with fds[0] (the
	 * listening socket) and fds[1] (its end of the control socket) as
	 * fds 3 and 4, restarted with them whenever it ends (the runner holds
	 * copies: the caller closes its own). < 0: not started (logged). */
	int (*start)(void *data, char *const *argv, const int fds[2]);
	/* Ends a run of it (SIGTERM, SIGKILL after grace_ms; 0: at once): 1
	 * while one is ending (report: tls_serve_ended is called once it
	 * did), 0 when none runs, < 0 on error. */
	int (*stop)(void *data, uint64_t grace_ms, bool report);
	/* 1 when a gateway runs (*ret_pid), 0 when one stopped or is stopping
	 * (*ret_pid its last), < 0 none (*ret_pid 0). */
	int (*status)(void *data, pid_t *ret_pid);
	void (*signal)(void *data, int sig);
	/* Its output from now on into kin's log (after a start, a takeover). */
	void (*follow)(void *data);
	/* A connection the gateway handed over, with the identity it
	 * verified: the owner's (its to close). */
	void (*conn)(void *data, int fd, const struct tls_identity *id);
	void *data;
};

struct tls_serve;
struct state_in;
struct state_field;
struct state_w;
/* kin's end, nothing started yet. */
int tls_serve_new(const struct tls_serve_config *cfg, const struct tls_serve_ops *ops,
                  struct ev_loop *loop, struct tls_serve **ret);
/* Listens and starts the gateway, or takes both over from a re-exec's
 * record (in and carried, tls_serve_save's; NULL: a fresh start, files
 * checked by the caller). < 0: not listening (logged). */
int tls_serve_start(struct tls_serve *ts, struct state_in *in, const struct state_field *carried);
/* The record for a re-exec: the listening and control sockets (nothing
 * when stopping); the gateway goes along with its runner. */
void tls_serve_save(const struct tls_serve *ts, struct state_w *w, uint16_t tag);
/* The runner's report (stop with report): an earlier run ended (result:
 * -ECANCELED when that stop was called off); the gateway starts. */
void tls_serve_ended(struct tls_serve *ts, int result);
void tls_serve_reload(struct tls_serve *ts); /* SIGHUP to the gateway: new files */
void tls_serve_stop(struct tls_serve *ts);   /* no more connections; the gateway ends */
void tls_serve_free(struct tls_serve *ts);

/* ---- the client side (client.c) ---------------------------------------------------- */

struct tls_client_config {
	const char *host;        /* name or address literal (IPv6 without brackets) */
	const char *port;        /* "7443" */
	const char *server_name; /* checked against the server certificate; NULL: host */
	struct tls_files files;  /* this client's cert/key, the CA of the server */
	int timeout_ms;          /* connect + handshake */
};
/* Connects, handshakes and verifies the server, then forks a relay child:
 * *ret_fd is a unix socket end speaking plaintext ttrpc to the server
 * (the caller's), *ret_pid the relay (it ends when either side closes;
 * the caller reaps it). -errno with err naming the cause ("server
 * certificate: unable to get local issuer certificate", "handshake:
 * timed out after 5000 ms", "connect 127.0.0.1:7443: Connection refused"). */
int tls_client_open(const struct tls_client_config *cfg, int *ret_fd, pid_t *ret_pid,
                    struct err *err);
