# Runs a tutorial with --fast, shows what it printed, and fails when it fails or prints more
# than BUDGET lines (ctest -P script: TUTORIAL, BUDGET, OUT; EMULATOR, the command that runs a
# cross-compiled program, empty otherwise).
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
execute_process(COMMAND ${emulator} ${TUTORIAL} --fast --out ${OUT} OUTPUT_VARIABLE out
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
