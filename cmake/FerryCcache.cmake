# Compile through ccache where it is installed (scripts/setup.sh installs it): CI builds the same
# sources in several trees (test, sanitizers, Release, the Python and Ruby packages) from a clean
# clone each time, and a cache of objects spares most of that. Set FERRY_CCACHE=OFF to bypass it.
#
# Clones at different paths share entries: ccache takes paths under the source tree as relative
# (CCACHE_BASEDIR) and leaves the build directory out of the hash (CCACHE_NOHASHDIR), and
# -ffile-prefix-map writes paths relative to the source tree into objects (__FILE__, debug info),
# so a cached object names no other clone's path.
option(FERRY_CCACHE "Compile through ccache when it is installed" ON)
if(FERRY_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(FERRY_CCACHE_PROGRAM ccache)
  if(FERRY_CCACHE_PROGRAM)
    set(ferry_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_CURRENT_SOURCE_DIR}
        CCACHE_NOHASHDIR=1 ${FERRY_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${ferry_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${ferry_launcher})
  endif()
endif()
add_compile_options(-ffile-prefix-map=${CMAKE_CURRENT_SOURCE_DIR}/=)
