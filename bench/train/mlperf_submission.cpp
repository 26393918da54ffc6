#include "bench/train/mlperf_submission.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

namespace {
bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

// A name the checker would take (it refuses only "") but no reader could use: spaces alone.
void checkName(const char* flag, const std::string& value, const char* what) {
  if (!value.empty() && blank(value)) throw UsageError(fmt::format("{} '{}': blank; give {}", flag, value, what));
}
}  // namespace

void checkMlperfSubmission(const MlperfSubmission& s, bool logged) {
  if (!logged && s.anyStated()) {
    const char* flag = !s.org.empty()                        ? "--mllog-org"
                       : !s.platform.empty()                 ? "--mllog-platform"
                       : s.division != MlperfDivision::kNone ? "--mllog-division"
                                                             : "--mllog-caches-cleared";
    throw UsageError(fmt::format("{} says what the --mllog log states: give --mllog FILE", flag));
  }
  checkName("--mllog-org", s.org, "the submitting organization's name");
  checkName("--mllog-platform", s.platform, "the name of the system the run trained on");
}

}  // namespace ts
