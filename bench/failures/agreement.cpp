#include "bench/failures/agreement.h"

#include <fmt/format.h>

#include "bench/failures/activity.h"
#include "comm/agreed_step.h"
#include "comm/bootstrap.h"

namespace ts {

void collectively(Bootstrap& boot, const std::function<void()>& step) {
  if (boot.size() == 1) {
    try {
      step();
    } catch (const UsageError& e) {
      throw AgreedError(e.what(), true);
    } catch (const Error& e) {
      throw AgreedError(e.what(), false);
    }
    return;
  }
  const std::optional<AgreedFailure> failure = agreedFailure(gatherVerdicts(boot, step));
  if (!failure) return;
  // Every process knows the error now. Each marks it said before any may exit: process 0 exiting makes
  // the launcher stop the rest, and one still inside the exchange would add a "stopped by signal" line.
  activity::errorReported();
  boot.barrier();
  throw AgreedError(failure->line, failure->usage);
}

}  // namespace ts
