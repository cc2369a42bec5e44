#!/bin/bash
# bench/echo: the echo benchmark in small (both servers, every echoed
# byte checked), then proof that the check bites: a run whose client damages
# one echoed message must fail, name the byte, and not hang.
# usage: check.sh ECHO_BINARY
set -euo pipefail
echo_bin=${1:?usage: check.sh ECHO_BINARY}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$echo_bin" -c 1,16 -n 200 -r 1 -j "$tmp/echo.json"
python3 - "$tmp/echo.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["connections"] == [1, 16] and d["msg_bytes"] == 64 and d["rounds"] == 1, d
for r in d["results"]:
    for k in ("bpf_rps", "user_rps", "bpf_enters_per_req", "user_enters_per_req", "speedup"):
        assert r[k] > 0, (k, r)
    assert r["requests"] == r["connections"] * 200, r
    assert abs(r["bpf_enters_per_req"] * r["requests"] - 1) < 0.01, r  # one per run
    assert r["user_enters_per_req"] >= 0.5 / r["connections"], r
PY

if "$echo_bin" -c 4 -n 50 -r 1 -F 77 > "$tmp/out" 2> "$tmp/err"; then
	fail "a run with a damaged echo (-F 77) succeeded"
fi
grep -q "echoed byte 32 is" "$tmp/err" || fail "the damaged echo was not reported: $(cat "$tmp/err")"
echo "damaged echo caught: $(head -1 "$tmp/err")"
# the same through the liburing server alone; its JSON has null for bpf
if "$echo_bin" -M user -c 4 -n 50 -r 1 -F 77 > "$tmp/out" 2> "$tmp/err"; then
	fail "a run of the user server with a damaged echo (-F 77) succeeded"
fi
grep -q "user server, 4 connections: .*echoed byte 32 is" "$tmp/err" ||
	fail "the damaged echo (user) was not reported: $(cat "$tmp/err")"
echo "damaged echo caught: $(head -1 "$tmp/err")"
"$echo_bin" -M user -c 2 -n 20 -r 1 -j "$tmp/user.json" > /dev/null
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["results"][0]; \
assert r["bpf_rps"] is None and r["speedup"] is None and r["user_rps"] > 0, r' "$tmp/user.json"

if "$echo_bin" -c 0 2> "$tmp/err"; then
	fail "-c 0 was accepted"
fi
grep -q -- "-c 0" "$tmp/err" || fail "-c 0: the error does not name the option: $(cat "$tmp/err")"
echo "echo: all checks passed"
