# The reading commands end to end (issue 11): report, names, dump filters,
# Chrome export, flame graphs, crash stacks, ls, a damaged session, and the
# exports in speedscope in headless Chromium. Checks: reading_test.py.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()
set(T ${ADA_TGT_DIR})
# ada_read_test(<name> <check> [OPTS <harness options>...] RUN <program and arguments>...)
function(ada_read_test name check)
  cmake_parse_arguments(R "" "" "OPTS;RUN" ${ARGN})
  ada_e2e_test(e2e.read_${name} reading_test.py TIMEOUT 400
               ARGS --name read_${name} ${R_OPTS} ${check} -- ${R_RUN})
endfunction()
ada_read_test(report_threads report RUN ${T}/t_threads_O2)
ada_read_test(report_recursion report RUN ${T}/t_recursion_O0)
ada_read_test(names_cxx names RUN ${T}/t_cxx_O0 dtor)
ada_read_test(crash_segv crash RUN ${T}/t_crash_O2)
# An exec chain in one pid: its images are not counted as threads.
ada_read_test(report_exec report_exec RUN ${T}/t_exec_child_O2 chain 2)
ada_read_test(crash_exec crash_exec RUN /bin/sh -c "exec ${T}/t_crash_O2")
ada_read_test(crash_args crash_args OPTS --record-opt=--trigger --record-opt=crash
              RUN ${T}/t_flight_O2 segv)
ada_read_test(chrome_threads chrome RUN ${T}/t_threads_O2)
ada_read_test(chrome_cxx chrome RUN ${T}/t_cxx_O2 throw)
ada_read_test(chrome_flight chrome_flight OPTS --record-opt=--trigger --record-opt=symbol=rare_event
              RUN ${T}/t_flight_O2 symbol)
ada_read_test(flame_threads flame RUN ${T}/t_threads_O2)
ada_read_test(filters_threads filters RUN ${T}/t_threads_O2)
ada_read_test(graph_threads graph RUN ${T}/t_threads_O2)
ada_read_test(graph_recursion graph RUN ${T}/t_recursion_O0)
ada_read_test(windows_flight windows OPTS --record-opt=--trigger --record-opt=symbol=rare_event
              RUN ${T}/t_flight_O2 symbol)
# 2 000 frames deep, past the flame walk's first stacks of 1 024 (they
# grow); the folded text of a recursion grows as its depth squared (the
# program's default 10 000 made the harness read over a gigabyte).
ada_read_test(flame_recursion flame RUN ${T}/t_recursion_O2 2000)
ada_read_test(dump_window dump_window OPTS --record-opt=--trigger --record-opt=symbol=rare_event
              RUN ${T}/t_flight_O2 symbol)
# speedscope (npm, offline) in Debian's chromium; skips (77) only when
# Chromium cannot start, saying why. Screenshots: itest-work/screenshots/.
ada_read_test(browser browser RUN ${T}/t_threads_O2)
