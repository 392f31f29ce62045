/* nonss: kin makes no NSS lookups (DESIGN: a static glibc binary cannot load
 * NSS modules reliably, and PID 1 must not depend on /etc/nsswitch.conf or
 * the network to start). The libraries kin links reference a few NSS
 * functions on paths kin never takes (libnl's name resolution, libblkid's
 * user lookups). These definitions answer "not found" so that such a path,
 * if ever taken, fails cleanly; they also keep glibc's NSS, resolver and
 * dlopen machinery out of the binary, which is most of its idle RSS. */
#include <errno.h>
#include <grp.h>
#include <locale.h>
#include <netdb.h>
#include <pwd.h>
#include <stddef.h>

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
	(void)node, (void)service, (void)hints;
	*res = NULL;
	return EAI_FAIL;
}

void freeaddrinfo(struct addrinfo *res)
{
	(void)res;
}

int getnameinfo(const struct sockaddr *sa, socklen_t salen, char *host, socklen_t hostlen,
                char *serv, socklen_t servlen, int flags)
{
	(void)sa, (void)salen, (void)host, (void)hostlen, (void)serv, (void)servlen, (void)flags;
	return EAI_FAIL;
}

/* OpenSSL's BIO_gethostbyname (libcrypto's bio_sock.c, a path the TLS
 * gateway never takes: kin binds the socket) would otherwise bring all of
 * glibc's NSS into the static binary. */
struct hostent *gethostbyname(const char *name)
{
	(void)name;
	h_errno = HOST_NOT_FOUND;
	return NULL;
}

struct protoent *getprotobyname(const char *name)
{
	(void)name;
	return NULL;
}

struct protoent *getprotobynumber(int proto)
{
	(void)proto;
	return NULL;
}

struct passwd *getpwuid(uid_t uid)
{
	(void)uid;
	errno = ENOENT;
	return NULL;
}

int getpwuid_r(uid_t uid, struct passwd *pwd, char *buf, size_t len, struct passwd **result)
{
	(void)uid, (void)pwd, (void)buf, (void)len;
	*result = NULL;
	return 0;
}

int getpwnam_r(const char *name, struct passwd *pwd, char *buf, size_t len, struct passwd **result)
{
	(void)name, (void)pwd, (void)buf, (void)len;
	*result = NULL;
	return 0;
}

struct group *getgrgid(gid_t gid)
{
	(void)gid;
	errno = ENOENT;
	return NULL;
}

int getgrnam_r(const char *name, struct group *grp, char *buf, size_t len, struct group **result)
{
	(void)name, (void)grp, (void)buf, (void)len;
	*result = NULL;
	return 0;
}
