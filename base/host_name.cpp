#include "base/host_name.h"

#include <unistd.h>

namespace ts {

std::string hostName() {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace ts
