#include "base/error.h"

namespace ts {
namespace {
thread_local std::string t_context;
}

ErrorContext::ErrorContext(std::string what) : previous_(t_context) {
  t_context = previous_.empty() ? std::move(what) : previous_ + ": " + what;
}

ErrorContext::~ErrorContext() { t_context = std::move(previous_); }

std::string ErrorContext::current() { return t_context; }

Error errorInContext(const std::string& what) {
  const std::string ctx = ErrorContext::current();
  return Error(ctx.empty() ? what : ctx + ": " + what);
}

}  // namespace ts
