/* gateway: `kin gateway`, the role kin starts itself in to terminate TLS
 * outside PID 1 (init/tls.c starts it; tls/ does the work). Not for
 * people to run: it takes the listening socket as fd 3 and kin's control
 * socket as fd 4, and the files to load as flags. */
#include "init/init.h"
#include "tls/tls.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int init_gateway_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"cert", required_argument, NULL, 'c'},         {"key", required_argument, NULL, 'k'},
	    {"ca", required_argument, NULL, 'a'},           {"crl", required_argument, NULL, 'r'},
	    {"handshake-ms", required_argument, NULL, 't'}, {NULL, 0, NULL, 0},
	};
	struct tls_gateway_config cfg = {.listen_fd = 3, .control_fd = 4};
	uint32_t u;
	int c;
	log_set_level(LOG_INFO_);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cfg.files.cert = optarg;
			break;
		case 'k':
			cfg.files.key = optarg;
			break;
		case 'a':
			cfg.files.ca = optarg;
			break;
		case 'r':
			cfg.files.crl = optarg;
			break;
		case 't':
			if (str_to_u32(optarg, &u) < 0) {
				fprintf(stderr,
				        "kin gateway: --handshake-ms '%s' is not a number\n",
				        optarg);
				return 2;
			}
			cfg.handshake_ms = u;
			break;
		default:
			fprintf(stderr, "kin gateway: started by kin for --tls-listen; not for use "
			                "by hand\n");
			return 2;
		}
	}
	if (!cfg.files.cert || !cfg.files.key || !cfg.files.ca) {
		fprintf(stderr, "kin gateway: --cert, --key and --ca are needed\n");
		return 2;
	}
	return tls_gateway_run(&cfg);
}
