#pragma once
// Where the run's own listeners (the liveness beacons, the lifeline hub: comm/liveness.h, liveness_lifeline.h)
// listen: on the one address by which this process and process 0 reach each other, never on every interface, so
// that nothing of the run answers on a network the run does not use.
//   the TCP bootstrap      the address of its connection to process 0 (process 0: the one it was reached at);
//   one host (MPI)         loopback;
//   several hosts (MPI)    the address this host would send from to process 0's host (process 0 and the others on
//                          its host: to the first other host), as the routing table picks it.
#include <string>

namespace ts {

class Bootstrap;

// Collective (under MPI it exchanges every process's host and addresses). "" when no address of this host reaches
// the others (the run's listeners then stay closed, and say so).
std::string runListenAddress(Bootstrap& boot);

// The address this host sends from to reach `to` (numeric), as the routing table picks it; "" when none does.
std::string sourceAddressToward(const std::string& to);

}  // namespace ts
