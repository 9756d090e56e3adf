#!/usr/bin/env bash
# Packs kwb (and the test server and supervisor benchmark) with the Qt libraries they need into
# build-carry/qt-bundle.tar.xz, for the GPU machine, which has no Qt (../shared/device/README.md).
# The glibc, libstdc++ and other base libraries are left out: that machine's own are newer.
# Usage, from the project root after building (default build dir build/release):
#   scripts/device-bundle.sh [BUILD_DIR]
# There: tar xf build-carry/qt-bundle.tar.xz -C /tmp && /tmp/kwb-bundle/run kwb --version
set -euo pipefail
build=${1:-build/release}
stage=$(mktemp -d)/kwb-bundle
mkdir -p "$stage/bin" "$stage/lib" "$stage/plugins/sqldrivers"
programs=("$build/bin/kwb")
[[ -x $build/tests/kwb-fixture-llm ]] && programs+=("$build/tests/kwb-fixture-llm")
[[ -x $build/bin/kwb-bench-supervisor ]] && programs+=("$build/bin/kwb-bench-supervisor")
# bubblewrap for the OS sandbox (docs/sandbox.md): the GPU machine may lack it.
command -v bwrap >/dev/null && programs+=("$(command -v bwrap)")
cp "${programs[@]}" "$stage/bin/"
plugin=$(find /usr/lib -path '*qt6/plugins/sqldrivers/libqsqlite.so' | head -1)
cp "$plugin" "$stage/plugins/sqldrivers/"
# Libraries any Linux with a C++ toolchain has, in newer versions than Debian 12's.
base='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so'
for f in "${programs[@]}" "$plugin"; do ldd "$f"; done | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  name=$(basename "$lib")
  [[ $name =~ $base ]] || cp -L "$lib" "$stage/lib/"
done
cat > "$stage/run" <<'RUN'
#!/bin/sh
# Runs a bundled program with the bundled Qt: /tmp/kwb-bundle/run kwb ARGS...
here=$(dirname "$(readlink -f "$0")")
prog=$1; shift
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" QT_PLUGIN_PATH="$here/plugins" exec "$here/bin/$prog" "$@"
RUN
chmod +x "$stage/run"
mkdir -p build-carry
tar -C "$(dirname "$stage")" -cJf build-carry/qt-bundle.tar.xz kwb-bundle
du -sh "$stage" build-carry/qt-bundle.tar.xz
ls "$stage/lib"
