# bench/cidx_bench: the compact index codec (src/atf/cidx.h) on synthetic
# fib-like and 200-function streams: encode ns/event, decode M events/s,
# export to ATF v2, bytes/event. Not a test; run it by hand.
add_executable(cidx_bench ${CMAKE_CURRENT_SOURCE_DIR}/cidx_bench.c)
target_compile_options(cidx_bench PRIVATE -O2)
target_include_directories(cidx_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests/unit)
target_link_libraries(cidx_bench PRIVATE ada_atf)
set_target_properties(cidx_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
