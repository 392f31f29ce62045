/* pod: a microVM in the place of a pod's interface (kata-containers'
 * "tcfilter" networking). In the pod's network namespace (CNI's) a tap
 * is made beside the pod's interface and tc redirects every frame of
 * either to the other, so the VM's NIC on the tap is where the
 * interface was; the guest takes the interface's MAC, address and
 * gateway. The namespace is entered for the netlink calls and left at
 * once: kin's own network namespace never changes for longer. */
#include "net/net.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* In the namespace already: pod_if's facts, the tap, the redirects. Both
 * may be there from a shim started again for this pod (-EEXIST). */
static int pod_tap_here(const char *pod_if, const char *tap, struct net_link_info *info, char *step,
                        size_t size)
{
	snprintf(step, size, "read %s of", pod_if);
	int r = net_link_info(pod_if, info);
	if (r == 0) {
		snprintf(step, size, "make %s in", tap);
		r = net_tap_create(tap, info->mtu);
		if (r == -EEXIST)
			r = 0;
	}
	if (r == 0) {
		snprintf(step, size, "redirect %s and %s in", pod_if, tap);
		r = net_tc_redirect(pod_if, tap);
		if (r == 0 || r == -EEXIST)
			r = net_tc_redirect(tap, pod_if);
		if (r == -EEXIST)
			r = 0;
	}
	return r;
}

int net_pod_tap(const char *netns, const char *pod_if, const char *tap, struct net_link_info *ret,
                struct err *err)
{
	int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int target = open(netns, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	int r = 0;
	char step[64] = "open";
	if (own < 0 || target < 0) {
		r = -errno;
	} else if (setns(target, CLONE_NEWNET) < 0) {
		r = -errno;
		str_copy(step, sizeof(step), "enter");
	} else {
		r = pod_tap_here(pod_if, tap, ret, step, sizeof(step));
		if (setns(own, CLONE_NEWNET) < 0) { /* cannot happen: we came from it */
			log_error("net: cannot return to our network namespace: %m");
			abort();
		}
	}
	if (own >= 0)
		close(own);
	if (target >= 0)
		close(target);
	if (r < 0)
		return err_set(err, r, ERR_FAILED_PRECONDITION,
		               "the pod's network: cannot %s %s: %s", step, netns, strerror(-r));
	if (!ret->addr[0])
		return err_set(err, -EADDRNOTAVAIL, ERR_FAILED_PRECONDITION,
		               "the pod's network: %s in %s has no IPv4 address", pod_if, netns);
	return 0;
}
