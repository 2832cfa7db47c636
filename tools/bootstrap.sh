#!/usr/bin/env bash
# Installs the Debian packages ada needs, when missing; safe to rerun.
#   tools/bootstrap.sh --build   what building ada and running tools/demo.sh
#                                need, without Recommends (tools/demo.sh)
#   tools/bootstrap.sh           that and everything the test suite needs
#                                (tools/test.sh, so .ci/run), with npm's
#                                speedscope and puppeteer-core
#   tools/bootstrap.sh --bench   that and the benchmarks' peers (bench/)
set -euo pipefail

mode=${1:-}
case "$mode" in
"" | --build | --bench) ;;
*)
  echo "usage: tools/bootstrap.sh [--build | --bench]" >&2
  exit 2
  ;;
esac

# The build (CMakeLists.txt's ada_require_lib and src/*/CMakeLists.txt):
# gcc, g++ (the project enables C++), make and libc6-dev come with
# build-essential.
packages=(
  build-essential cmake
  liburing-dev libroaring-dev libcapstone-dev libelf-dev libxxhash-dev zlib1g-dev
  libjansson-dev
  # the CRC-32 of the index files (src/wal/wal_internal.h); ISA-L first
  libisal-dev
  # libiberty's cplus_demangle(): C++/Rust names in the reading commands
  libiberty-dev
)
if [ "$mode" != --build ]; then
  packages+=(
    pkg-config clang-format libcmocka-dev
    # tools/test.sh's builds: Ninja spends less CPU than make on them
    ninja-build
    # tools/code_stats.py reads function lengths through Universal Ctags
    universal-ctags
    # the CRC's second choice (src/wal/CMakeLists.txt) when ISA-L is missing
    libdeflate-dev
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
    # gdb's backtrace at a fault under ada against untraced (issue 33,
    # tests/integration/crash_test.py).
    gdb
    # capsh drops CAP_IPC_LOCK for the refused-mlock warning's live status
    # test (tests/integration/status_warnings_test.sh).
    libcap2-bin
    # The arm64 stage (issue 37, docs/arm64.md): the aarch64 cross build
    # (cmake/aarch64-linux-gnu.cmake) and qemu-user to run its programs;
    # the arm64 builds of the libraries ada links, from the same archive
    # once arm64 is a foreign architecture of dpkg (added below), and
    # the arm64 C library the programs run with under qemu (qemu-aarch64
    # -L /: tools/record_emul.c says why not the cross one). Not
    # libisal-dev:arm64: it is not Multi-Arch, so installing it removes
    # the x86_64 one the recorder's CRC uses (the cross build takes
    # libdeflate's CRC instead, src/wal/CMakeLists.txt).
    qemu-user gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
    liburing-dev:arm64 libroaring-dev:arm64 libcapstone-dev:arm64 libelf-dev:arm64
    libxxhash-dev:arm64 zlib1g-dev:arm64 libjansson-dev:arm64
    libiberty-dev:arm64 libcmocka-dev:arm64 libdeflate-dev:arm64 libc6:arm64
    # The backtrace of an aarch64 core qemu-user wrote, under ada and
    # untraced (tests/integration/arm64_core.py).
    gdb-multiarch
  )
fi
if [ "$mode" = --bench ]; then
  packages+=(uftrace ltrace hyperfine)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  # The :arm64 packages need arm64 among dpkg's architectures before the
  # update that lists them.
  if printf '%s\n' "${missing[@]}" | grep -q ':arm64$' &&
    ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
  fi
  $SUDO apt-get update -qq
  # The build's packages need none of their Recommends (libc6-dev's
  # libc-devtools alone brings libgd and X11 libraries).
  no_recommends=()
  [ "$mode" = --build ] && no_recommends=(--no-install-recommends)
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${no_recommends[@]}" "${missing[@]}" >/dev/null
fi
[ "$mode" = --build ] && exit 0

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
