# Install rules: only include/ is installed, plus the libraries, a CMake package and a .pc file.
include(CMakePackageConfigHelpers)

# Components (the Debian packages of cmake/FerryPackage.cmake): runtime holds the shared libraries,
# dev the headers, the static library, the .so links and the CMake and pkg-config packages.
install(TARGETS ferry ferry_flight_shared ferry_static ferry_abi EXPORT ferryTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The testing module's header stays behind: its library (ferry_testing) is not installed either.
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        PATTERN testing EXCLUDE)
install(EXPORT ferryTargets NAMESPACE ferry:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry
        COMPONENT dev)

configure_package_config_file(cmake/ferryConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/ferryConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ferryConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ferryConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ferryConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry COMPONENT dev)

# The .pc files find the prefix from where they lie, so a relocated install works; the way up
# depends on the libdir (lib, or Debian's lib/x86_64-linux-gnu).
file(RELATIVE_PATH ferry_pc_prefix ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" ferry_pc_prefix "${ferry_pc_prefix}")
configure_file(cmake/ferry.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ferry.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ferry.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
# Flight (libferry_flight.so, which needs gRPC) has a .pc file of its own.
configure_file(cmake/ferry-flight.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ferry-flight.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ferry-flight.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
