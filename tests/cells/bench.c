/* cells-bench: the cells benchmark's timing loop (tests/bench/cells.sh),
 * run inside a guest. One run is: create a cell, start /bin/true in it,
 * observe its exit — through kin's RPC on one connection, as a client
 * would — or `crun run` of a bundle doing the same, spawned and reaped.
 *   cells-bench kin SOCKET RUNS [--ns LIST] [--root DIR | --image NAME]
 *   cells-bench crun BUNDLE RUNS
 * With --image, the executable is a container from kin's image store
 * (overlay root with a fresh writable layer, masked /proc), argv as given.
 * Prints "RESULT median_us p90_us runs" (and, for kin, the median with the
 * cell deleted afterwards too). */
#include "proto/cells.pb-c.h"
#include "rpc/rpc.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, unsigned p)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(n - 1) * p / 100];
}

static int call(struct rpc_client *c, const char *svc, const char *m, const ProtobufCMessage *in,
                const ProtobufCMessageDescriptor *od)
{
	struct err st;
	ProtobufCMessage *out = NULL;
	int r = rpc_client_call(c, svc, m, in, od, &st, &out);
	if (out)
		protobuf_c_message_free_unpacked(out, NULL);
	if (r < 0) {
		fprintf(stderr, "cells-bench: %s/%s: %s\n", svc, m, strerror(-r));
		return -1;
	}
	if (st.code) {
		fprintf(stderr, "cells-bench: %s/%s: %s: %s\n", svc, m, err_code_name(st.code),
		        st.msg);
		return -1;
	}
	return 0;
}

static int bench_kin(const char *sock, size_t runs, const char *ns, const char *root,
                     const char *image, uint64_t *t_exit, uint64_t *t_del)
{
	struct rpc_client *c;
	int r = rpc_client_connect(sock, 30000, &c);
	if (r < 0) {
		fprintf(stderr, "cells-bench: %s: %s\n", sock, strerror(-r));
		return 1;
	}
	static char true_path[] = "/bin/true";
	char *argv[] = {true_path};
	for (size_t i = 0; i < runs; i++) {
		char cell[32];
		snprintf(cell, sizeof(cell), "bench-%d-%zu", (int)getpid(), i);
		Kin__V1__CreateCellRequest cr = KIN__V1__CREATE_CELL_REQUEST__INIT;
		Kin__V1__StartRequest sr = KIN__V1__START_REQUEST__INIT;
		Kin__V1__ExecSpec spec = KIN__V1__EXEC_SPEC__INIT;
		Kin__V1__ExecRequest wr = KIN__V1__EXEC_REQUEST__INIT;
		Kin__V1__DeleteCellRequest dr = KIN__V1__DELETE_CELL_REQUEST__INIT;
		cr.path = sr.cell = wr.cell = dr.path = cell;
		sr.name = wr.name = (char *)"t";
		spec.argv = argv;
		spec.n_argv = 1;
		spec.namespaces = (char *)(ns ? ns : "");
		spec.root = (char *)(root ? root : "");
		spec.root_readonly = root != NULL;
		spec.image = (char *)(image ? image : "");
		sr.spec = &spec;
		uint64_t t0 = now_monotonic_ns();
		if (call(c, "kin.v1.Cells", "Create", &cr.base, &kin__v1__cell__descriptor) < 0 ||
		    call(c, "kin.v1.Exec", "Start", &sr.base, &kin__v1__exec_status__descriptor) <
		        0 ||
		    call(c, "kin.v1.Exec", "Wait", &wr.base, &kin__v1__exec_status__descriptor) < 0)
			return 1;
		uint64_t t1 = now_monotonic_ns();
		if (call(c, "kin.v1.Cells", "Delete", &dr.base, NULL) < 0)
			return 1;
		t_exit[i] = (t1 - t0) / 1000;
		t_del[i] = (now_monotonic_ns() - t0) / 1000;
	}
	rpc_client_free(c);
	return 0;
}

static int bench_crun(const char *bundle, size_t runs, uint64_t *t)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	for (size_t i = 0; i < runs; i++) {
		char id[32];
		snprintf(id, sizeof(id), "bench-%d-%zu", (int)getpid(), i);
		char *argv[] = {
		    (char *)"crun", (char *)"run", (char *)"--bundle", (char *)bundle, id, NULL};
		pid_t pid;
		int status;
		uint64_t t0 = now_monotonic_ns();
		if (posix_spawnp(&pid, "crun", &fa, NULL, argv, environ) != 0 ||
		    waitpid(pid, &status, 0) != pid) {
			perror("cells-bench: crun");
			return 1;
		}
		t[i] = (now_monotonic_ns() - t0) / 1000;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "cells-bench: crun run exited with 0x%x\n", status);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *ns = NULL, *root = NULL, *image = NULL;
	if (argc < 4)
		goto usage;
	size_t runs = strtoul(argv[3], NULL, 10);
	for (int i = 4; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ns"))
			ns = argv[i + 1];
		else if (!strcmp(argv[i], "--root"))
			root = argv[i + 1];
		else if (!strcmp(argv[i], "--image"))
			image = argv[i + 1];
		else
			goto usage;
	}
	if (runs == 0 || runs > 100000)
		goto usage;
	uint64_t *a = calloc(runs, sizeof(*a)), *b = calloc(runs, sizeof(*b));
	if (!a || !b)
		return 1;
	if (!strcmp(argv[1], "kin")) {
		if (bench_kin(argv[2], runs, ns, root, image, a, b))
			return 1;
		printf("RESULT %llu %llu %zu deleted %llu\n", (unsigned long long)pct(a, runs, 50),
		       (unsigned long long)pct(a, runs, 90), runs,
		       (unsigned long long)pct(b, runs, 50));
	} else if (!strcmp(argv[1], "crun")) {
		if (bench_crun(argv[2], runs, a))
			return 1;
		printf("RESULT %llu %llu %zu\n", (unsigned long long)pct(a, runs, 50),
		       (unsigned long long)pct(a, runs, 90), runs);
	} else {
		goto usage;
	}
	free(a);
	free(b);
	return 0;
usage:
	fprintf(stderr,
	        "usage: cells-bench kin SOCKET RUNS [--ns LIST] [--root DIR | --image NAME]\n"
	        "       cells-bench crun BUNDLE RUNS\n");
	return 2;
}
