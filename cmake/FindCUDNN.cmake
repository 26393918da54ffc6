# cuDNN 9: cudnn.h and libcudnn, beside the CUDA toolkit, in CUDNN_ROOT, or in the system paths; its release from
# cudnn_version.h (CUDNN_VERSION_MAJOR, _MINOR: the Debian package's floor).
include(TrainscopeFindLibrary)
ts_find_library(CUDNN VAR CUDNN TARGET CUDNN::cudnn HEADER cudnn.h LIBRARY cudnn BESIDE_CUDA VERSION_HEADER cudnn_version.h
                VERSION_PREFIX CUDNN)
