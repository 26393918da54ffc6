#pragma once
// This machine's host name (gethostname), as results and error lines name a host.
#include <string>

namespace ts {

std::string hostName();

}  // namespace ts
