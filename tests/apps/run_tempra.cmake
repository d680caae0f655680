# cmake -DTEMPRA=<exe> -DARGS=a|b -DEXPECT_EXIT=<code> [-DEXPECT_STDOUT=<regex>]
#       [-DEXPECT_STDERR=<regex>] -P run_tempra.cmake
# Runs the tempra executable and fails unless the exit code and both output
# streams match what is expected.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${TEMPRA}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(report "command: tempra ${args}\nexit: ${rc}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT rc STREQUAL EXPECT_EXIT)
  message(FATAL_ERROR "expected exit code ${EXPECT_EXIT}\n${report}")
endif()
if(EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}'\n${report}")
endif()
if(EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}'\n${report}")
endif()
message(STATUS "${report}")
