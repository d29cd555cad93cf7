# Flags are set per target, never in CMAKE_CXX_FLAGS, so that a project embedding anatomy keeps
# its own.
function(anatomy_set_flags target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  if(ANATOMY_WARNINGS)
    # Options structs are filled with designated initializers that leave the other fields at
    # their defaults on purpose ({.lr = 1e-3}); -Wextra would flag every such use.
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  endif()
  if(ANATOMY_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(ANATOMY_SANITIZE)
    target_compile_options(${target} PUBLIC -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(ANATOMY_FUZZ)
    # Coverage feedback for libFuzzer in every library the harnesses reach; UBSan findings abort
    # so that the fuzzer records them as crashes.
    target_compile_options(${target} PUBLIC -fsanitize=fuzzer-no-link -fno-sanitize-recover=all)
  endif()
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O3>)
endfunction()

# Code off the hot path (the test cases, the command line's parsing, the tutorials' printing,
# the exercise checkers) is compiled at -O1: it compiles in about half the time of -O3, and what
# it calls runs in the libraries, compiled at -O3. The last -O on the command line wins.
# At -O1 GCC 12 inlines std::string's operator+ into copies it then reports as out of bounds
# (false positives of -Warray-bounds, -Wrestrict and -Wstringop-overflow that come and go with a
# path's length), so those three are not checked in this code.
function(anatomy_off_hot_path target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O1>)
  if(ANATOMY_SANITIZE)
    # Under the sanitizers -O1 takes about two and a half times as long as -O0 to compile this
    # code, and what runs long runs in the libraries.
    target_compile_options(${target} PRIVATE -O0)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(
      ${target} PRIVATE $<$<CONFIG:Release>:-Wno-array-bounds -Wno-restrict -Wno-stringop-overflow>)
  endif()
endfunction()

# A library layer: anatomy_<name> exported as anatomy::<name>.
function(anatomy_add_library name)
  add_library(anatomy_${name} ${ARGN})
  add_library(anatomy::${name} ALIAS anatomy_${name})
  set_target_properties(anatomy_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME anatomy_${name})
  target_include_directories(anatomy_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                                    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/anatomy>)
  anatomy_set_flags(anatomy_${name})
  if(ANATOMY_NATIVE_FLAG)
    # This machine's SIMD width. PRIVATE: no public header depends on it (SIMD code lives in
    # .cpp files), so a consumer compiled without it links fine.
    target_compile_options(anatomy_${name} PRIVATE ${ANATOMY_NATIVE_FLAG})
  endif()
  install(TARGETS anatomy_${name} EXPORT anatomyTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/anatomy/${name}
          FILES_MATCHING PATTERN "*.hpp")
endfunction()

# A text file of the source tree (a page's script or style sheet) compiled into a library as the
# string constant NAMESPACE::SYMBOL. cmake/embed_text.cmake writes the source at build time: a
# change to the file rebuilds the library, and nothing reads the file at run time, so a
# cross-compiled or installed library needs no copy of it.
function(anatomy_embed_text target namespace symbol file)
  set(input ${CMAKE_CURRENT_SOURCE_DIR}/${file})
  set(output ${CMAKE_CURRENT_BINARY_DIR}/${file}.cpp)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${output} -DNAMESPACE=${namespace}
            -DSYMBOL=${symbol} -P ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    COMMENT "Embedding ${file} as ${namespace}::${symbol}"
    VERBATIM)
  target_sources(${target} PRIVATE ${output})
endfunction()
