# Debian packages of the installed tree: `cpack -G DEB` in a build directory (scripts/package.sh) makes
# <name>_<version>_<arch>.deb with bin/trainscope and share/trainscope/{reports,suites}. The binary finds its
# data beside itself (bench/data_home.h), so a package works installed under /usr or unpacked anywhere.
#
# Two packages, one per kind of user, both installing the same paths (so one replaces the other):
#   trainscope       built without CUDA (TRAINSCOPE_WITH_CUDA=OFF; scripts/package.sh builds it in build-cpu/): for
#                    a machine without NVIDIA's libraries. It runs every CPU path (MPI collectives and training,
#                    links, reports) and needs no NVIDIA library to start (NVML is only ever dlopen'ed).
#   trainscope-cuda  the CUDA build (build/): for a GPU machine. Its binary links cudart, cuBLASLt, cuDNN, NCCL and
#                    CUPTI, so it depends on NVIDIA's packages of them, as NVIDIA's own CUDA repository for Debian 12
#                    names them; without them it would not start ("error while loading shared libraries").
#
# Depends of both: dpkg-shlibdeps reads the Debian libraries the binary links (Open MPI, OpenBLAS, oneDNN, fmt,
# toml++, hwloc, ibverbs); the reports tool needs Debian's python3 with jsonschema, matplotlib, numpy and jinja2.
# dpkg-shlibdeps cannot name NVIDIA's libraries (no Debian package holds them here), so their directories are
# private to it (CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS) and trainscope-cuda names their packages itself.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "trainscope developers <trainscope@invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin")
set(ts_debian_depends python3 python3-jsonschema python3-matplotlib python3-numpy python3-jinja2)

if(TRAINSCOPE_HAVE_CUDA)
  set(CPACK_PACKAGE_NAME trainscope-cuda)
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "benchmarks and profiles multi-GPU training: links, collectives, kernels, training (CUDA build)")
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS trainscope)
  set(CPACK_DEBIAN_PACKAGE_REPLACES trainscope)
  set(CPACK_DEBIAN_PACKAGE_PROVIDES trainscope)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CUDAToolkit_LIBRARY_DIR};/usr/local/cuda/lib;/usr/local/cuda/lib64")
  # NVIDIA's package names (its CUDA repository for Debian 12, developer.download.nvidia.com/compute/cuda/repos/
  # debian12/x86_64) for the libraries the binary links, for the toolkit it was built with (13.0 here):
  # - cuda-cudart-13-0 (libcudart.so.13) and libcublas-13-0 (libcublas and libcublasLt.so.13): the per-component
  #   packages, <component>-<major>-<minor>, as NVIDIA's own CUDA container images install them
  #   (gitlab.com/nvidia/container-images/cuda, dist/<version>/ubuntu2204/base/Dockerfile: cuda-cudart-X-Y;
  #   .../runtime/Dockerfile: NV_LIBCUBLAS_PACKAGE_NAME=libcublas-X-Y, NV_LIBNCCL_PACKAGE_NAME=libnccl2).
  # - cuda-cupti-13-0 (libcupti.so.13): the same repository's CUPTI package, same naming (`apt-get install
  #   cuda-cupti-12-6` in NVIDIA's Jetson/cuDSS install steps; no NVIDIA page found for 13-0 itself).
  # - libcudnn9-cuda-13 (libcudnn.so.9 and the sub-libraries it loads): the cuDNN 9 runtime for CUDA 13
  #   (docs.nvidia.com/deeplearning/cudnn/installation/linux.html: `apt-get install cudnn9-cuda-13`, whose
  #   runtime part NVIDIA's nvidia/cuda:13.0.1 cuDNN images install as NV_CUDNN_PACKAGE_NAME=libcudnn9-cuda-13).
  # - libnccl2 (libnccl.so.2): the NCCL Installation Guide (docs.nvidia.com/deeplearning/nccl/install-guide:
  #   `apt install libnccl2=<version>+cuda<X.Y> libnccl-dev`); the repository's builds are <nccl>-1+cuda13.0.
  # cuDNN and NCCL at least at the release (major.minor) of the headers the binary was compiled against.
  set(ts_cuda_pkg "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
  list(APPEND ts_debian_depends "cuda-cudart-${ts_cuda_pkg}" "libcublas-${ts_cuda_pkg}")
  if(TARGET CUDA::cupti)
    list(APPEND ts_debian_depends "cuda-cupti-${ts_cuda_pkg}")
  endif()
  if(TRAINSCOPE_HAVE_CUDNN)
    list(APPEND ts_debian_depends "libcudnn${CUDNN_VERSION_MAJOR}-cuda-${CUDAToolkit_VERSION_MAJOR} (>= ${CUDNN_VERSION})")
  endif()
  if(TRAINSCOPE_HAVE_NCCL)
    list(APPEND ts_debian_depends "libnccl${NCCL_VERSION_MAJOR} (>= ${NCCL_VERSION})")
  endif()
else()
  set(CPACK_PACKAGE_NAME trainscope)
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "benchmarks and profiles multi-GPU training: links, collectives, kernels, training (CPU build)")
endif()
list(JOIN ts_debian_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
include(CPack)
