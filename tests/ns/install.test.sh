#!/usr/bin/env bash
# make install into a staging DESTDIR: bin/kin (0755, the binary built), the
# containerd shim links, the bash completion, the man pages kin(1),
# kin-ctl(1) and kin-init(8) (0644, as written in docs/man/, rendering
# without a warning), and bin/systemctl only with SYSTEMCTL=1.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin install

# install DESTDIR [VAR=VALUE...]: make install of the kin already built
# (-o: never rebuilt here, whatever flags built it), output in $T/out.
install_to() {
	local dest=$1; shift
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -o "$BUILD/kin" \
		install BUILD="$BUILD" DESTDIR="$dest" PREFIX=/usr "$@" >"$T/out" 2>&1
}
# mode FILE: its permission bits in octal (e.g. 644).
mode() { stat -c %a "$1" 2>/dev/null; }

D=$T/stage
install_to "$D"; rc=$?
[ $rc -eq 0 ] && ok install_runs || bad install_runs "rc $rc"

[ "$(mode "$D/usr/bin/kin")" = 755 ] && cmp -s "$D/usr/bin/kin" "$KIN" && ok bin_kin ||
	bad bin_kin "mode $(mode "$D/usr/bin/kin"), or not the binary built"
n=0
for l in containerd-shim-kin-v2 containerd-shim-kin-vm-v2; do
	[ "$(readlink "$D/usr/bin/$l")" = kin ] && n=$((n + 1))
done
[ $n -eq 2 ] && ok shim_links || bad shim_links "$n of 2 links to kin"
C=$D/usr/share/bash-completion/completions/kin
[ -s "$C" ] && [ "$(mode "$C")" = 644 ] && bash -n "$C" && ok completion ||
	bad completion "$(ls -l "$C" 2>&1)"

# Each man page: where man looks for it, 0644, the page written in docs/man/.
for page in man1/kin.1 man1/kin-ctl.1 man8/kin-init.8; do
	name=$(basename "$page")
	f=$D/usr/share/man/$page
	if [ "$(mode "$f")" = 644 ] && cmp -s "$f" "docs/man/$name"; then
		ok "man_$name"
	else
		bad "man_$name" "$(ls -l "$f" 2>&1)"
	fi
done
# Each renders without a warning (groff -ww), when groff is there.
if command -v groff >/dev/null; then
	warn=
	for f in "$D"/usr/share/man/man1/kin.1 "$D"/usr/share/man/man1/kin-ctl.1 \
		"$D"/usr/share/man/man8/kin-init.8; do
		[ -f "$f" ] || { warn="$warn $f: missing;"; continue; }
		w=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
		[ -z "$w" ] || warn="$warn $(basename "$f"): $w;"
	done
	[ -z "$warn" ] && ok man_pages_render || bad man_pages_render "$warn"
else
	echo "SKIP ns/install/man_pages_render: no groff"
fi

[ ! -e "$D/usr/bin/systemctl" ] && ok no_systemctl_by_default ||
	bad no_systemctl_by_default "bin/systemctl installed without SYSTEMCTL=1"
install_to "$T/stage2" SYSTEMCTL=1; rc=$?
[ $rc -eq 0 ] && [ "$(readlink "$T/stage2/usr/bin/systemctl")" = kin ] && ok systemctl_on_request ||
	bad systemctl_on_request "rc $rc, $(ls -l "$T/stage2/usr/bin/systemctl" 2>&1)"

ns_suite_end
