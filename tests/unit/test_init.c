/* init: kin.* options, flags, the signal table. */
#include "init/init.h"
#include "unit.h"

static int diag_count;
static char diag_last[512];
static void diag(void *userdata, const char *fmt, ...)
{
	va_list ap;
	(void)userdata;
	va_start(ap, fmt);
	vsnprintf(diag_last, sizeof(diag_last), fmt, ap);
	va_end(ap);
	diag_count++;
}

TEST(cmdline_known_options)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	diag_count = 0;
	int n = init_cmdline_parse("BOOT_IMAGE=/vmlinuz root=/dev/vda quiet kin.log=debug "
	                           "kin.panic=poweroff kin.grace=1500ms kin.hostname=guest1 "
	                           "console=ttyS0 -- kin.log=error",
	                           &cfg, diag, NULL);
	CHECK_EQ(n, 0);
	CHECK_EQ(diag_count, 0);
	CHECK_EQ(cfg.log_level, LOG_DEBUG_); /* words after "--" belong to init */
	CHECK(cfg.log_level_set);
	CHECK_EQ(cfg.panic, INIT_PANIC_POWEROFF);
	CHECK_EQ(cfg.grace_ms, 1500);
	CHECK_STR(cfg.hostname, "guest1");
}

TEST(cmdline_bad_options_reported_and_kept)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	diag_count = 0;
	int n = init_cmdline_parse("kin.grace=10s kin.grace=soon kin.bogus=1 kin.log "
	                           "kin.panic=explode kin.hostname=-bad- kin.log=",
	                           &cfg, diag, NULL);
	CHECK_EQ(n, 6);
	CHECK_EQ(diag_count, 6);
	CHECK_EQ(cfg.grace_ms, 10000); /* the bad value kept the good one */
	CHECK_EQ(cfg.panic, INIT_PANIC_FREEZE);
	CHECK_STR(cfg.hostname, "");
	CHECK(!cfg.log_level_set);
	CHECK(strstr(diag_last, "kin.log") != NULL);
}

TEST(cmdline_quotes_and_blanks)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	diag_count = 0;
	CHECK_EQ(init_cmdline_parse("  \"kin.hostname=quoted\"\tfoo=\"a b\"  kin.grace=\"3s\"\n",
	                            &cfg, diag, NULL),
	         0);
	CHECK_STR(cfg.hostname, "quoted");
	CHECK_EQ(cfg.grace_ms, 3000);
	CHECK_EQ(init_cmdline_parse("", &cfg, diag, NULL), 0);
	CHECK_EQ(init_cmdline_parse("\"", &cfg, diag, NULL), 0);
	CHECK_EQ(init_cmdline_parse("kin.hostname=\"unterminated", &cfg, diag, NULL), 0);
	CHECK_STR(cfg.hostname, "unterminated");
}

TEST(cmdline_overlong_word)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	char big[10000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "kin.hostname=", 13);
	diag_count = 0;
	CHECK_EQ(init_cmdline_parse(big, &cfg, diag, NULL), 1);
	CHECK_STR(cfg.hostname, "");
}

TEST(flags_parse)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	char *argv[] = {"init", "--grace", "2s", "--log-level=debug", "--zone", "pod1", "--", "sh",
	                "-c",   "true",    NULL};
	CHECK_EQ(init_flags_parse(10, argv, &cfg), 0);
	CHECK_EQ(cfg.grace_ms, 2000);
	CHECK_EQ(cfg.log_level, LOG_DEBUG_);
	CHECK_STR(cfg.zone, "pod1");
	CHECK(cfg.argv == &argv[7]);

	char *bad1[] = {"init", "--nope", NULL};
	char *bad2[] = {"init", "--grace", "forever", NULL};
	char *bad3[] = {"init", "stray", NULL};
	char *bad4[] = {"init", "--", NULL};
	char *bad5[] = {"init", "--grace", NULL};
	char *bad6[] = {"init", "--zone", "../x", NULL};
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	CHECK_EQ(init_flags_parse(2, bad1, &cfg), -EINVAL);
	CHECK_EQ(init_flags_parse(3, bad2, &cfg), -EINVAL);
	CHECK_EQ(init_flags_parse(2, bad3, &cfg), -EINVAL);
	CHECK_EQ(init_flags_parse(2, bad4, &cfg), -EINVAL);
	CHECK_EQ(init_flags_parse(2, bad5, &cfg), -EINVAL);
	CHECK_EQ(init_flags_parse(3, bad6, &cfg), -EINVAL);
	fclose(stderr);
	stderr = saved;
}

TEST(signal_table)
{
	CHECK_EQ(init_signal_action(INIT_ROLE_MACHINE, false, SIGINT), INIT_ACT_REBOOT);
	CHECK_EQ(init_signal_action(INIT_ROLE_MACHINE, false, SIGTERM), INIT_ACT_REBOOT);
	CHECK_EQ(init_signal_action(INIT_ROLE_MACHINE, false, SIGUSR1), INIT_ACT_HALT);
	CHECK_EQ(init_signal_action(INIT_ROLE_MACHINE, false, SIGUSR2), INIT_ACT_POWEROFF);
	CHECK_EQ(init_signal_action(INIT_ROLE_MACHINE, false, SIGPWR), INIT_ACT_POWEROFF);
	CHECK_EQ(init_signal_action(INIT_ROLE_MACHINE, false, SIGRTMIN + 4), INIT_ACT_POWEROFF);
	CHECK_EQ(init_signal_action(INIT_ROLE_MACHINE, false, SIGHUP), INIT_ACT_RELOAD);
	CHECK_EQ(init_signal_action(INIT_ROLE_MACHINE, true, SIGCHLD), INIT_ACT_REAP);
	CHECK_EQ(init_signal_action(INIT_ROLE_CONTAINER, true, SIGTERM), INIT_ACT_STOP);
	CHECK_EQ(init_signal_action(INIT_ROLE_CONTAINER, true, SIGINT), INIT_ACT_FORWARD);
	CHECK_EQ(init_signal_action(INIT_ROLE_CONTAINER, true, SIGUSR1), INIT_ACT_FORWARD);
	CHECK_EQ(init_signal_action(INIT_ROLE_CONTAINER, true, SIGTSTP), INIT_ACT_IGNORE);
	CHECK_EQ(init_signal_action(INIT_ROLE_ZONE, false, SIGINT), INIT_ACT_STOP);
	CHECK_EQ(init_signal_action(INIT_ROLE_DAEMON, false, SIGHUP), INIT_ACT_RELOAD);
	CHECK_EQ(init_signal_action(INIT_ROLE_DAEMON, false, SIGTERM), INIT_ACT_STOP);
}

TEST(cmdline_net_and_modules)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	diag_count = 0;
	CHECK_EQ(init_cmdline_parse("ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off "
	                            "kin.modules=virtio_net,vsock",
	                            &cfg, diag, NULL),
	         0);
	CHECK_STR(cfg.net.ifname, "eth0");
	CHECK_STR(cfg.net.addr, "10.0.2.15/24");
	CHECK_STR(cfg.net.gateway, "10.0.2.2");
	CHECK_STR(cfg.modules, "virtio_net,vsock");
	/* kin.net= wins over ip=, whatever the order. */
	CHECK_EQ(
	    init_cmdline_parse("kin.net=eth1,192.168.0.2/16 ip=10.0.2.15:::255.255.255.0::eth0:off",
	                       &cfg, diag, NULL),
	    0);
	CHECK_STR(cfg.net.ifname, "eth1");
	CHECK_STR(cfg.net.addr, "192.168.0.2/16");
	CHECK_EQ(init_cmdline_parse("ip=dhcp ip=1.2.3 kin.net=eth0,1.2.3.4 kin.modules=a,,b "
	                            "kin.modules=../x",
	                            &cfg, diag, NULL),
	         5);
	CHECK_STR(cfg.net.ifname, "eth1"); /* bad values kept nothing */
	CHECK_STR(cfg.modules, "virtio_net,vsock");
}
