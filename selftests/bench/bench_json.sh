#!/bin/bash
# bench/json: the benchmark programs make bench runs, in small, on
# both backings, and the JSON each writes: every field bench-model and the
# README read is there and sane (no timing is judged).
# usage: bench_json.sh BENCH_DIR (the build's bench/)
set -euo pipefail
ex=${1:?usage: bench_json.sh BENCH_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -b /dev/nullb0 ] || fail "/dev/nullb0 missing (null_blk is built in: CONFIG_BLK_DEV_NULL_BLK)"

"$ex/syscall_cost" -n 2000 -r 3 -j "$tmp/syscall.json"
"$ex/nop_chain" -n 2000 -r 1 -j "$tmp/nop_chain.json"
"$ex/copy" -B /dev/nullb0 -s 2 -k 4 -r 1 -j "$tmp/copy_null_blk.json"
"$ex/copy" -d /dev/shm -s 2 -k 4 -r 1 -j "$tmp/copy.json"
"$ex/dag" -B /dev/nullb0 -s 2 -k 4 -r 1 -j "$tmp/dag_null_blk.json"
"$ex/dag" -d /dev/shm -s 2 -k 4 -r 1 -j "$tmp/dag.json"
"$ex/echo" -c 1,2 -n 20 -r 1 -j "$tmp/echo.json"

# a bad device names itself and fails
if "$ex/copy" -B /dev/does-not-exist -s 1 -r 1 2> "$tmp/err"; then
	fail "copy -B of a missing device succeeded"
fi
grep -q "/dev/does-not-exist" "$tmp/err" || fail "copy's error does not name the device: $(cat "$tmp/err")"

python3 - "$tmp" <<'PY'
import json, os, sys
d = sys.argv[1]
def load(n):
    return json.load(open(os.path.join(d, n + ".json")))
def need(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)

s = load("syscall")
need(s["syscall_ns"] > 0, "syscall_ns %r" % s["syscall_ns"])
need(s["kernel"].endswith("-iouring-bpf"), "kernel %r" % s["kernel"])
need(s["mitigations"], "mitigations empty")
need(isinstance(s["vulnerabilities"], dict), "vulnerabilities")

n = load("nop_chain")
for k in ("step_ns", "link2_ns", "bpf1_ns", "bpf8_ns", "step_ns_trampoline"):
    need(n.get(k, 0) > 0, "nop_chain %s: %r" % (k, n.get(k)))
need(n["link2_enters_per_nop"] == 0.5, "link2_enters_per_nop")

for name, backing in (("copy_null_blk", "/dev/nullb0"), ("copy", "tmpfs")):
    c = load(name)
    need(c["backing"] == backing, "%s backing %r" % (name, c["backing"]))
    need([r["block"] for r in c["results"]] == [4096, 262144], name + " blocks")
    for r in c["results"]:
        for m in ("bpf", "user", "link"):
            need(r[m + "_mbps"] > 0, "%s %s_mbps" % (name, m))
        need(r["bpf_enters_per_mib"] < r["user_enters_per_mib"],
             "%s: bpf enters %r not below user's %r" % (name, r["bpf_enters_per_mib"],
                                                        r["user_enters_per_mib"]))

g = load("dag_null_blk")
need(g["backing"] == "/dev/nullb0", "dag backing")
need(len(g["results"]) == 2, "dag results")
for r in g["results"]:
    need(r["bpf_ms"] > 0 and r["user_ms"] > 0 and r["nodes"] > 0, "dag times")
    need(r["bpf_enters"] < r["user_enters"], "dag enters")
print("bench-json: syscall %.0f ns (%s), step %.0f ns (%.0f ns through the trampoline), "
      "copy and dag on null_blk and tmpfs: JSON complete"
      % (s["syscall_ns"], s["mitigations"], n["step_ns"], n["step_ns_trampoline"]))
PY

# bench-model and bench-tables over two "points" (this boot's JSON twice):
# the model is written and every README table is printed, with this run's
# figures in it
scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)
mkdir -p "$tmp/bench/auto" "$tmp/bench/pti"
cp "$tmp"/*.json "$tmp/bench/auto/"
cp "$tmp"/*.json "$tmp/bench/pti/"
"$scripts/bench-model" "$tmp/bench" > "$tmp/model.out"
[ -s "$tmp/bench/model.json" ] || fail "bench-model wrote no model.json"
"$scripts/bench-tables" "$tmp/bench" > "$tmp/tables.md"
step=$(python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["step_ns"])' \
	"$tmp/nop_chain.json")
for row in "| BPF-0 (empty step) | $step |" "| BPF-0 through its trampoline |" \
	   "| null_blk | 4 KiB |" "| tmpfs | 256 KiB |" "| 2 |" "| nop_chain | nop | BPF-1 |"; do
	grep -qF -- "$row" "$tmp/tables.md" || fail "bench-tables printed no '$row' row"
done
echo "bench-json: bench-model and bench-tables read this run's JSON"
