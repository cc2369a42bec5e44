# shellcheck shell=bash
# Ring owners for the VM loader tests (sourced after lib.sh).
# start_owner VAR KIND: runs ring_owner KIND; VAR_ring=PID:FD, commands via
# owner_cmd VAR CMD (which prints the owner's reply line).
declare -A owner_in owner_pid
owner_dir=$(mktemp -d)
trap 'for v in "${!owner_pid[@]}"; do kill "${owner_pid[$v]}" 2>/dev/null; done; rm -rf "$owner_dir"' EXIT

start_owner() {
	local v=$1 kind=$2 i
	mkfifo "$owner_dir/$v.in"
	"$OWNER" "$kind" <"$owner_dir/$v.in" >"$owner_dir/$v.out" 2>&1 &
	owner_pid[$v]=$!
	eval "exec {fd}>\"$owner_dir/$v.in\""
	# shellcheck disable=SC2154 # fd is set by the exec {fd}> in the eval above
	owner_in[$v]=$fd
	for i in $(seq 100); do
		[ -s "$owner_dir/$v.out" ] && break
		sleep 0.1
	done
	ring=$(head -1 "$owner_dir/$v.out")
	case $ring in *:*) ;; *) echo "FAIL: owner $kind did not start: $ring"; exit 1 ;; esac
}

# stop_owner VAR: the owner exits (closing its ring)
stop_owner() {
	echo quit >&"${owner_in[$1]}"
	wait "${owner_pid[$1]}"
}

# owner_cmd VAR CMD: the owner's reply to CMD (waits up to 60 s)
owner_cmd() {
	local v=$1 n i
	# called in $(...): count lines now rather than keep state
	n=$(( $(wc -l <"$owner_dir/$v.out") + 1 ))
	echo "$2" >&"${owner_in[$v]}"
	for i in $(seq 600); do
		[ "$(wc -l <"$owner_dir/$v.out")" -ge "$n" ] && break
		sleep 0.1
	done
	[ "$i" -ge 20 ] && echo "(owner took $((i / 10)) s to answer $2)" >&2
	sed -n "${n}p" "$owner_dir/$v.out"
}

# check WHAT GOT WANT-REGEX
check() {
	if grep -qE -- "$3" <<<"$2"; then echo "ok: $1: $2"; else
		echo "FAIL: $1: got '$2', want /$3/"; fails=$((fails + 1)); fi
}
