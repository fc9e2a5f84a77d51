# unity_whole_archive(target alias): `alias` links every object of the static library `target`,
# including those nothing references by name. Operators, kernels and importers register themselves
# with static objects in their own files; a plain static link would drop those files.
function(unity_whole_archive target alias)
  string(REPLACE "::" "_" whole "${alias}")
  set(whole "${whole}_whole_archive")
  add_library(${whole} INTERFACE)
  target_link_libraries(${whole} INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${target}>")
  add_library(${alias} ALIAS ${whole})
endfunction()
