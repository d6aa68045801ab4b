# Arrow C++ as the pyarrow wheel ships it (its headers, libarrow and libarrow_flight), found
# through a Python interpreter: the one lookup the benchmarks and the Arrow C++ peers share.
# ferry_pyarrow_python(var) sets `var` to FERRY_PYTHON, else the source tree's .venv, else python3.
# ferry_find_pyarrow_cpp(python) defines the imported targets ferry_pyarrow_libarrow and, where
# the wheel has it, ferry_pyarrow_libarrow_flight, and sets FERRY_PYARROW_CPP_FOUND,
# FERRY_PYARROW_FLIGHT_FOUND and FERRY_PYARROW_DIR (for an RPATH) in the caller's scope.
function(ferry_pyarrow_python var)
  if(FERRY_PYTHON)
    set(${var} ${FERRY_PYTHON} PARENT_SCOPE)
  elseif(EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python)
    set(${var} ${PROJECT_SOURCE_DIR}/.venv/bin/python PARENT_SCOPE)
  else()
    set(${var} python3 PARENT_SCOPE)
  endif()
endfunction()

# The wheel's library `name` by its soname (libarrow.so.2600), not the full version's name, in
# `var` (empty where the wheel lacks it).
function(ferry_pyarrow_library var dir name)
  file(GLOB found "${dir}/${name}.so.[0-9]*")
  list(FILTER found EXCLUDE REGEX "\\.so\\.[0-9]+\\.[0-9]")
  if(found)
    list(GET found 0 found)
  endif()
  set(${var} "${found}" PARENT_SCOPE)
endfunction()

function(ferry_find_pyarrow_cpp python)
  set(FERRY_PYARROW_CPP_FOUND OFF PARENT_SCOPE)
  set(FERRY_PYARROW_FLIGHT_FOUND OFF PARENT_SCOPE)
  execute_process(
    COMMAND ${python} -c "import pyarrow, os; print(pyarrow.get_include()); print(os.path.dirname(pyarrow.__file__))"
    OUTPUT_VARIABLE out RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT rc EQUAL 0)
    return()
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  list(GET lines 0 include_dir)
  list(GET lines 1 dir)
  ferry_pyarrow_library(libarrow ${dir} libarrow)
  if(NOT libarrow)
    return()
  endif()
  if(NOT TARGET ferry_pyarrow_libarrow)
    add_library(ferry_pyarrow_libarrow SHARED IMPORTED GLOBAL)
    set_target_properties(ferry_pyarrow_libarrow PROPERTIES IMPORTED_LOCATION ${libarrow}
                          IMPORTED_NO_SONAME OFF INTERFACE_INCLUDE_DIRECTORIES ${include_dir})
  endif()
  ferry_pyarrow_library(libflight ${dir} libarrow_flight)
  if(libflight)
    if(NOT TARGET ferry_pyarrow_libarrow_flight)
      add_library(ferry_pyarrow_libarrow_flight SHARED IMPORTED GLOBAL)
      set_target_properties(ferry_pyarrow_libarrow_flight PROPERTIES
                            IMPORTED_LOCATION ${libflight} IMPORTED_NO_SONAME OFF
                            INTERFACE_LINK_LIBRARIES ferry_pyarrow_libarrow)
    endif()
    set(FERRY_PYARROW_FLIGHT_FOUND ON PARENT_SCOPE)
  endif()
  set(FERRY_PYARROW_CPP_FOUND ON PARENT_SCOPE)
  set(FERRY_PYARROW_DIR ${dir} PARENT_SCOPE)
endfunction()
