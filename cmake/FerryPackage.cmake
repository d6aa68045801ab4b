# Debian packages for C++ users, made by CPack from the install components (scripts/build_deb.sh):
# libferry0 (the shared libraries), libferry-dev (headers, the static library, the CMake and
# pkg-config packages) and ferry-tools (the command line and its Flight module). The shared
# objects' Depends come from dpkg-shlibdeps; the rest are written here.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ferry)
set(CPACK_PACKAGE_VENDOR "ferry")
set(CPACK_PACKAGE_CONTACT "ferry developers <ferry@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEB_COMPONENT_INSTALL ON)
# The build carries line tables (-g1); the packages do not, as Debian's own do not.
set(CPACK_STRIP_FILES ON)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/FerryStripArchives.cmake)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/ferry")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# ferry-tools links libferry0's libraries, which no installed package provides yet: dpkg-shlibdeps
# finds them in that component's staging directory and leaves them to the Depends written below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
    ${CPACK_PACKAGE_DIRECTORY}/_CPack_Packages/Linux/DEB/ferry-${PROJECT_VERSION}-Linux/runtime/${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR})
set(ferry_exact "(= ${PROJECT_VERSION})")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libferry0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "ferry's shared libraries: libferry (Arrow C data, devices, IPC, Dissociated IPC over shared memory and UCX) and libferry_flight (Arrow Flight over gRPC)")
# A shlibs file (so packages built against it get their Depends) and the ldconfig trigger.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libferry-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "ferry's headers, static library, CMake package (find_package(ferry)) and pkg-config files (ferry, ferry-flight)")
# The static library's link interface names UCX, lz4, zstd, gRPC and protobuf by their -dev
# packages' .so links.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libferry0 ${ferry_exact}, libucx-dev, liblz4-dev, libzstd-dev, libgrpc++-dev, libprotobuf-dev")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ferry-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
    "the ferry command line: inspect, serve and get Arrow data over IPC, Dissociated IPC and Flight")
# adduser makes the ferry user ferry.service runs as (postinst); the unit, its conffile and the
# maintainer scripts are tools/service's.
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libferry0 ${ferry_exact}, adduser")
set(CPACK_DEBIAN_TOOLS_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/../tools/service/postinst
    ${CMAKE_CURRENT_LIST_DIR}/../tools/service/prerm
    ${CMAKE_CURRENT_LIST_DIR}/../tools/service/postrm
    ${CMAKE_CURRENT_LIST_DIR}/../tools/service/conffiles)
set(CPACK_DEBIAN_TOOLS_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
