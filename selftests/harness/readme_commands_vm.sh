#!/usr/bin/env bash
# harness/readme-commands-vm (vm): the README's and docs' blocks marked
# <!-- readme-commands: vm --> run as written on the patched kernel, as
# root, from the checkout (readme_commands.sh --vm writes them into one
# script with make shell's PATH).
set -eu
script=$(mktemp)
trap 'rm -f "$script"' EXIT
"$(dirname "$0")/readme_commands.sh" --vm "$script"
bash "$script"
