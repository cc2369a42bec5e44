# shellcheck shell=bash
# Shared by the loader tests (sourced). T is the tool.
fails=0

# expect STATUS PATTERN CMD...: CMD exits STATUS and its output has PATTERN.
expect() {
	local want=$1 pattern=$2 out status
	shift 2
	out=$("$@" 2>&1)
	status=$?
	if [ "$status" != "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
		echo "FAIL: $* -> exit $status (want $want), output:"
		sed 's/^/    /' <<<"$out"
		echo "    (wanted /$pattern/)"
		fails=$((fails + 1))
		return 1
	fi
	echo "ok: $* -> $status: $(grep -E -m1 -- "$pattern" <<<"$out")"
}

# json_check EXPR CMD...: CMD prints JSON for which the Python EXPR (over j) is true.
json_check() {
	local expr=$1 out
	shift
	out=$("$@" 2>/dev/null)
	if ! python3 -c "import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if ($expr) else 1)" "$out"; then
		echo "FAIL: $* | $expr; output: $out"
		fails=$((fails + 1))
		return 1
	fi
	echo "ok: $* | $expr"
}

# json_one STATUS EXPR CMD...: CMD exits STATUS and its standard output is
# exactly one JSON document, valid UTF-8, for which the Python EXPR (over j) is true.
json_one() {
	local want=$1 expr=$2 status out
	shift 2
	out=$(mktemp)
	"$@" >"$out" 2>/dev/null
	status=$?
	if [ "$status" != "$want" ] || ! python3 -c '
import json, sys
j = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$out" "$expr"; then
		echo "FAIL: $* -> exit $status (want $want), one JSON document with $expr; output:"
		cat -v "$out" | sed 's/^/    /'
		fails=$((fails + 1))
		rm -f "$out"
		return 1
	fi
	echo "ok: $* -> $status | $expr"
	rm -f "$out"
}

finish() {
	[ "$fails" = 0 ] && { echo "all checks passed"; exit 0; }
	echo "$fails check(s) failed"
	exit 1
}
