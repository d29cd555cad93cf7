# ctest runs this: install the built anatomy into a scratch prefix, build the extension project
# against it, run its checks, then train `reverse` with each new part through the project's own
# anatomy program, as docs/extending.md shows.
set(prefix "${BINARY_DIR}/extend-install")
set(build "${BINARY_DIR}/extend-build")
set(runs "${BINARY_DIR}/extend-runs")
file(REMOVE_RECURSE "${prefix}" "${build}" "${runs}")
set(train "${build}/my_anatomy;train;--task;reverse;--preset;tiny;--epochs;1;--limit;600;--threads;1")
foreach(step
    "${CMAKE_COMMAND};--install;${BINARY_DIR};--prefix;${prefix}"
    "${CMAKE_COMMAND};-S;${SOURCE_DIR};-B;${build};-DCMAKE_PREFIX_PATH=${prefix};-DCMAKE_BUILD_TYPE=Release"
    "${CMAKE_COMMAND};--build;${build};-j2"
    "${build}/extend_checks"
    "${train};--set;norm_type=scale_norm;--out;${runs}/scale_norm"
    "${train};--set;position_embedding_type=learned_bias;--out;${runs}/learned_bias"
    "${build}/my_anatomy;translate;--checkpoint;${runs}/learned_bias;a b c d")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "extend step failed (${rc}): ${step}")
  endif()
endforeach()
file(READ "${runs}/scale_norm/config.json" config)
if(NOT config MATCHES "\"norm_type\": \"scale_norm\"")
  message(FATAL_ERROR "the scale_norm run's config.json does not name scale_norm:\n${config}")
endif()
file(READ "${runs}/learned_bias/config.json" config)
if(NOT config MATCHES "\"position_embedding_type\": \"learned_bias\"")
  message(FATAL_ERROR "the learned_bias run's config.json does not name learned_bias:\n${config}")
endif()
