#!/usr/bin/env bash
# A VM's network in a pod's network namespace (net/: net_link_info,
# net_tap_create, net_tc_redirect). Netns A is the pod: eth0, one end of a
# veth, with 10.99.0.2/24 and a default route; the other end, peer0, is in
# netns B with 10.99.0.1/24. build/net-tap, run in A, reads eth0's facts,
# makes tap0 and the tc redirects, and plays the guest on tap0's fd. Each
# direction is proved by traffic, with a control before it that must fail:
# B's ARP request for 10.99.0.2 reaches the tap only once eth0 -> tap0 is
# redirected; the guest's ARP request reaches B (B learns 10.99.0.77) and
# B's reply comes back only once tap0 -> eth0 is too.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin net-tap
D=$PWD/$BUILD/net-tap
A=kin-tap-a-$$ B=kin-tap-b-$$
GUEST_MAC=02:00:00:00:00:77
trap 'ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null; rm -rf "$T"' EXIT
inA() { ip netns exec "$A" "$@"; }
inB() { ip netns exec "$B" "$@"; }

command -v tc >/dev/null || ns_skip "no tc(8) (iproute2) to probe the kernel's traffic control"
[ -c /dev/net/tun ] || ns_skip "no /dev/net/tun (CONFIG_TUN)"
ip netns add "$A" && ip netns add "$B" || ns_skip "cannot make network namespaces"
ip -n "$A" link add eth0 type veth peer name peer0 netns "$B" 2>/dev/null ||
	ns_skip "no veth links (CONFIG_VETH)"
# What net_tc_redirect needs; modules load on demand where the kernel has them.
command -v modprobe >/dev/null && modprobe -aq sch_ingress cls_u32 act_mirred 2>/dev/null
tc -n "$B" qdisc add dev lo ingress 2>/dev/null || ns_skip "no ingress qdisc in this kernel (sch_ingress)"
tc -n "$B" filter add dev lo parent ffff: protocol all prio 1 u32 match u32 0 0 \
	action mirred egress redirect dev lo 2>/dev/null ||
	ns_skip "no u32 classifier or mirred action in this kernel (cls_u32, act_mirred)"
tc -n "$B" qdisc del dev lo ingress

ip -n "$A" link set lo up
ip -n "$A" link set eth0 address 02:00:00:99:00:02 mtu 1400 up
ip -n "$A" addr add fd00::2/64 dev eth0 nodad
ip -n "$A" addr add 10.99.0.2/24 dev eth0
ip -n "$A" route add 10.50.0.0/16 via 10.99.0.1
ip -n "$A" route add default via 10.99.0.1
ip -n "$B" addr add 10.99.0.1/24 dev peer0
ip -n "$B" link set peer0 mtu 1400 up
PEER_MAC=$(inB cat /sys/class/net/peer0/address)

# --- eth0's facts ---
idx=$(inA cat /sys/class/net/eth0/ifindex)
out=$(inA "$D" info eth0 2>&1)
[ "$out" = "ifindex=$idx mtu=1400 mac=02:00:00:99:00:02 addr=10.99.0.2/24 gateway=10.99.0.1" ] &&
	ok link_info || bad link_info "$out"
out=$(inA "$D" info lo 2>&1)
[ "$out" = "ifindex=1 mtu=65536 mac=00:00:00:00:00:00 addr=127.0.0.1/8 gateway=" ] &&
	ok link_info_no_gateway || bad link_info_no_gateway "$out"
o1=$(inA "$D" info nosuch0 2>&1); o2=$(inA "$D" info eth0xxxxxxxxxxxx 2>&1)
[ "$o1" = "net-tap: net_link_info: No such device" ] &&
	[ "$o2" = "net-tap: net_link_info: Invalid argument" ] && ok link_info_refusals ||
	bad link_info_refusals "$o1 / $o2"

# --- the tap ---
out=$(inA "$D" tap tap0 1400 2>&1) || bad tap_create "$out"
flags=$(inA cat /sys/class/net/tap0/tun_flags 2>&1)
mtu=$(inA cat /sys/class/net/tap0/mtu 2>&1)
# 0x5802: IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_PERSIST
[ "$flags" = 0x5802 ] && [ "$mtu" = 1400 ] && ip -n "$A" link show tap0 | grep -q '[<,]UP[,>]' &&
	ok tap_create || bad tap_create "tun_flags $flags, mtu $mtu: $(ip -n "$A" link show tap0 2>&1)"
o1=$(inA "$D" tap tap0 1400 2>&1); o2=$(inA "$D" tap eth0 1400 2>&1); o3=$(inA "$D" tap tap0xxxxxxxxxxxx 0 2>&1)
# An MTU the tap cannot take: refused, and no half-made tap is left.
o4=$(inA "$D" tap tapbig 100000 2>&1)
[ "$o1" = "net-tap: net_tap_create: File exists" ] && [ "$o2" = "$o1" ] &&
	[ "$o3" = "net-tap: net_tap_create: Invalid argument" ] && [ "$o4" = "$o3" ] &&
	! ip -n "$A" link show tapbig >/dev/null 2>&1 && ok tap_refusals ||
	bad tap_refusals "$o1 / $o2 / $o3 / $o4 / $(ip -n "$A" -o link show tapbig 2>&1)"

# listen MS: the guest on tap0 waits MS for an ARP request for 10.99.0.2
# while B sends a datagram there (B forgets its neighbours first, so it asks).
listen() {
	inA "$D" listen tap0 10.99.0.2 "$1" >"$T/listen" 2>&1 &
	local pid=$!
	wait_for "grep -q attached '$T/listen' || ! kill -0 $pid 2>/dev/null"
	ip -n "$B" neigh flush dev peer0
	inB bash -c 'echo x >/dev/udp/10.99.0.2/9'
	wait $pid
}
# ask MS: the guest writes an ARP request for 10.99.0.1 from 10.99.0.77
# into tap0 and waits MS for B's reply.
ask() {
	ip -n "$B" neigh flush dev peer0
	inA "$D" arp tap0 10.99.0.77 $GUEST_MAC 10.99.0.1 "$1" >"$T/arp" 2>&1
}
b_learned() { ip -n "$B" neigh show 10.99.0.77 dev peer0 | grep -q "lladdr $GUEST_MAC"; }
# A's own stack answered B's ARP request on eth0.
a_answered() { ip -n "$B" neigh show 10.99.0.2 dev peer0 | grep -q "lladdr 02:00:00:99:00:02"; }

# Controls: without a redirect nothing crosses (the checks below can fail).
listen 1500; rc=$?
[ $rc -eq 1 ] && grep -q 'listen: Connection timed out' "$T/listen" && a_answered &&
	ok control_no_redirect_in || bad control_no_redirect_in "rc $rc: $(cat "$T/listen"); B: $(ip -n "$B" neigh)"
ask 1000; rc=$?
[ $rc -eq 1 ] && ! b_learned && ok control_no_redirect_out ||
	bad control_no_redirect_out "rc $rc: $(cat "$T/arp"); B: $(ip -n "$B" neigh)"

# eth0 -> tap0
out=$(inA "$D" redirect eth0 tap0 2>&1) && ok redirect_eth0_to_tap || bad redirect_eth0_to_tap "$out"
listen 3000; rc=$?
[ $rc -eq 0 ] && grep -q '^request who-has 10.99.0.2 tell 10.99.0.1$' "$T/listen" &&
	ok frames_from_eth0_reach_tap || bad frames_from_eth0_reach_tap "rc $rc: $(cat "$T/listen")"
# Redirected, not mirrored: eth0's own stack no longer sees what arrives.
sleep 0.2
! a_answered && ok eth0_stack_bypassed || bad eth0_stack_bypassed "B: $(ip -n "$B" neigh)"
ask 1000; rc=$?
[ $rc -eq 1 ] && ! b_learned && ok control_one_way_only ||
	bad control_one_way_only "rc $rc: $(cat "$T/arp"); B: $(ip -n "$B" neigh)"

# tap0 -> eth0, with an ingress qdisc already on tap0 (kept, not an error)
tc -n "$A" qdisc add dev tap0 ingress
out=$(inA "$D" redirect tap0 eth0 2>&1) && ok redirect_tap_to_eth0_keeps_qdisc ||
	bad redirect_tap_to_eth0_keeps_qdisc "$out"
ask 3000; rc=$?
b_learned && ok frames_from_tap_reach_eth0_peer ||
	bad frames_from_tap_reach_eth0_peer "B: $(ip -n "$B" neigh)"
[ $rc -eq 0 ] && [ "$(cat "$T/arp")" = "reply 10.99.0.1 is-at $PEER_MAC" ] && ok round_trip ||
	bad round_trip "rc $rc: $(cat "$T/arp"), peer0 is $PEER_MAC"
listen 3000 && ok both_ways_still_in || bad both_ways_still_in "$(cat "$T/listen")"

out=$(inA "$D" redirect eth0 tap0 2>&1)
n=$(tc -n "$A" qdisc show dev eth0 | grep -c '^qdisc ingress ffff:')
f=$(tc -n "$A" filter show dev eth0 ingress | grep -c 'mirred (Egress Redirect to device tap0)')
[ "$out" = "net-tap: net_tc_redirect: File exists" ] && [ "$n" = 1 ] && [ "$f" = 1 ] &&
	ok redirect_again_exists || bad redirect_again_exists "$out; $n ingress qdiscs, $f filters"
o1=$(inA "$D" redirect eth0 nosuch0 2>&1); o2=$(inA "$D" redirect eth0xxxxxxxxxxxx tap0 2>&1)
[ "$o1" = "net-tap: net_tc_redirect: No such device" ] &&
	[ "$o2" = "net-tap: net_tc_redirect: Invalid argument" ] && ok redirect_refusals ||
	bad redirect_refusals "$o1 / $o2"
ns_suite_end
