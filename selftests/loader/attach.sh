#!/usr/bin/env bash
# loader/attach (VM): the tool attaches a policy to a ring a separate process
# owns; the owner's next io_uring_enter() runs it to completion; list shows
# it with its counters and run statistics; unload detaches it and the
# owner's ring then behaves like any other.
# usage: attach.sh TOOL RING_OWNER NOPS.bpf.o
set -u
T=$1 OWNER=$2 NOPS=$3
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/owner.sh"
sysctl -qw kernel.bpf_stats_enabled=1

start_owner a loop
pid=${ring%%:*} fd=${ring##*:}
expect 0 "attached to ring $ring, pinned at /sys/fs/bpf/iouring-bpf/t-attach" \
	"$T" load "$NOPS" --ring "$ring" --pin t-attach --set nop_total=500 --set nop_inflight=4
check "fdinfo after load" "$(grep BpfLoop /proc/$pid/fdinfo/$fd)" 'BpfLoop:\s+1'
expect 0 "^t-attach +$ring +attached" "$T" list
json_check '[(p["name"], p["pid"], p["ring_fd"], p["state"]) for p in j] ==
	[("t-attach", '"$pid"', '"$fd"', "attached")] and j[0]["globals"]["nop_completed"] == 0' \
	"$T" -j list

check "owner runs the policy" "$(owner_cmd a enter)" '^enter 0 cq 0$'
json_check 'j[0]["globals"]["nop_completed"] == 500 and j[0]["globals"]["nop_submitted"] == 500 and
	j[0]["globals"]["iou_exit_status"] == 0 and j[0]["run_cnt"] > 0 and j[0]["run_time_ns"] > 0' \
	"$T" -j list
expect 0 'nop_completed=500' "$T" list

expect 0 't-attach: detached and unpinned' "$T" unload t-attach
check "fdinfo after unload" "$(grep BpfLoop /proc/$pid/fdinfo/$fd)" 'BpfLoop:\s+0'
json_check 'j == []' "$T" -j list
check "a NOP the ordinary way" "$(owner_cmd a nop)" '^nop 1 res 0 user_data 42$'
check "enter returns at once" "$(owner_cmd a enter)" '^enter 0 cq 0$'

# the default pin name is the object's; JSON output of load; a second
# attachment after the first is gone
json_check 'j["name"] == "nops" and j["pid"] == '"$pid"' and len(j["prog_ids"]) == 1' \
	"$T" -j load "$NOPS" --ring "$ring" --set nop_total=10
check "owner runs it again" "$(owner_cmd a enter)" '^enter 0 cq 0$'
expect 0 'nop_completed=10 ' "$T" list
expect 0 'detached and unpinned' "$T" unload nops

# the owner exits with a policy attached: list says so, unload still works
expect 0 'pinned at' "$T" load "$NOPS" --ring "$ring" --pin t-gone
stop_owner a
expect 0 '^t-gone +[0-9]+:[0-9]+ +ring gone' "$T" list
expect 0 'detached and unpinned' "$T" unload t-gone
finish
