# Unity builds: a target's files compiled in batches, each batch one translation unit, so that the
# headers every file includes (GoogleTest, gRPC, CLI11, nanobind, the layers' own) are parsed,
# instantiated and optimized once a batch rather than once a file. From an empty cache, the
# library's layers took 229 s of CPU under GCC against 400 s one file at a time, 156 s under
# clang's ASan against 283 s, and the ThreadSanitizer tree 616 s against 753 s; the nine test
# suites 391 s under GCC against 818 s.
#
# A batch is a generated file that includes its files by paths relative to a directory on the
# target's include path (not CMake's UNITY_BUILD, whose absolute paths would keep clones at other
# paths from sharing ccache's entries). A file with compile options or definitions of its own, one
# marked FERRY_ALONE (the fault-injection hooks' files: alone in every tree, so that the test
# tree's batches are the packages' too, for ccache), a C file, or one outside that directory
# (generated code) is compiled alone. clang-tidy still checks each file alone (scripts/tidy.py).
# FERRY_UNITY=OFF compiles every file alone, for a developer editing one file.
option(FERRY_UNITY "Compile each target's files in batches (unity build)" ON)
set(FERRY_UNITY_BATCH 8 CACHE STRING "The most files in one unity batch")

# ferry_unity_sources(target base out_var src...): the sources to build `target` from: `src`
# batched into files under the current binary directory's unity/, each including its files
# relative to `base`, and the files that must be compiled alone. Source properties are read in the
# current directory's scope, so call it where they were set.
function(ferry_unity_sources target base out_var)
  set(alone)
  set(batched)
  foreach(src IN LISTS ARGN)
    get_source_file_property(options ${src} COMPILE_OPTIONS)
    get_source_file_property(definitions ${src} COMPILE_DEFINITIONS)
    get_source_file_property(marked ${src} FERRY_ALONE)
    cmake_path(IS_PREFIX base "${src}" NORMALIZE under_base)
    if(options OR definitions OR marked OR NOT src MATCHES "\\.cpp$" OR NOT under_base)
      list(APPEND alone ${src})
    else()
      list(APPEND batched ${src})
    endif()
  endforeach()
  list(LENGTH batched n)
  if(n LESS 2)
    set(${out_var} ${ARGN} PARENT_SCOPE)
    return()
  endif()
  # Batches of even size: 9 files make batches of 5 and 4, not 8 and 1.
  math(EXPR batches "(${n} + ${FERRY_UNITY_BATCH} - 1) / ${FERRY_UNITY_BATCH}")
  math(EXPR size "(${n} + ${batches} - 1) / ${batches}")
  math(EXPR last "${batches} - 1")
  set(out ${alone})
  foreach(k RANGE ${last})
    math(EXPR first "${k} * ${size}")
    list(SUBLIST batched ${first} ${size} chunk)
    set(content "// Generated: ${target}'s batch ${k}.\n")
    foreach(src IN LISTS chunk)
      file(RELATIVE_PATH rel ${base} ${src})
      string(APPEND content "#include \"${rel}\"\n")
    endforeach()
    set(file ${CMAKE_CURRENT_BINARY_DIR}/unity/${target}_${k}.cpp)
    # Rewritten only when its list changes, so a configure rebuilds nothing.
    file(CONFIGURE OUTPUT ${file} CONTENT "${content}" @ONLY)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # GCC takes a class defined outside the main file for a header's, and warns when it holds a
      # type of the anonymous namespace; in a batch each file's own classes are outside it.
      set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS -Wno-subobject-linkage)
    endif()
    list(APPEND out ${file})
  endforeach()
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()

# ferry_unity_target(target base): builds `target`'s own sources in batches (above) when FERRY_UNITY
# is on, with `base` on its include path. Call it once the sources' properties are set.
function(ferry_unity_target target base)
  if(NOT FERRY_UNITY)
    return()
  endif()
  get_target_property(srcs ${target} SOURCES)
  ferry_unity_sources(${target} ${base} srcs ${srcs})
  set_property(TARGET ${target} PROPERTY SOURCES ${srcs})
  target_include_directories(${target} PRIVATE ${base})
endfunction()
