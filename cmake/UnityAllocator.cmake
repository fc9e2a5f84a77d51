# The programs and test suites allocate through mimalloc (Microsoft's allocator, Debian's
# libmimalloc-dev) instead of glibc's malloc: the search builds and drops many small graphs, maps
# and vectors, and glibc's malloc and free took a third of a joint search's time. Same plans,
# byte for byte; inception-v3's joint search on one summit node takes 18.5 s instead of 26.8 s
# (docs/testing.md). Linked, it replaces malloc for the whole process. Left out of unity-worker,
# whose Open MPI hooks memory allocation itself, and of the fuzz build, whose AddressSanitizer owns
# malloc. -DUNITY_MIMALLOC=OFF builds without it.
option(UNITY_MIMALLOC "Link the programs and tests with mimalloc" ON)
if(UNITY_MIMALLOC AND NOT UNITY_FUZZERS)
  find_library(UNITY_MIMALLOC_LIBRARY mimalloc)
  if(NOT UNITY_MIMALLOC_LIBRARY)
    message(WARNING "mimalloc not found (Debian: libmimalloc-dev; scripts/install-deps.sh installs "
                    "it): the programs use glibc's malloc, and searches take longer")
  endif()
endif()

# unity_fast_allocator(target): the target's process allocates through mimalloc where it is found.
function(unity_fast_allocator target)
  if(UNITY_MIMALLOC AND UNITY_MIMALLOC_LIBRARY AND NOT UNITY_FUZZERS)
    target_link_libraries(${target} PRIVATE ${UNITY_MIMALLOC_LIBRARY})
  endif()
endfunction()
