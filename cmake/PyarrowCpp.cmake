# Arrow C++ as the pyarrow wheel ships it (its headers and libarrow), found through a Python
# interpreter: ferry_find_pyarrow_cpp(python) defines the imported target ferry_pyarrow_libarrow
# and sets FERRY_PYARROW_CPP_FOUND and FERRY_PYARROW_DIR (for an RPATH) in the caller's scope.
function(ferry_find_pyarrow_cpp python)
  set(FERRY_PYARROW_CPP_FOUND OFF PARENT_SCOPE)
  execute_process(
    COMMAND ${python} -c "import pyarrow, os; print(pyarrow.get_include()); print(os.path.dirname(pyarrow.__file__))"
    OUTPUT_VARIABLE out RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT rc EQUAL 0)
    return()
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  list(GET lines 0 include_dir)
  list(GET lines 1 dir)
  file(GLOB libarrow "${dir}/libarrow.so.[0-9]*")
  list(FILTER libarrow EXCLUDE REGEX "\\.so\\.[0-9]+\\.[0-9]")
  if(NOT libarrow)
    return()
  endif()
  list(GET libarrow 0 libarrow)
  if(NOT TARGET ferry_pyarrow_libarrow)
    add_library(ferry_pyarrow_libarrow SHARED IMPORTED GLOBAL)
    set_target_properties(ferry_pyarrow_libarrow PROPERTIES IMPORTED_LOCATION ${libarrow}
                          IMPORTED_NO_SONAME OFF INTERFACE_INCLUDE_DIRECTORIES ${include_dir})
  endif()
  set(FERRY_PYARROW_CPP_FOUND ON PARENT_SCOPE)
  set(FERRY_PYARROW_DIR ${dir} PARENT_SCOPE)
endfunction()
