#!/usr/bin/env bash
# The repo's C++ style is .clang-format, applied to every source file (issue 34). This checks that it
# still holds: clang-format 14 (Debian 12's) in dry-run mode over the project's own C++ under src/,
# tests/ and bench/. Model answers under tests/fixtures are data, not our code, and are left as written.
# Exit 0: formatted; 1: files differ (listed, with the command that fixes them); 77: no clang-format 14
# here (another major version formats differently, so its verdict would not be ours).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

formatter=""
for candidate in clang-format-14 clang-format; do
  if command -v "$candidate" >/dev/null && "$candidate" --version | grep -q 'version 14\.'; then
    formatter="$candidate"
    break
  fi
done
if [[ -z "$formatter" ]]; then
  echo "check-format: skipped: clang-format 14 not found (scripts/setup-debian.sh installs it)"
  exit 77
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- 'src/*.cpp' 'src/*.h' 'src/*.hpp' 'tests/*.cpp' 'tests/*.h' \
                                       'tests/*.hpp' 'bench/*.cpp' 'bench/*.h' | grep -v '^tests/fixtures/')
else # a source tarball: the same set by name
  mapfile -t files < <(find src tests bench -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.hpp' \) \
                         -not -path 'tests/fixtures/*' | sort)
fi

differ=()
for file in "${files[@]}"; do
  [[ -f $file ]] || continue # listed by git but removed in the working tree (a rename not yet committed)
  if ! "$formatter" --dry-run --Werror "$file" >/dev/null 2>&1; then
    differ+=("$file")
  fi
done
if ((${#differ[@]})); then
  echo "check-format: ${#differ[@]} of ${#files[@]} files differ from .clang-format:" >&2
  printf '  %s\n' "${differ[@]}" >&2
  echo "fix with: $formatter -i ${differ[*]}" >&2
  exit 1
fi
echo "check-format: all ${#files[@]} files follow .clang-format ($("$formatter" --version))"
