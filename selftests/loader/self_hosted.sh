#!/usr/bin/env bash
# loader/self-hosted (VM): --ring without PID:FD makes a ring, runs the
# policy until it stops and prints its exit status and counters.
# usage: self_hosted.sh TOOL NOPS.bpf.o DAG.bpf.o
set -u
T=$1 NOPS=$2 DAG=$3
. "$(dirname "$0")/lib.sh"

expect 0 'exit status 0 \(ok\)' "$T" load "$NOPS" --ring --set nop_total=1000 --set nop_inflight=8
expect 0 'nop_completed +1000' "$T" load "$NOPS" --ring --set nop_total=1000
json_check 'j["exit_status"] == 0 and j["counters"]["nop_completed"] == 2000 and
	j["counters"]["nop_bad_cqes"] == 0 and type(j["elapsed_ns"]) is int and j["elapsed_ns"] > 0' "$T" -j load "$NOPS" --ring --entries 8 --set nop_total=2000
# a policy that stops with an error: the tool says so and exits 1
expect 1 'the policy stopped with -22 \(Invalid argument\)' \
	"$T" load "$DAG" --ring --set iou_dag_nr_nodes=5000 --set iou_dag_generation=1
json_check 'j["exit_status"] == -22' "$T" -j load "$DAG" --ring --set iou_dag_nr_nodes=5000 \
	--set iou_dag_generation=1
# a positive status: the same words on both lines (strerror of its magnitude)
expect 1 'exit status 5 \(Input/output error\)' \
	"$T" load "$NOPS" --ring --set nop_total=10 --set iou_exit_status=5
expect 1 'stopped with 5 \(Input/output error\)' \
	"$T" load "$NOPS" --ring --set nop_total=10 --set iou_exit_status=5
json_check 'j["exit_status"] == 5 and j["exit_status_text"] == "Input/output error"' \
	"$T" -j load "$NOPS" --ring --set nop_total=10 --set iou_exit_status=5
finish
