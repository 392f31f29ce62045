/* init's RPC options: kin.rpc.* on the kernel command line and the
 * --socket, --vsock, --allow-uid flags. */
#include "init/init.h"
#include "unit.h"

static int diags;
static void count_diag(void *userdata, const char *fmt, ...)
{
	(void)userdata;
	(void)fmt;
	diags++;
}

TEST(rpc_options_cmdline)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	CHECK_STR(cfg.rpc.socket, "");
	CHECK(!cfg.rpc.vsock_set);
	diags = 0;
	CHECK_EQ(init_cmdline_parse("kin.rpc.vsock=2048 kin.rpc.uids=1000,1001 kin.rpc.gids=100 "
	                            "kin.rpc.max-conns=64 kin.rpc.socket=/run/k.sock "
	                            "kin.rpc.frame-timeout=1500ms",
	                            &cfg, count_diag, NULL),
	         0);
	CHECK(cfg.rpc.vsock_set);
	CHECK_EQ(cfg.rpc.vsock_port, 2048);
	CHECK_EQ(cfg.rpc.n_uids, 2);
	CHECK_EQ(cfg.rpc.uids[1], 1001);
	CHECK_EQ(cfg.rpc.n_gids, 1);
	CHECK_EQ(cfg.rpc.gids[0], 100);
	CHECK_EQ(cfg.rpc.max_conns, 64);
	CHECK_EQ(cfg.rpc.frame_timeout_ms, 1500);
	CHECK_STR(cfg.rpc.socket, "/run/k.sock");
	CHECK_EQ(init_option_set(&cfg, "kin.rpc.vsock", "off"), 0);
	CHECK(cfg.rpc.vsock_set);
	CHECK_EQ(cfg.rpc.vsock_port, 0);
	CHECK_EQ(init_option_set(&cfg, "kin.rpc.socket", "none"), 0);
	CHECK_STR(cfg.rpc.socket, "none");
}

TEST(rpc_options_bad_values_kept)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	CHECK_EQ(init_option_set(&cfg, "kin.rpc.vsock", "1024"), 0);
	CHECK_EQ(init_option_set(&cfg, "kin.rpc.uids", "7"), 0);
	const char *bad[][2] = {
	    {"kin.rpc.vsock", "0"},
	    {"kin.rpc.vsock", "-1"},
	    {"kin.rpc.vsock", "4294967295"},
	    {"kin.rpc.vsock", "port"},
	    {"kin.rpc.vsock", ""},
	    {"kin.rpc.uids", "1,,2"},
	    {"kin.rpc.uids", "root"},
	    {"kin.rpc.uids", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"},
	    {"kin.rpc.gids", ""},
	    {"kin.rpc.max-conns", "0"},
	    {"kin.rpc.max-conns", "65537"},
	    {"kin.rpc.socket", "relative.sock"},
	    {"kin.rpc.socket", ""},
	    {"kin.rpc.frame-timeout", "0"},
	    {"kin.rpc.frame-timeout", "50ms"},
	    {"kin.rpc.frame-timeout", "61m"},
	    {"kin.rpc.frame-timeout", "soon"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (init_option_set(&cfg, bad[i][0], bad[i][1]) != -EINVAL) {
			printf("    %s=%s accepted\n", bad[i][0], bad[i][1]);
			unit_failures++;
		}
	char longpath[200] = "/";
	memset(longpath + 1, 'a', 150);
	CHECK_EQ(init_option_set(&cfg, "kin.rpc.socket", longpath), -EINVAL);
	CHECK_EQ(init_option_set(&cfg, "kin.rpc.bogus", "1"), -ENOENT);
	CHECK_EQ(cfg.rpc.vsock_port, 1024);
	CHECK_EQ(cfg.rpc.n_uids, 1);
	CHECK_EQ(cfg.rpc.uids[0], 7);
	CHECK_STR(cfg.rpc.socket, "");
	CHECK_EQ(cfg.rpc.frame_timeout_ms, 0);
}

TEST(rpc_options_flags)
{
	struct init_config cfg;
	init_config_defaults(&cfg);
	char *argv[] = {"init", "--socket", "/tmp/x/kin.sock", "--vsock", "5000", "--allow-uid",
	                "1000", NULL};
	CHECK_EQ(init_flags_parse(7, argv, &cfg), 0);
	CHECK_STR(cfg.rpc.socket, "/tmp/x/kin.sock");
	CHECK_EQ(cfg.rpc.vsock_port, 5000);
	CHECK_EQ(cfg.rpc.n_uids, 1);
	init_config_defaults(&cfg);
	char *bad[] = {"init", "--socket", "rel", NULL};
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	CHECK_EQ(init_flags_parse(3, bad, &cfg), -EINVAL);
	fclose(stderr);
	stderr = saved;
}
