/* rpc-gap: how long a kin does not answer, as a client sees it — for the
 * re-exec benchmark (tests/bench/reexec.sh).
 *   rpc-gap SOCKET SECONDS
 * One connection calls Health/Check one call after the other for SECONDS,
 * connecting again whenever the connection ends; every stretch of more
 * than 1 ms between two answers is a gap. Prints the gaps in ms, one per
 * line, largest first; with RPC_GAP_WHEN=1 in the environment each line
 * also has the gap's start and end (CLOCK_MONOTONIC, s) and the failed
 * calls in it, to set next to kin's log. */
#include "rpc/rpc-int.h"

#include <stdio.h>
#include <string.h>

#define GAPS_MAX 4096

struct gap {
	double ms;
	uint64_t from, to;
	unsigned failed;
};

static int cmp_desc(const void *a, const void *b)
{
	double x = ((const struct gap *)a)->ms, y = ((const struct gap *)b)->ms;
	return x < y ? 1 : x > y ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint32_t secs;
	if (argc != 3 || str_to_u32(argv[2], &secs) < 0) {
		fprintf(stderr, "usage: rpc-gap SOCKET SECONDS\n");
		return 2;
	}
	static struct gap gaps[GAPS_MAX];
	size_t n = 0;
	unsigned failed = 0;
	const char *when = getenv("RPC_GAP_WHEN");
	struct rpc_client *c = NULL;
	uint64_t start = now_monotonic_ns(), end = start + secs * 1000000000ull, last_ok = 0;
	while (now_monotonic_ns() < end) {
		if (!c && rpc_client_connect(argv[1], 1000, &c) < 0) {
			c = NULL;
			usleep(100);
			continue;
		}
		Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
		ProtobufCMessage *out = NULL;
		struct err st;
		int r = rpc_client_call(c, "kin.v1.Health", "Check", &in.base,
		                        &kin__v1__check_response__descriptor, &st, &out);
		if (out)
			protobuf_c_message_free_unpacked(out, NULL);
		if (r < 0 || st.code != ERR_OK) {
			rpc_client_free(c);
			c = NULL;
			failed++;
			continue;
		}
		uint64_t now = now_monotonic_ns();
		if (last_ok && now - last_ok > 1000000 && n < GAPS_MAX)
			gaps[n++] =
			    (struct gap){(double)(now - last_ok) / 1e6, last_ok, now, failed};
		last_ok = now;
		failed = 0;
	}
	rpc_client_free(c);
	qsort(gaps, n, sizeof(gaps[0]), cmp_desc);
	for (size_t i = 0; i < n; i++)
		if (when && *when == '1')
			printf("%.2f %llu.%06llu %llu.%06llu %u\n", gaps[i].ms,
			       (unsigned long long)(gaps[i].from / 1000000000ull),
			       (unsigned long long)(gaps[i].from % 1000000000ull / 1000),
			       (unsigned long long)(gaps[i].to / 1000000000ull),
			       (unsigned long long)(gaps[i].to % 1000000000ull / 1000),
			       gaps[i].failed);
		else
			printf("%.2f\n", gaps[i].ms);
	return 0;
}
