/* shim: the addresses and state paths containerd and `delete` rely on
 * (the same inputs always give the same, socket-sized paths), and the
 * argv[0] names that make kin a shim. */
#include "ctl/ctl-int.h"
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

TEST(shim_vm_config_parse)
{
	struct shim_vm_config c;
	struct err e = {0};
	char ok[] = "# pods\nvm.kernel = /k/vmlinuz \nvm.image=/k/guest.cpio\n\nvm.cpus = 2 # two\n"
	            "vm.memory = 1G\nvm.accel = tcg\n";
	CHECK_EQ(shim_vm_config_parse("f", ok, &c, &e), 0);
	CHECK_STR(c.spec.kernel, "/k/vmlinuz");
	CHECK_STR(c.spec.image, "/k/guest.cpio");
	CHECK_EQ(c.spec.cpus, 2);
	CHECK_EQ(c.spec.memory_mb, 1024);
	CHECK_EQ(c.spec.accel, VM_ACCEL_TCG);
	char unknown[] = "vm.kernel = /k\nvm.disk = /d\n";
	CHECK_EQ(shim_vm_config_parse("f", unknown, &c, &e), -ENOENT);
	CHECK_STR(e.msg, "f: line 2: unknown key \"vm.disk\" (vm.kernel, vm.image, vm.cpus, "
	                 "vm.memory, vm.accel)");
	char bad[] = "vm.memory = 12K\n";
	CHECK_EQ(shim_vm_config_parse("f", bad, &c, &e), -EINVAL);
	CHECK_STR(e.msg, "f: line 1: vm.memory: bad value \"12K\"");
	char rel[] = "vm.kernel = vmlinuz\n";
	CHECK_EQ(shim_vm_config_parse("f", rel, &c, &e), -EINVAL);
	char noeq[] = "vm.kernel\n";
	CHECK_EQ(shim_vm_config_parse("f", noeq, &c, &e), -EINVAL);
	CHECK_STR(e.msg, "f: line 1: expected KEY = VALUE");
	char missing[] = "vm.kernel = /k\n";
	CHECK_EQ(shim_vm_config_parse("f", missing, &c, &e), -EINVAL);
	CHECK_STR(e.msg, "f: vm.kernel and vm.image are required for kin-vm pods");
}

/* The doors that spell VM options in getopt tables (kin ctl vm start, kin
 * ctl zone create) name each as vm/'s table does, and take the options
 * the table gives them: the names cannot drift apart. */
static void door_matches(const struct option *opts, unsigned door)
{
	unsigned seen = 0;
	for (const struct option *o = opts; o && o->name; o++) {
		if (o->val < VM_OPT_VAL || o->val >= VM_OPT_VAL + VM_OPT_N)
			continue;
		const struct vm_option *v = &vm_options[o->val - VM_OPT_VAL];
		CHECK_STR(o->name, v->name);
		CHECK(v->doors & door);
		seen |= 1u << (o->val - VM_OPT_VAL);
	}
	for (size_t i = 0; i < VM_OPT_N; i++) /* zone's --image is its own (store or --vm) */
		if ((vm_options[i].doors & door) && !(door == VM_OPT_FOR_ZONE && i == VM_OPT_IMAGE))
			CHECK(seen & (1u << i));
}

TEST(vm_option_doors)
{
	const struct ctl_cmd *c;
	for (c = ctl_vm_cmds; c->name && strcmp(c->name, "start"); c++)
		;
	CHECK(c->name != NULL);
	door_matches(c->opts, VM_OPT_FOR_CTL);
	for (c = ctl_zone_cmds; c->name && strcmp(c->name, "create"); c++)
		;
	CHECK(c->name != NULL);
	door_matches(c->opts, VM_OPT_FOR_ZONE);
}
