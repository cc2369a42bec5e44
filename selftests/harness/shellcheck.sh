#!/usr/bin/env bash
# harness/shellcheck (host): `shellcheck -S warning` reports nothing in any
# shell script of the repository: every tracked file ending in .sh and every
# tracked file whose first line is an sh or bash shebang (scripts/*,
# selftests/run, .ci/run, ...), under the repository's .shellcheckrc (which
# follows the libraries the scripts source). Warning severity includes
# SC2154, a variable read but never assigned: scripts/deps's install branch
# once died on one under set -u, on no machine CI had. A canary with that
# bug checks that shellcheck, so configured, still reports it. A deliberate
# idiom gets `# shellcheck disable=SCxxxx # reason` on the line above it.
set -u
fail() { echo "FAIL: $*"; exit 1; }

src=${IOURING_BPF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
command -v shellcheck > /dev/null ||
	fail "no shellcheck on PATH (scripts/deps installs it: apt-get install shellcheck)"
echo "$(command -v shellcheck): $(shellcheck --version | sed -n 's/^version: //p')"
cd "$src" || fail "cannot cd to $src"
git rev-parse --is-inside-work-tree > /dev/null 2>&1 || fail "$src is not a git checkout (the scripts are git ls-files)"

# the shell scripts: tracked *.sh, and tracked files with an sh/bash shebang
mapfile -t scripts < <(
	git ls-files -z | xargs -0 -r awk '
		FILENAME ~ /\.sh$/ { print FILENAME; nextfile }
		FNR == 1 { if ($0 ~ /^#!.*[\/ \t](ba|da|k)?sh([ \t]|$)/) print FILENAME; nextfile }' 2>/dev/null |
	sort -u)
[ ${#scripts[@]} -gt 0 ] || fail "found no shell script in $src"
# a few that must be among them, so the search cannot quietly find less
for f in scripts/deps scripts/progress scripts/vm selftests/run .ci/run selftests/harness/shellcheck.sh; do
	if [ -e "$f" ] && git ls-files --error-unmatch "$f" > /dev/null 2>&1; then
		printf '%s\n' "${scripts[@]}" | grep -qxF "$f" || fail "$f was not found as a shell script"
	fi
done

# the canary: deps's old bug, a variable never assigned, read under set -u
canary=$(printf '#!/usr/bin/env bash\nset -u\n"$here/progress" x\n' |
	shellcheck -S warning -f gcc - 2>&1)
grep -q 'SC2154' <<<"$canary" ||
	fail "shellcheck -S warning does not report SC2154 (referenced but not assigned) here; it said: $canary"

t0=$SECONDS
out=$(shellcheck -S warning -f gcc "${scripts[@]}" 2>&1)
rc=$?
echo "shellcheck -S warning: ${#scripts[@]} scripts, exit $rc, $((SECONDS - t0)) s"
if [ $rc != 0 ] || [ -n "$out" ]; then
	echo "$out"
	fail "shellcheck reports $(grep -c ': \(error\|warning\): ' <<<"$out") problems in the scripts above" \
		"(fix them, or for a deliberate idiom add '# shellcheck disable=SCxxxx # reason' above the line)"
fi
echo "ok: no shellcheck warning in ${#scripts[@]} shell scripts; SC2154 is reported (canary)"
exit 0
