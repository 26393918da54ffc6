# oneDNN 2.x (Debian's libdnnl-dev): oneapi/dnnl/dnnl.hpp and libdnnl, in ONEDNN_ROOT or the system paths.
# Found by path rather than through dnnl-config.cmake, whose find_package(OpenCL REQUIRED) would end the
# configure on a host without the OpenCL headers instead of leaving oneDNN out.
include(TrainscopeFindLibrary)
ts_find_library(OneDNN VAR ONEDNN TARGET OneDNN::dnnl HEADER oneapi/dnnl/dnnl.hpp LIBRARY dnnl)
