# Cross build for aarch64 Linux with Debian's cross compiler and the arm64
# libraries of a multiarch system (dpkg --add-architecture arm64;
# tools/bootstrap.sh installs both):
#
#   cmake -S . -B build-arm64 --toolchain cmake/aarch64-linux-gnu.cmake
#
# Libraries are looked up in /usr/lib/aarch64-linux-gnu only (never the
# host's); their headers are the multiarch /usr/include ones, which are
# the same for every architecture. Programs the build runs (the unit
# tests, under CTest) go through qemu-user with the cross sysroot, so
# `ctest` in the cross build runs them emulated (qemu-user package).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_OBJCOPY aarch64-linux-gnu-objcopy CACHE FILEPATH "")

# The root qemu runs the programs with: the multiarch arm64 C library
# (libc6:arm64, which the :arm64 libraries bring) when it is there, not
# the cross one beside it: qemu takes from the host's paths what its -L
# root lacks, and the cross loader with the multiarch libc.so.6 (another
# release) hangs in the first pthread_create (tools/record_emul.c).
if(EXISTS /lib/ld-linux-aarch64.so.1)
  set(_ada_root /)
else()
  set(_ada_root /usr/aarch64-linux-gnu)
endif()
set(ADA_AARCH64_SYSROOT ${_ada_root} CACHE PATH "The aarch64 C library's root (qemu-aarch64 -L)")
find_program(ADA_QEMU_AARCH64 qemu-aarch64)
if(ADA_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ADA_QEMU_AARCH64};-L;${ADA_AARCH64_SYSROOT})
endif()

# Programs (python3, clang, valgrind...) are the host's; libraries and
# headers the target's: the multiarch directories under /usr, searched
# through CMAKE_LIBRARY_ARCHITECTURE, and the cross C library's own.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
