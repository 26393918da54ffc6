#pragma once
// One process, nothing to exchange.
#include <cstdlib>
#include <cstring>

#include "comm/bootstrap.h"

namespace ts {

class SingleBootstrap final : public Bootstrap {
 public:
  BootstrapKind kind() const override { return BootstrapKind::kSingle; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localRank() const override { return 0; }
  int localSize() const override { return 1; }
  void allGather(const void* in, void* out, std::size_t bytes) override { std::memmove(out, in, bytes); }
  void barrier() override {}
  [[noreturn]] void abortAll(int exitCode) override { std::_Exit(exitCode); }
};

}  // namespace ts
