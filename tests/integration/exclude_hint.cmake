# --overhead-budget whose counts still cost more than the budget (issue 32
# item 6, PR-003): the manifest's count_only.over_budget and the summary
# line name the functions to --exclude-symbol, the most counted first
# (tests/integration/exclude_hint_test.sh, t_hot's six leaves).
add_test(NAME e2e.exclude_hint
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/exclude_hint_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_hot_O2)
set_tests_properties(e2e.exclude_hint PROPERTIES TIMEOUT 60 LABELS "e2e")
# A single thread's counts in the live `ada status` while it still runs
# (parked: exact), then exact in the manifest (live_counts_test.sh).
add_test(NAME e2e.live_counts
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/live_counts_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_hot_O2)
set_tests_properties(e2e.live_counts PROPERTIES TIMEOUT 60 LABELS "e2e")
# The same under --count-only alone: the agent's live counts' thread,
# no budget (live_counts_test.sh alone).
add_test(NAME e2e.live_counts_alone
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/live_counts_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_hot_O2 alone)
set_tests_properties(e2e.live_counts_alone PROPERTIES TIMEOUT 60 LABELS "e2e")
# --count-live 0: no such thread, status as the start-up wrote it, the
# manifest exact (live_counts_test.sh off).
add_test(NAME e2e.live_counts_off
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/live_counts_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_hot_O2 off)
set_tests_properties(e2e.live_counts_off PROPERTIES TIMEOUT 60 LABELS "e2e")
