# Writes a C++ source that holds a text file as a string constant, so that the library carries
# the file and needs nothing beside it at run time. Run at build time by anatomy_embed_text()
# (cmake/AnatomyTarget.cmake) as `cmake -DINPUT=... -DOUTPUT=... -DNAMESPACE=... -DSYMBOL=... -P`.
# The text goes into a raw string literal, so it reads in the generated file as in its own.
file(READ "${INPUT}" text)
set(delimiter "ANATOMY_TEXT")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "embed_text: ${INPUT} contains )${delimiter}\", which would end its string")
endif()
file(WRITE "${OUTPUT}"
     "// Generated from ${INPUT} by cmake/embed_text.cmake: edit that file, not this one.\n"
     "namespace ${NAMESPACE} {\n"
     "extern const char* const ${SYMBOL};\n"
     "const char* const ${SYMBOL} = R\"${delimiter}(${text})${delimiter}\";\n"
     "}  // namespace ${NAMESPACE}\n")
