# NCCL: nccl.h and libnccl, beside the CUDA toolkit, in NCCL_ROOT, or in the system paths; its release from nccl.h
# (NCCL_VERSION_MAJOR, _MINOR: the Debian package's floor).
include(TrainscopeFindLibrary)
ts_find_library(NCCL VAR NCCL TARGET NCCL::nccl HEADER nccl.h LIBRARY nccl BESIDE_CUDA VERSION_HEADER nccl.h VERSION_PREFIX NCCL)
