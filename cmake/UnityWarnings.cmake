# Warnings for our own targets only: third-party headers come in as SYSTEM includes.
# -Wshadow=local is GCC's (clang, the fuzz build's compiler, has no such option).
function(unity_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wshadow=local>)
endfunction()
