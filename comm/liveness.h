#pragma once
// Who is still there, asked outside the run's own transport. When a process waits too long for its peers
// inside a collective, the collective cannot say whom it waits for; so every process of a multi-process run
// keeps a beacon (a TCP listener that answers each connection with its nonce and closes it), and the process
// that reports the timeout asks every peer's beacon, with a deadline:
//   answers with its nonce        alive (its process runs; the stall is elsewhere);
//   accepts but does not answer   frozen (the kernel accepts for a stopped process; nothing replies);
//   refuses the connection        gone (its host is up, its process is not);
//   nothing within the deadline   unreachable (the host, or its link, is down).
// A beacon listens only on the address the run's processes reach each other by (bootstrap_interface.h), never on
// every interface. A peer on another host is never asked at an address this host has too (a docker bridge on
// every host): the answer would come from here.
#include <memory>
#include <string>
#include <vector>

#include "base/enum_names.h"

namespace ts {

// How a peer's beacon is reached: what each process publishes to the others at the start of a run.
struct BeaconCard {
  int rank = 0;
  std::string host;                    // its hostname
  std::vector<std::string> addresses;  // where its beacon listens (one numeric address; none when it has no beacon)
  int port = 0;
  std::string nonce;  // what its beacon answers: proves the answer is that process's, not a stranger's on the port

  std::string encode() const;                         // one line of text, for the bootstrap's allGatherStrings
  static BeaconCard decode(const std::string& text);  // Error on a malformed card
};

// Ordered from no sign of life to alive: a peer asked at several addresses is as alive as its best answer.
enum class PeerState { kUnreachable, kGone, kFrozen, kAlive };

template <>
struct EnumNames<PeerState> {
  static constexpr std::pair<std::string_view, PeerState> kNames[] = {{"alive", PeerState::kAlive},
                                                                      {"frozen", PeerState::kFrozen},
                                                                      {"gone", PeerState::kGone},
                                                                      {"unreachable", PeerState::kUnreachable}};
};

class LivenessBeacon {
 public:
  // Listens on an ephemeral port of `address` (numeric, IPv4 or IPv6) only. Error when it cannot.
  LivenessBeacon(int rank, const std::string& host, const std::string& address);
  ~LivenessBeacon();
  LivenessBeacon(const LivenessBeacon&) = delete;
  LivenessBeacon& operator=(const LivenessBeacon&) = delete;
  const BeaconCard& card() const { return card_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  BeaconCard card_;
};

// Asks every card's beacon at once; returns one state per card, in order. `self` is the asking process's own card
// (its host tells which peers share it).
std::vector<PeerState> askBeacons(const BeaconCard& self, const std::vector<BeaconCard>& peers, double deadlineS);

// This host's IPv4 addresses, loopback excluded.
std::vector<std::string> localIpv4Addresses();

// True when `address` (numeric) is one of this host's: loopback, or an address of one of its interfaces.
bool isAddressOfThisHost(const std::string& address);

// The addresses `self` reaches a process on `host` that listens at `addresses` by: all of them on its own host,
// else those this host does not have too (a docker bridge on every host, loopback: the answer would come from here).
std::vector<std::string> addressesToReach(const BeaconCard& self, const std::string& host,
                                          const std::vector<std::string>& addresses);

// A random 128-bit value as 32 hex digits (a beacon's nonce, the lifeline hub's key).
std::string randomHex128();

// A pipe whose write end wakes a thread that polls its read end (to stop it, or to have it look again).
class WakePipe {
 public:
  WakePipe();  // Error when the pipe cannot be made
  ~WakePipe();
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;
  int readFd() const { return fd_[0]; }
  int writeFd() const { return fd_[1]; }
  void wake() const;   // never blocks
  void drain() const;  // reads every byte written so far

 private:
  int fd_[2] = {-1, -1};
};

}  // namespace ts
