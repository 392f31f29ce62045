/* debian: the Debian side of `kin image build --distribution debian`. A
 * base root (debootstrap --variant=minbase RELEASE DIR MIRROR) made once
 * into the cache, keyed by release, variant and mirror, and made in a
 * temporary directory renamed into place, so a half-made base is never
 * taken for one; then for each build a copy of it with the packages
 * installed by apt-get in a chroot. Both run in a child with a private
 * mount namespace: the proc, sys and dev mounts they make end with it,
 * failure or not, and never show on the host. debian-root.c finishes the
 * root and writes the image. */
#include "rootfs/debian-int.h"

#include "lib/sha256.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define VARIANT                "minbase"
#define DEBOOTSTRAP_TIMEOUT_MS (20 * 60 * 1000ull)
#define APT_TIMEOUT_MS         (30 * 60 * 1000ull)
#define SOURCES_MAX            (256 * 1024)

const char *rootfs_debian_cache_dir(void)
{
	const char *env = getenv("KIN_DEBIAN_CACHE");
	return env && env[0] ? env : ROOTFS_CACHE_ROOT "/debian";
}

/* One entry's URI and suite: is it a release's own mirror? */
static int mirror_pick(const char *uri, size_t uri_len, const char *suite, size_t suite_len,
                       char *out, size_t size)
{
	if (suite_len == 0 || memchr(suite, '-', suite_len) || memchr(suite, '/', suite_len))
		return -ENOENT;
	if (uri_len == 0 || uri_len >= size)
		return -ENOENT;
	memcpy(out, uri, uri_len);
	out[uri_len] = '\0';
	return 0;
}

static const char *word(const char *p, size_t *ret_len)
{
	p += strspn(p, " \t");
	*ret_len = strcspn(p, " \t\n#");
	return p;
}

static int parse_one_line(const char *text, char *out, size_t size)
{
	for (const char *l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0')) {
		size_t n;
		const char *w = word(l, &n);
		if (n != 3 || strncmp(w, "deb", 3) != 0)
			continue;
		w = word(w + n, &n);
		if (n && w[0] == '[') { /* [ options ] */
			while (n && w[n - 1] != ']')
				w = word(w + n, &n);
			w = word(w + n, &n);
		}
		size_t sn;
		const char *suite = word(w + n, &sn);
		if (mirror_pick(w, n, suite, sn, out, size) == 0)
			return 0;
	}
	return -ENOENT;
}

/* The value of "Key:" in one deb822 stanza [s, e), or NULL. */
static const char *field(const char *s, const char *e, const char *key, size_t *ret_len)
{
	size_t klen = strlen(key);
	for (const char *l = s; l < e; l += strcspn(l, "\n") + 1)
		if (strncasecmp(l, key, klen) == 0 && l[klen] == ':') {
			const char *v = l + klen + 1;
			v += strspn(v, " \t");
			*ret_len = strcspn(v, "\n");
			return v;
		}
	return NULL;
}

static int parse_deb822(const char *text, char *out, size_t size)
{
	const char *s = text;
	while (*s) {
		const char *e = strstr(s, "\n\n");
		e = e ? e + 1 : s + strlen(s);
		size_t tl, ul, sl, el;
		const char *types = field(s, e, "Types", &tl), *uris = field(s, e, "URIs", &ul),
		           *suites = field(s, e, "Suites", &sl), *en = field(s, e, "Enabled", &el);
		bool deb = false;
		for (size_t n, i = 0; types && i < tl; i += n + 1) {
			const char *w = word(types + i, &n);
			i = (size_t)(w - types);
			deb |= n == 3 && strncmp(w, "deb", 3) == 0;
		}
		if (deb && uris && suites && !(en && el == 2 && strncasecmp(en, "no", 2) == 0)) {
			size_t un, n;
			const char *uri = word(uris, &un);
			for (size_t i = 0; i < sl; i += n + 1) {
				const char *w = word(suites + i, &n);
				i = (size_t)(w - suites);
				if (n && mirror_pick(uri, un, w, n, out, size) == 0)
					return 0;
			}
		}
		s = *e ? e + 1 : e;
	}
	return -ENOENT;
}

int rootfs_debian_mirror_parse(const char *text, bool deb822, char *out, size_t size)
{
	return deb822 ? parse_deb822(text, out, size) : parse_one_line(text, out, size);
}

static int sources_file(const struct dirent *de)
{
	size_t n = strlen(de->d_name);
	return de->d_name[0] != '.' && ((n > 5 && strcmp(de->d_name + n - 5, ".list") == 0) ||
	                                (n > 8 && strcmp(de->d_name + n - 8, ".sources") == 0));
}

/* apt's own order: sources.list, then sources.list.d by name. */
static int host_mirror(char *out, size_t size, struct err *d)
{
	_cleanup_free_ char *text = NULL;
	struct dirent **names = NULL;
	int r = -ENOENT;
	if (file_read_small("/etc/apt/sources.list", SOURCES_MAX, &text, NULL) == 0)
		r = rootfs_debian_mirror_parse(text, false, out, size);
	int n = r == 0 ? 0 : scandir("/etc/apt/sources.list.d", &names, sources_file, alphasort);
	for (int i = 0; i < n; i++) {
		char path[ROOTFS_PATH_MAX];
		size_t len = strlen(names[i]->d_name);
		bool deb822 =
		    strcmp(names[i]->d_name + len - 8 + (len < 8 ? 8 - len : 0), ".sources") == 0;
		snprintf(path, sizeof(path), "/etc/apt/sources.list.d/%s", names[i]->d_name);
		free(text);
		text = NULL;
		if (r != 0 && file_read_small(path, SOURCES_MAX, &text, NULL) == 0)
			r = rootfs_debian_mirror_parse(text, deb822, out, size);
		free(names[i]);
	}
	free(names);
	if (r < 0)
		return err_set_errno(d, r,
		                     "no Debian mirror in /etc/apt/sources.list or "
		                     "/etc/apt/sources.list.d: give --mirror URL");
	return 0;
}

int rootfs_debian_in_private_ns(int (*fn)(void *data, struct err *d), void *data, struct err *d)
{
	int p[2];
	/* The child's err comes back whole through a pipe (it fits in the
	 * pipe's buffer, so the child never blocks on it). */
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid == 0) {
		/* The namespace, and every mount in it, goes with this child;
		 * the child goes with the builder. */
		struct err e = {0};
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int r = unshare(CLONE_NEWNS) < 0 ? -errno : 0;
		if (r == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			r = -errno;
		if (r < 0)
			err_set_errno(&e, r, "a private mount namespace: %s", strerror(-r));
		else
			r = fn(data, &e);
		(void)!write(p[1], &e, sizeof(e));
		_exit(r < 0 ? 1 : 0);
	}
	close(p[1]);
	_cleanup_close_ int in = p[0];
	struct err e = {0};
	int status, r;
	while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (read(in, &e, sizeof(e)) == (ssize_t)sizeof(e) && e.msg[0]) {
		e.msg[sizeof(e.msg) - 1] = '\0';
		return err_set_errno(d, e.errnum < 0 ? e.errnum : -EIO, "%s", e.msg);
	}
	return err_set_errno(d, -EIO, "the build's child died (status 0x%x)", status);
}

/* What runs in a chroot or debootstrap: a fixed environment, nothing of
 * the caller's (a SOURCE_DATE_EPOCH goes on only where the caller said). */
static void chroot_env(const char **env, char *epoch, size_t size,
                       const struct rootfs_build_opts *o)
{
	size_t n = 0;
	env[n++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	env[n++] = "DEBIAN_FRONTEND=noninteractive";
	env[n++] = "DEBCONF_NONINTERACTIVE_SEEN=true";
	env[n++] = "LC_ALL=C.UTF-8";
	env[n++] = "HOME=/root";
	if (o && o->mtime_given) {
		snprintf(epoch, size, "SOURCE_DATE_EPOCH=%llu", (unsigned long long)o->mtime);
		env[n++] = epoch;
	}
	env[n] = NULL;
}

struct debootstrap_job {
	const char *release, *dir, *mirror;
};

static int debootstrap_run(void *data, struct err *d)
{
	const struct debootstrap_job *j = data;
	const char *env[8];
	char epoch[64], log[ROOTFS_PATH_MAX + 32];
	struct rootfs_run_tail tail;
	chroot_env(env, epoch, sizeof(epoch), NULL);
	const char *const argv[] = {
	    "debootstrap", "--variant=" VARIANT, j->release, j->dir, j->mirror, NULL};
	const struct rootfs_run_opts ro = {.env = env, .timeout_ms = DEBOOTSTRAP_TIMEOUT_MS};
	int r = rootfs_run_capture(argv, &ro, &tail);
	if (r == 0)
		return 0;
	/* Its own log says more than its stderr ("see debootstrap.log"). */
	_cleanup_free_ char *text = NULL;
	size_t len;
	snprintf(log, sizeof(log), "%s/debootstrap/debootstrap.log", j->dir);
	if (r > 0 && file_read_small(log, 16 << 20, &text, &len) == 0 && len > 0) {
		size_t from = len > ROOTFS_RUN_TAIL ? len - ROOTFS_RUN_TAIL : 0;
		tail.len = len - from;
		memcpy(tail.buf, text + from, tail.len);
		tail.buf[tail.len] = '\0';
	}
	char what[128];
	snprintf(what, sizeof(what), "debootstrap %s from %s", j->release, j->mirror);
	return rootfs_run_fail(d, what, r, &tail);
}

int rootfs_debian_base(const struct rootfs_build_opts *o, const char *cache, char *ret_base,
                       size_t size, struct err *d)
{
	char mirror[600], key[160], dir[ROOTFS_PATH_MAX], tmp[ROOTFS_PATH_MAX + 16];
	char hex[SHA256_HEX_LEN + 1];
	uint8_t digest[SHA256_LEN];
	struct sha256 h;
	int r;

	if (o->mirror)
		r = str_copy(mirror, sizeof(mirror), o->mirror);
	else
		r = host_mirror(mirror, sizeof(mirror), d);
	if (r < 0)
		return r;
	/* The mirror is in the key by digest: a URL is no file name. */
	sha256_init(&h);
	sha256_update(&h, mirror, strlen(mirror));
	sha256_final(&h, digest);
	sha256_hex(digest, hex);
	snprintf(key, sizeof(key), "%s-%s-%.16s", o->release, VARIANT, hex);
	if (snprintf(dir, sizeof(dir), "%s/base/%s", cache, key) >= (int)sizeof(dir))
		return err_set_errno(d, -ENAMETOOLONG, "Debian cache path too long");
	struct stat st;
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		rootfs_note(o, "debian base: reusing %s (%s %s from %s)", dir, o->release, VARIANT,
		            mirror);
		return str_copy(ret_base, size, dir);
	}
	snprintf(tmp, sizeof(tmp), "%s/base", cache);
	if ((r = mkdir_p(tmp, 0755)) < 0)
		return err_set_errno(d, r, "Debian cache %s: %s", tmp, strerror(-r));
	snprintf(tmp, sizeof(tmp), "%s/base/.%s.XXXXXX", cache, key);
	if (!mkdtemp(tmp))
		return err_set_errno(d, -errno, "%s: %s", tmp, strerror(errno));
	chmod(tmp, 0755);
	rootfs_note(o, "debian base: debootstrap --variant=%s %s from %s (a minute or so)", VARIANT,
	            o->release, mirror);
	uint64_t t0 = now_monotonic_ns();
	struct debootstrap_job job = {o->release, tmp, mirror};
	r = rootfs_debian_in_private_ns(debootstrap_run, &job, d);
	/* Another build may have made the same base meanwhile: it wins. */
	if (r == 0 && rename(tmp, dir) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		r = err_set_errno(d, -errno, "%s: %s", dir, strerror(errno));
	dir_remove_tree(AT_FDCWD, tmp, 0);
	if (r < 0)
		return r;
	rootfs_note(o, "debian base: made %s in %llu s", dir,
	            (unsigned long long)((now_monotonic_ns() - t0) / 1000000000ull));
	return str_copy(ret_base, size, dir);
}

struct install_job {
	const struct rootfs_build_opts *o;
	const char *root;
};

/* No maintainer script starts a service while the image is built. */
#define POLICY_RC_D                                                                                \
	"#!/bin/sh\n# kin image build: no service starts while packages install.\nexit 101\n"

static int chroot_mounts(const char *root, struct err *d)
{
	char p[ROOTFS_PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/proc", root);
	if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return err_set_errno(d, -errno, "mounting proc on %s: %s", p, strerror(errno));
	snprintf(p, sizeof(p), "%s/sys", root);
	if (mount("sysfs", p, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) < 0)
		return err_set_errno(d, -errno, "mounting sysfs on %s: %s", p, strerror(errno));
	snprintf(p, sizeof(p), "%s/dev", root);
	if (spawn_make_dev(p) < 0)
		return err_set_errno(d, -errno, "a /dev on %s: %s", p, strerror(errno));
	return 0;
}

/* Name resolution for apt inside: the host's resolv.conf, copied (the
 * host's may be a link into its /run). debian-root.c removes it. */
static int chroot_resolv(int rootfd, struct err *d)
{
	_cleanup_free_ char *text = NULL;
	int r = file_read_small("/etc/resolv.conf", 64 * 1024, &text, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return err_set_errno(d, r, "/etc/resolv.conf: %s", strerror(-r));
	return rootfs_debian_put(rootfd, "etc/resolv.conf", text, strlen(text), 0644, d);
}

static int apt(const struct install_job *j, const char *const argv[], const char *what,
               struct err *d)
{
	const char *env[8];
	char epoch[64];
	struct rootfs_run_tail tail;
	chroot_env(env, epoch, sizeof(epoch), j->o);
	const struct rootfs_run_opts ro = {
	    .env = env, .root = j->root, .timeout_ms = APT_TIMEOUT_MS};
	int r = rootfs_run_capture(argv, &ro, &tail);
	return r == 0 ? 0 : rootfs_run_fail(d, what, r, &tail);
}

static int install_run(void *data, struct err *d)
{
	const struct install_job *j = data;
	char csv[ROOTFS_PACKAGES_CSV_MAX + 1], what[160];
	const char *argv[ROOTFS_PACKAGES_MAX + 16];
	size_t n = 0;
	_cleanup_close_ int rootfd = open(j->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return err_set_errno(d, -errno, "%s: %s", j->root, strerror(errno));
	int r = chroot_mounts(j->root, d);
	if (r == 0)
		r = rootfs_debian_put(rootfd, "usr/sbin/policy-rc.d", POLICY_RC_D,
		                      STRLEN(POLICY_RC_D), 0755, d);
	if (r == 0)
		r = chroot_resolv(rootfd, d);
	if (r < 0)
		return r;
	const char *const update[] = {"apt-get", "update", "-q", NULL};
	r = apt(j, update, "apt-get update in the image", d);
	if (r < 0)
		return r;
	argv[n++] = "apt-get";
	argv[n++] = "install";
	argv[n++] = "-y";
	argv[n++] = "-q";
	argv[n++] = "--no-install-recommends";
	argv[n++] = "-o";
	argv[n++] = "Dpkg::Options::=--force-confold";
	str_copy(csv, sizeof(csv), j->o->packages);
	for (char *save = NULL, *w = strtok_r(csv, ",", &save); w && n + 1 < ARRAY_SIZE(argv);
	     w = strtok_r(NULL, ",", &save))
		argv[n++] = w;
	argv[n] = NULL;
	snprintf(what, sizeof(what), "apt-get install %.100s%s", j->o->packages,
	         strlen(j->o->packages) > 100 ? "..." : "");
	r = apt(j, argv, what, d);
	if (r < 0)
		return r;
	const char *const clean[] = {"apt-get", "clean", NULL};
	return apt(j, clean, "apt-get clean in the image", d);
}

int rootfs_debian_install(const struct rootfs_build_opts *o, const char *root, struct err *d)
{
	struct install_job j = {o, root};
	if (!o->packages)
		return 0;
	rootfs_note(o, "debian: apt-get install %s", o->packages);
	uint64_t t0 = now_monotonic_ns();
	int r = rootfs_debian_in_private_ns(install_run, &j, d);
	if (r == 0)
		rootfs_note(o, "debian: packages installed in %llu s",
		            (unsigned long long)((now_monotonic_ns() - t0) / 1000000000ull));
	return r;
}
