# SPDX-License-Identifier: Apache-2.0
# Sanitizer builds (make test-asan, test-tsan). Chosen with CLMAD_SANITIZE:
# "address" (AddressSanitizer + UndefinedBehaviorSanitizer) or "thread".
# The flags apply to every target of the build (library, tools, examples,
# benchmarks and tests), at compile and at link time.
set(CLMAD_SANITIZE "" CACHE STRING "Sanitizer build: '', 'address' or 'thread'")
set_property(CACHE CLMAD_SANITIZE PROPERTY STRINGS "" address thread)

if(CLMAD_SANITIZE STREQUAL "address")
  # -fno-sanitize-recover: an undefined-behaviour finding aborts the process
  # (exit status non-zero) instead of printing and going on, so that a test
  # cannot pass with a UBSan report in its log.
  set(CLMAD_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                           -fno-omit-frame-pointer)
elseif(CLMAD_SANITIZE STREQUAL "thread")
  set(CLMAD_SANITIZE_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT CLMAD_SANITIZE STREQUAL "")
  message(FATAL_ERROR "CLMAD_SANITIZE must be '', 'address' or 'thread' (got '${CLMAD_SANITIZE}')")
endif()

if(CLMAD_SANITIZE_FLAGS)
  message(STATUS "clmad: sanitizer build (${CLMAD_SANITIZE}): ${CLMAD_SANITIZE_FLAGS}")
  add_compile_options(${CLMAD_SANITIZE_FLAGS})
  add_link_options(${CLMAD_SANITIZE_FLAGS})
endif()
