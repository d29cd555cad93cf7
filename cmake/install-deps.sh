#!/usr/bin/env bash
# Installs the Debian packages that are missing (apt-get; sudo when not root). Usage:
#   cmake/install-deps.sh core|bench|fuzz|browser|pip|aarch64 ...
# core: what building and testing need; bench: Google Benchmark, OpenBLAS (the GEMM
# benchmark's yardstick, never linked into the library) and GNU time (peak memory); fuzz: clang
# with libFuzzer and clang's standard library, libc++ (the sanitize preset: make sanitize, make
# fuzz); browser: Chromium, in which the tests open the attention pages (tests/browser/); pip:
# Python's pip, with which cmake/setup-pretrained.sh downloads the pretrained BERT where no pip
# is found; aarch64: the cross compiler, qemu-user to run its programs, and the arm64 builds of
# the libraries the programs link (fmt, ICU), the header-only ones being the host's
# (cmake/toolchains/aarch64-linux-gnu.cmake). PyTorch, the test oracle and the other benchmarks'
# yardstick, is the test environment's (cmake/test-venv.sh), not a Debian package.
set -euo pipefail
declare -A groups=(
  [core]="g++ make cmake libxtensor-dev libxsimd-dev libfmt-dev doctest-dev nlohmann-json3-dev libcli11-dev libicu-dev"
  [bench]="libbenchmark-dev libopenblas-dev time"
  [fuzz]="clang libclang-rt-14-dev libc++-14-dev libc++abi-14-dev"
  [browser]="chromium"
  [pip]="python3-pip"
  [aarch64]="g++-aarch64-linux-gnu qemu-user libfmt-dev:arm64 libicu-dev:arm64"
)
wanted=""
for g in "${@:-core}"; do wanted="$wanted ${groups[$g]:?unknown group $g}"; done

# A system without Debian's package tools: say what it needs instead of failing in apt-get.
# ANATOMY_SKIP_DEPS=1 builds with what is installed, unchecked.
if [ "${ANATOMY_SKIP_DEPS:-}" = 1 ]; then exit 0; fi
if ! command -v dpkg-query > /dev/null || ! command -v apt-get > /dev/null; then
  if [ "$(uname -s)" = Darwin ]; then
    formulae="cmake xtensor xsimd fmt doctest nlohmann-json cli11 icu4c"
    if command -v brew > /dev/null; then
      # shellcheck disable=SC2086
      absent=$(for f in $formulae; do brew list --versions "$f" > /dev/null || echo "$f"; done)
      [ -z "$absent" ] && exit 0
      formulae=$(echo $absent)
    fi
    echo "install-deps: this is macOS, where anatomy builds with Homebrew's packages (not run" \
      "in CI; docs/getting-started.md): brew install $formulae" >&2
  else
    echo "install-deps: this system has no apt-get; anatomy's commands install Debian's" \
      "packages. Install their equivalents:$wanted (a C++20 compiler, CMake 3.25 or newer)," \
      "then run again with ANATOMY_SKIP_DEPS=1 (docs/getting-started.md)" >&2
  fi
  exit 1
fi
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
# A package this system's lists do not have (another distribution or release): named, with the
# release anatomy is built on, before apt-get would fail on it.
unavailable=""
for p in $missing; do
  policy=$(apt-cache policy "$p" 2> /dev/null || true)
  [[ "$policy" == *"Candidate: "[!\(]* ]] || unavailable="$unavailable $p"
done
if [ -n "$unavailable" ]; then
  . /etc/os-release 2> /dev/null || true
  echo "install-deps: ${PRETTY_NAME:-this system}'s package lists have no$unavailable;" \
    "anatomy's commands are made for Debian 12 (bookworm) or newer. Install those yourself," \
    "then run again with ANATOMY_SKIP_DEPS=1 (docs/getting-started.md)" >&2
  exit 1
fi
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
