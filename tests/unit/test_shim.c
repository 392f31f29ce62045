/* shim: the addresses and state paths containerd and `delete` rely on
 * (the same inputs always give the same, socket-sized paths), and the
 * argv[0] names that make kin a shim. */
#include "unit.h"

#include "shim/shim.h"

TEST(shim_socket_path)
{
	char buf[108];
	CHECK(shim_socket_path("/run/containerd/containerd.sock", "k8s.io", "abc", buf,
	                       sizeof(buf)) == 0);
	/* sha256("/run/containerd/containerd.sock/k8s.io/abc"), as containerd's
	 * own shims name theirs from the same three. */
	CHECK_STR(buf, "/run/containerd/s/"
	               "a99a1752d3a0fadfb1f869026f16760475df03a572e20f4ccea9e6c1e5470b72");
	CHECK(shim_socket_path("/a", "b", "c", buf, 20) == -ENAMETOOLONG);
}

TEST(shim_state_dir)
{
	char buf[PATH_MAX], ns[61], group[65];
	CHECK(shim_state_dir("default", "t1", buf, sizeof(buf)) == 0);
	CHECK_STR(buf, SHIM_STATE_ROOT "/default/t1");
	/* Too long for STATE/kin.sock to be a socket path: hashed. */
	memset(ns, 'n', 60);
	ns[60] = '\0';
	memset(group, 'g', 64);
	group[64] = '\0';
	CHECK(shim_state_dir(ns, group, buf, sizeof(buf)) == 0);
	CHECK(strlen(buf) + strlen("/kin.sock") < 108);
	CHECK(str_startswith(buf, SHIM_STATE_ROOT "/h-"));
	char again[PATH_MAX];
	CHECK(shim_state_dir(ns, group, again, sizeof(again)) == 0);
	CHECK_STR(buf, again);
}

TEST(shim_argv0)
{
	CHECK(shim_argv0_is_shim("containerd-shim-kin-v2"));
	CHECK(shim_argv0_is_shim("/usr/local/bin/containerd-shim-kin-vm-v2"));
	CHECK(!shim_argv0_is_shim("kin"));
	CHECK(!shim_argv0_is_shim("/usr/bin/containerd-shim-runc-v2"));
}
