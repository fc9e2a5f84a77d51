# What the build spends its time on, and the three things that cut it (docs/testing.md has the
# measurements): on CI's 2 cores most of a source's compile time is code generation, not parsing.
#
# 1. Line tables instead of full debug information in RelWithDebInfo (-g1 after CMake's -g): a
#    backtrace still names every file and line, at about two thirds of -g's compile time.
add_compile_options($<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:CXX>>:-g1>)

# 2. unity_light_code(target): code whose speed no user waits on (widgets, command-line parsing, the
#    project store, tests and the benchmarks' drivers) is optimised at -O1, about a quarter less
#    compile time than -O2. The libraries that do the work (core's search and cost model, the rule
#    verifier, the executor and its kernels) keep the build type's -O2.
function(unity_light_code target)
  target_compile_options(${target} PRIVATE
    $<$<AND:$<CONFIG:RelWithDebInfo,Release>,$<COMPILE_LANGUAGE:CXX>>:-O1>)
endfunction()

# 3. Precompiled headers: the third-party headers that most sources of a target include (the
#    standard library, nlohmann-json, fmt; CLI11, Z3, Qt or GoogleTest where the target uses them)
#    are parsed once per target instead of once per source. Only third-party headers: a change to
#    one of ours rebuilds what includes it, not every source. -DUNITY_PCH=OFF builds without them
#    (to check that every source includes what it uses). The fuzz build (clang, sanitizers) uses
#    them too: 15% less compile time for core there.
option(UNITY_PCH "Precompile the heavy third-party headers of each target" ON)

set(UNITY_PCH_COMMON
    <algorithm> <cstdint> <filesystem> <functional> <map> <memory> <optional> <set> <string>
    <string_view> <unordered_map> <utility> <variant> <vector>
    <nlohmann/json.hpp> <fmt/format.h>)

# unity_precompile(target [header ...]): the common headers and these, for the target's C++ sources.
function(unity_precompile target)
  if(NOT UNITY_PCH)
    return()
  endif()
  set(_headers)
  foreach(_h IN LISTS UNITY_PCH_COMMON ARGN)
    list(APPEND _headers "$<$<COMPILE_LANGUAGE:CXX>:${_h}>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${_headers})
endfunction()

# 4. Jumbo builds (CMake's UNITY_BUILD; the name is CMake's, not this project's): each target's
#    sources are compiled eight to a translation unit, so the headers they share are parsed, and
#    their inline and template code generated, once per eight sources instead of once per source.
#    On a clean build here this halves core's compile time. A file-local name (in an anonymous
#    namespace or static) must therefore be unique within its target. An edit recompiles its
#    batch: configure with -DCMAKE_UNITY_BUILD=OFF for one-file-at-a-time work, and to check that
#    every source includes what it uses.
if(NOT DEFINED CMAKE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
endif()
if(NOT DEFINED CMAKE_UNITY_BUILD_BATCH_SIZE)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()
