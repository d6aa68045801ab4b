# gRPC and protobuf for the flight layer (Debian's libgrpc++-dev and libprotobuf-dev), found with
# one pkg-config call and linked by full path, as UCX is, so the exported targets need no imported
# target. One call, not pkg_check_modules: that runs pkg-config about twenty times, each walking
# gRPC's graph of some fifty abseil modules (1.3 s of CPU a call here), which made pkg-config a
# tenth of CI's CPU across its trees. Sets FERRY_GRPC_INCLUDE_DIRS and FERRY_GRPC_LINK_LIBRARIES,
# cached, so a tree asks once.
if(NOT DEFINED CACHE{FERRY_GRPC_LINK_LIBRARIES})
  find_package(PkgConfig REQUIRED)
  execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} --cflags-only-I --libs grpc++ protobuf
                  OUTPUT_VARIABLE ferry_grpc_out ERROR_VARIABLE ferry_grpc_err
                  RESULT_VARIABLE ferry_grpc_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT ferry_grpc_rc EQUAL 0)
    message(FATAL_ERROR "pkg-config found no gRPC and protobuf (grpc++.pc, protobuf.pc; Debian: "
                        "libgrpc++-dev libprotobuf-dev): ${ferry_grpc_err}")
  endif()
  separate_arguments(ferry_grpc_words UNIX_COMMAND "${ferry_grpc_out}")
  set(ferry_grpc_includes "")
  set(ferry_grpc_dirs "")
  set(ferry_grpc_names "")
  foreach(word IN LISTS ferry_grpc_words)
    if(word MATCHES "^-I(.+)")
      list(APPEND ferry_grpc_includes ${CMAKE_MATCH_1})
    elseif(word MATCHES "^-L(.+)")
      list(APPEND ferry_grpc_dirs ${CMAKE_MATCH_1})
    elseif(word MATCHES "^-l(.+)")
      list(APPEND ferry_grpc_names ${CMAKE_MATCH_1})
    endif()
  endforeach()
  # Each library once, where it first comes (the libraries are shared: their order is not the
  # static link's), and by full path; a name with no file of its own (libatomic, in the compiler's
  # directory) is left to the compiler's link, as pkg_check_modules leaves it.
  list(REMOVE_DUPLICATES ferry_grpc_names)
  set(ferry_grpc_libs "")
  foreach(name IN LISTS ferry_grpc_names)
    find_library(ferry_grpc_lib NAMES ${name} HINTS ${ferry_grpc_dirs} NO_CACHE)
    if(ferry_grpc_lib)
      list(APPEND ferry_grpc_libs ${ferry_grpc_lib})
    endif()
    unset(ferry_grpc_lib)
  endforeach()
  set(FERRY_GRPC_INCLUDE_DIRS "${ferry_grpc_includes}" CACHE INTERNAL "gRPC's and protobuf's headers")
  set(FERRY_GRPC_LINK_LIBRARIES "${ferry_grpc_libs}" CACHE INTERNAL "gRPC and protobuf, full paths")
  message(STATUS "gRPC and protobuf: ${ferry_grpc_names}")
endif()
