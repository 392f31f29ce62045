/* bench-nsinit: an init (kin or a peer such as tini) as PID 1 of fresh
 * PID+mount namespaces.
 *   bench-nsinit start N HELPER INIT [ARGS...] [--]
 *       N runs: the init is exec'd with KIN_BENCH_T0 set to the monotonic
 *       time just before execve; its workload "HELPER stamp" prints the
 *       time elapsed when it starts. Prints median, p10, p90 in µs.
 *   bench-nsinit rss INIT [ARGS...] [--]
 *       starts INIT ... -- sleep 60 in fresh namespaces, lets it settle,
 *       prints the init's VmRSS in KiB (from the host's /proc). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Forks into new namespaces; the grandchild (PID 1) execs argv. Returns the
 * host pid of PID 1 and the pid to wait for (the intermediate). */
static pid_t spawn_ns(char **argv, int outfd, pid_t *ret_pid1)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return -1;
	pid_t mid = fork();
	if (mid == 0) {
		close(pfd[0]);
		if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0) {
			perror("unshare");
			_exit(1);
		}
		pid_t p1 = fork();
		if (p1 == 0) {
			if (outfd >= 0)
				dup2(outfd, 1);
			char t0[32];
			snprintf(t0, sizeof(t0), "%llu", now_ns());
			setenv("KIN_BENCH_T0", t0, 1);
			execvp(argv[0], argv);
			perror("execvp");
			_exit(127);
		}
		(void)!write(pfd[1], &p1, sizeof(p1));
		int st;
		waitpid(p1, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	close(pfd[1]);
	if (read(pfd[0], ret_pid1, sizeof(*ret_pid1)) != sizeof(*ret_pid1))
		*ret_pid1 = -1;
	close(pfd[0]);
	return mid;
}

static char **with_workload(int argc, char **argv, const char *w1, const char *w2)
{
	char **v = calloc((size_t)argc + 4, sizeof(char *));
	int n = 0;
	for (int i = 0; i < argc; i++)
		v[n++] = argv[i];
	v[n++] = (char *)w1;
	v[n++] = (char *)w2;
	return v;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "start") == 0) {
		int n = atoi(argv[2]);
		char **v = with_workload(argc - 4, argv + 4, argv[3], "stamp");
		double *us = calloc((size_t)n, sizeof(double));
		int got = 0;
		for (int i = 0; i < n; i++) {
			int pfd[2];
			if (pipe(pfd) < 0)
				return 1;
			pid_t p1, mid = spawn_ns(v, pfd[1], &p1);
			close(pfd[1]);
			char buf[64] = "";
			ssize_t len = read(pfd[0], buf, sizeof(buf) - 1);
			close(pfd[0]);
			waitpid(mid, NULL, 0);
			if (len > 0)
				us[got++] = strtod(buf, NULL) / 1000.0;
		}
		if (got == 0) {
			fprintf(stderr, "no run succeeded\n");
			return 1;
		}
		qsort(us, (size_t)got, sizeof(double), cmp);
		printf("median %.0f us  p10 %.0f us  p90 %.0f us  (%d runs)\n", us[got / 2],
		       us[got / 10], us[got * 9 / 10], got);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "rss") == 0) {
		char **v = with_workload(argc - 2, argv + 2, "sleep", "60");
		pid_t p1, mid = spawn_ns(v, -1, &p1);
		struct timespec settle = {0, 300 * 1000000};
		nanosleep(&settle, NULL);
		/* RSS counts clean text mapped from the page cache (for a static
		 * binary, about its whole text: the kernel maps 64 KiB around
		 * each fault); Private_Dirty is what this process alone costs. */
		char path[64], line[256];
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)p1);
		FILE *f = fopen(path, "r");
		long rss = -1, dirty = -1, kb;
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "Rss: %ld kB", &kb) == 1)
				rss = kb;
			if (sscanf(line, "Private_Dirty: %ld kB", &kb) == 1)
				dirty = kb;
		}
		if (f)
			fclose(f);
		kill(p1, SIGKILL);
		waitpid(mid, NULL, 0);
		if (rss < 0)
			return 1;
		printf("RSS %5ld KiB   private dirty %4ld KiB\n", rss, dirty);
		return 0;
	}
	fprintf(stderr, "usage: bench-nsinit start N HELPER INIT... | rss INIT...\n");
	return 2;
}
