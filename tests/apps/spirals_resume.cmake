# cmake -DSPIRALS=<exe> -DOPTIMIZER=<name> -DSTEPS=<N> -DSAVE_AT=<K> -DWORK=<dir> -P spirals_resume.cmake
# The issue's bit-exact resume test in its fresh-process form: three separate processes,
#   A: N steps straight;
#   B: N steps, saving a checkpoint after step K on the way;
#   C: a new process that loads B's checkpoint and trains steps K+1..N;
# must print the same parameter hash (FNV-1a over every parameter's bytes, apps/spirals).
# Then a truncated copy of the checkpoint must be refused (exit 1, naming the file).
file(MAKE_DIRECTORY "${WORK}")
set(ckpt "${WORK}/${OPTIMIZER}-step${SAVE_AT}.safetensors")
file(REMOVE "${ckpt}")

function(run_spirals out_var)
  execute_process(COMMAND "${SPIRALS}" --optimizer ${OPTIMIZER} --steps ${STEPS} --print-hash ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "spirals ${ARGN} exited ${rc}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  if(NOT out MATCHES "params hash ([0-9a-f]+)")
    message(FATAL_ERROR "spirals ${ARGN} printed no hash\nstdout:\n${out}")
  endif()
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  message(STATUS "spirals --optimizer ${OPTIMIZER} --steps ${STEPS} ${ARGN}: ${CMAKE_MATCH_1}")
endfunction()

run_spirals(straight --threads 2)
run_spirals(saving --threads 1 --save-at ${SAVE_AT} --checkpoint "${ckpt}")
if(NOT EXISTS "${ckpt}")
  message(FATAL_ERROR "no checkpoint at ${ckpt}")
endif()
run_spirals(resumed --threads 2 --resume "${ckpt}")
if(NOT straight STREQUAL saving OR NOT straight STREQUAL resumed)
  message(FATAL_ERROR "${OPTIMIZER}: straight ${straight}, saving ${saving}, resumed ${resumed}: not bit-identical")
endif()

# A truncated checkpoint (its last 20 bytes cut): refused with the file named, nothing trained.
file(SIZE "${ckpt}" size)
math(EXPR keep "${size} - 20")
set(truncated "${WORK}/${OPTIMIZER}-truncated.safetensors")
execute_process(COMMAND head -c ${keep} "${ckpt}" OUTPUT_FILE "${truncated}" RESULT_VARIABLE rc)
execute_process(COMMAND "${SPIRALS}" --optimizer ${OPTIMIZER} --steps ${STEPS} --resume "${truncated}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "truncated\\.safetensors: .*extend past the end of the file")
  message(FATAL_ERROR "a truncated checkpoint: exit ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()
file(REMOVE "${ckpt}" "${truncated}")
