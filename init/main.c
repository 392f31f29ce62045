/* main: the one kin binary's entry. Picks the job from argv — init (also
 * when started by the kernel as /init or /sbin/init), systemctl (called by
 * that name), version, ctl and image — and hands over. */
#include "init/init-int.h"
#include "keep/keep.h"
#include "lib/state.h"
#include "rootfs/rootfs.h"
#include "api/api.h"
#include "ctl/ctl.h"
#include "vm/vm.h"
#include "shim/shim.h"
#include "tls/tls.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

static void cmdline_diag(void *userdata, const char *fmt, ...)
{
	va_list ap;
	(void)userdata;
	va_start(ap, fmt);
	log_vmsg(LOG_WARN_, fmt, ap);
	va_end(ap);
}

static void apply_cmdline_file(struct init_config *cfg, const char *path)
{
	_cleanup_free_ char *buf = NULL;
	int r = file_read_small(path, 64 * 1024, &buf, NULL);
	if (r < 0) {
		log_warn("cannot read kin.* options from %s: %s", path, strerror(-r));
		return;
	}
	init_cmdline_parse(buf, cfg, cmdline_diag, NULL);
}

int init_main(int argc, char **argv, bool as_kernel_init)
{
	struct init_config cfg;
	enum init_role role;
	int r;

	init_config_defaults(&cfg);
	cfg.exec_ns = now_monotonic_ns();
	if (as_kernel_init) {
		/* The kernel passes init the words after "--" on its command line,
		 * and any word it did not understand. A workload is what starts
		 * with an absolute path; stray words are only noted. */
		for (int i = 1; i < argc; i++) {
			if (argv[i][0] == '/') {
				cfg.argv = &argv[i];
				break;
			}
			if (strcmp(argv[i], "--") != 0)
				log_info("ignoring argument '%s' from the kernel", argv[i]);
		}
	} else {
		r = init_flags_parse(argc, argv, &cfg);
		if (r != 0)
			return r > 0 ? 0 : 2;
	}
	bool level_from_flags = cfg.log_level_set;
	enum log_level flag_level = cfg.log_level;

	r = init_detect_role(&cfg, &role);
	if (r < 0) {
		log_error("cannot tell which role to play: %s", strerror(-r));
		if (getpid() != 1)
			return 1;
		role = INIT_ROLE_CONTAINER; /* the role with the fewest powers */
	}
	/* A container init is as quiet as tini unless asked otherwise. */
	log_set_level(role == INIT_ROLE_CONTAINER ? LOG_WARN_ : LOG_INFO_);
	if (level_from_flags)
		log_set_level(flag_level);
	/* A re-exec'd machine init is booted already: no mounts, no modules. */
	bool booted = keep_reexec_pending();
	if (role == INIT_ROLE_MACHINE) {
		init_install_fault_handlers(cfg.panic);
		r = booted ? 0 : init_boot_machine_mounts();
		if (r < 0)
			init_panic(cfg.panic, "boot failed: %s", strerror(-r));
	}
	const char *cmdline = cfg.cmdline_file;
	if (!cmdline && role == INIT_ROLE_MACHINE)
		cmdline = "/proc/cmdline";
	if (cmdline) {
		apply_cmdline_file(&cfg, cmdline);
		/* Flags given on our own command line win over kin.* options. */
		log_set_level(level_from_flags    ? flag_level
		              : cfg.log_level_set ? cfg.log_level
		                                  : log_get_level());
	}
	if (role == INIT_ROLE_MACHINE) {
		init_install_fault_handlers(cfg.panic); /* kin.panic= may have changed it */
		if (!booted)
			init_boot_machine_setup(&cfg);
	}
	if (role != INIT_ROLE_MACHINE && cfg.net.ifname[0] && !booted) { /* a zone's veth end */
		r = net_bring_up(&cfg.net);
		if (r < 0)
			log_warn("network: bringing up %s: %s", cfg.net.ifname, strerror(-r));
		else
			log_info("network: %s up %s%s%s", cfg.net.ifname, cfg.net.addr,
			         cfg.net.gateway[0] ? " via " : "", cfg.net.gateway);
	}
	if (role != INIT_ROLE_MACHINE && cfg.hostname[0]) {
		r = init_boot_set_hostname(cfg.hostname);
		if (r < 0)
			log_warn("cannot set hostname '%s': %s", cfg.hostname, strerror(-r));
	}
	log_debug("role %s", init_role_name(role));
	r = init_run(&cfg, role);
	if (role == INIT_ROLE_MACHINE) /* never: the kernel panics when PID 1 exits */
		init_panic(cfg.panic, "main loop ended with status %d", r);
	return r;
}

static int cmd_version(int argc, char **argv)
{
	struct utsname u;
	/* What a running kin asks before it re-executes into this binary. */
	if (argc > 2 && strcmp(argv[2], "--state-format") == 0) {
		printf("kin-state-format %u\n", STATE_FORMAT);
		return 0;
	}
	uname(&u);
	printf("kin %s (kernel %s %s)\n", KIN_VERSION, u.release, u.machine);
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: kin COMMAND [ARGS...]\n"
	      "\n"
	      "  init [OPTIONS] [-- CMD ARGS...]   run as init (see 'kin init --help')\n"
	      "  vm run --kernel K --image I ...  boot a microVM in the foreground\n"
	      "  ctl [OPTIONS] COMMAND            call a running kin (see 'kin ctl --help')\n"
	      "  image build|kernel ...           build a bootable image (see 'kin image help')\n"
	      "  version                          print kin's version\n"
	      "  help                             this text\n"
	      "\n"
	      "Started as /init or /sbin/init (or as PID 1 with no command), kin runs init.\n",
	      f);
}

int main(int argc, char **argv)
{
	/* A long-lived kin: blocks of 128 KiB and more (a seccomp profile, a
	 * big message) come from mmap and go back to the kernel when freed.
	 * glibc's default raises that threshold after each such free, and then
	 * they pile up in the heap, which only shrinks from the top. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024);
	const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
	base = base ? base + 1 : argc > 0 && argv[0] ? argv[0] : "kin";

	init_carry_set_argv(argv);
	if (shim_argv0_is_shim(base))
		return init_shim_main(argc, argv);
	if (strcmp(base, "systemctl") == 0)
		return ctl_systemctl_main(argc, argv, &ctl_systemctl_files);
	if (strcmp(base, "init") == 0 || strcmp(base, "linuxrc") == 0)
		return init_main(argc, argv, true);
	if (argc < 2) {
		if (getpid() == 1)
			return init_main(argc, argv, true);
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "init") == 0)
		return init_main(argc - 1, argv + 1, false);
	if (strcmp(cmd, "vm") == 0 && argc >= 3 && strcmp(argv[2], "run") == 0)
		return vm_run_main(argc - 2, argv + 2);
	if (strcmp(cmd, "ctl") == 0)
		return ctl_main(argc - 1, argv + 1);
	if (strcmp(cmd, "keeper") == 0)
		return keep_keeper_main(argc - 1, argv + 1);
	if (strcmp(cmd, "gateway") == 0)
		return tls_gateway_main(argc - 1, argv + 1);
	if (strcmp(cmd, "image") == 0)
		return rootfs_main(argc - 1, argv + 1);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
		return cmd_version(argc, argv);
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "kin: unknown command '%s'\nTry 'kin help'.\n", cmd);
	return 2;
}
