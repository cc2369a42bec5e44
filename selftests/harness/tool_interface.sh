#!/usr/bin/env bash
# harness/tool-interface (host): the man page, the bash completion and the
# help texts describe the tool that the code builds, as bpftool's
# test_bpftool_synctypes.py checks its docs. The code's own description is
# `iouring-bpf help --options` (loader/interface.c: one line per command,
# "COMMAND[ SUB]", and per option, "COMMAND[ SUB] --LONG[ ARG][ -S]").
#  - man page: its version is the tool's; every command and option is in
#    SYNOPSIS under its command, and described below it; every --option it
#    names anywhere is one the tool has.
#  - completion: offers each command, each command's subcommands, each
#    command's options (for that command: it is run, as bash would), the
#    values of each option whose values are a fixed list; and names no
#    --option the tool lacks.
#  - help: `iouring-bpf --help` lists each command with its options and the
#    global options; `iouring-bpf COMMAND [SUB] --help` names each of that
#    command's options; neither names an option the tool lacks.
# usage: tool_interface.sh TOOL [MANPAGE [COMPLETION]]   (default: the
# checkout's loader/iouring-bpf.8 and loader/iouring-bpf.bash-completion)
set -u
fail() { echo "FAIL: $*"; exit 1; }

src=${IOURING_BPF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
[ $# -ge 1 ] && [ $# -le 3 ] || fail "usage: $0 TOOL [MANPAGE [COMPLETION]]"
tool=$1
man=${2:-$src/loader/iouring-bpf.8}
completion=${3:-$src/loader/iouring-bpf.bash-completion}
for f in "$tool" "$man" "$completion"; do [ -e "$f" ] || fail "no $f"; done
command -v python3 > /dev/null || fail "no python3"

python3 - "$tool" "$man" "$completion" <<'PY'
import re
import subprocess
import sys

tool, man_path, completion_path = sys.argv[1:]
fails = 0


def check(ok, what, detail=""):
    global fails
    if ok:
        print(f"ok: {what}")
    else:
        fails += 1
        print(f"FAIL: {what}" + (f": {detail}" if detail else ""))


def run(*args):
    p = subprocess.run([tool, *args], capture_output=True, text=True)
    return p.returncode, p.stdout


# --- what the code accepts
rc, dump = run("help", "--options")
if rc != 0 or not dump.strip():
    print(f"FAIL: {tool} help --options: exit {rc}, output: {dump!r}")
    sys.exit(1)
commands = []   # ("load", None), ("ublk", "add"), ...
options = {}    # (command, sub) -> {"--ring": "[PID:FD]", ...}; ("iouring-bpf", None) for globals
for line in dump.splitlines():
    words = line.split(" ")
    i = next((k for k, w in enumerate(words) if w.startswith("--")), len(words))
    if i not in (1, 2):
        print(f"FAIL: a line of help --options is not COMMAND[ SUB][ --LONG ...]: {line!r}")
        sys.exit(1)
    key = (words[0], words[1] if i == 2 else None)
    if i == len(words):
        commands.append(key)
        continue
    rest = [w for w in words[i + 1:] if not re.fullmatch(r"-[A-Za-z]", w)]
    options.setdefault(key, {})[words[i]] = rest[0] if rest else None
GLOBAL = ("iouring-bpf", None)
globals_ = set(options.get(GLOBAL, {}))
groups = {c for c, s in commands if s}
every_option = set().union(*options.values())
print(f"the tool: {len(commands)} commands, {sum(len(v) for v in options.values())} options")
check(globals_ >= {"--json", "--debug", "--help", "--version"}, "help --options has the global options",
      sorted(globals_))


def name(key):
    return " ".join(w for w in key if w)


def opts(key):
    return set(options.get(key, {}))


def long_options(text):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))


# --- the man page, from its roff source (rendering may hyphenate a name)
def roff_text(line):
    line = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\\(..", "", line).replace("\\-", "-")
    if line.startswith("."):
        parts = line.split(None, 1)
        line = parts[1] if len(parts) > 1 else ""
    return line.replace('"', "")


raw = open(man_path, encoding="utf-8").read().splitlines()
m = re.match(r'\.TH \S+ \S+ "[^"]*" "iouring-bpf ([^"]+)"', raw[0]) if raw else None
rc, version = run("--version")
version = version.split()[1] if rc == 0 and len(version.split()) > 1 else "?"
check(m and m.group(1) == version, f"the man page is of version {version} (.TH)", raw[0] if raw else "empty")

sections, current = {}, None
for line in raw:
    if line.startswith(".SH"):
        current = roff_text(line).strip()
        sections[current] = []
    elif current:
        sections[current].append(line)
synopsis = sections.pop("SYNOPSIS", [])
body = [line for lines in sections.values() for line in lines]
body_text = "\n".join(roff_text(line) for line in body)

# SYNOPSIS: entries separated by .br; each "iouring-bpf [OPTIONS] COMMAND [SUB] ..."
entries, words = [], []
for line in synopsis + [".br"]:
    if line.startswith(".br"):
        if words:
            entries.append(words)
        words = []
    else:
        words += roff_text(line).split()
in_synopsis = {}
for words in entries:
    text = " ".join(words)
    words = [w for w in words if w not in ("[", "]", "OPTIONS", "iouring-bpf")]
    first = words[0] if words else ""
    if first.startswith("-"):
        key = GLOBAL
    elif first == "COMMAND":        # COMMAND [SUBCOMMAND] --help: every command's
        key = None
    else:
        key = (first, words[1] if first in groups and len(words) > 1 else None)
        if key not in commands:
            check(False, f"the man page's SYNOPSIS names only commands the tool has", text)
            continue
    found = long_options(text)
    allowed = globals_ if key in (GLOBAL, None) else opts(key)
    if key is None:
        allowed = set.intersection(*(opts(k) for k in commands))
    check(found <= allowed, f"SYNOPSIS '{text[:60]}...' names only options {name(key or ('COMMAND',))} has",
          sorted(found - allowed))
    if key:
        in_synopsis.setdefault(key, set()).update(found)
        in_synopsis.setdefault(key, set())
for key in commands:
    if key[0] in groups and not key[1]:
        continue    # a group is in the synopsis through its subcommands
    want = opts(key) - {"--help"}  # -h, --help: OPTIONS, "after a command, that command's help"
    check(key in in_synopsis, f"the man page's SYNOPSIS has {name(key)}")
    check(want <= in_synopsis.get(key, set()), f"the man page's SYNOPSIS has every option of {name(key)}",
          f"missing {sorted(want - in_synopsis.get(key, set()))}")
check(globals_ <= long_options("\n".join(roff_text(line) for line in sections.get("OPTIONS", []))),
      "the man page's OPTIONS has every global option", sorted(globals_))

# the body: every command is a tagged paragraph (.TP), every option is described
tags = [roff_text(body[i + 1]).strip() for i, line in enumerate(body[:-1]) if line.startswith(".TP")]
for key in commands:
    if key[0] in groups and not key[1]:
        continue
    n = name(key)
    check(any(t == n or t.startswith(n + " ") for t in tags), f"the man page describes {n} (a .TP item)")
described = long_options(body_text)
for key in commands:
    missing = opts(key) - described
    check(not missing, f"the man page describes each option of {name(key)}", f"missing {sorted(missing)}")
named = long_options("\n".join(roff_text(line) for line in raw))
check(named <= every_option, "the man page names no option the tool lacks", sorted(named - every_option))


# --- the bash completion, run as bash runs it
def complete(*words):
    script = ('source "$1" || exit 99; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));'
              ' COMPREPLY=(); _iouring_bpf; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "complete", completion_path, "iouring-bpf", *words],
                       capture_output=True, text=True)
    return set(p.stdout.split()) if p.returncode == 0 else {f"<exit {p.returncode}: {p.stderr.strip()}>"}


top = {c for c, s in commands if not s}
got = {w for w in complete("") if not w.startswith("-")}
check(got == top, "the completion offers the commands", f"offers {sorted(got)}, the tool has {sorted(top)}")
got = {w for w in complete("--") if w != "--"}
check(got == globals_, "the completion offers the global options",
      f"offers {sorted(got)}, the tool has {sorted(globals_)}")
for group in sorted(groups):
    subs = {s for c, s in commands if c == group and s}
    got = {w for w in complete(group, "") if not w.startswith("-")}
    check(got == subs, f"the completion offers the subcommands of {group}",
          f"offers {sorted(got)}, the tool has {sorted(subs)}")
for key in commands:
    want = opts(key)
    got = {w for w in complete(*[w for w in key if w], "--") if w != "--"}
    check(want <= got <= want | globals_, f"the completion offers the options of {name(key)}",
          f"offers {sorted(got)}, the tool has {sorted(want)}")
    for opt, arg in sorted(options.get(key, {}).items()):
        if arg and "|" in arg and not arg.startswith("["):
            values = set(arg.split("|"))
            got = complete(*[w for w in key if w], opt, "")
            check(got == values, f"the completion offers the values of {name(key)} {opt}",
                  f"offers {sorted(got)}, the tool takes {sorted(values)}")
named = long_options(open(completion_path, encoding="utf-8").read())
check(named <= every_option, "the completion names no option the tool lacks", sorted(named - every_option))

# --- the help texts
rc, text = run("--help")
check(rc == 0, "iouring-bpf --help exits 0", f"exit {rc}")
block = text.split("\ncommands:\n", 1)[-1].split("\n\n", 1)[0].splitlines()
listed = {}
for line in block:
    if re.match(r"  \S", line):
        words = line.split()
        key = (words[0], words[1] if words[0] in groups and len(words) > 1 else None)
        listed.setdefault(key, set())
    if listed:
        listed[key] |= long_options(line)
for key in commands:
    if key[0] in groups and not key[1]:
        continue
    want = opts(key) - {"--help"}
    check(key in listed and want <= listed[key] <= opts(key),
          f"iouring-bpf --help lists {name(key)} with its options",
          f"lists {sorted(listed.get(key, {'(not listed)'}))}, the tool has {sorted(want)}")
check(globals_ <= long_options(text.split("\noptions:\n", 1)[-1]), "iouring-bpf --help lists the global options")
check(long_options(text) <= every_option, "iouring-bpf --help names no option the tool lacks",
      sorted(long_options(text) - every_option))
for key in commands:
    rc, text = run(*[w for w in key if w], "--help")
    found = long_options(text)
    check(rc == 0 and opts(key) <= found, f"iouring-bpf {name(key)} --help names its options",
          f"exit {rc}, missing {sorted(opts(key) - found)}")
    check(found <= every_option, f"iouring-bpf {name(key)} --help names no option the tool lacks",
          sorted(found - every_option))

if fails:
    print(f"{fails} check(s) failed")
    sys.exit(1)
print("the man page, the completion and the help texts describe what the tool accepts")
PY
