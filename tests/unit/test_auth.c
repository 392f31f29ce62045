/* auth: the policy's strict parse (each refusal names its line and what is
 * wrong), what targets reach (on hop boundaries only), the sentences of a
 * denial, the method table against every kin.v1 method the protos declare,
 * the audit line's quoting and its rate limit on a fake clock, and the
 * object read from request bytes that cannot be trusted. */
#include "unit.h"

#include "auth/auth.h"

#include "proto/cells.pb-c.h"
#include "proto/images.pb-c.h"
#include "proto/kin.pb-c.h"
#include "proto/system.pb-c.h"
#include "proto/units.pb-c.h"
#include "proto/vm.pb-c.h"
#include "proto/zone.pb-c.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

static struct auth_policy *policy_of(const char *text)
{
	struct auth_policy *p = NULL;
	struct err e = {0};
	int r = auth_policy_parse(text, strlen(text), "test", &p, &e);
	if (r < 0)
		printf("    policy_of: %s\n", e.msg);
	return p;
}

static struct auth_peer unix_peer(uid_t uid, gid_t gid)
{
	return (struct auth_peer){.transport = "unix", .has_ids = true, .uid = uid, .gid = gid};
}

static struct auth_peer tls_peer(const char *name)
{
	return (struct auth_peer){.transport = "tls", .n_names = 1, .names = {name}};
}

/* 0 when allowed, else -errno with e's sentence kept for CHECK_STR. */
static int check(const struct auth_policy *p, const struct auth_peer *peer, const char *svc,
                 const char *method, const char *target, struct err *e)
{
	err_clear(e);
	int r = auth_check(p, peer, svc, method, target, e);
	if (r < 0)
		CHECK_EQ(e->code, ERR_PERMISSION_DENIED);
	return r;
}

TEST(auth_parse_good)
{
	const char *text = "# kin policy\n"
	                   "\n"
	                   "uid:1000 admin *\r\n"
	                   "  gid:50\tread\t.  pod1 pod1/* vm/db vm/db/*   # trailing comment\n"
	                   "uri:spiffe://example.org/ops operate pod-1_a.b/x\n"
	                   "dns:Node1.Example operate\n"
	                   "cn:ops read *\n"
	                   "uid:1000 admin *\n" /* a duplicate is fine */
	                   "uid:0 read";        /* no final newline */
	struct auth_policy *p = policy_of(text);
	CHECK(p != NULL);
	CHECK_EQ(auth_policy_count(p), 7);
	auth_policy_free(p);

	p = policy_of("");
	CHECK(p != NULL);
	CHECK_EQ(auth_policy_count(p), 0);
	auth_policy_free(p);
	p = policy_of("# only a comment\r\n\n   \t\n");
	CHECK_EQ(auth_policy_count(p), 0);
	auth_policy_free(p);
	auth_policy_free(NULL);
	CHECK_EQ(auth_policy_count(NULL), 0);
}

TEST(auth_parse_errors)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
	    {"uid:1 read\nroot admin", "t: line 2: bad identity \"root\": expected uid:N, gid:N, "
	                               "uri:, dns: or cn:"},
	    {"uid:x read", "t: line 1: bad identity \"uid:x\": not a decimal id below 4294967295"},
	    {"uid:-1 read",
	     "t: line 1: bad identity \"uid:-1\": not a decimal id below 4294967295"},
	    {"uid:+1 read",
	     "t: line 1: bad identity \"uid:+1\": not a decimal id below 4294967295"},
	    {"uid: read", "t: line 1: bad identity \"uid:\": not a decimal id below 4294967295"},
	    {"gid:4294967295 read",
	     "t: line 1: bad identity \"gid:4294967295\": not a decimal id below 4294967295"},
	    {"uid:4294967296 read",
	     "t: line 1: bad identity \"uid:4294967296\": not a decimal id below 4294967295"},
	    {"cn: read", "t: line 1: bad identity \"cn:\": an empty name"},
	    {"\n\ncn:a\x01 read", "t: line 3: bad identity \"cn:a\\x01\": a byte that is not "
	                          "printable ASCII"},
	    {"dns:a\xc3\xa9 read", "t: line 1: bad identity \"dns:a\\xc3\\xa9\": a byte that is "
	                           "not printable ASCII"},
	    {"uid:1", "t: line 1: identity \"uid:1\" has no role"},
	    {"uid:1 # read", "t: line 1: identity \"uid:1\" has no role"},
	    {"uid:1 root", "t: line 1: unknown role \"root\": expected read, operate or admin"},
	    {"uid:1 Admin", "t: line 1: unknown role \"Admin\": expected read, operate or admin"},
	    {"uid:1 read a//b", "t: line 1: bad target \"a//b\": an empty hop"},
	    {"uid:1 read /a", "t: line 1: bad target \"/a\": an empty hop"},
	    {"uid:1 read a/", "t: line 1: bad target \"a/\": an empty hop"},
	    {"uid:1 read /*", "t: line 1: bad target \"/*\": an empty hop"},
	    {"uid:1 read a/../b", "t: line 1: bad target \"a/../b\": a \"..\" hop"},
	    {"uid:1 read ..", "t: line 1: bad target \"..\": a \"..\" hop"},
	    {"uid:1 read a/./b", "t: line 1: bad target \"a/./b\": a \".\" hop"},
	    {"uid:1 read */a",
	     "t: line 1: bad target \"*/a\": \"*\" other than as the whole target or its last hop"},
	    {"uid:1 read a/**",
	     "t: line 1: bad target \"a/**\": \"*\" other than as the whole target or its last "
	     "hop"},
	    {"uid:1 read a$b", "t: line 1: bad target \"a$b\": a byte outside [A-Za-z0-9_.-] in a "
	                       "hop"},
	    {"uid:1 read a\rb", "t: line 1: bad target \"a\\x0db\": a byte outside "
	                        "[A-Za-z0-9_.-] in a hop"},
	    {"uid:1 read "
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	     "t: line 1: bad target "
	     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..."
	     "\": a hop longer than 64 bytes"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct auth_policy *p = (struct auth_policy *)1;
		struct err e = {0};
		int r = auth_policy_parse(cases[i].text, strlen(cases[i].text), "t", &p, &e);
		CHECK_EQ(r, -EINVAL);
		CHECK_EQ(e.code, ERR_INVALID_ARGUMENT);
		CHECK_STR(e.msg, cases[i].msg);
		CHECK(p == (struct auth_policy *)1); /* untouched on failure */
	}

	/* A NUL byte in the text names its line. */
	struct auth_policy *p = NULL;
	struct err e = {0};
	static const char nul[] = "uid:1 read\nuid:2 re\0ad\n";
	CHECK_EQ(auth_policy_parse(nul, sizeof(nul) - 1, "t", &p, &e), -EINVAL);
	CHECK_STR(e.msg, "t: line 2: a NUL byte");

	/* 33 targets, a line over AUTH_LINE_MAX, more than AUTH_RULES_MAX rules. */
	char buf[AUTH_LINE_MAX + 64] = "uid:1 read";
	for (int i = 0; i < AUTH_TARGETS_MAX + 1; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " p%d", i);
	CHECK_EQ(auth_policy_parse(buf, strlen(buf), "t", &p, &e), -EINVAL);
	CHECK_STR(e.msg, "t: line 1: more than 32 targets");
	buf[strlen(buf) - 4] = '\0'; /* 32: fine */
	CHECK_EQ(auth_policy_parse(buf, strlen(buf), "t", &p, &e), 0);
	auth_policy_free(p);
	memset(buf, ' ', AUTH_LINE_MAX + 1);
	memcpy(buf, "uid:1 read", 10);
	CHECK_EQ(auth_policy_parse(buf, AUTH_LINE_MAX + 1, "t", &p, &e), -EINVAL);
	CHECK_STR(e.msg, "t: line 1: longer than 4096 bytes");
	CHECK_EQ(auth_policy_parse(buf, AUTH_LINE_MAX, "t", &p, &e), 0);
	auth_policy_free(p);

	size_t cap = (AUTH_RULES_MAX + 1) * 12 + 1, len = 0;
	char *many = malloc(cap);
	for (int i = 0; i <= AUTH_RULES_MAX; i++)
		len += (size_t)snprintf(many + len, cap - len, "uid:%d read\n", i % 10);
	CHECK_EQ(auth_policy_parse(many, len, "t", &p, &e), -E2BIG);
	CHECK_STR(e.msg, "t: line 4097: more than 4096 rules");
	CHECK_EQ(e.code, ERR_INVALID_ARGUMENT);
	free(many);
}

TEST(auth_add_line)
{
	struct auth_policy *p = NULL;
	struct err e = {0};
	CHECK_EQ(auth_policy_new(&p), 0);
	CHECK_EQ(auth_policy_add_line(p, "uid:1000 admin *", &e), 0);
	CHECK_EQ(auth_policy_add_line(p, "gid:10 read", &e), 0);
	CHECK_EQ(auth_policy_count(p), 2);
	CHECK_EQ(auth_policy_add_line(p, "uid:1000 boss", &e), -EINVAL);
	CHECK_STR(e.msg, "rule \"uid:1000 boss\": unknown role \"boss\": expected read, operate "
	                 "or admin");
	CHECK_EQ(auth_policy_add_line(p, "  # nothing", &e), -EINVAL);
	CHECK_STR(e.msg, "rule \"  # nothing\": no identity and role");
	CHECK_EQ(auth_policy_add_line(p, "uid:1 read\nuid:2 admin", &e), -EINVAL);
	CHECK_EQ(auth_policy_count(p), 2);
	struct auth_peer u = unix_peer(1000, 1000);
	CHECK_EQ(check(p, &u, "kin.v1.System", "Poweroff", "a/b", &e), 0);
	auth_policy_free(p);
}

TEST(auth_policy_load)
{
	char dir[] = "/tmp/kin-unit-auth.XXXXXX", path[128], link[128];
	struct auth_policy *p = NULL;
	struct err e = {0};
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/policy", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	CHECK_EQ(file_create_str(path, "uid:1 read\ncn:x admin *\n", 0600), 0);
	CHECK_EQ(auth_policy_load(path, &p, &e), 0);
	CHECK_EQ(auth_policy_count(p), 2);
	auth_policy_free(p);
	/* Symlinks are followed: admins keep policies that way. */
	CHECK_EQ(symlink(path, link), 0);
	CHECK_EQ(auth_policy_load(link, &p, &e), 0);
	auth_policy_free(p);

	CHECK_EQ(file_create_str(path, "uid:1 read\nuid:2 nope\n", 0600), 0);
	CHECK_EQ(auth_policy_load(path, &p, &e), -EINVAL);
	char want[256];
	snprintf(want, sizeof(want),
	         "%s: line 2: unknown role \"nope\": expected read, operate or admin", path);
	CHECK_STR(e.msg, want);

	CHECK_EQ(auth_policy_load(dir, &p, &e), -EINVAL);
	CHECK(strstr(e.msg, "not a regular file") != NULL);
	CHECK_EQ(auth_policy_load("/dev/null", &p, &e), -EINVAL);
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, AUTH_FILE_MAX + 1) == 0);
	close(fd);
	CHECK_EQ(auth_policy_load(path, &p, &e), -EFBIG);
	CHECK(strstr(e.msg, "larger than 1048576 bytes") != NULL);
	unlink(link);
	unlink(path);
	CHECK_EQ(auth_policy_load(path, &p, &e), -ENOENT);
	CHECK_EQ(e.code, ERR_NOT_FOUND);
	rmdir(dir);
}

TEST(auth_targets)
{
	static const struct {
		const char *rule_targets, *call;
		bool allowed;
	} cases[] = {
	    {"", NULL, true},
	    {"", "", true},
	    {"", ".", true},
	    {"", "pod1", false},
	    {".", NULL, true},
	    {".", "pod1", false},
	    {"*", NULL, true},
	    {"*", "pod1", true},
	    {"*", "vm/db/x", true},
	    {"pod1", "pod1", true},
	    {"pod1", NULL, false},
	    {"pod1", "pod1/a", false},
	    {"pod1", "pod10", false},
	    {"pod1/*", "pod1", true},
	    {"pod1/*", "pod1/a", true},
	    {"pod1/*", "pod1/a/b", true},
	    {"pod1/*", "pod10", false},
	    {"pod1/*", "pod10/a", false},
	    {"pod1/*", NULL, false},
	    {"pod1/*", "pod", false},
	    {"vm/db/*", "vm/db", true},
	    {"vm/db/*", "vm/db/c1", true},
	    {"vm/db/*", "vm/dbx", false},
	    {"vm/db/*", "vm", false},
	    {"vm/db", "vm/db", true},
	    {". pod2", "pod2", true},
	    {". pod2", NULL, true},
	    {"a b c/*", "c/x", true},
	    {"a b c/*", "b/x", false},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char line[128];
		struct err e = {0};
		snprintf(line, sizeof(line), "uid:7 read %s", cases[i].rule_targets);
		struct auth_policy *p = policy_of(line);
		struct auth_peer u = unix_peer(7, 7);
		int r = check(p, &u, "kin.v1.Cells", "List", cases[i].call, &e);
		if ((r == 0) != cases[i].allowed)
			printf("    rule \"%s\", call target \"%s\": %s\n", line,
			       cases[i].call ? cases[i].call : "(null)",
			       r == 0 ? "allowed" : e.msg);
		CHECK_EQ(r == 0, cases[i].allowed);
		auth_policy_free(p);
	}

	/* A malformed call target is refused as such, even for "*". */
	static const char *const bad[] = {"a//b",  "/a", "a/", "a/../b", "..",
	                                  "a/./b", "a$", "*",  "pod1/*"};
	struct auth_policy *p = policy_of("uid:7 admin *");
	struct auth_peer u = unix_peer(7, 7);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct err e = {0};
		CHECK_EQ(check(p, &u, "kin.v1.Cells", "List", bad[i], &e), -EACCES);
		CHECK(strstr(e.msg, "the target is malformed") != NULL);
	}
	struct err e = {0};
	check(p, &u, "kin.v1.Cells", "List", "a//b", &e);
	CHECK_STR(e.msg, "uid:7 may not call kin.v1.Cells/List on \"a//b\": the target is "
	                 "malformed (an empty hop)");
	auth_policy_free(p);
}

TEST(auth_identities)
{
	struct err e = {0};
	struct auth_policy *p = policy_of("gid:50 operate *\n"
	                                  "uid:1000 read\n"
	                                  "dns:Node1.Example.ORG read *\n"
	                                  "uri:spiffe://kin/ops admin *\n"
	                                  "cn:Ops read *\n");
	struct auth_peer u = unix_peer(2000, 2000);
	CHECK_EQ(check(p, &u, "kin.v1.Cells", "List", NULL, &e), -EACCES);
	u.groups[0] = 10;
	u.groups[1] = 50; /* a supplementary group */
	u.n_groups = 2;
	CHECK_EQ(check(p, &u, "kin.v1.Exec", "Start", "pod1", &e), 0);
	u.n_groups = 1;
	CHECK_EQ(check(p, &u, "kin.v1.Exec", "Start", "pod1", &e), -EACCES);
	u.gid = 50; /* the primary group */
	CHECK_EQ(check(p, &u, "kin.v1.Exec", "Start", "pod1", &e), 0);
	/* ids count only when the transport vouches for them */
	u.has_ids = false;
	CHECK_EQ(check(p, &u, "kin.v1.Exec", "Start", "pod1", &e), -EACCES);
	u = unix_peer(1000, 1000);
	CHECK_EQ(check(p, &u, "kin.v1.Health", "Check", NULL, &e), 0);

	struct auth_peer t = tls_peer("dns:node1.example.org");
	CHECK_EQ(check(p, &t, "kin.v1.Cells", "List", "x", &e), 0);
	t.names[0] = "dns:NODE1.EXAMPLE.ORG";
	CHECK_EQ(check(p, &t, "kin.v1.Cells", "List", "x", &e), 0);
	t.names[0] = "dns:node1.example.org.evil";
	CHECK_EQ(check(p, &t, "kin.v1.Cells", "List", "x", &e), -EACCES);
	t.names[0] = "cn:node1.example.org"; /* dns: and cn: are not the same name */
	CHECK_EQ(check(p, &t, "kin.v1.Cells", "List", "x", &e), -EACCES);
	t.names[0] = "cn:ops"; /* cn: compares with case */
	CHECK_EQ(check(p, &t, "kin.v1.Cells", "List", "x", &e), -EACCES);
	t.names[0] = "cn:Ops";
	CHECK_EQ(check(p, &t, "kin.v1.Cells", "List", "x", &e), 0);
	/* any of the peer's names */
	t = tls_peer("cn:nobody");
	t.names[1] = "uri:spiffe://kin/ops";
	t.n_names = 2;
	CHECK_EQ(check(p, &t, "kin.v1.System", "Poweroff", "vm/a", &e), 0);
	t.names[1] = "uri:spiffe://KIN/ops";
	CHECK_EQ(check(p, &t, "kin.v1.System", "Poweroff", "vm/a", &e), -EACCES);
	CHECK_STR(e.msg, "cn:nobody may not call kin.v1.System/Poweroff on \"vm/a\": no rule names "
	                 "cn:nobody or its other names");
	auth_policy_free(p);
}

TEST(auth_denials)
{
	struct err e = {0};
	struct auth_peer root = {.transport = "unix", .superuser = true};
	CHECK_EQ(check(NULL, &root, "kin.v1.System", "Poweroff", "a/b", &e), 0);
	CHECK_EQ(check(NULL, &root, "no.such.Service", "X", NULL, &e), 0);

	struct auth_policy *p = policy_of("cn:ops operate *\n"
	                                  "uid:1000 read pod1/*\n"
	                                  "uid:1000 operate pod3\n"
	                                  "gid:100 read\n");
	struct auth_peer ops = tls_peer("cn:ops");
	CHECK_EQ(check(p, &ops, "kin.v1.System", "Poweroff", NULL, &e), -EACCES);
	CHECK_STR(e.msg, "cn:ops may not call kin.v1.System/Poweroff: it needs admin, cn:ops has "
	                 "operate");
	CHECK_EQ(check(p, &ops, "kin.v1.Cells", "Freeze", "pod1", &e), 0);

	struct auth_peer u = unix_peer(1000, 1000);
	CHECK_EQ(check(p, &u, "kin.v1.Cells", "List", "pod2", &e), -EACCES);
	CHECK_STR(e.msg, "uid:1000 may not call kin.v1.Cells/List on \"pod2\": its rules reach "
	                 "pod1/*, pod3");
	CHECK_EQ(check(p, &u, "kin.v1.Cells", "Kill", "pod1", &e), -EACCES);
	CHECK_STR(e.msg, "uid:1000 may not call kin.v1.Cells/Kill on \"pod1\": its operate rules "
	                 "reach pod3");
	CHECK_EQ(check(p, &u, "kin.v1.Cells", "Create", "pod3", &e), -EACCES);
	CHECK_STR(e.msg, "uid:1000 may not call kin.v1.Cells/Create on \"pod3\": it needs admin, "
	                 "uid:1000 has operate");
	u.n_groups = 1;
	u.groups[0] = 100;
	CHECK_EQ(check(p, &u, "kin.v1.Cells", "List", NULL, &e), 0);
	CHECK_EQ(check(p, &u, "kin.v1.Cells", "List", "pod2", &e), -EACCES);
	CHECK_STR(e.msg, "uid:1000 may not call kin.v1.Cells/List on \"pod2\": its rules reach "
	                 "pod1/*, pod3, this kin");

	struct auth_peer other = unix_peer(1001, 1001);
	CHECK_EQ(check(p, &other, "kin.v1.Health", "Check", NULL, &e), -EACCES);
	CHECK_STR(e.msg, "uid:1001 may not call kin.v1.Health/Check: no rule names uid:1001 or its "
	                 "gids");
	CHECK_EQ(check(NULL, &u, "kin.v1.Health", "Check", NULL, &e), -EACCES);
	CHECK_STR(e.msg, "uid:1000 may not call kin.v1.Health/Check: no rule names uid:1000 or its "
	                 "gids");
	struct auth_peer anon = {.transport = "vsock"};
	CHECK_EQ(check(p, &anon, "kin.v1.Health", "Check", NULL, &e), -EACCES);
	CHECK_STR(e.msg, "vsock may not call kin.v1.Health/Check: a vsock peer carries no identity "
	                 "a rule can name");
	/* A method missing from the table needs admin. */
	CHECK_EQ(check(p, &ops, "kin.v1.Cells", "Explode", NULL, &e), -EACCES);
	CHECK(strstr(e.msg, "it needs admin") != NULL);
	/* Peer-chosen bytes in a message are escaped. */
	struct auth_peer odd = tls_peer("cn:a\"b\n");
	CHECK_EQ(check(p, &odd, "kin.v1.Cells", "List", NULL, &e), -EACCES);
	CHECK_STR(e.msg, "cn:a\\\"b\\x0a may not call kin.v1.Cells/List: no rule names "
	                 "cn:a\\\"b\\x0a");
	auth_policy_free(p);
}

TEST(auth_peer_name)
{
	char buf[64];
	struct auth_peer t = tls_peer("cn:ops");
	auth_peer_name(&t, buf, sizeof(buf));
	CHECK_STR(buf, "cn:ops");
	struct auth_peer u = unix_peer(42, 42);
	auth_peer_name(&u, buf, sizeof(buf));
	CHECK_STR(buf, "uid:42");
	struct auth_peer z = {.transport = "zone"};
	auth_peer_name(&z, buf, sizeof(buf));
	CHECK_STR(buf, "zone");
	auth_peer_name(&t, buf, 4);
	CHECK_STR(buf, "cn:");
}

/* Every method the kin.v1 protos declare is in the table on purpose
 * (containerd's Task API, proto/shim.proto, is left to the admin default). */
TEST(auth_method_table)
{
	static const ProtobufCServiceDescriptor *const services[] = {
	    &kin__v1__health__descriptor, &kin__v1__cells__descriptor,
	    &kin__v1__exec__descriptor,   &kin__v1__events__descriptor,
	    &kin__v1__images__descriptor, &kin__v1__system__descriptor,
	    &kin__v1__route__descriptor,  &kin__v1__vm__descriptor,
	    &kin__v1__zones__descriptor,  &kin__v1__units__descriptor,
	};
	unsigned n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(services); i++)
		for (unsigned j = 0; j < services[i]->n_methods; j++, n++) {
			const char *svc = services[i]->name, *m = services[i]->methods[j].name;
			if (!auth_method_known(svc, m))
				printf("    %s/%s is not in auth's method table\n", svc, m);
			CHECK(auth_method_known(svc, m));
			CHECK(auth_method_role(svc, m) >= AUTH_READ);
		}
	CHECK(n >= 36); /* as many as the protos had when this was written */
	CHECK_EQ(auth_method_role("kin.v1.Health", "Check"), AUTH_READ);
	CHECK_EQ(auth_method_role("kin.v1.Route", "Cancel"), AUTH_READ);
	CHECK_EQ(auth_method_role("kin.v1.Events", "Subscribe"), AUTH_READ);
	CHECK_EQ(auth_method_role("kin.v1.Exec", "Logs"), AUTH_READ);
	CHECK_EQ(auth_method_role("kin.v1.Exec", "Stdin"), AUTH_OPERATE);
	CHECK_EQ(auth_method_role("kin.v1.Cells", "Thaw"), AUTH_OPERATE);
	CHECK_EQ(auth_method_role("kin.v1.Cells", "Update"), AUTH_ADMIN);
	CHECK_EQ(auth_method_role("kin.v1.System", "ReloadPolicy"), AUTH_ADMIN);
	CHECK_EQ(auth_method_role("kin.v1.Units", "Status"), AUTH_READ);
	CHECK_EQ(auth_method_role("kin.v1.Units", "Job"), AUTH_OPERATE);
	CHECK_EQ(auth_method_role("kin.v1.Units", "Enable"), AUTH_ADMIN);
	CHECK_EQ(auth_method_role("kin.v1.Units", "DaemonReload"), AUTH_ADMIN);
	CHECK(auth_method_known("kin.v1.System", "ReloadPolicy"));
	CHECK(!auth_method_known("containerd.task.v2.Task", "Create"));
	CHECK_EQ(auth_method_role("containerd.task.v2.Task", "State"), AUTH_ADMIN);
	CHECK_EQ(auth_method_role(NULL, NULL), AUTH_ADMIN);
	CHECK(!auth_method_changes("kin.v1.Cells", "List"));
	CHECK(auth_method_changes("kin.v1.Exec", "Signal"));
	CHECK(auth_method_changes("kin.v1.Nope", "List"));
	CHECK_STR(auth_role_name(AUTH_NONE), "none");
	CHECK_STR(auth_role_name(AUTH_OPERATE), "operate");
}

TEST(auth_audit_format)
{
	char buf[AUTH_AUDIT_LINE_MAX];
	struct auth_audit_entry e = {.who = "cn:ops",
	                             .via = "tls",
	                             .service = "kin.v1.Cells",
	                             .method = "Create",
	                             .target = "pod1",
	                             .object = "web",
	                             .code = ERR_OK};
	auth_audit_format(&e, buf, sizeof(buf));
	CHECK_STR(buf, "audit: who=cn:ops via=tls call=kin.v1.Cells/Create target=pod1 object=web "
	               "result=OK");
	e.target = "";
	e.object = "a b";
	e.who = "cn:\"x\\y\"";
	e.code = ERR_PERMISSION_DENIED;
	auth_audit_format(&e, buf, sizeof(buf));
	CHECK_STR(buf, "audit: who=\"cn:\\\"x\\\\y\\\"\" via=tls call=kin.v1.Cells/Create target=. "
	               "object=\"a b\" result=PERMISSION_DENIED");
	e = (struct auth_audit_entry){
	    .who = "cn:a\nb\xff", .service = "s", .method = "m", .code = 99};
	auth_audit_format(&e, buf, sizeof(buf));
	CHECK_STR(buf, "audit: who=\"cn:a\\x0ab\\xff\" via=\"\" call=s/m target=. object=\"\" "
	               "result=CODE_99");

	/* A long value is cut, marked, and the line still ends in its result. */
	char big[1000];
	memset(big, '\x01', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	e = (struct auth_audit_entry){
	    .who = big, .via = big, .service = big, .method = big, .target = big, .object = big};
	size_t n = auth_audit_format(&e, buf, sizeof(buf));
	CHECK_EQ(n, strlen(buf));
	CHECK(n < AUTH_AUDIT_LINE_MAX);
	CHECK(strstr(buf, "...\" via=") != NULL);
	CHECK(strstr(buf, " result=OK") != NULL);
	CHECK(strchr(buf, '\x01') == NULL);
	auth_audit_format(&e, buf, 10);
	CHECK_STR(buf, "audit: wh");
}

/* Runs fn with fd 2 (the log's) going to a file; returns what was logged. */
static char *capture_log(void (*fn)(void *), void *data)
{
	char path[] = "/tmp/kin-unit-auth-log.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	enum log_level level = log_get_level();
	static char out[16384];
	out[0] = '\0';
	if (fd < 0 || saved < 0)
		return out;
	unlink(path);
	log_set_level(LOG_INFO_);
	fflush(stderr);
	dup2(fd, 2);
	fn(data);
	dup2(saved, 2);
	close(saved);
	log_set_level(level);
	ssize_t n = pread(fd, out, sizeof(out) - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	return out;
}

static size_t count_of(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

#define SEC 1000000000ull

static void rate_limited(void *data)
{
	struct auth_audit *a = data;
	struct auth_audit_entry deny = {.who = "uid:9",
	                                .via = "unix",
	                                .service = "kin.v1.Cells",
	                                .method = "Create",
	                                .code = ERR_PERMISSION_DENIED,
	                                .denial = true};
	struct auth_audit_entry change = deny;
	change.denial = false;
	change.code = ERR_OK;
	uint64_t t0 = 5 * SEC;
	for (int i = 0; i < 50; i++) /* 20 logged, 30 dropped */
		auth_audit_log(a, &deny, t0 + (uint64_t)i * 1000);
	auth_audit_tick(a, t0 + SEC / 2);         /* the window has not passed: nothing */
	auth_audit_log(a, &change, t0 + SEC / 2); /* reports the 30 first, never dropped */
	for (int i = 0; i < 5; i++)
		auth_audit_log(a, &deny, t0 + SEC / 2 + 1); /* dropped again */
	auth_audit_tick(a, t0 + SEC - 1);
	auth_audit_tick(a, t0 + SEC); /* the window passed: "5 denials" */
	auth_audit_tick(a, t0 + 2 * SEC);
	for (int i = 0; i < 21; i++) /* a new window */
		auth_audit_log(a, &deny, t0 + 3 * SEC);
	auth_audit_log(a, &deny, t0 + 4 * SEC + 1); /* reports "1 denial" first */
}

TEST(auth_audit_rate_limit)
{
	struct auth_audit a = {0};
	int before = unit_failures;
	const char *out = capture_log(rate_limited, &a);
	CHECK_EQ(count_of(out, "result=PERMISSION_DENIED"), 20 + 20 + 1);
	CHECK_EQ(count_of(out, "result=OK"), 1);
	CHECK_EQ(count_of(out, "(rate limit)"), 3);
	const char *r30 =
	    strstr(out, "audit: 30 denials not logged in the last 0.5 s (rate limit)");
	const char *chg = strstr(out, "result=OK");
	CHECK(r30 && chg && r30 < chg);
	CHECK(strstr(out, "audit: 5 denials not logged in the last 1.0 s (rate limit)") != NULL);
	const char *r1 = strstr(out, "audit: 1 denial not logged in the last 1.0 s (rate limit)");
	CHECK(r1 != NULL);
	CHECK(r1 && strstr(r1, "result=PERMISSION_DENIED") != NULL);
	CHECK_EQ(a.dropped, 0);
	if (unit_failures != before)
		printf("%s", out);
}

TEST(auth_request_object)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *want;
	} cases[] = {
	    {"\x0a\x03web", 5, "web"},
	    /* other fields first: varint, 64-bit, 32-bit, length-delimited */
	    {"\x10\x96\x01\x19\x01\x02\x03\x04\x05\x06\x07\x08\x25\x01\x02\x03\x04\x12\x01z"
	     "\x0a\x02"
	     "ab",
	     24, "ab"},
	    {"\x0a\x02"
	     "ab\x0a\x02"
	     "cd",
	     8, "ab"}, /* the first occurrence */
	    {"", 0, ""},
	    {"\x0a\x00", 2, ""}, /* empty */
	    {"\x0a\x03w\x01"
	     "b",
	     5, ""},                      /* not printable */
	    {"\x0a\x05web", 5, ""},       /* past the end */
	    {"\x08\x01\x0a\x01x", 5, ""}, /* field 1 first as a varint */
	    {"\x13\x0a\x01x", 4, ""},     /* a group: stop */
	    {"\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x0a\x01x", 14, ""}, /* long varint */
	    {"\x10\x80", 2, ""},                                                   /* cut varint */
	    {"\x19\x01\x02", 3, ""},                                               /* cut 64-bit */
	    {"\x00\x0a\x01x", 4, ""},                                              /* field 0 */
	    {"\x80\x80\x80\x80\x80\x01\x0a\x01x", 9, ""}, /* key past 32 bits */
	    {"\x12\xff\xff\xff\xff\x0f\x0a\x01x", 9, ""}, /* length past the end */
	};
	char buf[200];
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(buf, 'Z', sizeof(buf));
		auth_request_object((const uint8_t *)cases[i].bytes, cases[i].len, buf,
		                    sizeof(buf));
		CHECK_STR(buf, cases[i].want);
	}
	uint8_t msg[3 + 129] = {0x0a, 0x80, 0x01}; /* a 128-byte name */
	memset(msg + 3, 'n', 129);
	auth_request_object(msg, 3 + 128, buf, sizeof(buf));
	CHECK_EQ(strlen(buf), 128);
	msg[1] = 0x81; /* 129 bytes: too long for a name */
	auth_request_object(msg, 3 + 129, buf, sizeof(buf));
	CHECK_STR(buf, "");
	auth_request_object(msg + 1, 2 + 10, buf,
	                    sizeof(buf)); /* other fields, then a wire type 6 */
	CHECK_STR(buf, "");
	msg[2] = 0x0a;
	msg[1] = 0x0a; /* field 1, 10 bytes, read into 4 */
	auth_request_object(msg + 1, 12, buf, 4);
	CHECK_STR(buf, "nnn");
}

/* A denial lists what the rules reach once each, and briefly. */
TEST(auth_denial_reach_is_brief)
{
	char text[8192] = "";
	for (int i = 0; i < 60; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
		         "uid:5 read pod%d x... pod%d/*\n", i % 30, i % 30);
	struct auth_policy *p = policy_of(text);
	struct auth_peer u = unix_peer(5, 5);
	struct err e = {0};
	CHECK_EQ(check(p, &u, "kin.v1.Cells", "List", "other", &e), -EACCES);
	CHECK(str_startswith(e.msg, "uid:5 may not call kin.v1.Cells/List on \"other\": its rules "
	                            "reach pod0, x..., pod0/*, pod1, "));
	CHECK(strlen(e.msg) < 300);
	CHECK(strstr(e.msg, ", ...") != NULL);
	CHECK_EQ(count_of(e.msg, "pod1/*"), 1);
	auth_policy_free(p);
}
