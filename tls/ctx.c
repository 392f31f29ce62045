/* ctx: the OpenSSL contexts of both sides, made one way (TLS 1.3 only,
 * mutual verification against one CA, an optional CRL, purposes
 * checked), what a verified certificate names, why a handshake failed,
 * and tls_files_check, which loads the files in a child so the caller
 * (kin, PID 1) never runs OpenSSL. */
#include "tls/tls-int.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#define FILES_CHECK_MS 5000 /* a child loading a few PEM files is done long before */

int tls_ossl_init(void)
{
	uint64_t opts = OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_LOAD_SSL_STRINGS |
	                OPENSSL_INIT_LOAD_CRYPTO_STRINGS;
	return OPENSSL_init_ssl(opts, NULL) == 1 ? 0 : -ENOMEM;
}

void tls_ossl_reason(char *buf, size_t size, const char *fallback)
{
	unsigned long e = ERR_peek_last_error();
	if (!e) {
		snprintf(buf, size, "%s", fallback);
		return;
	}
	const char *lib = ERR_lib_error_string(e), *reason = ERR_reason_error_string(e);
	if (lib && reason)
		snprintf(buf, size, "%s: %s", lib, reason);
	else
		ERR_error_string_n(e, buf, size);
	ERR_clear_error();
}

static int ctx_fail(struct err *err, const char *what, const char *path)
{
	char reason[256];
	/* OpenSSL says "system lib" for a file it cannot open: say why. */
	if (access(path, R_OK) < 0) {
		int e = errno;
		ERR_clear_error();
		return err_set(err, -e, ERR_INVALID_ARGUMENT, "tls %s %s: %s", what, path,
		               strerror(e));
	}
	tls_ossl_reason(reason, sizeof(reason), "unknown error");
	return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "tls %s %s: %s", what, path, reason);
}

/* Every CRL in the file into the store, and CRL checks of the peer's
 * certificate (its issuer's CRL only: one CA, one CRL). */
static int ctx_load_crl(SSL_CTX *ctx, const char *path, struct err *err)
{
	BIO *bio = BIO_new_file(path, "r");
	if (!bio)
		return ctx_fail(err, "crl", path);
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	size_t n = 0;
	X509_CRL *crl;
	while ((crl = PEM_read_bio_X509_CRL(bio, NULL, NULL, NULL))) {
		int ok = X509_STORE_add_crl(store, crl);
		X509_CRL_free(crl);
		if (!ok) {
			BIO_free(bio);
			return ctx_fail(err, "crl", path);
		}
		n++;
	}
	BIO_free(bio);
	if (n == 0)
		return ctx_fail(err, "crl", path);
	ERR_clear_error(); /* the end of the file is a PEM "no start line" */
	X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
	return 0;
}

static int ctx_setup(SSL_CTX *ctx, const struct tls_files *f, bool server, struct err *err)
{
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_options(ctx,
	                    SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	/* The relay retries SSL_write from a buffer that may have moved, and
	 * idle connections give their record buffers back. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (server) {
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
		SSL_CTX_set_num_tickets(ctx, 0);
	}
	if (!f->cert || !f->key || !f->ca)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "tls: a certificate, its key and a CA file are all needed");
	if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1)
		return ctx_fail(err, "certificate", f->cert);
	if (SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1)
		return ctx_fail(err, "key", f->key);
	if (SSL_CTX_check_private_key(ctx) != 1)
		return ctx_fail(err, "key", f->key);
	if (SSL_CTX_load_verify_locations(ctx, f->ca, NULL) != 1)
		return ctx_fail(err, "ca", f->ca);
	if (server) {
		/* Tells clients which CA to pick a certificate for. */
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(f->ca);
		if (!names)
			return ctx_fail(err, "ca", f->ca);
		SSL_CTX_set_client_CA_list(ctx, names);
	}
	if (f->crl && ctx_load_crl(ctx, f->crl, err) < 0)
		return err->errnum;
	SSL_CTX_set_purpose(ctx, server ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER);
	SSL_CTX_set_verify(
	    ctx, server ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER,
	    NULL);
	SSL_CTX_set_verify_depth(ctx, 8);
	return 0;
}

int tls_ctx_new(const struct tls_files *files, bool server, SSL_CTX **ret_ctx, struct err *err)
{
	struct err local = {0};
	if (!err)
		err = &local;
	int r = tls_ossl_init();
	if (r < 0)
		return err_set(err, r, ERR_INTERNAL, "tls: OpenSSL cannot start");
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!ctx)
		return ctx_fail(err, "context", server ? "(server)" : "(client)");
	r = ctx_setup(ctx, files, server, err);
	if (r < 0) {
		SSL_CTX_free(ctx);
		return r;
	}
	*ret_ctx = ctx;
	return 0;
}

/* One name into id when it is fit to be one (printable, no space, fits). */
static void identity_add(struct tls_identity *id, const char *prefix, const unsigned char *s,
                         int len)
{
	if (id->n_names >= TLS_NAMES_MAX || len <= 0 || len > TLS_NAME_MAX)
		return;
	for (int i = 0; i < len; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return;
	snprintf(id->names[id->n_names++], sizeof(id->names[0]), "%s%.*s", prefix, len,
	         (const char *)s);
}

static void identity_sans(X509 *cert, int type, const char *prefix, struct tls_identity *id)
{
	GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	if (!sans)
		return;
	for (int i = 0; i < sk_GENERAL_NAME_num(sans); i++) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		if (g->type != type)
			continue;
		ASN1_IA5STRING *s = type == GEN_URI ? g->d.uniformResourceIdentifier : g->d.dNSName;
		identity_add(id, prefix, ASN1_STRING_get0_data(s), ASN1_STRING_length(s));
	}
	GENERAL_NAMES_free(sans);
}

void tls_identity_from_cert(X509 *cert, struct tls_identity *id)
{
	id->n_names = 0;
	identity_sans(cert, GEN_URI, "uri:", id);
	identity_sans(cert, GEN_DNS, "dns:", id);
	X509_NAME *subject = X509_get_subject_name(cert);
	for (int i = -1; subject;) {
		i = X509_NAME_get_index_by_NID(subject, NID_commonName, i);
		if (i < 0)
			break;
		ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
		identity_add(id, "cn:", ASN1_STRING_get0_data(s), ASN1_STRING_length(s));
	}
}

void tls_handshake_reason(SSL *ssl, char *buf, size_t size)
{
	long v = SSL_get_verify_result(ssl);
	if (v != X509_V_OK) {
		snprintf(buf, size, "peer certificate: %s", X509_verify_cert_error_string(v));
		ERR_clear_error();
		return;
	}
	tls_ossl_reason(buf, size, "connection closed during the handshake");
}

/* ---- tls_files_check --------------------------------------------------------- */

/* The child: loads the files, writes the error sentence (nothing when
 * they are good) and exits. */
static _noreturn_ void files_check_child(const struct tls_files *files, bool server, int fd)
{
	struct err e = {0};
	SSL_CTX *ctx = NULL;
	int r = tls_ctx_new(files, server, &ctx, &e);
	if (r < 0)
		(void)write_all(fd, e.msg, strnlen(e.msg, sizeof(e.msg)));
	_exit(r < 0 ? 1 : 0);
}

int tls_files_check(const struct tls_files *files, bool server, struct err *err)
{
	struct spawn_opts o = {.cgroup_fd = -1};
	struct spawn_proc p;
	int r = spawn_clone(&o, &p);
	if (r < 0)
		return err_set_errno(err, r, "tls: checking the files: cannot start a child");
	if (r == 0) {
		spawn_signals_reset(SPAWN_MASK_EMPTY);
		files_check_child(files, server, p.report_fd);
	}
	_cleanup_close_ int pidfd = p.pidfd, rfd = p.report_fd;
	char msg[ERR_MSG_MAX];
	size_t len = 0;
	uint64_t deadline = now_monotonic_ns() + (uint64_t)FILES_CHECK_MS * 1000000;
	for (;;) {
		uint64_t now = now_monotonic_ns();
		if (now >= deadline) {
			spawn_kill_and_reap(pidfd);
			return err_set(err, -ETIMEDOUT, ERR_DEADLINE_EXCEEDED,
			               "tls: checking the files took over %d ms", FILES_CHECK_MS);
		}
		struct pollfd pfd = {.fd = rfd, .events = POLLIN};
		int n = poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1);
		if (n < 0 && errno != EINTR)
			return err_set_errno(err, -errno, "tls: checking the files: poll");
		if (n <= 0)
			continue;
		ssize_t k = read(rfd, msg + len, sizeof(msg) - 1 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (len += (size_t)k) == sizeof(msg) - 1)
			break; /* EOF: the child has exited (or is about to) */
	}
	msg[len] = '\0';
	/* The write end closed, so the child is past its work: reap it. */
	siginfo_t si;
	r = spawn_pidfd_wait(pidfd, &si, WEXITED);
	if (r < 0)
		return err_set_errno(err, r, "tls: checking the files: waiting for the child");
	if (si.si_code == CLD_EXITED && si.si_status == 0 && len == 0)
		return 0;
	if (len > 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s", msg);
	return err_set(err, -EIO, ERR_INTERNAL,
	               "tls: checking the files: the child died (status %d)",
	               child_status_code(&si));
}
