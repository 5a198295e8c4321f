#!/usr/bin/env bash
# Writes docs/cli.md, the command-line reference, from the program's own
# --help: `ptrain --help` and that of every subcommand it lists, and theirs in
# turn (bench allreduce, bench compress, ...), so the reference says what the
# program says and cannot go stale.
#   tools/cli_doc.sh BUILD_DIR > docs/cli.md        regenerate it
#   tools/cli_doc.sh --check BUILD_DIR              compare docs/cli.md with the program's
#                                                   --help (the cli_doc test): exit 1 and say
#                                                   how to regenerate when they differ
set -euo pipefail
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
build=${1:?usage: tools/cli_doc.sh [--check] BUILD_DIR}
ptrain="$build/ptrain"
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$ptrain" ] || { echo "cli_doc.sh: no program at $ptrain (build it first: ./build.sh build)" >&2; exit 2; }

# The subcommands a --help lists: the first word of each line of its
# "Subcommands:" section.
subcommands() {
  awk '/^Subcommands:/ { inside = 1; next } inside && /^[^ ]/ { inside = 0 }
       inside && /^  [a-z]/ { print $1 }'
}

# One command's section, then its subcommands' (depth first, in --help's order).
section() {
  local help sub
  # Plain text, 80 columns, whatever the terminal: the same file everywhere.
  help=$(NO_COLOR=1 COLUMNS=80 "$ptrain" "$@" --help)
  printf '\n## ptrain%s\n\n```text\n%s\n```\n' "$(printf ' %s' "$@")" "$help"
  for sub in $(subcommands <<<"$help"); do
    section "$@" "$sub"
  done
}

generate() {
  local top
  top=$(NO_COLOR=1 COLUMNS=80 "$ptrain" --help)
  cat <<'EOF'
# ptrain's command line

Every command's `--help`, as the program prints it. This file is generated:
do not edit it; after changing a command's options, regenerate it from the
repository root with `tools/cli_doc.sh build > docs/cli.md` (the `cli_doc`
test fails, saying so, when it differs from the program's `--help`). The options of `train`, `shm` and `sweep` come from the run plan's
registries ([design.md](design.md), "Registries"); the guides say what they
are for ([training.md](training.md), [shared_memory.md](shared_memory.md),
[checkpoints.md](checkpoints.md)).

## ptrain

```text
EOF
  printf '%s\n```\n' "$top"
  local sub
  for sub in $(subcommands <<<"$top"); do
    section "$sub"
  done
}

if [ "$check" = 0 ]; then
  generate
  exit 0
fi

fresh="$build/cli.md"
generate >"$fresh"
if diff -u "$here/docs/cli.md" "$fresh"; then
  echo "docs/cli.md matches the program's --help"
else
  echo "docs/cli.md differs from the program's --help (above: - the file, + the program)." >&2
  echo "Regenerate it from the repository root: tools/cli_doc.sh $build > docs/cli.md" >&2
  exit 1
fi
