#include "comm/bootstrap_interface.h"

#include <sys/socket.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/host_name.h"
#include "base/json_text.h"
#include "comm/bootstrap.h"
#include "comm/liveness.h"
#include "comm/tcp_socket.h"

namespace ts {

std::string sourceAddressToward(const std::string& to) {
  // Connecting a UDP socket sends nothing: the kernel only looks up the route and binds the source it would use.
  const auto a = numericAddress(to, 9);
  if (!a) return "";
  const Socket s(::socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.open() || ::connect(s.fd(), reinterpret_cast<const sockaddr*>(&a->storage), a->length) != 0) return "";
  return localHost(s.fd());
}

std::string runListenAddress(Bootstrap& boot) {
  if (const auto own = boot.controlAddress()) return *own;
  if (boot.size() == 1) return "127.0.0.1";
  struct Place {
    std::string host;
    std::vector<std::string> addresses;
  };
  std::vector<Place> places;
  for (const std::string& s :
       boot.allGatherStrings(jsonText(nlohmann::json{{"host", hostName()}, {"addresses", localIpv4Addresses()}}))) {
    const nlohmann::json j = nlohmann::json::parse(s);
    places.push_back({j.at("host").get<std::string>(), j.at("addresses").get<std::vector<std::string>>()});
  }
  const std::string& here = places[static_cast<std::size_t>(boot.rank())].host;
  const auto elsewhere = [&](const Place& p) { return p.host != here; };
  if (std::none_of(places.begin(), places.end(), elsewhere)) return "127.0.0.1";
  const Place& to = elsewhere(places[0]) ? places[0] : *std::find_if(places.begin(), places.end(), elsewhere);
  for (const std::string& a : to.addresses)
    if (!isAddressOfThisHost(a))  // one every host has (a docker bridge) leads nowhere
      if (std::string from = sourceAddressToward(a); !from.empty()) return from;
  return "";
}

}  // namespace ts
