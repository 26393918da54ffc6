# Finds every dependency once and says, in TRAINSCOPE_HAVE_*, what this build has.
# Required: nlohmann_json, CLI11, fmt, toml++. Optional: CUDA (+ NCCL, cuBLASLt, cuDNN), MPI, OpenBLAS, oneDNN, hwloc, ibverbs.
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt REQUIRED)
find_package(tomlplusplus REQUIRED)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
add_library(trainscope_cli11 INTERFACE)
target_include_directories(trainscope_cli11 INTERFACE ${CLI11_INCLUDE_DIR})
find_package(Threads REQUIRED)

set(TRAINSCOPE_HAVE_CUDA OFF)
set(TRAINSCOPE_HAVE_NCCL OFF)
set(TRAINSCOPE_HAVE_CUDNN OFF)
if(TRAINSCOPE_WITH_CUDA)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Hopper by default; override with -DCMAKE_CUDA_ARCHITECTURES="80;90" for other GPUs.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(TRAINSCOPE_HAVE_CUDA ON)
    find_package(NCCL)
    set(TRAINSCOPE_HAVE_NCCL ${NCCL_FOUND})
    find_package(CUDNN)
    set(TRAINSCOPE_HAVE_CUDNN ${CUDNN_FOUND})
  endif()
endif()

# NVTX3 ranges: header-only, shipped with the CUDA toolkit; used with or without the CUDA build (nsys
# profiles CPU runs too). Set NVTX3_INCLUDE_DIR to use a copy from github.com/NVIDIA/NVTX instead.
find_path(NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
set(TRAINSCOPE_HAVE_NVTX OFF)
if(NVTX3_INCLUDE_DIR)
  set(TRAINSCOPE_HAVE_NVTX ON)
endif()

set(TRAINSCOPE_HAVE_MPI OFF)
if(TRAINSCOPE_WITH_MPI)
  find_package(MPI COMPONENTS C)
  set(TRAINSCOPE_HAVE_MPI ${MPI_C_FOUND})
endif()

find_package(PkgConfig)
set(TRAINSCOPE_HAVE_HWLOC OFF)
set(TRAINSCOPE_HAVE_IBVERBS OFF)
set(TRAINSCOPE_HAVE_OPENBLAS OFF)
# OpenMP: the CPU kernels' threads (and `#pragma omp simd` for their vector loops).
find_package(OpenMP COMPONENTS CXX)
if(PKG_CONFIG_FOUND)
  # OpenBLAS built on OpenMP when Debian has it (libopenblas-openmp-dev, installed beside the default pthread
  # build): its threads are then OpenMP's, the one pool of our kernels (and oneDNN), so one thread count governs
  # them all and an idle thread waits briefly (GOMP_SPINCOUNT) instead of spinning in sched_yield (the pthread
  # build's idle workers took half of the CPU samples of a 2-core run, issue #20). The library is linked by its
  # path there and found through the RUNPATH, not the system's alternatives link.
  if(OpenMP_CXX_FOUND AND CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp/pkgconfig")
    set(ENV{PKG_CONFIG_PATH} "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp/pkgconfig:$ENV{PKG_CONFIG_PATH}")
  endif()
  pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
  set(TRAINSCOPE_HAVE_OPENBLAS ${OPENBLAS_FOUND})
  pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
  set(TRAINSCOPE_HAVE_HWLOC ${HWLOC_FOUND})
  pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
  set(TRAINSCOPE_HAVE_IBVERBS ${IBVERBS_FOUND})
endif()

# oneDNN: the CPU convolution (without it, im2col + GEMM).
set(TRAINSCOPE_HAVE_ONEDNN OFF)
if(TRAINSCOPE_WITH_ONEDNN)
  find_package(OneDNN)
  set(TRAINSCOPE_HAVE_ONEDNN ${OneDNN_FOUND})
endif()
