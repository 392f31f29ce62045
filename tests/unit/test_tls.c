/* tls/handoff: the parse refuses every malformed message, and a handoff
 * goes over a real seqpacket pair with its fd (a bad one arrives closed). */
#include "unit.h"

#include "tls/tls.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

static int parse(const char *s, struct tls_identity *id)
{
	return tls_handoff_parse((const uint8_t *)s, strlen(s), id);
}

TEST(tls_handoff_parse)
{
	struct tls_identity id;
	CHECK_EQ(parse("kin-tls-handoff 1\npeer 192.0.2.1:40000\nname cn:ops\n"
	               "name uri:spiffe://x/y\nname dns:a.b\n",
	               &id),
	         0);
	CHECK_STR(id.peer, "192.0.2.1:40000");
	CHECK_EQ(id.n_names, 3);
	CHECK_STR(id.names[0], "cn:ops");
	CHECK_STR(id.names[1], "uri:spiffe://x/y");
	CHECK_STR(id.names[2], "dns:a.b");
	CHECK_EQ(parse("kin-tls-handoff 1\npeer [::1]:1\n", &id), 0);
	CHECK_EQ(id.n_names, 0);

	static const char *const bad[] = {
	    "",
	    "kin-tls-handoff 2\npeer a:1\n",
	    "kin-tls-handoff 1\n",                            /* no peer */
	    "kin-tls-handoff 1\npeer a:1",                    /* no newline */
	    "kin-tls-handoff 1\npeer \n",                     /* empty peer */
	    "kin-tls-handoff 1\npeer a b\n",                  /* space */
	    "kin-tls-handoff 1\npeer a:1\npeer b:1\n",        /* twice */
	    "kin-tls-handoff 1\nname cn:x\npeer a:1\n",       /* name first */
	    "kin-tls-handoff 1\npeer a:1\nname ip:1.2.3.4\n", /* unknown kind */
	    "kin-tls-handoff 1\npeer a:1\nname cn:\n",        /* empty name */
	    "kin-tls-handoff 1\npeer a:1\nname cn:a b\n",
	    "kin-tls-handoff 1\npeer a:1\nname cn:a\x7f\n",
	    "kin-tls-handoff 1\npeer a:1\nextra x\n",
	    "kin-tls-handoff 1\npeer a:1\n\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(parse(bad[i], &id), -EBADMSG);
	CHECK_EQ(tls_handoff_parse((const uint8_t *)"kin-tls-handoff 1\npeer a:1\0\n", 28, &id),
	         -EBADMSG);

	char buf[TLS_HANDOFF_MAX + 64];
	int n = snprintf(buf, sizeof(buf), "kin-tls-handoff 1\npeer a:1\n");
	for (int i = 0; i < TLS_NAMES_MAX; i++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "name cn:%d\n", i);
	CHECK_EQ(parse(buf, &id), 0);
	CHECK_EQ(id.n_names, TLS_NAMES_MAX);
	snprintf(buf + n, sizeof(buf) - (size_t)n, "name cn:one-too-many\n");
	CHECK_EQ(parse(buf, &id), -EBADMSG);

	char longname[TLS_NAME_MAX + 2];
	memset(longname, 'a', sizeof(longname));
	longname[TLS_NAME_MAX] = '\0';
	snprintf(buf, sizeof(buf), "kin-tls-handoff 1\npeer a:1\nname uri:%s\n", longname);
	CHECK_EQ(parse(buf, &id), 0);
	CHECK_EQ(strlen(id.names[0]), TLS_NAME_MAX + 4);
	longname[TLS_NAME_MAX] = 'a';
	longname[TLS_NAME_MAX + 1] = '\0';
	snprintf(buf, sizeof(buf), "kin-tls-handoff 1\npeer a:1\nname uri:%s\n", longname);
	CHECK_EQ(parse(buf, &id), -EBADMSG);
}

TEST(tls_handoff_send_recv)
{
	int ctl[2], conn[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, conn), 0);
	struct tls_identity id = {.peer = "127.0.0.1:5", .n_names = 2};
	strcpy(id.names[0], "cn:admin");
	strcpy(id.names[1], "dns:x.test");

	struct tls_identity got;
	int fd = -1;
	CHECK_EQ(tls_handoff_recv(ctl[1], &fd, &got), -EAGAIN);
	CHECK_EQ(tls_handoff_send(ctl[0], conn[0], &id), 0);
	CHECK_EQ(tls_handoff_recv(ctl[1], &fd, &got), 1);
	CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	CHECK_STR(got.peer, "127.0.0.1:5");
	CHECK_EQ(got.n_names, 2);
	CHECK_STR(got.names[1], "dns:x.test");
	CHECK_EQ(write(fd, "x", 1), 1);
	char c = 0;
	CHECK_EQ(read(conn[1], &c, 1), 1);
	close(fd);

	/* An identity the parse would refuse is never sent. */
	strcpy(id.names[1], "dns:has space");
	CHECK_EQ(tls_handoff_send(ctl[0], conn[0], &id), -EINVAL);

	/* A message without an fd, or with a non-socket fd: -EBADMSG. */
	CHECK_EQ(send(ctl[0], "kin-tls-handoff 1\npeer a:1\n", 27, 0), 27);
	CHECK_EQ(tls_handoff_recv(ctl[1], &fd, &got), -EBADMSG);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	strcpy(id.names[1], "dns:x.test");
	CHECK_EQ(tls_handoff_send(ctl[0], null, &id), 0);
	CHECK_EQ(tls_handoff_recv(ctl[1], &fd, &got), -EBADMSG);
	close(null);

	close(conn[0]);
	close(conn[1]);
	close(ctl[0]);
	CHECK_EQ(tls_handoff_recv(ctl[1], &fd, &got), 0);
	close(ctl[1]);
}
