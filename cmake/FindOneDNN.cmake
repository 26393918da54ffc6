# oneDNN 2.x (Debian's libdnnl-dev): oneapi/dnnl/dnnl.hpp and libdnnl, in ONEDNN_ROOT or the system paths.
# Found by path rather than through dnnl-config.cmake, whose find_package(OpenCL REQUIRED) would end the
# configure on a host without the OpenCL headers instead of leaving oneDNN out.
find_path(ONEDNN_INCLUDE_DIR oneapi/dnnl/dnnl.hpp HINTS ${ONEDNN_ROOT} $ENV{ONEDNN_ROOT} PATH_SUFFIXES include)
find_library(ONEDNN_LIBRARY dnnl HINTS ${ONEDNN_ROOT} $ENV{ONEDNN_ROOT} PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OneDNN REQUIRED_VARS ONEDNN_LIBRARY ONEDNN_INCLUDE_DIR)
if(OneDNN_FOUND AND NOT TARGET OneDNN::dnnl)
  add_library(OneDNN::dnnl UNKNOWN IMPORTED)
  set_target_properties(OneDNN::dnnl PROPERTIES IMPORTED_LOCATION ${ONEDNN_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${ONEDNN_INCLUDE_DIR})
endif()
