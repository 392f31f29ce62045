#!/usr/bin/env bash
# kin ctl on its own, no kin to call: usage errors said before any
# connection (exit 2, naming the bad value), sizes with units, and the
# bash completion script made from kin ctl's command tables.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin ctl
S=$T/none.sock # never listened on: a call would exit 3, not 2

# kc ARGS...: kin ctl; output in $T/out, exit code in $rc.
out_has() { grep -q -- "$1" "$T/out"; }

touch "$T/vmlinuz" "$T/image"
kc vm start g1 --kernel "$T/vmlinuz" --image "$T/image" --memory 12X
[ $rc -eq 2 ] && out_has "kin ctl vm: --memory '12X'" && ok vm_memory_bad_value ||
	bad vm_memory_bad_value "rc $rc"
kc vm start g1 --kernel "$T/vmlinuz" --image "$T/image" --memory 1536K
[ $rc -eq 2 ] && out_has "--memory '1536K'" && ok vm_memory_not_whole_mib ||
	bad vm_memory_not_whole_mib "rc $rc"
kc zone create z1 --vm --kernel "$T/vmlinuz" --image "$T/image" --memory 0
[ $rc -eq 2 ] && out_has "kin ctl zone: --memory '0'" && ok zone_memory_bad_value ||
	bad zone_memory_bad_value "rc $rc"
# Good sizes pass the parse: the run gets as far as calling (exit 3).
n=0
for m in 512M 1G 2048 2g; do
	kc vm start g1 --kernel "$T/vmlinuz" --image "$T/image" --memory "$m"
	[ $rc -eq 3 ] && n=$((n + 1))
done
[ $n -eq 4 ] && ok memory_sizes_accepted || bad memory_sizes_accepted "$n of 4 reached the call"
kc exec start c x --log-size 2Q -- true
[ $rc -eq 2 ] && out_has "--log-size '2Q'" && ok log_size_bad_value || bad log_size_bad_value "rc $rc"
kc exec start c x --log-size 64K -- true
[ $rc -eq 3 ] && ok log_size_units || bad log_size_units "rc $rc"

# complete WORDS...: what bash offers for the last word (may be "").
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_kin; echo "${COMPREPLY[*]}"' _ "$T/kin.bash" "$@"
}
"$KIN" ctl completion bash >"$T/kin.bash"; rc=$?
[ $rc -eq 0 ] && bash -n "$T/kin.bash" && ok completion_script || bad completion_script "rc $rc"
out=$(complete_words kin ctl ex)
[ "$out" = exec ] && ok complete_ctl_command || bad complete_ctl_command "'$out'"
out=$(complete_words kin ctl exec "")
echo " $out " | grep -q " start " && echo " $out " | grep -q " logs " && ok complete_exec_sub ||
	bad complete_exec_sub "'$out'"
out=$(complete_words kin ctl --socket /x -o json cell "")
echo " $out " | grep -q " create " && ok complete_after_options || bad complete_after_options "'$out'"
out=$(complete_words kin ctl vm start --me)
[ "$out" = --memory ] && ok complete_option || bad complete_option "'$out'"
out=$(complete_words kin "")
echo " $out " | grep -q " ctl " && echo " $out " | grep -q " image " && ok complete_kin_words ||
	bad complete_kin_words "'$out'"
kc completion zsh
[ $rc -eq 2 ] && ok completion_unknown_shell || bad completion_unknown_shell "rc $rc"
ns_suite_end
