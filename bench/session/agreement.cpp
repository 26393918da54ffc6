#include "bench/session/agreement.h"

#include <fmt/format.h>

#include "bench/session/activity.h"
#include "bench/session/inventory.h"
#include "comm/bootstrap.h"

namespace ts {

void collectively(Bootstrap& boot, const std::function<void()>& step) {
  std::string mine;  // "" = fine; else 'U' or 'E' followed by the message
  try {
    step();
  } catch (const UsageError& e) {
    mine = std::string("U") + e.what();
  } catch (const Error& e) {
    mine = std::string("E") + e.what();
  }
  if (boot.size() == 1) {
    if (!mine.empty()) throw AgreedError(mine.substr(1), mine[0] == 'U');
    return;
  }
  const auto all = boot.allGatherStrings(mine);
  for (std::size_t p = 0; p < all.size(); ++p) {
    if (all[p].empty()) continue;
    // Every process knows the error now. Each marks it said before any may exit: process 0 exiting makes
    // the launcher stop the rest, and one still inside the exchange would add a "stopped by signal" line.
    activity::errorReported();
    boot.barrier();
    // Name the process when the failures differ between processes, so the user knows where to look.
    bool same = true;
    for (const auto& other : all) same = same && other == all[p];
    const std::string what = same ? all[p].substr(1) : fmt::format("process {}: {}", p, all[p].substr(1));
    throw AgreedError(what, all[p][0] == 'U');
  }
}

}  // namespace ts
