# UNITY_FUZZERS: the libFuzzer build (tests/fuzz). Every target of the build is compiled with
# AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage instrumentation, so a finding
# in the core or the project store is reported where it happens, not where it is noticed later.
# UBSan does not recover: a report aborts the run and libFuzzer keeps the input that caused it.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "UNITY_FUZZERS needs clang (libFuzzer is part of clang), but the C++ compiler is "
    "${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}). Configure a fresh build directory with "
    "CC=clang CXX=clang++ (scripts/install-deps.sh installs clang and its libFuzzer runtime).")
endif()

# Fuzzing's usual code generation, whatever the build type: -O1 keeps the sanitizers' reports exact
# and compiles about twice as fast as -O2 on CI's 2 cores, line tables are all a stack trace needs,
# and assertions stay on (-UNDEBUG): a broken invariant is a finding too.
add_compile_options(-O1 -gline-tables-only -UNDEBUG)
# File names in the program (assertions, the sanitizers' source locations, line tables) relative to
# the repository's root: the program's data then depends less on where the checkout lies,
# and so do the heap addresses and hash seeds that follow from its layout and steer which inputs a
# run tries. With this and paths of one length at run time, six of the seven fuzzers run the same
# inputs in a checkout at another path; fuzz_joint_search does not yet (probably: ASan's module
# names keep the full path, and absl seeds its hash tables from an address in the program).
# Reports then name files relative to the repository's root (tests/fuzz/..., core/src/...).
add_compile_options(-ffile-prefix-map=${PROJECT_SOURCE_DIR}/= -fdebug-compilation-dir=.)

set(UNITY_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
# The libraries get the fuzzer's coverage counters without its main(); the fuzzer programs link it.
add_compile_options(${UNITY_SANITIZE_FLAGS} -fsanitize=fuzzer-no-link)
add_link_options(${UNITY_SANITIZE_FLAGS})

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,address,undefined")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
]] UNITY_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT UNITY_HAVE_LIBFUZZER)
  message(FATAL_ERROR
    "clang cannot link a libFuzzer program with ASan and UBSan: install the clang runtime "
    "(Debian: libclang-rt-dev; scripts/install-deps.sh does)")
endif()
