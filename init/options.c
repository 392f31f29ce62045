/* options: kin's configuration from the kernel command line (kin.* options)
 * and from `kin init` flags. Both are outside input: every value is checked,
 * a bad one is reported by name and the previous value kept. */
#include "init/init.h"
#include "rootfs/rootfs.h"
#include "rpc/rpc.h"
#include "tls/tls.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define CMDLINE_MAX_WORD 4096

void init_config_defaults(struct init_config *cfg)
{
	*cfg = (struct init_config){
	    .log_level = LOG_INFO_,
	    .panic = INIT_PANIC_FREEZE,
	    .grace_ms = INIT_GRACE_DEFAULT_MS,
	    .guest = VM_GUEST_KINDS_QEMU,
	};
}

static int parse_panic(const char *v, enum init_panic *ret)
{
	if (strcmp(v, "freeze") == 0)
		*ret = INIT_PANIC_FREEZE;
	else if (strcmp(v, "reboot") == 0)
		*ret = INIT_PANIC_REBOOT;
	else if (strcmp(v, "poweroff") == 0)
		*ret = INIT_PANIC_POWEROFF;
	else
		return -EINVAL;
	return 0;
}

/* An absolute path that fits a sockaddr_un, or "none". */
static bool opt_rpc_socket_valid(const char *v)
{
	return strcmp(v, "none") == 0 || (v[0] == '/' && strlen(v) <= INIT_RPC_PATH_MAX);
}

/* "1000,1001" into ids: all or nothing. */
static int opt_rpc_ids_set(const char *v, uint32_t *ids, size_t *n)
{
	uint32_t tmp[INIT_RPC_IDS_MAX];
	size_t count;
	if (rpc_parse_id_list(v, tmp, INIT_RPC_IDS_MAX, &count) < 0)
		return -EINVAL;
	memcpy(ids, tmp, count * sizeof(*ids));
	*n = count;
	return 0;
}

/* A file named on the command line: an absolute path of printable bytes. */
static int opt_file_set(const char *value, char *buf, size_t size)
{
	if (value[0] != '/' || strstr(value, "/../"))
		return -EINVAL;
	for (const char *p = value; *p; p++)
		if ((unsigned char)*p < 0x21 || *p == 0x7f)
			return -EINVAL;
	return str_copy(buf, size, value);
}

static int opt_rpc_set(struct init_rpc_config *rpc, const char *key, const char *value)
{
	uint32_t u;
	if (strcmp(key, "socket") == 0) {
		if (!opt_rpc_socket_valid(value))
			return -EINVAL;
		return str_copy(rpc->socket, sizeof(rpc->socket), value);
	}
	if (strcmp(key, "vsock") == 0) {
		if (strcmp(value, "off") == 0)
			u = 0;
		else if (str_to_u32(value, &u) < 0 || u == 0 || u == UINT32_MAX)
			return -EINVAL;
		rpc->vsock_port = u;
		rpc->vsock_set = true;
		return 0;
	}
	if (strcmp(key, "uids") == 0)
		return opt_rpc_ids_set(value, rpc->uids, &rpc->n_uids);
	if (strcmp(key, "gids") == 0)
		return opt_rpc_ids_set(value, rpc->gids, &rpc->n_gids);
	if (strcmp(key, "policy") == 0)
		return opt_file_set(value, rpc->policy, sizeof(rpc->policy));
	if (strcmp(key, "tls") == 0) {
		if (tls_addr_parse(value, NULL) < 0)
			return -EINVAL;
		return str_copy(rpc->tls_listen, sizeof(rpc->tls_listen), value);
	}
	if (strcmp(key, "tls.cert") == 0)
		return opt_file_set(value, rpc->tls_cert, sizeof(rpc->tls_cert));
	if (strcmp(key, "tls.key") == 0)
		return opt_file_set(value, rpc->tls_key, sizeof(rpc->tls_key));
	if (strcmp(key, "tls.ca") == 0)
		return opt_file_set(value, rpc->tls_ca, sizeof(rpc->tls_ca));
	if (strcmp(key, "tls.crl") == 0)
		return opt_file_set(value, rpc->tls_crl, sizeof(rpc->tls_crl));
	if (strcmp(key, "tls.handshake-timeout") == 0) {
		uint64_t ms;
		if (str_to_duration_ms(value, 600 * 1000, &ms) < 0 || ms < 100)
			return -EINVAL;
		rpc->tls_handshake_ms = (uint32_t)ms;
		return 0;
	}
	if (strcmp(key, "max-conns") == 0) {
		if (str_to_u32(value, &u) < 0 || u == 0 || u > 65536)
			return -EINVAL;
		rpc->max_conns = u;
		return 0;
	}
	if (strcmp(key, "frame-timeout") == 0) {
		uint64_t ms;
		if (str_to_duration_ms(value, 3600 * 1000, &ms) < 0 || ms < 100)
			return -EINVAL;
		rpc->frame_timeout_ms = (uint32_t)ms;
		return 0;
	}
	return -ENOENT;
}

int init_option_set(struct init_config *cfg, const char *key, const char *value)
{
	if (!value)
		return -EINVAL;
	if (strcmp(key, "kin.log") == 0) {
		enum log_level l;
		if (log_parse_level(value, &l) < 0)
			return -EINVAL;
		cfg->log_level = l;
		cfg->log_level_set = true;
		return 0;
	}
	if (strcmp(key, "kin.panic") == 0)
		return parse_panic(value, &cfg->panic);
	if (strcmp(key, "kin.grace") == 0) {
		uint64_t ms;
		if (str_to_duration_ms(value, INIT_GRACE_MAX_MS, &ms) < 0)
			return -EINVAL;
		cfg->grace_ms = ms;
		return 0;
	}
	if (strcmp(key, "kin.hostname") == 0) {
		if (!str_is_hostname(value))
			return -EINVAL;
		return str_copy(cfg->hostname, sizeof(cfg->hostname), value);
	}
	if (str_startswith(key, "kin.rpc."))
		return opt_rpc_set(&cfg->rpc, key + STRLEN("kin.rpc."), value);
	if (strcmp(key, "kin.share") == 0) {
		if (value[0] != '/' || strstr(value, "/..") || strlen(value) > 256)
			return -EINVAL;
		return str_copy(cfg->share, sizeof(cfg->share), value);
	}
	if (strcmp(key, "kin.link") == 0 || strcmp(key, "kin.share.dev") == 0)
		return vm_guest_option(&cfg->guest, key, value);
	if (strcmp(key, "kin.modules") == 0) {
		if (!rootfs_modules_csv_valid(value))
			return -EINVAL;
		return str_copy(cfg->modules, sizeof(cfg->modules), value);
	}
	if (strcmp(key, "kin.zone.max-depth") == 0 || strcmp(key, "kin.zone.depth") == 0) {
		uint32_t u;
		bool max = strcmp(key, "kin.zone.max-depth") == 0;
		if (str_to_u32(value, &u) < 0 || u > 64 || (max && u == 0))
			return -EINVAL;
		if (max)
			cfg->zone_max_depth = u;
		else
			cfg->zone_depth = u;
		return 0;
	}
	if (strcmp(key, "kin.net") == 0) {
		struct net_config net;
		if (net_parse_kin_option(value, &net) < 0)
			return -EINVAL;
		cfg->net = net;
		cfg->net_from_kin = true;
		return 0;
	}
	return -ENOENT;
}

/* The kernel's own ip= (kin brings the interface up itself: the Debian
 * kernel has no IP autoconfiguration, and eth0 is a module anyway). */
static void cmdline_ip(struct init_config *cfg, const char *value, init_diag_fn diag,
                       void *userdata, int *problems)
{
	struct net_config net;
	int r = net_parse_ip_option(value, &net);
	if (r == -EOPNOTSUPP) {
		diag(userdata,
		     "kernel command line: ip='%s': kin configures static addresses only "
		     "(no DHCP); ignored",
		     value);
		(*problems)++;
	} else if (r < 0) {
		diag(userdata,
		     "kernel command line: ip='%s' is not valid (expected "
		     "CLIENT::GATEWAY:NETMASK::DEVICE:off); ignored",
		     value);
		(*problems)++;
	} else if (!cfg->net_from_kin) {
		cfg->net = net;
	}
}

static const char *option_expect(const char *key)
{
	if (strcmp(key, "kin.log") == 0)
		return "error, warn, info or debug";
	if (strcmp(key, "kin.panic") == 0)
		return "freeze, reboot or poweroff";
	if (strcmp(key, "kin.grace") == 0)
		return "a duration such as 10s or 1500ms, at most 1h";
	if (strcmp(key, "kin.hostname") == 0)
		return "a hostname of letters, digits, '-' and '.', at most 64 bytes";
	if (strcmp(key, "kin.rpc.socket") == 0)
		return "an absolute path of at most 107 bytes, or none";
	if (strcmp(key, "kin.rpc.vsock") == 0)
		return "a port number from 1 to 4294967294, or off";
	if (strcmp(key, "kin.rpc.uids") == 0 || strcmp(key, "kin.rpc.gids") == 0)
		return "a comma-separated list of at most 16 numeric ids";
	if (strcmp(key, "kin.rpc.max-conns") == 0)
		return "a number from 1 to 65536";
	if (strcmp(key, "kin.rpc.tls") == 0)
		return "ADDRESS:PORT, such as 0.0.0.0:7443 or [::]:7443";
	if (strcmp(key, "kin.rpc.policy") == 0 || str_startswith(key, "kin.rpc.tls."))
		return strcmp(key, "kin.rpc.tls.handshake-timeout") == 0
		           ? "a duration from 100ms to 10m, such as 10s"
		           : "an absolute path of at most 255 printable bytes";
	if (strcmp(key, "kin.rpc.frame-timeout") == 0)
		return "a duration from 100ms to 60m, such as 10s";
	if (strcmp(key, "kin.modules") == 0)
		return "a comma-separated list of module names or aliases";
	if (strcmp(key, "kin.share") == 0)
		return "an absolute path of at most 256 bytes without \"..\"";
	if (strcmp(key, "kin.net") == 0)
		return "IFNAME[,ADDRESS/PREFIX[,GATEWAY]]";
	if (strcmp(key, "kin.link") == 0)
		return "virtio-serial:NAME (NAME of letters, digits, '.', '_', '-')";
	if (strcmp(key, "kin.share.dev") == 0)
		return "9p:TAG (TAG of letters, digits, '.', '_', '-')";
	if (strcmp(key, "kin.zone.max-depth") == 0)
		return "a number from 1 to 64";
	if (strcmp(key, "kin.zone.depth") == 0)
		return "a number from 0 to 64";
	return "a valid value";
}

/* Takes the next word the way the kernel splits its command line: blanks
 * separate words except inside double quotes, and the quotes are dropped. */
static const char *cmdline_next_word(const char *p, char *word, size_t size, bool *ret_cut)
{
	size_t n = 0;
	bool quoted = false;

	*ret_cut = false;
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (!*p)
		return NULL;
	for (; *p; p++) {
		if (*p == '"') {
			quoted = !quoted;
			continue;
		}
		if (!quoted && (*p == ' ' || *p == '\t' || *p == '\n'))
			break;
		if (n + 1 < size)
			word[n++] = *p;
		else
			*ret_cut = true;
	}
	word[n] = '\0';
	return p;
}

int init_cmdline_parse(const char *cmdline, struct init_config *cfg, init_diag_fn diag,
                       void *userdata)
{
	_cleanup_free_ char *word = malloc(CMDLINE_MAX_WORD);
	const char *p = cmdline;
	int problems = 0;
	bool cut;

	if (!word)
		return -ENOMEM;
	while ((p = cmdline_next_word(p, word, CMDLINE_MAX_WORD, &cut))) {
		if (strcmp(word, "--") == 0)
			break;
		if (str_startswith(word, "ip=") && !cut) {
			cmdline_ip(cfg, word + 3, diag, userdata, &problems);
			continue;
		}
		if (!str_startswith(word, "kin."))
			continue;
		if (cut) {
			diag(userdata,
			     "kernel command line: option '%.40s...' is longer than %d bytes; "
			     "ignored",
			     word, CMDLINE_MAX_WORD - 1);
			problems++;
			continue;
		}
		char *eq = strchr(word, '=');
		if (!eq) {
			diag(userdata,
			     "kernel command line: '%s' has no value (expected %s=VALUE); ignored",
			     word, word);
			problems++;
			continue;
		}
		*eq = '\0';
		int r = init_option_set(cfg, word, eq + 1);
		if (r == -ENOENT) {
			diag(userdata, "kernel command line: unknown option '%s'; ignored", word);
			problems++;
		} else if (r < 0) {
			diag(userdata,
			     "kernel command line: %s='%s' is not valid (expected %s); ignored",
			     word, eq + 1, option_expect(word));
			problems++;
		}
	}
	return problems;
}

void init_usage(FILE *f)
{
	fputs("usage: kin init [OPTIONS] [-- COMMAND [ARG...]]\n"
	      "\n"
	      "Run kin's init loop: as PID 1 of a machine, zone or container, or as a\n"
	      "subreaper daemon when not PID 1. With COMMAND, kin supervises it, forwards\n"
	      "signals to it and exits with its status (128+N when killed by signal N).\n"
	      "\n"
	      "  --log-level LEVEL   error, warn, info or debug\n"
	      "  --grace DURATION    time between SIGTERM and SIGKILL at stop (default 10s)\n"
	      "  --hostname NAME     set the hostname (UTS namespace) at start\n"
	      "  --panic ACTION      machine init on a fatal error: freeze, reboot, poweroff\n"
	      "  --zone NAME         run as zone init (set by the parent kin that made us)\n"
	      "  --cmdline FILE      read kin.* options from FILE (default, machine init\n"
	      "                      only: /proc/cmdline)\n"
	      "  --socket PATH       RPC unix socket (default /run/kin/kin.sock), or none\n"
	      "  --vsock PORT        RPC on vsock PORT (machine init: 1024), or off\n"
	      "  --allow-uid LIST    uids with admin rights besides root (1000,1001)\n"
	      "  --policy FILE       who may call what: lines IDENTITY ROLE [TARGET...]\n"
	      "                      (kin-init(8), docs/rpc.md); re-read on SIGHUP\n"
	      "  --tls-listen ADDR:PORT  RPC over TCP with mutual TLS, served by a gateway\n"
	      "                      child (0.0.0.0:7443, [::]:7443); needs the three below\n"
	      "  --tls-cert FILE     the server's certificate (PEM)\n"
	      "  --tls-key FILE      its private key (PEM)\n"
	      "  --tls-ca FILE       the CA client certificates must chain to (PEM)\n"
	      "  --tls-crl FILE      a CRL of that CA (PEM), optional\n"
	      "  --zone-depth N      a zone kin's nesting depth (set by the parent kin)\n"
	      "  --zone-subnet CIDR  the range for this zone's own --net zones (set by the\n"
	      "                      parent kin; without it a zone kin makes none)\n"
	      "  --zone-max-depth N  refuse zones nested deeper than N (default 8; passed on\n"
	      "                      to zone kins)\n"
	      "  --zone-dir DIR      zone kins' logs (default /run/kin/zones)\n"
	      "  --state-dir DIR     a daemon's state, adopted by the next kin if this one is\n"
	      "                      killed (default /run/kin; one kin per directory)\n"
	      "  --rpc-fd N          serve RPC on connected socket N >= 3 (the parent's channel)\n"
	      "  --parent-listen-fd N  a listening socket where a successor of the parent\n"
	      "                      connects as its channel (after the parent was killed)\n"
	      "  --net-addr CIDR     bring eth0 up with this address (a zone's veth end)\n"
	      "  --net-gw IP         default route via IP on eth0 (with --net-addr)\n"
	      "  --vm-dir DIR        where VMs keep console logs and sockets (/run/kin/vm)\n"
	      "  --image-store DIR   the OCI image store (/var/lib/kin/images)\n"
	      "  --unit-dir DIR      run systemd units from DIR (and only from the --unit-dir\n"
	      "                      directories): its default.target is booted (up to 4)\n"
	      "  --unit-run-dir DIR  the services' notify socket's directory (/run/systemd for\n"
	      "                      a host's init, else /run/kin/units)\n"
	      "  --default-target NAME  the target to boot instead of default.target\n"
	      "  -h, --help          this text\n",
	      f);
}

/* The flags that are kin.* options under another name. */
static const struct {
	int c;
	const char *key;
} flag_keys[] = {
    {'l', "kin.log"},        {'g', "kin.grace"},          {'H', "kin.hostname"},
    {'p', "kin.panic"},      {'S', "kin.rpc.socket"},     {'V', "kin.rpc.vsock"},
    {'U', "kin.rpc.uids"},   {'X', "kin.zone.max-depth"}, {'P', "kin.rpc.policy"},
    {'T', "kin.rpc.tls"},    {'1', "kin.rpc.tls.cert"},   {'2', "kin.rpc.tls.key"},
    {'3', "kin.rpc.tls.ca"}, {'4', "kin.rpc.tls.crl"},
};

static const char *flag_key(int c)
{
	for (size_t i = 0; i < ARRAY_SIZE(flag_keys); i++)
		if (flag_keys[i].c == c)
			return flag_keys[i].key;
	return NULL;
}

/* --vm-dir, --zone-dir, --image-store: an absolute path of at most 200 bytes. */
static int flag_dir(const char *flag, const char *v, const char **ret)
{
	if (v[0] != '/' || strlen(v) > 200) {
		fprintf(stderr,
		        "kin init: --%s '%s' is not valid (expected an absolute path of at "
		        "most 200 bytes)\n",
		        flag, v);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* What the parent kin passes a zone kin: --zone, --zone-depth, --zone-subnet,
 * --rpc-fd, --parent-listen-fd. */
static int flag_zone_set(struct init_config *cfg, int c, const char *v)
{
	uint32_t u, base;
	unsigned prefix;
	switch (c) {
	case 'z':
		if (!str_is_hostname(v)) {
			fprintf(stderr, "kin init: --zone '%s' is not a valid zone name\n", v);
			return -EINVAL;
		}
		str_copy(cfg->zone, sizeof(cfg->zone), v);
		return 0;
	case 'D':
		if (str_to_u32(v, &u) < 0 || u > 64) {
			fprintf(stderr,
			        "kin init: --zone-depth '%s' is not valid (expected 0-64)\n", v);
			return -EINVAL;
		}
		cfg->zone_depth = u;
		return 0;
	case 'N':
		if (net_subnet_parse(v, &base, &prefix) < 0 ||
		    str_copy(cfg->zone_subnet, sizeof(cfg->zone_subnet), v) < 0) {
			fprintf(stderr,
			        "kin init: --zone-subnet '%s' is not valid (expected an IPv4 "
			        "network a.b.c.d/8..30 with its host bits clear)\n",
			        v);
			return -EINVAL;
		}
		return 0;
	}
	/* 'R', 'L' */
	if (str_to_u32(v, &u) < 0 || u < 3 || u > 65535) {
		fprintf(stderr,
		        "kin init: --%s '%s' is not valid (expected a file descriptor "
		        "number from 3)\n",
		        c == 'R' ? "rpc-fd" : "parent-listen-fd", v);
		return -EINVAL;
	}
	*(c == 'R' ? &cfg->rpc_fd : &cfg->parent_listen_fd) = (int)u;
	return 0;
}

/* --net-addr CIDR [--net-gw IP]: eth0's address, as kin.net= would give. */
static int flags_net(struct init_config *cfg, const char *net_addr, const char *net_gw)
{
	if (net_gw && !net_addr) {
		fprintf(stderr, "kin init: --net-gw needs --net-addr\n");
		return -EINVAL;
	}
	if (!net_addr)
		return 0;
	char spec[3 * NET_ADDR_MAX];
	snprintf(spec, sizeof(spec), "eth0,%s%s%s", net_addr, net_gw ? "," : "",
	         net_gw ? net_gw : "");
	if (net_parse_kin_option(spec, &cfg->net) < 0) {
		fprintf(stderr,
		        "kin init: --net-addr '%s'%s%s is not valid (expected A.B.C.D/PREFIX and "
		        "a gateway address)\n",
		        net_addr, net_gw ? " --net-gw " : "", net_gw ? net_gw : "");
		return -EINVAL;
	}
	cfg->net_from_kin = true;
	return 0;
}

/* The command after "--", if any. */
static int flags_command(int argc, char **argv, struct init_config *cfg)
{
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0) {
			fprintf(stderr,
			        "kin init: unexpected argument '%s' (a command goes after '--')\n",
			        argv[optind]);
			return -EINVAL;
		}
		cfg->argv = &argv[optind];
	} else if (optind > 1 && strcmp(argv[optind - 1], "--") == 0) {
		fprintf(stderr, "kin init: '--' must be followed by a command\n");
		return -EINVAL;
	}
	return 0;
}

static const struct option init_longopts[] = {
    {"log-level", required_argument, NULL, 'l'},
    {"grace", required_argument, NULL, 'g'},
    {"hostname", required_argument, NULL, 'H'},
    {"panic", required_argument, NULL, 'p'},
    {"zone", required_argument, NULL, 'z'},
    {"cmdline", required_argument, NULL, 'c'},
    {"socket", required_argument, NULL, 'S'},
    {"vsock", required_argument, NULL, 'V'},
    {"allow-uid", required_argument, NULL, 'U'},
    {"policy", required_argument, NULL, 'P'},
    {"tls-listen", required_argument, NULL, 'T'},
    {"tls-cert", required_argument, NULL, '1'},
    {"tls-key", required_argument, NULL, '2'},
    {"tls-ca", required_argument, NULL, '3'},
    {"tls-crl", required_argument, NULL, '4'},
    {"zone-depth", required_argument, NULL, 'D'},
    {"zone-subnet", required_argument, NULL, 'N'},
    {"rpc-fd", required_argument, NULL, 'R'},
    {"parent-listen-fd", required_argument, NULL, 'L'},
    {"net-addr", required_argument, NULL, 'A'},
    {"net-gw", required_argument, NULL, 'G'},
    {"vm-dir", required_argument, NULL, 'M'},
    {"zone-max-depth", required_argument, NULL, 'X'},
    {"zone-dir", required_argument, NULL, 'Z'},
    {"state-dir", required_argument, NULL, 'Y'},
    {"image-store", required_argument, NULL, 'I'},
    {"unit-dir", required_argument, NULL, 'u'},
    {"unit-run-dir", required_argument, NULL, 'r'},
    {"default-target", required_argument, NULL, 't'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One flag that is not a kin.* option: 0, 1 (--help: printed), or < 0
 * (the reason printed). */
static int flag_one(struct init_config *cfg, int c, char **argv, const char **net_addr,
                    const char **net_gw)
{
	int r = 0;
	switch (c) {
	case 'z':
	case 'D':
	case 'N':
	case 'R':
	case 'L':
		return flag_zone_set(cfg, c, optarg);
	case 'c':
		cfg->cmdline_file = optarg;
		return 0;
	case 'A':
		*net_addr = optarg;
		return 0;
	case 'G':
		*net_gw = optarg;
		return 0;
	case 'M':
		return flag_dir("vm-dir", optarg, &cfg->vm_dir);
	case 'Z':
		return flag_dir("zone-dir", optarg, &cfg->zone_dir);
	case 'Y':
		return flag_dir("state-dir", optarg, &cfg->state_dir);
	case 'I':
		return flag_dir("image-store", optarg, &cfg->image_store);
	case 'u':
		if (cfg->n_unit_dirs >= INIT_UNIT_DIRS_MAX) {
			fprintf(stderr, "kin init: --unit-dir given more than %d times\n",
			        INIT_UNIT_DIRS_MAX);
			return -EINVAL;
		}
		r = flag_dir("unit-dir", optarg, &cfg->unit_dirs[cfg->n_unit_dirs]);
		if (r == 0)
			cfg->n_unit_dirs++;
		return r;
	case 'r':
		return flag_dir("unit-run-dir", optarg, &cfg->unit_run_dir);
	case 't':
		if (strlen(optarg) > 255 || !strchr(optarg, '.')) {
			fprintf(stderr, "kin init: --default-target '%s' is not a unit name\n",
			        optarg);
			return -EINVAL;
		}
		cfg->default_target = optarg;
		return 0;
	case 'h':
		init_usage(stdout);
		return 1;
	case ':':
		fprintf(stderr, "kin init: option '%s' needs a value\n", argv[optind - 1]);
		return -EINVAL;
	default:
		fprintf(stderr,
		        "kin init: unknown option '%s'\n"
		        "Try 'kin init --help'.\n",
		        argv[optind - 1]);
		return -EINVAL;
	}
}

int init_flags_parse(int argc, char **argv, struct init_config *cfg)
{
	int c, idx = 0, r;
	const char *net_addr = NULL, *net_gw = NULL;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", init_longopts, &idx)) != -1) {
		const char *key = flag_key(c);
		if (key) {
			if (init_option_set(cfg, key, optarg) < 0) {
				fprintf(stderr, "kin init: --%s '%s' is not valid (expected %s)\n",
				        init_longopts[idx].name, optarg, option_expect(key));
				return -EINVAL;
			}
			continue;
		}
		r = flag_one(cfg, c, argv, &net_addr, &net_gw);
		if (r != 0)
			return r;
	}
	r = flags_net(cfg, net_addr, net_gw);
	if (r < 0)
		return r;
	return flags_command(argc, argv, cfg);
}
