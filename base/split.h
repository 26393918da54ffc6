#pragma once
// A list in one string ("all_reduce,all_gather", "mpirun -np 8", OMPI_MCA_btl) as its non-empty items: an empty
// item (",,", a trailing separator, two spaces) is no item.
#include <string>
#include <string_view>
#include <vector>

namespace ts {

inline std::vector<std::string> splitNonEmpty(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const std::size_t at = s.find(sep);
    if (const std::string_view item = s.substr(0, at); !item.empty()) out.emplace_back(item);
    s = at == std::string_view::npos ? std::string_view() : s.substr(at + 1);
  }
  return out;
}

}  // namespace ts
