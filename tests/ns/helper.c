/* ns-helper: workloads for the namespace tests and benchmarks, run under
 * kin (or a peer) as PID 1 of fresh namespaces.
 *   orphans N       N orphans whose parents exit first, N whose parents exit
 *                   after them (zombies reparented to init); waits until
 *                   /proc shows no zombie, exits 0, or 1 after 10 s
 *   churn N         N short-lived orphans (double fork), then as orphans
 *   zombies         prints the zombie count in /proc; exit 1 if any
 *   siglog FILE     appends the name of each signal received to FILE;
 *                   exits 0 on SIGTERM (after logging it)
 *   ignore-term F   ignores SIGTERM, touches F, sleeps forever
 *   stamp           prints ns since $KIN_BENCH_T0 (CLOCK_MONOTONIC) */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int zombies(void)
{
	int n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));) {
		char path[300], buf[512];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		char *rp = strrchr(buf, ')');
		if (rp && rp[1] == ' ' && rp[2] == 'Z')
			n++;
	}
	closedir(d);
	return n;
}

static void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0)
		;
}

static int wait_no_zombies(void)
{
	for (int i = 0; i < 1000; i++) {
		if (zombies() == 0)
			return 0;
		msleep(10);
	}
	fprintf(stderr, "helper: %d zombies remain after 10 s\n", zombies());
	return 1;
}

static int orphans(int n)
{
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0) {
			if (fork() == 0) { /* grandchild outlives its parent */
				msleep(20 + i % 30);
				_exit(0);
			}
			_exit(0);
		}
		waitpid(p, NULL, 0);
	}
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0) {
			if (fork() == 0)  /* grandchild dies first: a zombie until */
				_exit(0); /* its parent exits and init adopts it */
			msleep(30);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	msleep(80);
	return wait_no_zombies();
}

static int churn(int n)
{
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			if (fork() == 0)
				_exit(0);
			_exit(0);
		}
		waitpid(p, NULL, 0);
	}
	return wait_no_zombies();
}

static const char *siglog_path;
static void on_sig(int sig)
{
	char line[32];
	int len = snprintf(line, sizeof(line), "%s\n", sigabbrev_np(sig));
	int fd = open(siglog_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd >= 0) {
		(void)!write(fd, line, (size_t)len);
		close(fd);
	}
	if (sig == SIGTERM)
		_exit(0);
}

static __attribute__((noreturn)) void siglog(const char *path)
{
	static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT,  SIGUSR1,
	                           SIGUSR2, SIGTERM, SIGWINCH, SIGALRM};
	struct sigaction sa = {.sa_handler = on_sig};
	siglog_path = path;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd >= 0) {
		(void)!write(fd, "ready\n", 6);
		close(fd);
	}
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *cmd = argv[1];
	if (strcmp(cmd, "orphans") == 0 && argc == 3)
		return orphans(atoi(argv[2]));
	if (strcmp(cmd, "churn") == 0 && argc == 3)
		return churn(atoi(argv[2]));
	if (strcmp(cmd, "zombies") == 0) {
		int z = zombies();
		printf("%d\n", z);
		return z != 0;
	}
	if (strcmp(cmd, "siglog") == 0 && argc == 3)
		siglog(argv[2]);
	if (strcmp(cmd, "ignore-term") == 0 && argc == 3) {
		signal(SIGTERM, SIG_IGN);
		close(open(argv[2], O_WRONLY | O_CREAT, 0644));
		for (;;)
			pause();
	}
	if (strcmp(cmd, "stamp") == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		const char *t0 = getenv("KIN_BENCH_T0");
		unsigned long long now =
		    (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
		printf("%llu\n", now - (t0 ? strtoull(t0, NULL, 10) : 0));
		return 0;
	}
	fprintf(stderr, "helper: bad arguments\n");
	return 2;
}
