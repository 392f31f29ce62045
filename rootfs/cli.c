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
	      "Times are SOURCE_DATE_EPOCH (default 0): the same inputs give the same bytes.\n"
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

/* --size: 512M, 2G, or a bare number of MiB; whole MiB, 8M to 1T. */
static int size_parse(const char *v, uint64_t *ret_mb)
{
	uint64_t bytes;
	if (str_to_size(v, 1 << 20, 1ull << 40, &bytes) < 0 || bytes % (1 << 20) || bytes < 8 << 20)
		return -EINVAL;
	*ret_mb = bytes >> 20;
	return 0;
}

/* --add SRC:/DST and --add-binary /PATH. */
static int build_add(struct rootfs_build_opts *o, int c, char *v)
{
	if (c == 'b') {
		if (v[0] != '/')
			return usage_error("--add-binary '%s': expected an absolute path", v);
		if (o->n_binaries == ROOTFS_ADDS_MAX)
			return usage_error("--add-binary: more than %s", "256");
		o->binaries[o->n_binaries++] = v;
		return 0;
	}
	char *colon = strchr(v, ':');
	if (!colon || colon == v || !colon[1] || colon[1] != '/')
		return usage_error("--add '%s': expected SRC:/DST", v);
	if (o->n_adds == ROOTFS_ADDS_MAX)
		return usage_error("--add: more than %s", "256");
	*colon = '\0';
	o->add_src[o->n_adds] = v;
	o->add_dst[o->n_adds++] = colon + 1;
	return 0;
}

/* One flag with its value into o: 0, or 2 after a usage error. */
static int build_flag_set(struct rootfs_build_opts *o, int c, char *v)
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
			return usage_error("--format '%s': expected cpio or ext4", v);
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
			return usage_error("--modules '%s': expected a comma list of module names",
			                   v);
		o->modules_csv = v;
		return 0;
	case 'a':
	case 'b':
		return build_add(o, c, v);
	case 'L':
		if (strlen(v) == 0 || strlen(v) > 16)
			return usage_error("--label '%s': expected 1 to 16 bytes", v);
		o->label = v;
		return 0;
	case 's':
		if (size_parse(v, &o->size_mb) < 0)
			return usage_error("--size '%s': expected 8M to 1T (512M, 2G; a bare "
			                   "number is MiB)",
			                   v);
		return 0;
	case 'S':
		if (access(v, X_OK) < 0)
			return usage_error("--self '%s': not an executable file", v);
		o->self = v;
		return 0;
	}
	return usage_error("unknown option '%s'", v);
}

/* What no single flag can check: 0, or 2 after a usage error. */
static int build_check(struct rootfs_build_opts *o)
{
	if (!o->output)
		return usage_error("%s", "build needs -o FILE");
	if (!!o->kernel_dir + !!o->modules_dir + o->no_modules > 1)
		return usage_error(
		    "%s", "--kernel-dir, --modules-dir and --no-modules exclude each other");
	if (o->no_modules && o->modules_csv)
		return usage_error("%s", "--modules makes no sense with --no-modules");
	if (o->label && o->format != ROOTFS_FORMAT_EXT4)
		return usage_error("%s", "--label is for --format ext4");
	const char *epoch = getenv("SOURCE_DATE_EPOCH");
	if (epoch && epoch[0] && str_to_u64(epoch, UINT32_MAX, &o->mtime) < 0)
		return usage_error("SOURCE_DATE_EPOCH='%s' is not a number of seconds", epoch);
	return 0;
}

static int cmd_build(int argc, char **argv)
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
	    {NULL, 0, NULL, 0},
	};
	static struct rootfs_build_opts o;
	struct err e = {0};
	int c, r;

	memset(&o, 0, sizeof(o));
	/* An ASan (dynamic) kin under test still builds images with the
	 * static one: the guest has none of its libraries. */
	o.self = getenv("KIN_IMAGE_SELF");
	if (o.self && !*o.self)
		o.self = NULL;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == ':')
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		r = build_flag_set(&o, c, c == '?' ? argv[optind - 1] : optarg);
		if (r)
			return r;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	r = build_check(&o);
	if (r)
		return r;
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
