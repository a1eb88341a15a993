#!/usr/bin/env bash
# Installs what recur needs (Debian packages, npm packages for the test oracles and the OpenAI SDK)
# and builds it. Idempotent and quick when everything is already in place.
# Usage: scripts/setup.sh [BUILD_DIR]   (env RECUR_SANITIZE=address,undefined|thread for sanitizers)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}

# ocl-icd-opencl-dev: libdnnl-dev's CMake package requires OpenCL's, only a Recommends of it.
apt_packages=(
  build-essential cmake ninja-build pkg-config clang clang-format
  libfmt-dev nlohmann-json3-dev libpcre2-dev libicu-dev libcpp-httplib-dev
  libxxhash-dev libzstd-dev libgtest-dev libgmock-dev libbenchmark-dev libdnnl-dev ocl-icd-opencl-dev
  prometheus-cpp-dev python3 python3-jinja2 curl
  libclang-rt-14-dev wrk nginx-light
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node may come from another package source that bundles npm (and conflicts with Debian's npm):
# only when the commands are absent are Debian's packages installed.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  # Packages with a service (nginx) must not start it: the tests run their own instances.
  policy=/usr/sbin/policy-rc.d
  own_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo_cmd tee "$policy" >/dev/null
    $sudo_cmd chmod +x "$policy"
    own_policy=1
  fi
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ -z "$own_policy" ] || $sudo_cmd rm -f "$policy"
fi

# Node packages: the tokenizer/template oracles and the OpenAI SDK the end-to-end tests use.
if [ -f "$root/tests/node/package.json" ]; then
  stamp="$root/tests/node/node_modules/.recur-stamp"
  if [ ! -f "$stamp" ] || [ "$root/tests/node/package.json" -nt "$stamp" ] ||
     [ "$root/tests/node/package-lock.json" -nt "$stamp" ]; then
    echo "setup: npm ci in tests/node" >&2
    (cd "$root/tests/node" && npm ci --no-audit --no-fund --loglevel=error)
    touch "$stamp"
  fi
fi

# promtool (validates /metrics in the tests): only the binary, from Debian's prometheus package,
# without installing the server.
promtool="$build/tools/promtool"
if [ ! -x "$promtool" ]; then
  echo "setup: extracting promtool from Debian's prometheus package" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1 ||
     { apt-get update -qq && apt-get download prometheus >/dev/null; })
  dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
  mkdir -p "$build/tools"
  cp "$tmp/x/usr/bin/promtool" "$promtool"
  rm -rf "$tmp"
fi

cmake_args=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
# Sanitizer builds are for tests: benchmarks are left out of them.
[ -n "${RECUR_SANITIZE:-}" ] && cmake_args+=(-DRECUR_SANITIZE="$RECUR_SANITIZE" -DRECUR_BUILD_BENCH=OFF)
[ -f "$build/build.ninja" ] || cmake "${cmake_args[@]}" >/dev/null
cmake --build "$build" --parallel "$(nproc)"
