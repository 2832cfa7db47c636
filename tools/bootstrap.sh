#!/usr/bin/env bash
# Installs the Debian packages ada needs to build and test, when missing.
# Called by the README's two set-up commands and by .ci/run; safe to rerun.
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang-format
  liburing-dev libroaring-dev libcapstone-dev libelf-dev libxxhash-dev zlib1g-dev
  libjansson-dev libcmocka-dev libdeflate-dev
  # the CRC-32 of the index files (src/wal/wal_internal.h); ISA-L first
  libisal-dev
  # libiberty's cplus_demangle(): C++/Rust names in the reading commands
  libiberty-dev
  g++ valgrind
  python3
  # The test suite (tools/test.sh, cmake -DADA_CI=ON) fails without these:
  # clang builds the clang end-to-end targets and, with libclang-rt-14-dev
  # (libFuzzer and the sanitizer runtimes for clang), every tests/fuzz/
  # fuzzer; strace watches the recorder's syscalls in the option tests.
  clang libclang-rt-14-dev strace
  # The reading tests load ada's Chrome export and folded stacks in
  # speedscope (npm, below) inside headless Chromium.
  chromium nodejs
  # Real programs the transparency tests run under ada (issue 14):
  # tests/integration/transp_test.py's nginx, greenlet, gevent and node
  # cases.
  nginx python3-greenlet python3-gevent
)
if [ "${1:-}" = "--bench" ]; then
  packages+=(uftrace ltrace hyperfine)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# npm comes with some nodejs builds; Debian's nodejs needs the npm package.
if ! command -v npm >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null
fi
# speedscope and puppeteer-core (which drives Debian's chromium and downloads
# no browser), pinned by tools/browser/package-lock.json.
browser_dir="$(dirname "$0")/browser"
if [ ! -d "$browser_dir/node_modules/speedscope" ] || [ ! -d "$browser_dir/node_modules/puppeteer-core" ]; then
  echo "bootstrap: npm ci in $browser_dir" >&2
  (cd "$browser_dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
