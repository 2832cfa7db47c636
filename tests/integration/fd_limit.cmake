# Losses to the recorder's limit of open files labelled and counted as
# fd_limit drops (issue 35 item 4): tests/integration/fd_limit_test.sh.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(ADA_SANITIZE MATCHES "address|thread")
  return() # it records with the agent, which a sanitized build cannot preload
endif()
add_test(NAME fd_limit
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/fd_limit_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_manythreads_O2)
set_tests_properties(fd_limit PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150 LABELS "integration")
