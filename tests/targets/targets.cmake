# End-to-end test targets: small real programs that know exactly how many
# times each of their functions ran (tcount.h). tests/integration/hooks.cmake
# records them with `ada record` and holds the traces against those counts.
#
# They are built like ordinary programs, not like ada: no sanitizer (a
# sanitized target cannot take an LD_PRELOADed agent), no frame pointer
# forcing, at the optimisation level each test asks for; with gcc through
# CMake, and with clang (when installed) through a custom command.
include_guard(GLOBAL)

set(ADA_TGT_DIR ${CMAKE_BINARY_DIR}/tests/targets)
set(ADA_TGT_SRC ${CMAKE_CURRENT_LIST_DIR})
find_package(Threads REQUIRED)
find_program(ADA_CLANG clang)
find_program(ADA_CLANGXX clang++)

set(ADA_TGT_WARN -Wall -Wextra)
if(ADA_WERROR)
  list(APPEND ADA_TGT_WARN -Werror)
endif()

# ada_test_target(<name> <opt> <source>...): target adat_<name>_<opt>, file
# ${ADA_TGT_DIR}/t_<name>_<opt>. <opt> is O0, O2, O3, or e.g. O2cet for
# extra flags listed after the sources with FLAGS.
function(ada_test_target name opt)
  cmake_parse_arguments(T "" "" "SOURCES;FLAGS;LDFLAGS" ${ARGN})
  string(REGEX MATCH "^O[0-3s]" level ${opt})
  set(tgt adat_${name}_${opt})
  add_executable(${tgt} ${T_SOURCES} ${ADA_TGT_SRC}/tcount.c)
  # Replace, not extend, what the directory gave (sanitizers, -Werror set).
  set_target_properties(${tgt} PROPERTIES
    COMPILE_OPTIONS "-${level};-g;${ADA_TGT_WARN};${T_FLAGS}"
    LINK_OPTIONS "${T_LDFLAGS}"
    POSITION_INDEPENDENT_CODE OFF
    OUTPUT_NAME t_${name}_${opt}
    RUNTIME_OUTPUT_DIRECTORY ${ADA_TGT_DIR})
  target_include_directories(${tgt} PRIVATE ${ADA_TGT_SRC})
  target_link_libraries(${tgt} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
endfunction()

# ada_test_target_clang(<name> <opt> <source>...): ${ADA_TGT_DIR}/t_<name>_clang<opt>.
function(ada_test_target_clang name opt)
  set(out ${ADA_TGT_DIR}/t_${name}_clang${opt})
  set(srcs ${ARGN})
  list(GET srcs 0 first)
  if(first MATCHES "\\.cpp$")
    set(cc ${ADA_CLANGXX})
  else()
    set(cc ${ADA_CLANG})
  endif()
  set(tcount ${ADA_TGT_SRC}/tcount.c)
  if(first MATCHES "\\.cpp$")
    # tcount.c is C; compile it as C next to the C++ source.
    set(tcount -x c ${ADA_TGT_SRC}/tcount.c -x none)
  endif()
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ADA_TGT_DIR}
    COMMAND ${cc} -${opt} -g ${ADA_TGT_WARN} -pthread -I${ADA_TGT_SRC}
            -o ${out} ${srcs} ${tcount} -ldl
    DEPENDS ${srcs} ${ADA_TGT_SRC}/tcount.c ${ADA_TGT_SRC}/tcount.h
    COMMENT "clang -${opt}: t_${name}"
    VERBATIM)
  add_custom_target(adat_${name}_clang${opt} ALL DEPENDS ${out})
endfunction()

# A cross build's C++ programs find the cross toolchain's libstdc++ through
# an rpath to a directory holding only it: under qemu-user
# (tests/integration/arm64.cmake) the arm64 C library is the multiarch one,
# and the multiarch libstdc++6:arm64 need not be installed.
set(ADA_TGT_CXX_LDFLAGS)
if(CMAKE_CROSSCOMPILING)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                  OUTPUT_VARIABLE _ada_stdcxx OUTPUT_STRIP_TRAILING_WHITESPACE)
  file(MAKE_DIRECTORY ${ADA_TGT_DIR}/cxxrt)
  file(CREATE_LINK ${_ada_stdcxx} ${ADA_TGT_DIR}/cxxrt/libstdc++.so.6 SYMBOLIC)
  set(ADA_TGT_CXX_LDFLAGS -Wl,-rpath,${ADA_TGT_DIR}/cxxrt)
endif()

# Programs built at several levels (STYLE.md rule 14).
set(ADA_TGT_LEVELS O0 O2 O3)
foreach(opt ${ADA_TGT_LEVELS})
  ada_test_target(threads ${opt} SOURCES ${ADA_TGT_SRC}/t_threads.c)
  ada_test_target(recursion ${opt} SOURCES ${ADA_TGT_SRC}/t_recursion.c)
  ada_test_target(funcptr ${opt} SOURCES ${ADA_TGT_SRC}/t_funcptr.c)
  ada_test_target(setjmp ${opt} SOURCES ${ADA_TGT_SRC}/t_setjmp.c)
  ada_test_target(cxx ${opt} SOURCES ${ADA_TGT_SRC}/t_cxx.cpp LDFLAGS ${ADA_TGT_CXX_LDFLAGS})
  ada_test_target(signal ${opt} SOURCES ${ADA_TGT_SRC}/t_signal.c)
endforeach()
# Tail calls only exist with optimisation.
foreach(opt O2 O3)
  ada_test_target(tailcall ${opt} SOURCES ${ADA_TGT_SRC}/t_tailcall.c)
endforeach()
# Entry points that start with endbr64, as distributions that enable CET build them.
if(ADA_ARCH STREQUAL "x86_64")
  ada_test_target(threads O2cet SOURCES ${ADA_TGT_SRC}/t_threads.c FLAGS -fcf-protection=full)
endif()
# A position-dependent executable at 0x400000: trampolines must be placed
# within +-2 GiB of a low address range.
ada_test_target(threads O2nopie SOURCES ${ADA_TGT_SRC}/t_threads.c FLAGS -fno-pie LDFLAGS -no-pie)
ada_test_target(cxx O2nopie SOURCES ${ADA_TGT_SRC}/t_cxx.cpp FLAGS -fno-pie LDFLAGS -no-pie)
# Stripped copies (objcopy --strip-all: no .symtab, none of the program's
# own functions in .dynsym): t_<name>_<opt>_stripped, traced from .eh_frame
# by tests/integration/stripped.cmake.
if(CMAKE_OBJCOPY)
  foreach(t threads_O2 threads_O2nopie cxx_O2)
    set(_stripped ${ADA_TGT_DIR}/t_${t}_stripped)
    add_custom_command(OUTPUT ${_stripped}
      COMMAND ${CMAKE_OBJCOPY} --strip-all $<TARGET_FILE:adat_${t}> ${_stripped}
      DEPENDS adat_${t}
      COMMENT "strip: t_${t}"
      VERBATIM)
    add_custom_target(adat_${t}_stripped ALL DEPENDS ${_stripped})
  endforeach()
endif()
ada_test_target(dlopen O2 SOURCES ${ADA_TGT_SRC}/t_dlopen.c)
ada_test_target(dlwin O2 SOURCES ${ADA_TGT_SRC}/t_dlwin.c)
ada_test_target(fork O2 SOURCES ${ADA_TGT_SRC}/t_fork.c)
ada_test_target(exec_child O2 SOURCES ${ADA_TGT_SRC}/t_exec_child.c)
ada_test_target(textsum O2 SOURCES ${ADA_TGT_SRC}/t_textsum.c)
ada_test_target(pthread_exit O2 SOURCES ${ADA_TGT_SRC}/t_pthread_exit.c)
ada_test_target(pthread_exit O0 SOURCES ${ADA_TGT_SRC}/t_pthread_exit.c)
ada_test_target(crash O2 SOURCES ${ADA_TGT_SRC}/t_crash.c)
ada_test_target(fparg O2 SOURCES ${ADA_TGT_SRC}/t_fparg.c)
ada_test_target(latethread O2 SOURCES ${ADA_TGT_SRC}/t_latethread.c)
ada_test_target(spawn O2 SOURCES ${ADA_TGT_SRC}/t_spawn.c)
ada_test_target(env O2 SOURCES ${ADA_TGT_SRC}/t_env.c)
# Programs with functions written in x86_64 assembly (prologues, padding,
# non-C code, a crash at a function's first instruction).
if(ADA_ARCH STREQUAL "x86_64")
  ada_test_target(crash0 O2 SOURCES ${ADA_TGT_SRC}/t_crash0.c)
  ada_test_target(crashmt O2 SOURCES ${ADA_TGT_SRC}/t_crashmt.c)
  ada_test_target(prologue O2 SOURCES ${ADA_TGT_SRC}/t_prologue.c)
  ada_test_target(pad O2 SOURCES ${ADA_TGT_SRC}/t_pad.c)
  ada_test_target(nonc O2 SOURCES ${ADA_TGT_SRC}/t_nonc.c)
endif()
ada_test_target(manythreads O2 SOURCES ${ADA_TGT_SRC}/t_manythreads.c)
ada_test_target(deep O2 SOURCES ${ADA_TGT_SRC}/t_deep.c)
ada_test_target(envexec O2 SOURCES ${ADA_TGT_SRC}/t_envexec.c)
ada_test_target(ucontext O2 SOURCES ${ADA_TGT_SRC}/t_ucontext.c)
ada_test_target(preinit O2 SOURCES ${ADA_TGT_SRC}/t_preinit.c)
ada_test_target(pspawn O2 SOURCES ${ADA_TGT_SRC}/t_pspawn.c)
ada_test_target(reap O2 SOURCES ${ADA_TGT_SRC}/t_reap.c)
ada_test_target(waits O2 SOURCES ${ADA_TGT_SRC}/t_waits.c)
ada_test_target(idle O2 SOURCES ${ADA_TGT_SRC}/t_idle.c)
ada_test_target(hot O2 SOURCES ${ADA_TGT_SRC}/t_hot.c)
ada_test_target(detail O2 SOURCES ${ADA_TGT_SRC}/t_detail.c)
ada_test_target(detail O0 SOURCES ${ADA_TGT_SRC}/t_detail.c)

# The library t_dlopen loads after start.
add_library(adat_dlib MODULE ${ADA_TGT_SRC}/t_dlib.c)
set_target_properties(adat_dlib PROPERTIES
  COMPILE_OPTIONS "-O2;-g;${ADA_TGT_WARN}"
  LINK_OPTIONS ""
  OUTPUT_NAME t_dlib PREFIX "lib"
  LIBRARY_OUTPUT_DIRECTORY ${ADA_TGT_DIR})

# The library t_dlwin loads after start.
add_library(adat_dlwlib MODULE ${ADA_TGT_SRC}/t_dlwlib.c)
set_target_properties(adat_dlwlib PROPERTIES
  COMPILE_OPTIONS "-O2;-g;${ADA_TGT_WARN}"
  LINK_OPTIONS ""
  OUTPUT_NAME t_dlwlib PREFIX "lib"
  LIBRARY_OUTPUT_DIRECTORY ${ADA_TGT_DIR})

# A static binary for the bad-input tests, when libc.a is there (libc6-dev).
find_file(ADA_LIBC_A libc.a PATHS /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib NO_DEFAULT_PATH)
if(ADA_LIBC_A AND NOT CMAKE_CROSSCOMPILING)
  add_executable(adat_static_O2 ${ADA_TGT_SRC}/t_static.c)
  set_target_properties(adat_static_O2 PROPERTIES
    COMPILE_OPTIONS "-O2;${ADA_TGT_WARN}"
    LINK_OPTIONS "-static"
    OUTPUT_NAME t_static
    RUNTIME_OUTPUT_DIRECTORY ${ADA_TGT_DIR})
else()
  message(STATUS "ada tests: no libc.a, so no static-binary bad-input test (install libc6-dev)")
endif()

if(CMAKE_CROSSCOMPILING)
  # clang here is the host's: the cross build's targets are gcc's only.
elseif(ADA_CLANG AND ADA_CLANGXX)
  foreach(t threads recursion funcptr setjmp signal tailcall)
    ada_test_target_clang(${t} O2 ${ADA_TGT_SRC}/t_${t}.c)
  endforeach()
  ada_test_target_clang(cxx O2 ${ADA_TGT_SRC}/t_cxx.cpp)
else()
  message(STATUS "ada tests: clang not installed, test targets are built with ${CMAKE_C_COMPILER_ID} only")
endif()
# The flight recorder's programs (tests/integration/flight.cmake).
ada_test_target(flight O2 SOURCES ${ADA_TGT_SRC}/t_flight.c)
# What a firing trigger costs the program (bench/trigger_cost.sh, issue 32).
ada_test_target(trigrate O2 SOURCES ${ADA_TGT_SRC}/t_trigrate.c)
# The live-control target (tests/integration/control.cmake).
ada_test_target(control O2 SOURCES ${ADA_TGT_SRC}/t_control.c)
