# ctest runs this: install the built project into a scratch prefix, then configure, build and run
# the consumer project against it.
set(prefix "${BINARY_DIR}/consumer-install")
set(build "${BINARY_DIR}/consumer-build")
file(REMOVE_RECURSE "${prefix}" "${build}")
foreach(step
    "${CMAKE_COMMAND};--install;${BINARY_DIR};--prefix;${prefix}"
    "${CMAKE_COMMAND};-S;${SOURCE_DIR};-B;${build};-DCMAKE_PREFIX_PATH=${prefix};-DCMAKE_BUILD_TYPE=Release"
    "${CMAKE_COMMAND};--build;${build}"
    "${build}/consumer")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer step failed (${rc}): ${step}")
  endif()
endforeach()
