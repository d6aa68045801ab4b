# Install rules: only include/ is installed, plus the libraries, a CMake package and a .pc file.
include(CMakePackageConfigHelpers)

install(TARGETS ferry ferry_flight_shared ferry_static ferry_abi EXPORT ferryTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The testing module's header stays behind: its library (ferry_testing) is not installed either.
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} PATTERN testing EXCLUDE)
install(EXPORT ferryTargets NAMESPACE ferry:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)

configure_package_config_file(cmake/ferryConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/ferryConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ferryConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ferryConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ferryConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)

configure_file(cmake/ferry.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ferry.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ferry.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# Flight (libferry_flight.so, which needs gRPC) has a .pc file of its own.
configure_file(cmake/ferry-flight.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ferry-flight.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ferry-flight.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
