#!/usr/bin/env bash
# Installs the Debian 12 packages that Kernel Workbench builds and tests with. Idempotent: it
# installs only what is missing (apt-get update first) and does nothing when all is there, so it
# also runs offline on a prepared machine. Uses sudo only when not run as root.
# The CUDA toolkit is not among them: the worker expects it in /usr/local/cuda (docs/building.md).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-charts-dev qt6-httpserver-dev qt6-svg-dev libqt6sql6-sqlite
  libqt6opengl6-dev  # Qt6Charts' CMake package needs Qt6OpenGL's; qt6-base-dev only recommends it
  libxkbcommon-dev   # looked for by Qt6Gui's CMake package
  libgl-dev
  libtorch-dev
  python3-torch python3-dev  # the worker embeds this Python (its torch is libtorch-dev's) for KernelBench-format answers
  pybind11-dev       # torch/extension.h includes it: load_inline builds KernelBench-format answers (libtorch-dev only recommends it)
  nlohmann-json3-dev libtomlplusplus-dev libkainjow-mustache-dev libcli11-dev doctest-dev
  xvfb xauth
  bubblewrap         # the worker's OS sandbox (docs/sandbox.md); without it workers run unwrapped, with a warning
  desktop-file-utils  # the package test validates the desktop file
  openssh-server openssh-client  # workers over ssh (docs/remote-workers.md): the test starts its own sshd on 127.0.0.1
  clang-format       # the style test (scripts/check-format.sh) checks every C++ file against .clang-format
  xz-utils           # unpacks the example study (welcome page) and the Results screenshot test's database
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup-debian: all ${#packages[@]} packages are installed"
else
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "setup-debian: missing packages and no sudo: run as root: apt-get install ${missing[*]}" >&2
      exit 1
    fi
    as_root=(sudo)
  fi
  echo "setup-debian: installing ${missing[*]}"
  "${as_root[@]}" apt-get update
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

if [[ ! -e /usr/local/cuda/include/nvrtc.h ]]; then
  echo "setup-debian: warning: no CUDA toolkit in /usr/local/cuda; kwb-worker cannot be built" \
       "(install the toolkit there, or configure with -DKWB_BUILD_WORKER=OFF for the Qt parts only)" >&2
fi
