# Runs a tutorial with --fast, shows what it printed, and fails when it fails or prints more
# than BUDGET lines (ctest -P script: TUTORIAL, BUDGET, OUT, ARGS: the test data's flags;
# EMULATOR, the command that runs a cross-compiled program, empty otherwise).
# CI sets ANATOMY_REQUIRE_SHARED_DATA=1: there a run without the test data (on the stand-in
# vocabulary) must not pass.
if(NOT ARGS AND "$ENV{ANATOMY_REQUIRE_SHARED_DATA}" STREQUAL "1")
  message(FATAL_ERROR "../shared/data beside the repository was not found when CMake configured "
                      "this build, and ANATOMY_REQUIRE_SHARED_DATA=1 requires it")
endif()
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
execute_process(COMMAND ${emulator} ${TUTORIAL} --fast --out ${OUT} ${ARGS} OUTPUT_VARIABLE out
                ERROR_VARIABLE err RESULT_VARIABLE code)
message("${out}${err}")
string(REGEX MATCHALL "\n" newlines "${out}")
list(LENGTH newlines lines)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "${TUTORIAL} exited with ${code}")
endif()
if(lines GREATER BUDGET)
  message(FATAL_ERROR "${TUTORIAL} printed ${lines} lines, more than its budget of ${BUDGET}: "
                      "summarise, or print a check once")
endif()
message("${lines} lines, within the budget of ${BUDGET}")
