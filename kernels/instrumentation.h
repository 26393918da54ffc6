#pragma once
// NVTX ranges, so that an Nsight Systems capture of any trainscope run reads as what trainscope did
// ("all_reduce 4 MiB", "kernel gemm attn.qkv"). NVTX3 is header-only: with no profiler attached each range
// costs a branch. Without CUDA the ranges compile to nothing. Categories colour the ranges by kind.
#include <cstdint>
#include <string>

#ifdef TRAINSCOPE_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace ts {

enum class RangeCategory : std::uint32_t { kCompute = 1, kCommunication = 2, kData = 3, kOptimizer = 4, kMeasurement = 5 };

class NvtxRange {
 public:
  NvtxRange(const std::string& name, RangeCategory category) {
#ifdef TRAINSCOPE_HAVE_CUDA
    static constexpr std::uint32_t kColors[] = {0xff888888u, 0xff2e7d32u, 0xff1565c0u, 0xfff9a825u, 0xff6a1b9au, 0xff546e7au};
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = static_cast<std::uint32_t>(category);
    a.colorType = NVTX_COLOR_ARGB;
    a.color = kColors[static_cast<std::uint32_t>(category) % 6];
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name.c_str();
    nvtxRangePushEx(&a);
#else
    (void)name;
    (void)category;
#endif
  }
  ~NvtxRange() {
#ifdef TRAINSCOPE_HAVE_CUDA
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace ts
