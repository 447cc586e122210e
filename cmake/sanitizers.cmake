# Sanitizer builds (make test-asan, test-tsan). Chosen with CLMAD_SANITIZE:
# "address" (AddressSanitizer + UndefinedBehaviorSanitizer) or "thread".
set(CLMAD_SANITIZE "" CACHE STRING "Sanitizer build: '', 'address' or 'thread'")
