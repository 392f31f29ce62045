/* net-tap: net/'s VM networking driven by tests/ns/net-tap.test.sh, run
 * inside the pod's network namespace.
 *   info IFNAME                 net_link_info: one line of key=value
 *   tap IFNAME MTU              net_tap_create
 *   redirect FROM TO            net_tc_redirect
 *   listen TAP IP MS            plays the guest: attaches to TAP (as QEMU
 *                               does, vnet header on), says "attached",
 *                               waits MS for an ARP request for IP
 *   arp TAP IP MAC TARGET MS    plays the guest: writes an ARP request
 *                               from IP/MAC for TARGET into TAP, waits MS
 *                               for TARGET's reply to MAC
 * Errors print as "net-tap: CALL: strerror"; exit 0 on success, 1 on an
 * error or a timeout, 2 on usage. */
#include "net/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#define ETH_HDR 14
#define ARP_LEN 28

static int fail(const char *what, int r)
{
	printf("net-tap: %s: %s\n", what, strerror(-r));
	return 1;
}

static int tap_attach(const char *ifname)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	int r = str_copy(ifr.ifr_name, sizeof(ifr.ifr_name), ifname);
	if (r == 0 && ioctl(fd, TUNSETIFF, &ifr) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Attaching turns the tap's carrier on, but the kernel starts its queue
 * only when linkwatch runs (up to a second later): until operstate says
 * "up" every frame sent to the tap is dropped. */
static int tap_wait_up(const char *ifname, long long deadline)
{
	char path[64], state[16];
	snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", ifname);
	while (now_ms() < deadline) {
		FILE *f = fopen(path, "re");
		bool up = f && fgets(state, sizeof(state), f) && strcmp(state, "up\n") == 0;
		if (f)
			fclose(f);
		if (up)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

/* The next ARP frame of operation op (1 request, 2 reply) read from fd
 * within deadline: its ARP payload in arp; 0, or -ETIMEDOUT. */
static int read_arp(int fd, int op, long long deadline, uint8_t arp[ARP_LEN])
{
	uint8_t buf[65536];
	for (;;) {
		long long left = deadline - now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			return -ETIMEDOUT;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		const uint8_t *f = buf + sizeof(struct virtio_net_hdr);
		if (n < (ssize_t)(sizeof(struct virtio_net_hdr) + ETH_HDR + ARP_LEN) ||
		    f[12] != 0x08 || f[13] != 0x06 || f[ETH_HDR + 6] != 0 || f[ETH_HDR + 7] != op)
			continue;
		memcpy(arp, f + ETH_HDR, ARP_LEN);
		return 0;
	}
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned m[6];
	char end;
	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &end) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
	return 0;
}

static int info(const char *ifname)
{
	struct net_link_info li;
	int r = net_link_info(ifname, &li);
	if (r < 0)
		return fail("net_link_info", r);
	printf("ifindex=%d mtu=%u mac=%02x:%02x:%02x:%02x:%02x:%02x addr=%s gateway=%s\n",
	       li.ifindex, li.mtu, li.mac[0], li.mac[1], li.mac[2], li.mac[3], li.mac[4], li.mac[5],
	       li.addr, li.gateway);
	return 0;
}

static int listen_arp(const char *tap, const char *ip, int ms)
{
	struct in_addr want;
	if (inet_pton(AF_INET, ip, &want) != 1)
		return 2;
	_cleanup_close_ int fd = tap_attach(tap);
	if (fd < 0)
		return fail("attach", fd);
	int r = tap_wait_up(tap, now_ms() + 3000);
	if (r < 0)
		return fail("operstate up", r);
	printf("attached\n");
	fflush(stdout);
	long long deadline = now_ms() + ms;
	uint8_t arp[ARP_LEN];
	while ((r = read_arp(fd, 1, deadline, arp)) == 0) {
		if (memcmp(arp + 24, &want, 4) != 0)
			continue;
		char spa[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, arp + 14, spa, sizeof(spa));
		printf("request who-has %s tell %s\n", ip, spa);
		return 0;
	}
	return fail("listen", r);
}

static int arp_ask(const char *tap, const char *ip, const char *mac_s, const char *target, int ms)
{
	struct in_addr spa, tpa;
	uint8_t mac[6];
	if (inet_pton(AF_INET, ip, &spa) != 1 || inet_pton(AF_INET, target, &tpa) != 1 ||
	    parse_mac(mac_s, mac) < 0)
		return 2;
	_cleanup_close_ int fd = tap_attach(tap);
	if (fd < 0)
		return fail("attach", fd);
	int r = tap_wait_up(tap, now_ms() + 3000);
	if (r < 0)
		return fail("operstate up", r);
	uint8_t frame[sizeof(struct virtio_net_hdr) + ETH_HDR + ARP_LEN] = {0};
	uint8_t *f = frame + sizeof(struct virtio_net_hdr), *a = f + ETH_HDR;
	memset(f, 0xff, 6); /* broadcast */
	memcpy(f + 6, mac, 6);
	f[12] = 0x08, f[13] = 0x06;
	a[1] = 1;                 /* Ethernet */
	a[2] = 0x08, a[3] = 0x00; /* IPv4 */
	a[4] = 6, a[5] = 4, a[7] = 1;
	memcpy(a + 8, mac, 6);
	memcpy(a + 14, &spa, 4);
	memcpy(a + 24, &tpa, 4);
	if (write(fd, frame, sizeof(frame)) != (ssize_t)sizeof(frame))
		return fail("write", -errno);
	long long deadline = now_ms() + ms;
	uint8_t arp[ARP_LEN];
	while ((r = read_arp(fd, 2, deadline, arp)) == 0) {
		if (memcmp(arp + 14, &tpa, 4) != 0 || memcmp(arp + 18, mac, 6) != 0)
			continue;
		printf("reply %s is-at %02x:%02x:%02x:%02x:%02x:%02x\n", target, arp[8], arp[9],
		       arp[10], arp[11], arp[12], arp[13]);
		return 0;
	}
	return fail("arp", r);
}

int main(int argc, char **argv)
{
	uint32_t n;
	if (argc == 3 && strcmp(argv[1], "info") == 0)
		return info(argv[2]);
	if (argc == 4 && strcmp(argv[1], "tap") == 0 && str_to_u32(argv[3], &n) == 0) {
		int r = net_tap_create(argv[2], n);
		return r < 0 ? fail("net_tap_create", r) : 0;
	}
	if (argc == 4 && strcmp(argv[1], "redirect") == 0) {
		int r = net_tc_redirect(argv[2], argv[3]);
		return r < 0 ? fail("net_tc_redirect", r) : 0;
	}
	if (argc == 5 && strcmp(argv[1], "listen") == 0 && str_to_u32(argv[4], &n) == 0 &&
	    n < 60000)
		return listen_arp(argv[2], argv[3], (int)n);
	if (argc == 7 && strcmp(argv[1], "arp") == 0 && str_to_u32(argv[6], &n) == 0 && n < 60000)
		return arp_ask(argv[2], argv[3], argv[4], argv[5], (int)n);
	fprintf(stderr, "usage: net-tap info|tap|redirect|listen|arp ...\n");
	return 2;
}
