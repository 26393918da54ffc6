#pragma once
// Errors that every process agrees on. Checks that can fail on some processes and not others (memory on
// one host, a GPU missing on one node) run inside collectively(): if any process fails, every process
// throws the same AgreedError, so all exit together with one line printed (by process 0) and none hangs.
#include <functional>

#include "base/error.h"

namespace ts {

class Bootstrap;

class AgreedError : public Error {
 public:
  AgreedError(const std::string& what, bool usage) : Error(what), usage_(usage) {}
  bool usage() const { return usage_; }  // exit 2 (bad input) rather than 1

 private:
  bool usage_;
};

void collectively(Bootstrap& boot, const std::function<void()>& step);

}  // namespace ts
