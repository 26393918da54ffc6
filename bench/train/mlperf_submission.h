#pragma once
// What a --mllog log says of its submission, as the user states it (--mllog-org, --mllog-platform,
// --mllog-division, --mllog-caches-cleared): MLPerf's checker requires submission_org, submission_platform,
// submission_division and cache_clear, and trainscope can know none of them but the platform, which is a name
// the submitter gives their system. So nothing is made up: a field not stated is not logged (the checker then
// names it as missing), and cache_clear is false unless the page cache was dropped before the run.
#include <string>
#include <string_view>
#include <utility>

#include "base/enum_names.h"

namespace ts {

// none: no submission_division line. closed and open are MLPerf's divisions; the checker applies each one's
// rules (closed: a 30-minute initialisation window, the benchmark's fixed hyperparameters).
enum class MlperfDivision { kNone, kClosed, kOpen };

struct MlperfSubmission {
  std::string org;       // --mllog-org: submission_org ("": not logged)
  std::string platform;  // --mllog-platform: submission_platform ("": not logged)
  MlperfDivision division = MlperfDivision::kNone;
  bool cachesCleared = false;  // --mllog-caches-cleared: cache_clear true (the launcher dropped the page cache)

  bool anyStated() const { return !org.empty() || !platform.empty() || division != MlperfDivision::kNone || cachesCleared; }
};

// UsageError, one line, for a stated field the checker would refuse or that has no log to go to.
void checkMlperfSubmission(const MlperfSubmission& s, bool logged);

template <>
struct EnumNames<MlperfDivision> {
  static constexpr std::pair<std::string_view, MlperfDivision> kNames[] = {
      {"none", MlperfDivision::kNone}, {"closed", MlperfDivision::kClosed}, {"open", MlperfDivision::kOpen}};
};

}  // namespace ts
