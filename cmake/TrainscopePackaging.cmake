# A Debian package of the installed tree: `cpack -G DEB` in the build directory (scripts/package.sh) makes
# trainscope_<version>_<arch>.deb with bin/trainscope and share/trainscope/{reports,suites}. The binary finds its
# data beside itself (bench/session/data_home.h), so the package works installed under /usr or unpacked anywhere.
#
# Depends: dpkg-shlibdeps reads the Debian libraries the binary links (Open MPI, OpenBLAS, fmt, toml++, hwloc,
# ibverbs); the CUDA libraries (cudart, cuBLASLt, cuDNN, NCCL, CUPTI) come from NVIDIA's own packages, which have
# no Debian names to depend on: they are looked up in the CUDA directories the binary keeps in its RUNPATH, and
# in the loader's path. The reports tool needs Debian's python3 with jsonschema, matplotlib, numpy and jinja2.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME trainscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "benchmarks and profiles multi-GPU training: links, collectives, kernels, training")
set(CPACK_PACKAGE_CONTACT "trainscope developers <trainscope@invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CUDAToolkit_LIBRARY_DIR};/usr/local/cuda/lib;/usr/local/cuda/lib64")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-jsonschema, python3-matplotlib, python3-numpy, python3-jinja2")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin")
include(CPack)
