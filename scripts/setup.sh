#!/usr/bin/env bash
# Installs what recur needs and builds it, one line per step, the full output in BUILD_DIR/setup.log.
# Idempotent and quick when everything is already in place.
#   --for demo: the Debian packages that build and run the `recur` binary, and Node.js for the demo
#               chat (no npm: it talks to recur with Node's own fetch); builds the `recur` target.
#   --for test (default): also the test and benchmark tooling (GoogleTest, Google Benchmark,
#               oneDNN, Jinja2, clang and its sanitizer runtimes, clang-format, wrk, nginx,
#               chromium, npm and the npm oracles, the OpenAI and Anthropic SDKs and puppeteer-core,
#               the coding agents of tests/agents, promtool); builds every target.
# No service that a package installs is started, nor left enabled at boot (the tests start their own
# nginx). Usage: scripts/setup.sh [--for demo|test] [BUILD_DIR]
#   (env RECUR_SANITIZE=address,undefined|thread for sanitizer builds)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode="test"
if [ "${1:-}" = --for ]; then
  mode=${2:-}
  shift 2 || true
fi
case "$mode" in
  demo | test) ;;
  *) echo "setup.sh: --for demo|test, not '$mode'" >&2; exit 2 ;;
esac
build=${1:-$root/build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
log=$build/setup.log
: >"$log"

# What the `recur` binary needs to build (CMakeLists.txt, src/*/CMakeLists.txt) plus curl, which the
# demo uses to wait for the server. libcurl and OpenSSL's libcrypto: the Hub client (src/hub).
demo_packages=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev nlohmann-json3-dev libpcre2-dev libicu-dev libcpp-httplib-dev libxxhash-dev
  prometheus-cpp-dev libcurl4-openssl-dev libssl-dev curl
)
# ocl-icd-opencl-dev: libdnnl-dev's CMake package requires OpenCL's, only a Recommends of it.
# libclang-rt-14-dev: clang's sanitizer and libFuzzer runtimes (scripts/fuzz.sh).
# chromium: the headless browser that tests/e2e/webui.test.mjs drives (through puppeteer-core).
# ccache: the test command builds recur four ways (plain, ASan, TSan, fuzzers); a machine that
# builds again reuses what did not change.
test_packages=(
  clang clang-format libclang-rt-14-dev libzstd-dev libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev ocl-icd-opencl-dev python3 python3-jinja2 wrk nginx-light chromium ccache
)

say() { echo "setup: $*" >&2; }
# step MESSAGE: prints "setup: MESSAGE..." and leaves the line open for done.
step() { printf 'setup: %s... ' "$1" >&2; step_start=$SECONDS; }
done_step() { echo "done ($((SECONDS - step_start)) s)" >&2; }
# fail WHAT: the failed step, the part of the log that explains it, and where the whole log is.
fail() {
  echo "failed" >&2
  echo "setup: $1 failed; from $log:" >&2
  if grep -q '^FAILED: ' "$log"; then
    sed -n '/^FAILED: /,$p' "$log" | head -60 >&2
  else
    tail -30 "$log" >&2
  fi
  echo "setup: the full log is $log" >&2
  exit 1
}
# logged WHAT CMD...: runs CMD with its output in the log; fail WHAT if it fails.
logged() {
  local what=$1
  shift
  echo "+ $*" >>"$log"
  "$@" >>"$log" 2>&1 </dev/null || fail "$what"
}
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Every link that starts a service at boot: SysV start links of the multi-user runlevels and
# systemd's wants links of the targets a booted machine reaches (early-boot setup such as procps'
# sysctl in rcS.d or sysinit.target is no service and is left alone).
boot_links() {
  local l
  local wants=/etc/systemd/system
  for l in /etc/rc[2-5].d/S* "$wants"/{multi-user,graphical,default,sockets}.target.wants/*; do
    if [ -L "$l" ] || [ -e "$l" ]; then echo "$l"; fi
  done | sort
}

# Disables at boot every service whose link is in $2 but not in $1 (what the install just enabled).
disable_new_services() {
  local before=$1 after=$2 l names=()
  while read -r l; do
    [ -n "$l" ] || continue
    case "$l" in
      /etc/systemd/system/*)
        as_root deb-systemd-helper disable "$(basename "$l")" >>"$log" 2>&1 || true
        names+=("$(basename "$l" .service)") ;;
      *)
        local name
        name=$(basename "$l" | sed 's/^S[0-9]*//')
        as_root update-rc.d "$name" disable >>"$log" 2>&1 || true
        names+=("$name") ;;
    esac
    # Whatever the helpers left (a unit without an [Install] section, say) goes by hand.
    if [ -L "$l" ] || [ -e "$l" ]; then as_root rm -f "$l"; fi
  done < <(comm -13 <(echo "$before") <(echo "$after"))
  if ((${#names[@]})); then
    say "disabled at boot what the new packages enabled: $(printf '%s\n' "${names[@]}" | sort -u |
      paste -sd' ') (the tests start their own)"
  fi
}

install_debian_packages() {
  local wanted=("${demo_packages[@]}") missing=() p
  [ "$mode" = demo ] || wanted+=("${test_packages[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Node may come from another package source that bundles npm (and conflicts with Debian's npm):
  # only when the commands are absent are Debian's packages installed. Debian's npm brings ~360
  # packages of its own, so only the tests get it.
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  if [ "$mode" = test ] && ! command -v npm >/dev/null 2>&1; then missing+=(npm ca-certificates); fi
  ((${#missing[@]})) || return 0
  step "installing ${#missing[@]} Debian packages and what they depend on (log: $log)"
  echo "packages: ${missing[*]}" >>"$log"
  # Packages with a service (nginx) must not start it: a policy-rc.d that denies every start while
  # apt runs, unless the machine already has one.
  local policy=/usr/sbin/policy-rc.d
  own_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod +x "$policy"
    own_policy=$policy
    trap 'as_root rm -f "$own_policy"' EXIT
  fi
  local before after
  before=$(boot_links)
  logged "apt-get update" as_root apt-get update
  logged "apt-get install" as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
  if [ -n "$own_policy" ]; then
    as_root rm -f "$own_policy"
    trap - EXIT
  fi
  done_step
  after=$(boot_links)
  disable_new_services "$before" "$after"
}

# npm ci in DIR when its lock file is newer than the last install. With a third argument
# `install`: npm install --no-save (the lock file still pins every version; npm ci refuses a lock
# whose packages name platform builds the registry does not have, as the agents' do).
install_npm_packages() {
  local dir=$1 what=$2 how=${3:-ci}
  local stamp=$dir/node_modules/.recur-stamp
  if [ -f "$stamp" ] && [ ! "$dir/package.json" -nt "$stamp" ] &&
     [ ! "$dir/package-lock.json" -nt "$stamp" ]; then
    return 0
  fi
  step "installing the npm packages $what"
  if [ "$how" = install ]; then
    (cd "$dir" && logged "npm install in $dir" npm install --no-save --no-audit --no-fund --loglevel=error)
  else
    (cd "$dir" && logged "npm ci in $dir" npm ci --no-audit --no-fund --loglevel=error)
  fi
  touch "$stamp"
  done_step
}

# promtool (validates /metrics in the tests): only the binary, from Debian's prometheus package,
# without installing the server.
install_promtool() {
  local promtool=$build/tools/promtool tmp
  [ -x "$promtool" ] && return 0
  step "extracting promtool from Debian's prometheus package"
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download prometheus) >>"$log" 2>&1; then
    logged "apt-get update" as_root apt-get update
    (cd "$tmp" && logged "apt-get download prometheus" apt-get download prometheus)
  fi
  logged "dpkg-deb -x prometheus" dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
  mkdir -p "$build/tools"
  cp "$tmp/x/usr/bin/promtool" "$promtool"
  rm -rf "$tmp"
  done_step
}

is_on() { [[ ${1^^} =~ ^(ON|1|TRUE|YES|Y)$ ]]; }
cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" 2>/dev/null; }

# The demo configures without tests and benchmarks (their packages are not installed); the test
# command turns them on in a build folder the demo configured.
configure() {
  local args=(-S "$root" -B "$build" -G Ninja)
  if [ -f "$build/build.ninja" ]; then
    if [ "$mode" = demo ] || is_on "$(cached RECUR_BUILD_TESTS)"; then return 0; fi
  else
    args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
    [ -z "${RECUR_SANITIZE:-}" ] || args+=(-DRECUR_SANITIZE="$RECUR_SANITIZE")
    if command -v ccache >/dev/null 2>&1; then
      args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    fi
  fi
  if [ "$mode" = demo ]; then
    args+=(-DRECUR_BUILD_TESTS=OFF -DRECUR_BUILD_BENCH=OFF)
  elif [ -n "${RECUR_SANITIZE:-}" ]; then
    # Sanitizer builds are for tests: benchmarks are left out of them.
    args+=(-DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_BENCH=OFF)
  else
    args+=(-DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_BENCH=ON)
  fi
  step "configuring the build in $build"
  logged "cmake (configure)" cmake "${args[@]}"
  done_step
}

# The first build says how long it takes; later ones (a changed file or nothing to do) are quick.
build_targets() {
  local what="recur, its tests and benchmarks" first="15-20 minutes on 2 cores" target_args=()
  local fresh=""
  if [ "$mode" = demo ]; then
    what="recur"
    first="a few minutes"
    target_args=(--target recur)
    [ -x "$build/bin/recur" ] || fresh=1
  elif [ -z "$(find "$build/tests" -name '*_test' -type f -print -quit 2>/dev/null)" ]; then
    fresh=1
  fi
  step "building $what${fresh:+ (first time: $first)}"
  logged "the build" cmake --build "$build" --parallel "$(nproc)" "${target_args[@]}"
  done_step
}

# Paths relative to the checkout in ccache's keys: another clone of the same sources hits.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true

install_debian_packages
if [ "$mode" = test ]; then
  install_npm_packages "$root/tests/node" "of the tests (oracles, OpenAI and Anthropic SDKs, puppeteer-core)"
  install_npm_packages "$root/tests/agents" "of the coding agents the tests drive (Claude Code, Codex CLI, Qwen Code, OpenCode)" install
  install_promtool
fi
configure
build_targets
