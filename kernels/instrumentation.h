#pragma once
// NVTX ranges, so that an Nsight Systems capture (`nsys profile trainscope ...`) reads as what trainscope did:
// "forward 3", "all_reduce", "kernel gemm attn.qkv", in the domain "trainscope", coloured and grouped by
// category (compute, communication, data, optimizer, step, measurement). NVTX3 is header-only and built in
// whenever its header is found (it ships with the CUDA toolkit), GPU or not: with no tool attached each
// call is one indirect call into a no-op. Without the header the calls compile to nothing.
//
// Ranges pushed by a thread are popped by it in reverse order (push/pop); an operation that completes out
// of order (an asynchronous collective) uses start/end instead.
#include <cstdint>
#include <string>

namespace ts::nvtx {

enum class Category : std::uint32_t { kCompute = 1, kCommunication = 2, kData = 3, kOptimizer = 4, kStep = 5, kMeasurement = 6 };

bool available();  // built with NVTX
// A nested range on this thread; `payload` >= 0 is shown beside the name (a micro-batch or layer index).
void push(const char* message, Category category, std::int64_t payload = -1);
void pop();
// A range that may end in any order (0 when NVTX is not built in).
std::uint64_t start(const char* message, Category category);
void end(std::uint64_t id);

}  // namespace ts::nvtx

namespace ts {

// RAII push/pop of a range (exception-safe).
class NvtxRange {
 public:
  NvtxRange(const char* name, nvtx::Category category) { nvtx::push(name, category); }
  NvtxRange(const std::string& name, nvtx::Category category) : NvtxRange(name.c_str(), category) {}
  ~NvtxRange() { nvtx::pop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace ts
