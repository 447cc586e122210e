# SPDX-License-Identifier: Apache-2.0
# Inlines the `#include "name"` lines of an OpenCL C file that name a file of
# its folder (cl/real.clh), so that the embedded sources and the installed
# vocabulary header stand alone: a program built from a string cannot
# include files. Included files' includes are inlined too. With LINES,
# #line directives keep the compiler's file names and line numbers those of
# the original files.
function(clmad_inline_cl_includes out_var file lines)
  get_filename_component(dir "${file}" DIRECTORY)
  get_filename_component(name "${file}" NAME)
  file(READ "${file}" text)
  string(REGEX MATCHALL "#include \"[^\"\n]+\"\n" includes "${text}")
  foreach(inc IN LISTS includes)
    string(REGEX REPLACE "#include \"([^\"\n]+)\"\n" "\\1" inc_name "${inc}")
    if(NOT EXISTS "${dir}/${inc_name}")
      continue()
    endif()
    # Recursively: an included file's own includes (real.clh's half.clh).
    clmad_inline_cl_includes(body "${dir}/${inc_name}" "${lines}")
    if(lines)
      # The line after the include: one more than the newlines before it.
      string(FIND "${text}" "${inc}" at)
      string(SUBSTRING "${text}" 0 ${at} before)
      string(REGEX MATCHALL "\n" newlines "${before}")
      list(LENGTH newlines n)
      math(EXPR next "${n} + 2")
      set(body "#line 1 \"${inc_name}\"\n${body}#line ${next} \"${name}\"\n")
    endif()
    string(REPLACE "${inc}" "${body}" text "${text}")
  endforeach()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()
