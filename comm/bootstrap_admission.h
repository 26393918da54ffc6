#pragma once
// Process 0's side of the environment bootstrap: it listens on the addresses MASTER_ADDR resolves to and
// admits one connection per other rank. Connections are served side by side (poll), each with its own
// deadline, so one that closes, stays silent, sends garbage, a wrong token, a huge length, a taken or
// impossible rank is dropped and logged with its address (cfg.log) while the job's processes join; none
// of them ends the job. The listening sockets close once every rank has joined.
#include <vector>

#include "comm/bootstrap_tcp.h"
#include "comm/tcp_socket.h"

namespace ts {

// One connected socket per rank (index 0 empty). UsageError when MASTER_ADDR cannot be resolved or is no
// address of this host; Error when the job has not met within cfg.connectTimeoutS.
std::vector<Socket> admitProcesses(const TcpBootstrapConfig& cfg);

}  // namespace ts
