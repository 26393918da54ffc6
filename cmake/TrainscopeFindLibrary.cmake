# What the Find modules of cmake/ share: a library found by its header and its file, an imported target for it,
# and, where its header declares one, its release.

# The release a library's header declares (#define <PREFIX>_MAJOR / _MINOR): <OUT> ("9.14"), <OUT>_MAJOR, <OUT>_MINOR.
function(ts_header_release header prefix out)
  file(STRINGS "${header}" lines REGEX "^#define ${prefix}_(MAJOR|MINOR) ")
  string(REGEX REPLACE ".*${prefix}_MAJOR ([0-9]+).*${prefix}_MINOR ([0-9]+).*" "\\1;\\2" release "${lines}")
  list(GET release 0 major)
  list(GET release 1 minor)
  set(${out} ${major}.${minor} PARENT_SCOPE)
  set(${out}_MAJOR ${major} PARENT_SCOPE)
  set(${out}_MINOR ${minor} PARENT_SCOPE)
endfunction()

# ts_find_library(PACKAGE VAR <prefix> TARGET <name> HEADER <file> LIBRARY <name> [BESIDE_CUDA]
#                 [VERSION_HEADER <file> VERSION_PREFIX <prefix>])
# Looks for HEADER and LIBRARY in <VAR>_ROOT (the variable or the environment's), beside the CUDA toolkit when
# BESIDE_CUDA, and in the system paths: <VAR>_INCLUDE_DIR, <VAR>_LIBRARY, <PACKAGE>_FOUND, the imported TARGET, and
# with a VERSION_HEADER (in the include folder) <PACKAGE>_VERSION, _VERSION_MAJOR, _VERSION_MINOR.
# A macro: what find_package_handle_standard_args sets lands in the Find module's scope, which is find_package's.
macro(ts_find_library package)
  cmake_parse_arguments(ts_find "BESIDE_CUDA" "VAR;TARGET;HEADER;LIBRARY;VERSION_HEADER;VERSION_PREFIX" "" ${ARGN})
  set(ts_find_include_hints ${${ts_find_VAR}_ROOT} $ENV{${ts_find_VAR}_ROOT})
  set(ts_find_library_hints ${${ts_find_VAR}_ROOT} $ENV{${ts_find_VAR}_ROOT})
  if(ts_find_BESIDE_CUDA)
    list(APPEND ts_find_include_hints ${CUDAToolkit_INCLUDE_DIRS})
    list(APPEND ts_find_library_hints ${CUDAToolkit_LIBRARY_DIR})
  endif()
  find_path(${ts_find_VAR}_INCLUDE_DIR ${ts_find_HEADER} HINTS ${ts_find_include_hints} PATH_SUFFIXES include)
  find_library(${ts_find_VAR}_LIBRARY ${ts_find_LIBRARY} HINTS ${ts_find_library_hints} PATH_SUFFIXES lib lib64)
  set(ts_find_version_var "")
  if(ts_find_VERSION_HEADER AND ${ts_find_VAR}_INCLUDE_DIR AND EXISTS "${${ts_find_VAR}_INCLUDE_DIR}/${ts_find_VERSION_HEADER}")
    ts_header_release("${${ts_find_VAR}_INCLUDE_DIR}/${ts_find_VERSION_HEADER}" ${ts_find_VERSION_PREFIX} ${package}_VERSION)
    set(ts_find_version_var VERSION_VAR ${package}_VERSION)
  endif()
  include(FindPackageHandleStandardArgs)
  find_package_handle_standard_args(${package} REQUIRED_VARS ${ts_find_VAR}_LIBRARY ${ts_find_VAR}_INCLUDE_DIR ${ts_find_version_var})
  if(${package}_FOUND AND NOT TARGET ${ts_find_TARGET})
    add_library(${ts_find_TARGET} UNKNOWN IMPORTED)
    set_target_properties(${ts_find_TARGET} PROPERTIES IMPORTED_LOCATION ${${ts_find_VAR}_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES
                                                                                             ${${ts_find_VAR}_INCLUDE_DIR})
  endif()
endmacro()
