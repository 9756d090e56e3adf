#!/usr/bin/env bash
# Packs Debian's own OpenSSH (ssh, sshd, ssh-keygen from openssh-client and openssh-server) with
# the libraries they need into build-carry/ssh-bundle.tar.xz, for the GPU machine, which has no
# ssh (../shared/device/README.md): the `remote-workers` step of scripts/device-session.sh starts
# an sshd on 127.0.0.1 there to run the worker through ssh (docs/remote-workers.md).
# glibc's own libraries and libstdc++/libgcc_s are left out: that machine's are newer, and glibc's
# parts (libresolv, libnss_*, ld.so) must come from one glibc. Everything else (libcrypto, krb5,
# libsystemd, ...) is Debian 12's, found through LD_LIBRARY_PATH set by the wrappers in bin/,
# which only the ssh programs themselves see: sshd gives a session a fresh environment.
# Usage, from the project root: scripts/ssh-bundle.sh
# There: tar xf build-carry/ssh-bundle.tar.xz -C /tmp && PATH=/tmp/ssh-bundle/bin:$PATH ssh -V
set -euo pipefail
programs=(/usr/bin/ssh /usr/sbin/sshd /usr/bin/ssh-keygen)
for p in "${programs[@]}"; do
  [[ -x $p ]] || { echo "ssh-bundle: no $p (apt-get install openssh-client openssh-server)" >&2; exit 2; }
done
stage=$(mktemp -d)/ssh-bundle
mkdir -p "$stage/bin" "$stage/libexec" "$stage/lib"
cp "${programs[@]}" "$stage/libexec/"
# glibc (every library of the libc6 package) and the C++ runtime: the machine's own.
base='^(libc|libm|libdl|librt|libpthread|libresolv|libutil|libanl|libnsl|libBrokenLocale|libmvec|libnss_[a-z0-9_]+|libthread_db|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so'
for p in "${programs[@]}"; do ldd "$p"; done | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  name=$(basename "$lib")
  # libnsl.so.2 is Debian's libnsl2 (not glibc's libnsl.so.1): shipped.
  if [[ $name =~ $base && $name != libnsl.so.2 ]]; then continue; fi
  cp -L "$lib" "$stage/lib/"
done
for p in "${programs[@]}"; do
  name=$(basename "$p")
  # An absolute path to the real program: sshd re-executes itself by argv[0] for each connection,
  # and that child inherits LD_LIBRARY_PATH.
  cat > "$stage/bin/$name" <<WRAP
#!/bin/sh
here=\$(dirname "\$(dirname "\$(readlink -f "\$0")")")
LD_LIBRARY_PATH="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$here/libexec/$name" "\$@"
WRAP
  chmod +x "$stage/bin/$name"
done
strip --strip-unneeded "$stage"/lib/* 2>/dev/null || true
echo "Debian $(cat /etc/debian_version) $(dpkg-query -W -f='${Package} ${Version}\n' openssh-client openssh-server | tr '\n' ' ')" > "$stage/VERSION"
mkdir -p build-carry
tar -C "$(dirname "$stage")" -cJf build-carry/ssh-bundle.tar.xz ssh-bundle
# Every program finds each library in the bundle, but for the left-out base ones (an empty
# environment otherwise, as on the GPU machine).
for p in "${programs[@]}"; do
  resolved=$(env -i LD_LIBRARY_PATH="$stage/lib" ldd "$stage/libexec/$(basename "$p")")
  outside=$(echo "$resolved" | awk '/=> /{print $1, $3}' | grep -v " $stage/lib/" | awk '{print $1}' | grep -Ev "$base" || true)
  if echo "$resolved" | grep -q 'not found' || [[ -n $outside ]]; then
    echo "ssh-bundle: $(basename "$p") misses a library: $(echo "$resolved" | grep 'not found') $outside" >&2
    exit 1
  fi
done
env -i "$stage/bin/ssh" -V
env -i "$stage/bin/sshd" -V 2>&1 | head -1 || true # sshd -V: "unknown option", after its version
env -i "$stage/bin/ssh-keygen" -q -t ed25519 -N '' -f "$stage/probe-key" && rm "$stage"/probe-key* && echo "ssh-keygen: makes a key"
du -sh "$stage" build-carry/ssh-bundle.tar.xz
cat "$stage/VERSION"
rm -rf "$(dirname "$stage")"
