/* tls internals shared by the gateway (gateway.c), kin ctl's relay child
 * (client.c) and tls_files_check: OpenSSL contexts built one way for
 * both sides (ctx.c), the byte relay between a TLS connection and a unix
 * socket (relay.c), and the gateway's sandbox (sandbox.c). Never included
 * by anything PID 1 links. */
#pragma once

#include "tls/tls.h"

#include <openssl/ssl.h>

/* ---- ctx.c ---------------------------------------------------------------- */

/* OpenSSL's one-time setup, never reading openssl.cnf (a gateway's
 * behaviour must not depend on the host's /etc/ssl). */
int tls_ossl_init(void);
/* The newest reason on OpenSSL's error queue ("PEM routines: no start
 * line"), or fallback when it is empty; empties the queue. */
void tls_ossl_reason(char *buf, size_t size, const char *fallback);
/* A context for one side: TLS 1.3 only, this side's cert and key (checked
 * to match), peers verified against files->ca (and files->crl), the
 * peer's certificate checked for its purpose (a client cert for a server,
 * a server cert for a client); a server also demands a client cert.
 * err names the file and OpenSSL's reason. */
int tls_ctx_new(const struct tls_files *files, bool server, SSL_CTX **ret_ctx, struct err *err);
/* What a verified certificate says about its holder: SAN URIs, SAN DNS
 * names, subject CNs, in that order, each prefixed; values that are not
 * printable ASCII without spaces, or too long, are skipped. */
void tls_identity_from_cert(X509 *cert, struct tls_identity *id);
/* Why a handshake failed: the verify result when the peer's certificate
 * was refused, else OpenSSL's reason. Empties the error queue. */
void tls_handshake_reason(SSL *ssl, char *buf, size_t size);

/* ---- relay.c -------------------------------------------------------------- */

#define TLS_RELAY_BUF (64 * 1024) /* plaintext held each way, per connection */

struct tls_relay;
/* The relay has ended (both sides closed, or one failed): the owner frees
 * it now or later, never touching it again in between. */
typedef void (*tls_relay_done_fn)(struct tls_relay *r, void *data);
/* Takes ssl (a finished handshake) and both non-blocking fds; registers
 * them with loop. */
int tls_relay_new(struct ev_loop *loop, SSL *ssl, int tcp_fd, int unix_fd, tls_relay_done_fn done,
                  void *data, struct tls_relay **ret);
/* Sends close_notify when the TLS side is still sound (best effort),
 * frees the SSL and closes both fds. NULL is fine. */
void tls_relay_free(struct tls_relay *r);

/* ---- sandbox.c ------------------------------------------------------------ */

/* no_new_privs, every capability dropped (bounding, ambient, effective,
 * permitted, inheritable) and the gateway's seccomp allow-list, whose
 * default kills the process. */
int tls_sandbox_enter(struct err *err);
