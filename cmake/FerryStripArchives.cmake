# Run by CPack after it installs the packages' files into its staging directory: the static
# library loses its line tables (-g1, kept for the test tree), as CPACK_STRIP_FILES does for
# the shared libraries and the tool.
file(GLOB_RECURSE ferry_archives "${CPACK_TOPLEVEL_DIRECTORY}/*.a")
foreach(archive IN LISTS ferry_archives)
  execute_process(COMMAND strip --strip-debug "${archive}" COMMAND_ERROR_IS_FATAL ANY)
endforeach()
