# libFuzzer targets (TEMPRA_FUZZ=ON, clang; the `asan` preset turns it on): the top-level
# CMakeLists includes this file and instruments every library with -fsanitize=fuzzer-no-link.
# scripts/fuzz.sh builds and runs them.
add_executable(gguf_fuzz ${PROJECT_SOURCE_DIR}/tests/io/gguf_fuzz.cpp)
target_link_libraries(gguf_fuzz PRIVATE tempra_io)
target_link_options(gguf_fuzz PRIVATE -fsanitize=fuzzer)
set_target_properties(gguf_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

# The safetensors reader: build/asan/bin/safetensors_fuzz <corpus dir> tests/goldens
add_executable(safetensors_fuzz ${PROJECT_SOURCE_DIR}/tests/io/safetensors_fuzz.cpp)
target_link_libraries(safetensors_fuzz PRIVATE tempra_io)
target_link_options(safetensors_fuzz PRIVATE -fsanitize=fuzzer)
set_target_properties(safetensors_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

# The server's request parsing and dispatch: build/asan/bin/serve_fuzz <corpus dir> tests/serve/fuzz_corpus
add_executable(serve_fuzz ${PROJECT_SOURCE_DIR}/tests/serve/serve_fuzz.cpp)
target_link_libraries(serve_fuzz PRIVATE tempra_serve)
target_link_options(serve_fuzz PRIVATE -fsanitize=fuzzer)
set_target_properties(serve_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

# Grammars, JSON Schemas and regular expressions, compiled and run: build/asan/bin/grammar_fuzz <corpus dir> tests/llm/fuzz_corpus
add_executable(grammar_fuzz ${PROJECT_SOURCE_DIR}/tests/llm/grammar_fuzz.cpp)
target_link_libraries(grammar_fuzz PRIVATE tempra_llm_decode)
target_link_options(grammar_fuzz PRIVATE -fsanitize=fuzzer)
set_target_properties(grammar_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

# NAM profiles, parsed, built, run and rewritten: build/asan/bin/nam_fuzz <corpus dir> tests/audio/fuzz_corpus
add_executable(nam_fuzz ${PROJECT_SOURCE_DIR}/tests/audio/nam_fuzz.cpp)
target_link_libraries(nam_fuzz PRIVATE tempra_audio)
target_link_options(nam_fuzz PRIVATE -fsanitize=fuzzer)
set_target_properties(nam_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
