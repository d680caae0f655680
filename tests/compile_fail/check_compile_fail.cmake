# cmake -P check_compile_fail.cmake: compiles one compile-fail case.
#   -DCOMPILER=... -DSOURCE=... -DINCLUDE=... -DMODE=control|fail -DMESSAGE=<text> -DNOTE=<text>
# control: the file must compile. fail: compilation must fail, the output must contain MESSAGE
# (the static_assert text) and NOTE (the instantiation note naming the axes). Both are matched
# literally.
set(args -std=c++20 -fsyntax-only -I${INCLUDE} -I${CASE_DIR} ${SOURCE})
if(MODE STREQUAL "fail")
  list(PREPEND args -DTEMPRA_EXPECT_FAIL)
endif()
execute_process(COMMAND ${COMPILER} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(APPEND out "${err}")
if(MODE STREQUAL "control")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "control build of ${SOURCE} failed; the case is broken:\n${out}")
  endif()
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must not")
endif()
string(FIND "${out}" "${MESSAGE}" at_message)
if(at_message EQUAL -1)
  message(FATAL_ERROR "${SOURCE} failed to compile, but not with '${MESSAGE}':\n${out}")
endif()
string(FIND "${out}" "${NOTE}" at_note)
if(at_note EQUAL -1)
  message(FATAL_ERROR "${SOURCE}: the diagnostic does not name the axes as '${NOTE}':\n${out}")
endif()
message(STATUS "${SOURCE}: fails as expected with '${MESSAGE}' and '${NOTE}'")
