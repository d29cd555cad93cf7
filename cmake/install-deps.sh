#!/usr/bin/env bash
# Installs the Debian packages that are missing (apt-get; sudo when not root). Usage:
#   cmake/install-deps.sh core|bench|fuzz|browser|aarch64 ...
# core: what building and testing need; bench: Google Benchmark, OpenBLAS (the GEMM
# benchmark's yardstick, never linked into the library) and GNU time (peak memory); fuzz: clang
# with libFuzzer (make fuzz); browser: Chromium, in which the tests open the attention pages
# (tests/browser/); aarch64: the cross compiler, qemu-user to run its programs, and the arm64
# builds of the libraries the programs link (fmt, ICU), the header-only ones being the host's
# (cmake/toolchains/aarch64-linux-gnu.cmake). PyTorch, the test oracle and the other benchmarks'
# yardstick, is the test environment's (cmake/test-venv.sh), not a Debian package.
set -euo pipefail
declare -A groups=(
  [core]="g++ make cmake libxtensor-dev libxsimd-dev libfmt-dev doctest-dev nlohmann-json3-dev libcli11-dev libicu-dev"
  [bench]="libbenchmark-dev libopenblas-dev time"
  [fuzz]="clang libclang-rt-14-dev"
  [browser]="chromium"
  [aarch64]="g++-aarch64-linux-gnu qemu-user libfmt-dev:arm64 libicu-dev:arm64"
)
wanted=""
for g in "${@:-core}"; do wanted="$wanted ${groups[$g]:?unknown group $g}"; done
missing=""
for p in $wanted; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
# A package for another architecture (name:arm64) is installable once dpkg knows that
# architecture (multiarch); the update that follows fetches its package lists.
# shellcheck disable=SC2086
for arch in $(printf '%s\n' $missing | sed -n 's/.*://p' | sort -u); do
  dpkg --print-foreign-architectures | grep -qx "$arch" || $sudo dpkg --add-architecture "$arch"
done
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
