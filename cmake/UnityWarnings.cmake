# Warnings for our own targets only: third-party headers come in as SYSTEM includes.
# -Wshadow=local is GCC's (clang, the fuzz build's compiler, has no such option).
function(unity_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wshadow=local>)
  # In a jumbo build (UnityCompileTime.cmake) GCC reads each included source as a header and warns
  # that a test fixture in an anonymous namespace is a base of a class outside it, which holds
  # for every gtest fixture and is harmless in a source file.
  if(CMAKE_UNITY_BUILD)
    target_compile_options(${target} PRIVATE
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-subobject-linkage>)
  endif()
endfunction()
