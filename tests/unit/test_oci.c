/* oci: the tar reader's corners (ustar prefix, pax, GNU long names,
 * base-256 numbers, checksums, v7 directories, the end and what follows
 * it), decompression (gzip members, trailing bytes, truncation, zstd's
 * window cap), names and digests, and an image config. Archives are made
 * here, header by header. */
#include "unit.h"

#include "oci/oci-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <zlib.h>
#include <zstd.h>

struct mem {
	struct oci_reader r;
	const uint8_t *p;
	size_t left;
};

static ssize_t mem_read(struct oci_reader *r, void *buf, size_t n, struct err *err)
{
	struct mem *m = container_of(r, struct mem, r);
	(void)err;
	n = n < m->left ? n : m->left;
	memcpy(buf, m->p, n);
	m->p += n;
	m->left -= n;
	return (ssize_t)n;
}

static struct mem mem_of(const void *p, size_t n)
{
	return (struct mem){.r = {.read = mem_read}, .p = p, .left = n};
}

/* One 512-byte header: name, type, size (octal unless base256), and a
 * checksum (broken when asked). */
static void header(uint8_t *b, const char *name, char type, uint64_t size, bool base256,
                   bool bad_sum, const char *prefix)
{
	memset(b, 0, 512);
	snprintf((char *)b, 100, "%s", name);
	snprintf((char *)b + 100, 8, "%07o", 0644);
	snprintf((char *)b + 108, 8, "%07o", 0);
	snprintf((char *)b + 116, 8, "%07o", 0);
	if (base256) {
		b[124] = 0x80;
		for (int i = 0; i < 8; i++)
			b[135 - i] = (uint8_t)(size >> (8 * i));
	} else {
		snprintf((char *)b + 124, 12, "%011llo",
		         (unsigned long long)(size & 077777777777ull));
	}
	snprintf((char *)b + 136, 12, "%011o", 1000);
	b[156] = (uint8_t)type;
	memcpy(b + 257,
	       "ustar\0"
	       "00",
	       8);
	if (prefix)
		snprintf((char *)b + 345, 155, "%s", prefix);
	memset(b + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += b[i];
	snprintf((char *)b + 148, 8, "%06o", sum + (bad_sum ? 1 : 0));
}

struct arc {
	uint8_t buf[64 * 512];
	size_t len;
};

static void add(struct arc *a, const char *name, char type, const char *data, bool base256,
                bool bad_sum, const char *prefix)
{
	size_t n = data ? strlen(data) : 0;
	header(a->buf + a->len, name, type, n, base256, bad_sum, prefix);
	a->len += 512;
	if (n) {
		memset(a->buf + a->len, 0, (n + 511) / 512 * 512);
		memcpy(a->buf + a->len, data, n);
		a->len += (n + 511) / 512 * 512;
	}
}

static void end(struct arc *a, int zero_blocks)
{
	memset(a->buf + a->len, 0, 512 * (size_t)zero_blocks);
	a->len += 512 * (size_t)zero_blocks;
}

/* Reads every entry: names joined by ' ' into out; the result. */
static int read_all(const void *p, size_t n, char *out, size_t size, struct err *err)
{
	const struct oci_tar_limits lim = {256, 4096, 100, 8, 4096};
	struct mem m = mem_of(p, n);
	struct oci_tar *t;
	const struct oci_tar_entry *e;
	int r = oci_tar_new(&m.r, &lim, "layer test", &t, err);
	out[0] = 0;
	while (r >= 0 && (r = oci_tar_next(t, &e, err)) == 1) {
		char data[64] = "";
		ssize_t k = oci_read(oci_tar_data(t), data, sizeof(data) - 1, err);
		if (k > 0)
			data[k] = 0;
		snprintf(out + strlen(out), size - strlen(out), "%s%s%s%s", out[0] ? " " : "",
		         e->name, data[0] ? "=" : "", data);
	}
	oci_tar_free(t);
	return r;
}

TEST(oci_tar_formats)
{
	static struct arc a;
	char out[1024];
	struct err err = {0};
	a.len = 0;
	add(&a, "plain", '0', "one", false, false, NULL);
	add(&a, "file", '0', "two", false, false, "a/long/prefix");
	add(&a, "big", '0', "256", true, false, NULL);
	add(&a, "v7dir/", 0, NULL, false, false, NULL);
	add(&a, "././@LongLink", 'L',
	    "gnu/"
	    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
	    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
	    false, false, NULL);
	add(&a, "cut", '0', "g", false, false, NULL);
	add(&a, "pax", 'x', "18 path=pax/named\n", false, false, NULL);
	add(&a, "short", '0', "p", false, false, NULL);
	end(&a, 2);
	CHECK_EQ(read_all(a.buf, a.len, out, sizeof(out), &err), 0);
	CHECK_STR(out,
	          "plain=one a/long/prefix/file=two big=256 v7dir/ "
	          "gnu/nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
	          "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn=g pax/named=p");

	/* One zero block then the end, and the end at an entry boundary. */
	a.len = 0;
	add(&a, "x", '0', "1", false, false, NULL);
	end(&a, 1);
	CHECK_EQ(read_all(a.buf, a.len, out, sizeof(out), &err), 0);
	a.len = 0;
	add(&a, "x", '0', "1", false, false, NULL);
	CHECK_EQ(read_all(a.buf, a.len, out, sizeof(out), &err), 0);
}

TEST(oci_tar_refusals)
{
	static struct arc a;
	char out[1024];
	struct err err = {0};
	a.len = 0;
	add(&a, "ok", '0', "1", false, false, NULL);
	add(&a, "bad", '0', "2", false, true, NULL);
	CHECK_EQ(read_all(a.buf, a.len, out, sizeof(out), &err), -EBADMSG);
	CHECK(strstr(err.msg, "checksum mismatch") != NULL);

	a.len = 0;
	add(&a, "f", '0', "data", false, false, NULL);
	CHECK_EQ(read_all(a.buf, a.len - 512, out, sizeof(out), &err), -EBADMSG); /* cut */
	CHECK(strstr(err.msg, "truncated") != NULL);

	a.len = 0;
	add(&a, "sparse", 'S', NULL, false, false, NULL);
	CHECK_EQ(read_all(a.buf, a.len, out, sizeof(out), &err), -ENOTSUP);
	CHECK(strstr(err.msg, "entry type 'S'") != NULL);

	a.len = 0;
	add(&a, "pax", 'x', "99 path=x\n", false, false, NULL); /* length past the record */
	add(&a, "f", '0', "1", false, false, NULL);
	CHECK_EQ(read_all(a.buf, a.len, out, sizeof(out), &err), -EBADMSG);
	CHECK(strstr(err.msg, "malformed pax record") != NULL);

	a.len = 0; /* a pax header over the 4 KiB limit these tests set */
	header(a.buf, "huge", 'x', 1u << 31, false, false, NULL);
	a.len = 512;
	CHECK_EQ(read_all(a.buf, a.len, out, sizeof(out), &err), -E2BIG);
	CHECK(strstr(err.msg, "over the 4096-byte limit") != NULL);

	a.len = 0; /* a zero block, then more entries */
	end(&a, 1);
	add(&a, "after", '0', "1", false, false, NULL);
	CHECK_EQ(read_all(a.buf, a.len, out, sizeof(out), &err), -EBADMSG);

	a.len = 0; /* more than 100 entries */
	for (int i = 0; i < 60; i++)
		add(&a, "d/", '5', NULL, false, false, NULL);
	static uint8_t two[2 * sizeof(a.buf)];
	memcpy(two, a.buf, a.len);
	memcpy(two + a.len, a.buf, a.len);
	CHECK_EQ(read_all(two, 2 * a.len, out, sizeof(out), &err), -E2BIG);
	CHECK(strstr(err.msg, "more than 100 entries") != NULL);
}

/* Everything a decompressing reader gives, or its error. */
static ssize_t inflate_all(const void *p, size_t n, enum oci_compression c, char *out, size_t size,
                           struct err *err)
{
	struct mem m = mem_of(p, n);
	struct oci_reader *d;
	size_t len = 0;
	int r = oci_decomp_new(&m.r, c, "blob test", &d, err);
	if (r < 0)
		return r;
	for (ssize_t k; (k = oci_read(d, out + len, size - len, err)) != 0; len += (size_t)k)
		if (k < 0) {
			oci_decomp_free(d);
			return k;
		}
	oci_decomp_free(d);
	return (ssize_t)len;
}

static size_t gz(const char *s, uint8_t *out, size_t size)
{
	z_stream z = {0};
	deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
	z.next_in = (Bytef *)s;
	z.avail_in = (uInt)strlen(s);
	z.next_out = out;
	z.avail_out = (uInt)size;
	deflate(&z, Z_FINISH);
	size_t n = size - z.avail_out;
	deflateEnd(&z);
	return n;
}

TEST(oci_decompress)
{
	uint8_t buf[4096];
	char out[256];
	struct err err = {0};
	size_t n = gz("first ", buf, sizeof(buf));
	n += gz("second", buf + n, sizeof(buf) - n);
	ssize_t k = inflate_all(buf, n, OCI_COMP_AUTO, out, sizeof(out), &err);
	CHECK_EQ(k, 12); /* two members, as gzip a; gzip b; cat writes them */
	CHECK(k == 12 && !memcmp(out, "first second", 12));
	buf[n] = 'j';
	CHECK_EQ(inflate_all(buf, n + 1, OCI_COMP_AUTO, out, sizeof(out), &err), -EBADMSG);
	CHECK(strstr(err.msg, "trailing bytes") != NULL);
	CHECK_EQ(inflate_all(buf, n - 5, OCI_COMP_GZIP, out, sizeof(out), &err), -EBADMSG);

	size_t z = ZSTD_compress(buf, sizeof(buf), "zstd data", 9, 3);
	k = inflate_all(buf, z, OCI_COMP_AUTO, out, sizeof(out), &err);
	CHECK(k == 9 && !memcmp(out, "zstd data", 9));
	CHECK_EQ(inflate_all(buf, z - 2, OCI_COMP_ZSTD, out, sizeof(out), &err), -EBADMSG);
	/* A frame that asks for a 2 GiB window is refused, not allocated. */
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 31);
	ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0); /* else the size sets the window */
	/* Streamed, so the size is unknown and the window stays as asked. */
	ZSTD_outBuffer ob = {buf, sizeof(buf), 0};
	ZSTD_inBuffer ib = {"big window", 10, 0};
	z = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_continue);
	if (!ZSTD_isError(z))
		z = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end);
	if (!ZSTD_isError(z))
		z = ob.pos;
	ZSTD_freeCCtx(c);
	if (!ZSTD_isError(z)) {
		CHECK_EQ(inflate_all(buf, z, OCI_COMP_AUTO, out, sizeof(out), &err), -EBADMSG);
		CHECK(strstr(err.msg, "zstd") != NULL);
	}
	k = inflate_all("plain", 5, OCI_COMP_AUTO, out, sizeof(out), &err);
	CHECK(k == 5 && !memcmp(out, "plain", 5));
}

TEST(oci_names_and_digests)
{
	CHECK(oci_name_valid("docker.io/library/busybox:1.36"));
	CHECK(oci_name_valid("app@sha256:abc"));
	CHECK(!oci_name_valid(""));
	CHECK(!oci_name_valid("/abs"));
	CHECK(!oci_name_valid(".hidden"));
	CHECK(!oci_name_valid("a/../b"));
	CHECK(!oci_name_valid("sp ace"));
	CHECK(oci_digest_valid(
	    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	CHECK(!oci_digest_valid(
	    "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
	CHECK(!oci_digest_valid("sha512:e3b0"));
	CHECK(!oci_digest_valid(
	    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"));
}

TEST(oci_image_config)
{
	const char *j = "{\"config\":{\"Entrypoint\":[\"/bin/echo\"],\"Cmd\":null,"
	                "\"Env\":[\"A=1\"],\"WorkingDir\":\"\",\"User\":\"app:grp\"},"
	                "\"os\":\"linux\",\"architecture\":\"amd64\"}";
	struct oci_image_config *c = NULL;
	struct err err = {0};
	CHECK_EQ(oci_image_config_parse(j, strlen(j), &c, &err), 0);
	if (c) {
		CHECK_STR(c->entrypoint[0], "/bin/echo");
		CHECK(c->entrypoint[1] == NULL);
		CHECK(c->cmd == NULL);
		CHECK_STR(c->env[0], "A=1");
		CHECK(c->working_dir == NULL); /* empty is absent */
		CHECK_STR(c->user, "app:grp");
		oci_image_config_free(c);
	}
	const char *bad = "{\"config\":{\"Cmd\":[1]}}";
	CHECK_EQ(oci_image_config_parse(bad, strlen(bad), &c, &err), -EINVAL);
	CHECK(strstr(err.msg, "config.Cmd[0]: not a string") != NULL);
	CHECK_EQ(oci_image_config_parse("[", 1, &c, &err), -EBADMSG);
}

/* runc's `runc spec` (1.1, trimmed of nothing that matters here). */
static const char runc_spec[] =
    "{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,"
    "\"gid\":0},\"args\":[\"sh\"],\"env\":[\"PATH=/usr/bin:/bin\",\"TERM=xterm\"],\"cwd\":\"/\","
    "\"capabilities\":{\"bounding\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
    "\"effective\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],\"permitted\":["
    "\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],\"ambient\":[\"CAP_AUDIT_WRITE\","
    "\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"]},\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":"
    "1024,\"soft\":1024}],\"noNewPrivileges\":true},\"root\":{\"path\":\"rootfs\",\"readonly\":"
    "true},\"hostname\":\"runc\",\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\","
    "\"source\":\"proc\"},{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
    "\"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]},{\"destination\":"
    "\"/dev/pts\",\"type\":\"devpts\",\"source\":\"devpts\",\"options\":[\"nosuid\",\"noexec\","
    "\"newinstance\",\"ptmxmode=0666\",\"mode=0620\",\"gid=5\"]},{\"destination\":\"/data\","
    "\"type\":\"bind\",\"source\":\"data\",\"options\":[\"rbind\",\"ro\",\"rprivate\"]}],"
    "\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"},{\"allow\":"
    "true,\"type\":\"c\",\"major\":10,\"minor\":200,\"access\":\"rw\"}],\"memory\":{\"limit\":"
    "536870912},\"pids\":{\"limit\":64}},\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\","
    "\"path\":\"/proc/1/ns/net\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"}],"
    "\"sysctl\":{\"net.ipv4.ip_forward\":\"1\"},\"maskedPaths\":[\"/proc/kcore\"],"
    "\"readonlyPaths\":[\"/proc/sys\"]}}";

TEST(oci_spec_runc)
{
	struct oci_spec *s = NULL;
	struct err err = {0};
	CHECK_EQ(oci_spec_parse(runc_spec, strlen(runc_spec), "/b", &s, &err), 0);
	if (!s) {
		printf("    %s\n", err.msg);
		return;
	}
	CHECK_STR(s->args[0], "sh");
	CHECK_STR(s->env[1], "TERM=xterm");
	CHECK_STR(s->root, "/b/rootfs");
	CHECK(s->root_readonly);
	CHECK_STR(s->hostname, "runc");
	CHECK_EQ(s->cap_bounding, 0x20000420);
	CHECK_EQ(s->cap_inheritable, 0);
	CHECK_EQ(s->nrlimits, 1);
	CHECK_EQ(s->rlimits[0].hard, 1024);
	CHECK(s->no_new_privileges);
	CHECK_EQ(s->nmounts, 4);
	CHECK_STR(s->mounts[1].data, "mode=755,size=65536k");
	CHECK_EQ(s->mounts[1].flags, MS_NOSUID | MS_STRICTATIME);
	CHECK_STR(s->mounts[2].data, "newinstance,ptmxmode=0666,mode=0620,gid=5");
	CHECK_STR(s->mounts[3].source, "/b/data"); /* a relative bind source is the bundle's */
	CHECK_EQ(s->mounts[3].flags, MS_BIND | MS_REC | MS_RDONLY);
	CHECK_EQ(s->mounts[3].propagation, MS_PRIVATE | MS_REC);
	CHECK(s->ns[OCI_NS_PID] && s->ns[OCI_NS_MNT] && !s->ns[OCI_NS_USER]);
	CHECK_STR(s->ns_path[OCI_NS_NET], "/proc/1/ns/net");
	CHECK_STR(s->sysctl[0], "net.ipv4.ip_forward=1");
	CHECK(s->masked_given);
	CHECK_STR(s->masked[0], "/proc/kcore");
	CHECK_EQ(s->memory_limit, 536870912);
	CHECK_EQ(s->pids_limit, 64);
	CHECK_EQ(s->ndevices, 2);
	CHECK(!s->devices[0].allow && s->devices[0].type == 'a' && s->devices[0].access == 7);
	CHECK(s->devices[1].allow && s->devices[1].major == 10 && s->devices[1].access == 3);
	oci_spec_free(s);
}

/* One edit of the runc spec (from, to) and the sentence it must give. */
static void refused(const char *from, const char *to, const char *want)
{
	char buf[sizeof(runc_spec) + 256];
	const char *at = strstr(runc_spec, from);
	struct oci_spec *s = NULL;
	struct err err = {0};
	CHECK(at != NULL);
	if (!at)
		return;
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - runc_spec), runc_spec, to,
	         at + strlen(from));
	CHECK(oci_spec_parse(buf, strlen(buf), "/b", &s, &err) < 0);
	if (!strstr(err.msg, want))
		printf("    got \"%s\", want \"%s\"\n", err.msg, want);
	CHECK(strstr(err.msg, want) != NULL);
	oci_spec_free(s);
}

TEST(oci_spec_terminal)
{
	const char *from = "\"terminal\":false";
	const char *to = "\"terminal\":true,\"consoleSize\":{\"height\":40,\"width\":132}";
	char buf[sizeof(runc_spec) + 256];
	const char *at = strstr(runc_spec, from);
	struct oci_spec *s = NULL;
	struct err err = {0};
	CHECK(at != NULL);
	if (!at)
		return;
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - runc_spec), runc_spec, to,
	         at + strlen(from));
	CHECK_EQ(oci_spec_parse(buf, strlen(buf), "/b", &s, &err), 0);
	if (!s)
		return;
	CHECK(s->terminal);
	CHECK_EQ(s->console_rows, 40);
	CHECK_EQ(s->console_cols, 132);
	oci_spec_free(s);
}

TEST(oci_spec_refusals)
{
	refused("\"args\":[\"sh\"]", "\"args\":[]", "config.json: process.args: empty");
	refused("\"cwd\":\"/\"", "\"cwd\":\"rel\"",
	        "config.json: process.cwd: \"rel\" is not an absolute");
	refused("\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],\"effective\"",
	        "\"CAP_FOO\"],\"effective\"",
	        "config.json: process.capabilities.bounding: unknown capability \"CAP_FOO\"");
	refused("{\"type\":\"uts\"}", "{\"type\":\"time\"}",
	        "config.json: linux.namespaces[3]: time namespaces are not supported");
	refused("{\"type\":\"uts\"}", "{\"type\":\"pid\"}",
	        "linux.namespaces[3]: pid is listed twice");
	refused("\"destination\":\"/proc\"", "\"destination\":\"proc\"",
	        "config.json: mounts[0].destination: \"proc\" is not an absolute path");
	refused("\"terminal\":false",
	        "\"terminal\":true,\"consoleSize\":{\"height\":5000,\"width\":80}",
	        "config.json: process.consoleSize.height: expected a number from 0 to 4096");
	refused("\"hard\":1024", "\"hard\":10", "process.rlimits[0]: soft 1024 is above hard 10");
	refused("\"type\":\"RLIMIT_NOFILE\"", "\"type\":\"RLIMIT_FOO\"",
	        "process.rlimits[0]: unknown type \"RLIMIT_FOO\"");
	refused("\"access\":\"rw\"", "\"access\":\"rx\"", "access \"rx\": expected letters of rwm");
	refused("\"uid\":0", "\"uid\":-1", "config.json: process.user.uid: expected a number");
	refused("\"ociVersion\":\"1.0.2-dev\"", "\"ociVersion\":\"2.0\"",
	        "kin runs runtime-spec 1.x");
	refused("\"sysctl\":{", "\"seccomp\":{},\"sysctl\":{",
	        "config.json: linux.seccomp.defaultAction: required");
	refused("\"sysctl\":{",
	        "\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":["
	        "\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"},{\"names\":[\"mkdir\"],\"action\":"
	        "\"SCMP_ACT_FOO\"}]},\"sysctl\":{",
	        "config.json: linux.seccomp.syscalls[1].action: unknown action \"SCMP_ACT_FOO\"");
	refused("\"sysctl\":{", "\"rootfsPropagation\":\"runbindable\",\"sysctl\":{",
	        "config.json: linux.rootfsPropagation: expected private, slave or shared");
	refused("\"sysctl\":{", "\"rootfsPropagation\":1,\"sysctl\":{",
	        "config.json: linux.rootfsPropagation: expected private, slave or shared");
	refused("\"hostname\":\"runc\"", "\"hostname\":\"runc\",\"hostname\":\"x\"", "not JSON");
	refused("{\"ociVersion\"", "[{\"ociVersion\"", "not JSON");
}

TEST(oci_spec_seccomp)
{
	const char *edit =
	    "\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"defaultErrnoRet\":1,"
	    "\"syscalls\":[{\"names\":[\"mkdir\",\"nosuchcall\"],\"action\":"
	    "\"SCMP_ACT_ERRNO\",\"errnoRet\":38,\"args\":[{\"index\":1,\"value\":"
	    "448,\"op\":\"SCMP_CMP_EQ\"}]},{\"names\":[\"personality\"],\"action\":"
	    "\"SCMP_ACT_KILL_PROCESS\",\"args\":[{\"index\":0,\"value\":255,"
	    "\"valueTwo\":8,\"op\":\"SCMP_CMP_MASKED_EQ\"}]}]},\"sysctl\":{";
	char buf[sizeof(runc_spec) + 512];
	const char *at = strstr(runc_spec, "\"sysctl\":{");
	struct oci_spec *s = NULL;
	struct err err = {0};
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - runc_spec), runc_spec, edit,
	         at + strlen("\"sysctl\":{"));
	CHECK_EQ(oci_spec_parse(buf, strlen(buf), "/b", &s, &err), 0);
	if (!s)
		return;
	CHECK_STR(s->seccomp_text, "unknown skip\ndefault allow\n"
	                           "mkdir errno 38 arg1 eq 448\n"
	                           "nosuchcall errno 38 arg1 eq 448\n"
	                           "personality kill arg0 me 255:8\n");
	oci_spec_free(s);
}

/* The specs peers write (tests/oci/README): each parses; ctr's has no
 * args (a template) and runc's rootless one maps a user namespace. */
TEST(oci_spec_fixtures)
{
	static const char *const files[] = {"runc-spec.json", "runc-rootless-spec.json",
	                                    "crun-spec.json", "crun-rootless-spec.json",
	                                    "ctr-spec.json"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char path[256];
		_cleanup_free_ char *text = NULL;
		size_t len;
		struct oci_spec *s = NULL;
		struct err err = {0};
		snprintf(path, sizeof(path), "tests/oci/%s", files[i]);
		CHECK_EQ(file_read_small(path, 1 << 20, &text, &len), 0);
		if (!text)
			continue;
		int r = oci_spec_parse(text, len, "/b", &s, &err);
		if (r < 0)
			printf("    %s: %s\n", files[i], err.msg);
		CHECK_EQ(r, 0);
		if (!s)
			continue;
		CHECK(s->ns[OCI_NS_MNT] && s->ns[OCI_NS_PID]);
		CHECK(s->masked_given && s->masked && s->masked[0]);
		CHECK_STR(s->root, "/b/rootfs");
		CHECK(strstr(files[i], "ctr") ? s->args == NULL : s->args && s->args[0]);
		/* crun's rootless spec leaves the maps to the runtime (kin maps
		 * 0 to 0 then); runc's writes its caller's. */
		CHECK(strstr(files[i], "rootless") ? s->ns[OCI_NS_USER] : !s->ns[OCI_NS_USER]);
		CHECK(strstr(files[i], "runc-rootless") ? s->nuid_map == 1 : s->nuid_map == 0);
		oci_spec_free(s);
	}
}

/* A layer whose whiteout entry carries 64 MiB of data (nothing would be
 * written, but the reader would inflate it all to skip it) is refused by
 * the byte bound; so is an archive xattr in overlayfs's user namespace. */
TEST(oci_layer_bounds_every_entry)
{
	static uint8_t buf[4 * 512];
	char dir[] = "/tmp/kin-unit-layer.XXXXXX";
	struct err err = {0};
	struct oci_layer_stats st;
	const struct oci_layer_limits lim = {.max_entries = 100, .max_bytes = 1 << 20};
	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	header(buf, ".wh.big", '0', 64u << 20, false, false, NULL);
	struct mem m = mem_of(buf, 512); /* the header alone: the bound trips first */
	CHECK_EQ(oci_layer_unpack(&m.r, fd, "layer test", &lim, OCI_UNPACK_WHITEOUTS, &st, &err),
	         -EFBIG);
	CHECK(strstr(err.msg, "entry \".wh.big\": the layer passes 1048576 bytes") != NULL);

	static struct arc a;
	a.len = 0;
	add(&a, "x", 'x', "38 SCHILY.xattr.user.overlay.opaque=y\n", false, false, NULL);
	add(&a, "d", '0', "1", false, false, NULL);
	end(&a, 2);
	struct mem m2 = mem_of(a.buf, a.len);
	CHECK_EQ(oci_layer_unpack(&m2.r, fd, "layer test", &lim, OCI_UNPACK_WHITEOUTS, &st, &err),
	         -EPERM);
	CHECK(strstr(err.msg, "user.overlay.opaque") != NULL);
	dir_remove_tree(AT_FDCWD, dir, 0);
}

static int move_bind(size_t i, const char *source, char *buf, size_t size, void *data,
                     struct err *err)
{
	(void)err;
	(*(int *)data)++;
	snprintf(buf, size, "/zone/m%zu%s", i, strcmp(source, "/etc/hosts") == 0 ? "-hosts" : "");
	return 0;
}

/* A config.json edited as JSON: what kin does not know is kept, the
 * sandbox's namespaces dropped, bind sources moved, the process and root
 * replaced; start and delete's reads need no valid spec. */
TEST(oci_json_edit)
{
	char dir[] = "/tmp/kin-unit-edit.XXXXXX", path[64], out[64];
	struct oci_json *j = NULL;
	struct err err = {0};
	int moved = 0;
	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	snprintf(path, sizeof(path), "%s/config.json", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	CHECK_EQ(
	    file_create_str(path,
	                    "{\"ociVersion\":\"1.0.2\",\"x-unknown\":7,"
	                    "\"annotations\":{\"io.kubernetes.cri.sandbox-id\":\"sb\"},"
	                    "\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"a\"]},"
	                    "\"mounts\":[{\"destination\":\"/etc/hosts\",\"type\":\"bind\","
	                    "\"source\":\"/etc/hosts\"},{\"destination\":\"/v\",\"options\":"
	                    "[\"rbind\"],\"source\":\"/v\"},{\"destination\":\"/proc\","
	                    "\"type\":\"proc\",\"source\":\"proc\"},{\"destination\":\"/r\","
	                    "\"type\":\"bind\",\"source\":\"rel\"}],\"linux\":{\"cgroupsPath\":"
	                    "\"/k/p1\",\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\","
	                    "\"path\":\"/proc/42/ns/net\"},{\"type\":\"ipc\",\"path\":"
	                    "\"/proc/42/ns/ipc\"},{\"type\":\"mount\"}]}}",
	                    0600),
	    0);
	CHECK_EQ(oci_json_load(path, &j, &err), 0);
	if (!j)
		return;
	CHECK_STR(oci_json_annotation(j, "io.kubernetes.cri.sandbox-id"), "sb");
	CHECK(oci_json_annotation(j, "io.kubernetes.cri.container-type") == NULL);
	CHECK_STR(oci_json_cgroups_path(j), "/k/p1");
	oci_json_drop_namespaces(j, "/proc/42/ns/");
	CHECK_EQ(oci_json_move_binds(j, path, move_bind, &moved, &err), 0);
	CHECK_EQ(moved, 2); /* the relative bind and proc stay */
	CHECK_EQ(oci_json_set_process(j, "[1]", 3), -EINVAL);
	CHECK_EQ(oci_json_set_process(j, "{\"args\":[\"b\"],\"args\":[]}", 25), -EINVAL);
	CHECK_EQ(oci_json_set_process(j, "{\"args\":[\"b\"]}", 14), 0);
	oci_json_set_root_path(j, "/zone/rootfs");
	CHECK_EQ(oci_json_save(j, out, &err), 0);
	oci_json_free(j);
	_cleanup_free_ char *text = NULL;
	CHECK_EQ(file_read_regular(out, 1 << 16, &text, NULL), 0);
	CHECK(text && strstr(text, "\"x-unknown\":7"));
	CHECK(text && strstr(text, "\"source\":\"/zone/m0-hosts\""));
	CHECK(text && strstr(text, "\"source\":\"/zone/m1\""));
	CHECK(text && strstr(text, "\"source\":\"rel\""));
	CHECK(text && strstr(text, "\"process\":{\"args\":[\"b\"]}"));
	CHECK(text && strstr(text, "\"root\":{\"path\":\"/zone/rootfs\"}"));
	CHECK(text && !strstr(text, "/proc/42") && strstr(text, "\"type\":\"mount\""));
	CHECK_EQ(file_create_str(path, "{\"a\":1,\"a\":2}", 0600), 0);
	CHECK_EQ(oci_json_load(path, &j, &err), -EINVAL);
	CHECK(strstr(err.msg, "config.json: line 1:") != NULL);
	unlink(path);
	unlink(out);
	rmdir(dir);
}
