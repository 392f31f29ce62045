/* cli: `kin image build|kernel` — flags to rootfs_build_opts and to the
 * kernel cache. A usage error names what was wrong and exits 2; a failed
 * build prints the one sentence that says why and exits 1. */
#include "rootfs/rootfs.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	fputs("usage: kin image build -o FILE [OPTIONS]\n"
	      "       kin image build --format ext4 --distribution debian --release R\n"
	      "                       [--packages a,b] -o FILE [OPTIONS]\n"
	      "       kin image kernel [--cache DIR]\n"
	      "\n"
	      "build: write a bootable initramfs (cpio newc) or ext4 root disk with kin as\n"
	      "/init, the kernel modules a guest needs and what you add.\n"
	      "  -o, --output FILE      the image to write\n"
	      "  --format cpio|ext4     cpio (default) or an ext4 disk image (mke2fs -d)\n"
	      "  --kernel-dir DIR       modules from DIR/lib/modules/RELEASE\n"
	      "  --modules-dir DIR      modules from DIR (a /lib/modules/RELEASE)\n"
	      "  --no-modules           no kernel modules\n"
	      "  --cache DIR            kernel cache (default $KIN_KERNEL_CACHE or\n"
	      "                         /var/cache/kin/kernel); its kernel is the default\n"
	      "  --modules a,b          modules (or aliases) to load besides the defaults\n"
	      "  --add SRC:DST          host file or tree SRC at DST in the image\n"
	      "  --add-binary PATH      host binary with its interpreter and libraries\n"
	      "  --label L              ext4 label (default kin-root); the UUID follows it\n"
	      "  --size SIZE            ext4 size: 512M, 2G, or a bare number of MiB\n"
	      "                         (default: computed)\n"
	      "  --self FILE            the kin put in the image (default: this one, or\n"
	      "                         $KIN_IMAGE_SELF); it must be static\n"
	      "Times are SOURCE_DATE_EPOCH (default 0; 1700000000 for a Debian root): the\n"
	      "same inputs give the same bytes.\n"
	      "\n"
	      "A Debian root disk (as root; needs debootstrap):\n"
	      "  --distribution debian  debootstrap --variant=minbase RELEASE, cached in\n"
	      "                         $KIN_DEBIAN_CACHE or /var/cache/kin/debian; needs\n"
	      "                         --format ext4; kin is /sbin/init\n"
	      "  --release R            the release (bookworm)\n"
	      "  --packages a,b         packages apt-get installs (no recommends)\n"
	      "  --mirror URL           default: the host's apt mirror\n"
	      "  --hostname NAME        default kin\n"
	      "  --root-authorized-key FILE\n"
	      "                         root's ssh keys (root has no password either way)\n"
	      "\n"
	      "kernel: fetch Debian's current kernel package into the cache (no install),\n"
	      "run depmod, and print the kernel image's path as the last line.\n",
	      f);
}

static int usage_error(const char *fmt, ...) _printf_(1, 2);
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("kin image: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'kin image help'.\n", stderr);
	return 2;
}

/* The build's flags say what is wrong in d; the command prints it. */
#define bad_arg(...) err_set(d, -EINVAL, ERR_INVALID_ARGUMENT, __VA_ARGS__)

/* --size: 512M, 2G, or a bare number of MiB; whole MiB, 8M to 1T. */
static int size_parse(const char *v, uint64_t *ret_mb)
{
	uint64_t bytes;
	if (str_to_size(v, 1 << 20, 1ull << 40, &bytes) < 0 || bytes % (1 << 20) || bytes < 8 << 20)
		return -EINVAL;
	*ret_mb = bytes >> 20;
	return 0;
}

/* A Debian release (bookworm) or package name (libc6, g++, ...): lower
 * case letters, digits and + - ., starting with a letter or digit, so it
 * can never be read as an option of debootstrap or apt-get. */
static bool word_valid(const char *w, size_t max, bool package)
{
	size_t n = strlen(w);
	if (n == 0 || n > max || !((w[0] >= 'a' && w[0] <= 'z') || (w[0] >= '0' && w[0] <= '9')))
		return false;
	for (const char *p = w; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      (package && (*p == '+' || *p == '.'))))
			return false;
	return true;
}

static bool packages_valid(const char *csv)
{
	char buf[ROOTFS_PACKAGES_CSV_MAX + 1];
	size_t n = 0;
	if (str_copy(buf, sizeof(buf), csv) < 0)
		return false;
	for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
		if (++n > ROOTFS_PACKAGES_MAX || !word_valid(w, 128, true))
			return false;
	return n > 0 && csv[strlen(csv) - 1] != ',' && !strstr(csv, ",,");
}

static bool mirror_valid(const char *u)
{
	if (!str_startswith(u, "http://") && !str_startswith(u, "https://") &&
	    !str_startswith(u, "file:/"))
		return false;
	if (strlen(u) > 512)
		return false;
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

/* --add SRC:/DST and --add-binary /PATH. */
static int build_add(struct rootfs_build_opts *o, int c, char *v, struct err *d)
{
	if (c == 'b') {
		if (v[0] != '/')
			return bad_arg("--add-binary '%s': expected an absolute path", v);
		if (o->n_binaries == ROOTFS_ADDS_MAX)
			return bad_arg("--add-binary: more than %s", "256");
		o->binaries[o->n_binaries++] = v;
		return 0;
	}
	char *colon = strchr(v, ':');
	if (!colon || colon == v || !colon[1] || colon[1] != '/')
		return bad_arg("--add '%s': expected SRC:/DST", v);
	if (o->n_adds == ROOTFS_ADDS_MAX)
		return bad_arg("--add: more than %s", "256");
	*colon = '\0';
	o->add_src[o->n_adds] = v;
	o->add_dst[o->n_adds++] = colon + 1;
	return 0;
}

/* One flag with its value into o: 0, or -EINVAL with d saying why. */
static int build_flag_set(struct rootfs_build_opts *o, int c, char *v, struct err *d)
{
	switch (c) {
	case 'o':
		o->output = v;
		return 0;
	case 'f':
		if (strcmp(v, "cpio") == 0)
			o->format = ROOTFS_FORMAT_CPIO;
		else if (strcmp(v, "ext4") == 0)
			o->format = ROOTFS_FORMAT_EXT4;
		else
			return bad_arg("--format '%s': expected cpio or ext4", v);
		return 0;
	case 'k':
		o->kernel_dir = v;
		return 0;
	case 'm':
		o->modules_dir = v;
		return 0;
	case 'n':
		o->no_modules = true;
		return 0;
	case 'c':
		o->cache_dir = v;
		return 0;
	case 'M':
		if (!rootfs_modules_csv_valid(v))
			return bad_arg("--modules '%s': expected a comma list of module names", v);
		o->modules_csv = v;
		return 0;
	case 'a':
	case 'b':
		return build_add(o, c, v, d);
	case 'L':
		if (strlen(v) == 0 || strlen(v) > 16)
			return bad_arg("--label '%s': expected 1 to 16 bytes", v);
		o->label = v;
		return 0;
	case 's':
		if (size_parse(v, &o->size_mb) < 0)
			return bad_arg("--size '%s': expected 8M to 1T (512M, 2G; a bare "
			               "number is MiB)",
			               v);
		return 0;
	case 'D':
		if (strcmp(v, "debian") != 0)
			return bad_arg("--distribution '%s': expected debian", v);
		o->distribution = v;
		return 0;
	case 'R':
		if (!word_valid(v, 32, false))
			return bad_arg("--release '%s': expected a Debian suite or codename "
			               "(bookworm)",
			               v);
		o->release = v;
		return 0;
	case 'P':
		if (!packages_valid(v))
			return bad_arg("--packages '%s': expected a comma list of Debian package "
			               "names (at most %d)",
			               v, ROOTFS_PACKAGES_MAX);
		o->packages = v;
		return 0;
	case 'U':
		if (!mirror_valid(v))
			return bad_arg("--mirror '%s': expected an http://, https:// or file:/ URL",
			               v);
		o->mirror = v;
		return 0;
	case 'H':
		if (!str_is_hostname(v))
			return bad_arg("--hostname '%s': not a valid host name", v);
		o->hostname = v;
		return 0;
	case 'K':
		if (access(v, R_OK) < 0)
			return bad_arg("--root-authorized-key '%s': %s", v, strerror(errno));
		o->root_key = v;
		return 0;
	case 'S':
		if (access(v, X_OK) < 0)
			return bad_arg("--self '%s': not an executable file", v);
		o->self = v;
		return 0;
	}
	return bad_arg("unknown option '%s'", v);
}

/* What no single flag can check: 0, or -EINVAL with d saying why. */
static int build_check(struct rootfs_build_opts *o, struct err *d)
{
	if (!o->output)
		return bad_arg("%s", "build needs -o FILE");
	if (!!o->kernel_dir + !!o->modules_dir + o->no_modules > 1)
		return bad_arg("%s",
		               "--kernel-dir, --modules-dir and --no-modules exclude each other");
	if (o->no_modules && o->modules_csv)
		return bad_arg("%s", "--modules makes no sense with --no-modules");
	if (o->label && o->format != ROOTFS_FORMAT_EXT4)
		return bad_arg("%s", "--label is for --format ext4");
	if (o->distribution) {
		if (o->format != ROOTFS_FORMAT_EXT4)
			return bad_arg("%s", "--distribution debian makes an ext4 root disk: give "
			                     "--format ext4");
		if (!o->release)
			return bad_arg("%s", "--distribution debian needs --release (bookworm)");
	} else if (o->release || o->packages || o->mirror || o->hostname || o->root_key) {
		return bad_arg("%s", "--release, --packages, --mirror, --hostname and "
		                     "--root-authorized-key are for --distribution debian");
	}
	const char *epoch = getenv("SOURCE_DATE_EPOCH");
	o->mtime_given = epoch && epoch[0];
	if (o->mtime_given && str_to_u64(epoch, UINT32_MAX, &o->mtime) < 0)
		return bad_arg("SOURCE_DATE_EPOCH='%s' is not a number of seconds", epoch);
	/* A Debian root's programs read file times: cron takes a crontab time
	 * of 0 for "never loaded" and never runs /etc/cron.d. A fixed time
	 * keeps builds reproducible without that. */
	if (o->distribution && !o->mtime_given)
		o->mtime = ROOTFS_DEBIAN_EPOCH;
	return 0;
}

int rootfs_build_args(int argc, char **argv, struct rootfs_build_opts *o, struct err *d)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"kernel-dir", required_argument, NULL, 'k'},
	    {"modules-dir", required_argument, NULL, 'm'},
	    {"no-modules", no_argument, NULL, 'n'},
	    {"cache", required_argument, NULL, 'c'},
	    {"modules", required_argument, NULL, 'M'},
	    {"add", required_argument, NULL, 'a'},
	    {"add-binary", required_argument, NULL, 'b'},
	    {"label", required_argument, NULL, 'L'},
	    {"size", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {"self", required_argument, NULL, 'S'},
	    {"distribution", required_argument, NULL, 'D'},
	    {"release", required_argument, NULL, 'R'},
	    {"packages", required_argument, NULL, 'P'},
	    {"mirror", required_argument, NULL, 'U'},
	    {"hostname", required_argument, NULL, 'H'},
	    {"root-authorized-key", required_argument, NULL, 'K'},
	    {NULL, 0, NULL, 0},
	};
	int c, r;

	memset(o, 0, sizeof(*o));
	err_clear(d);
	/* An ASan (dynamic) kin under test still builds images with the
	 * static one: the guest has none of its libraries. */
	o->self = getenv("KIN_IMAGE_SELF");
	if (o->self && !*o->self)
		o->self = NULL;
	opterr = 0;
	optind = 0; /* glibc starts afresh: a parse left halfway (-h) leaves state */
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		if (c == 'h')
			return 1;
		if (c == ':')
			return bad_arg("option '%s' needs a value", argv[optind - 1]);
		r = build_flag_set(o, c, c == '?' ? argv[optind - 1] : optarg, d);
		if (r < 0)
			return r;
	}
	if (optind < argc)
		return bad_arg("unexpected argument '%s'", argv[optind]);
	return build_check(o, d);
}

static int cmd_build(int argc, char **argv)
{
	static struct rootfs_build_opts o;
	struct err e = {0};
	int r = rootfs_build_args(argc, argv, &o, &e);
	if (r == 1) {
		usage(stdout);
		return 0;
	}
	if (r < 0)
		return usage_error("%s", e.msg);
	o.progress = stderr;
	r = rootfs_build(&o, &e);
	if (r < 0) {
		fprintf(stderr, "kin image build: %s\n", e.msg[0] ? e.msg : strerror(-r));
		return 1;
	}
	return 0;
}

static int cmd_kernel(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"cache", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *cache = rootfs_kernel_cache_dir();
	struct err e = {0};
	char release[128];
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cache = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	int r = rootfs_kernel_fetch(cache, release, sizeof(release), &e);
	if (r < 0) {
		fprintf(stderr, "kin image kernel: %s\n", e.msg[0] ? e.msg : strerror(-r));
		return 1;
	}
	printf("release %s\nmodules %s/%s/lib/modules/%s\n%s/%s/boot/vmlinuz-%s\n", release, cache,
	       release, release, cache, release, release);
	return 0;
}

int rootfs_main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "build") == 0)
		return cmd_build(argc - 1, argv + 1);
	if (strcmp(cmd, "kernel") == 0)
		return cmd_kernel(argc - 1, argv + 1);
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	return usage_error("unknown command '%s'", cmd);
}
