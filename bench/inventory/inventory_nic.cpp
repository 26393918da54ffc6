// NICs: InfiniBand/RoCE ports through libibverbs (rate from the active speed and width), and the
// kernel's network interfaces from /sys/class/net (speed, state, MTU), for socket transports.
#include <dirent.h>

#include <string>

#include "bench/inventory/inventory.h"
#ifdef TRAINSCOPE_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

#include "base/text_file.h"

namespace ts {
namespace {

#ifdef TRAINSCOPE_HAVE_IBVERBS
// Nominal per-lane rate of an active_speed code in Gb/s, as ibstat reports it (4x NDR = 400).
double laneGbps(unsigned speed) {
  switch (speed) {
    case 1:
      return 2.5;  // SDR
    case 2:
      return 5.0;  // DDR
    case 4:
      return 10.0;  // QDR
    case 8:
      return 10.0;  // FDR10
    case 16:
      return 14.0;  // FDR
    case 32:
      return 25.0;  // EDR
    case 64:
      return 50.0;  // HDR
    case 128:
      return 100.0;  // NDR
    case 256:
      return 200.0;  // XDR
    default:
      return 0;
  }
}
int laneCount(unsigned width) {
  switch (width) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}
const char* portState(int s) {
  switch (s) {
    case IBV_PORT_DOWN:
      return "down";
    case IBV_PORT_INIT:
      return "init";
    case IBV_PORT_ARMED:
      return "armed";
    case IBV_PORT_ACTIVE:
      return "active";
    default:
      return "unknown";
  }
}
#endif

}  // namespace

nlohmann::json collectNicInventory() {
  nlohmann::json nics = {{"rdma", nlohmann::json::array()}, {"net", nlohmann::json::array()}};
#ifdef TRAINSCOPE_HAVE_IBVERBS
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) {
    nics["rdma_reason"] = "ibv_get_device_list failed";
  } else {
    for (int i = 0; i < n; ++i) {
      ibv_context* ctx = ibv_open_device(list[i]);
      if (!ctx) continue;
      ibv_device_attr attr{};
      if (ibv_query_device(ctx, &attr) == 0) {
        for (unsigned p = 1; p <= attr.phys_port_cnt; ++p) {
          ibv_port_attr pa{};
          if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
          const double rate = laneGbps(pa.active_speed) * laneCount(pa.active_width);
          nics["rdma"].push_back({{"device", ibv_get_device_name(list[i])},
                                  {"port", p},
                                  {"state", portState(pa.state)},
                                  {"link_layer", pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand"},
                                  {"rate_gbps", rate > 0 ? nlohmann::json(rate) : nlohmann::json(nullptr)}});
        }
      }
      ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    if (n == 0) nics["rdma_reason"] = "libibverbs found no devices";
  }
#else
  nics["rdma_reason"] = "built without libibverbs";
#endif
  if (DIR* d = ::opendir("/sys/class/net")) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || name == "lo") continue;
      const std::string base = "/sys/class/net/" + name + "/";
      const std::string speed = readFirstLine(base + "speed");
      const std::string mtu = readFirstLine(base + "mtu");
      nlohmann::json entry = {{"name", name}, {"state", readFirstLine(base + "operstate")}};
      // speed reads -1 (or fails) for virtual and down links
      entry["speed_mbps"] = (!speed.empty() && speed[0] != '-') ? nlohmann::json(std::stol(speed)) : nlohmann::json(nullptr);
      entry["mtu"] = mtu.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::stol(mtu));
      nics["net"].push_back(entry);
    }
    ::closedir(d);
  }
  return nics;
}

}  // namespace ts
