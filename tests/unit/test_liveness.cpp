// The liveness census (comm/liveness.h, bench/session/peer_census.h): what a peer's beacon answers tells a live
// process from a frozen one, a gone one and (in tests/integration/test_netns_cluster.py) an unreachable host.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/error.h"
#include "bench/session/peer_census.h"
#include "comm/liveness.h"
#include "comm/tcp_socket.h"

namespace ts {
namespace {

// A socket listening on a loopback port that never accepts: the kernel completes the handshake, nobody answers,
// as for a stopped process.
struct SilentListener {
  Socket socket{::socket(AF_INET, SOCK_STREAM, 0)};
  int port = 0;
  explicit SilentListener(bool listening) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(::bind(socket.fd(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&a), &len), 0);
    port = ntohs(a.sin_port);
    if (listening) {
      EXPECT_EQ(::listen(socket.fd(), 4), 0);
    }
  }
};

BeaconCard cardOn(int rank, int port, const std::string& nonce = "n") { return BeaconCard{rank, "here", {}, port, nonce}; }

TEST(Liveness, ALiveBeaconAnswersWithItsNonceAndOnlyThatCounts) {
  const LivenessBeacon self(0, "here");
  const LivenessBeacon peer(1, "here");
  BeaconCard impostor = peer.card();
  impostor.nonce = "another run's";
  const auto states = askBeacons(self.card(), {peer.card(), impostor}, 5.0);
  EXPECT_EQ(states, (std::vector<PeerState>{PeerState::kAlive, PeerState::kGone}));
}

TEST(Liveness, APortNobodyHoldsIsAGoneProcessAndASilentOneAFrozenProcess) {
  const LivenessBeacon self(0, "here");
  const SilentListener silent(true);
  int closedPort = 0;
  {
    const SilentListener bound(false);  // bound, not listening: connections are refused
    closedPort = bound.port;
  }
  const auto states = askBeacons(self.card(), {cardOn(1, closedPort), cardOn(2, silent.port)}, 0.3);
  EXPECT_EQ(states, (std::vector<PeerState>{PeerState::kGone, PeerState::kFrozen}));
}

TEST(Liveness, APeerOnAnotherHostIsAskedOnlyAtAddressesThisHostDoesNotHave) {
  // Its only address is one of ours (a docker bridge on every host): asking it would reach this host, so the peer
  // is not asked at all, and stays unreachable rather than being called gone by our own refusal.
  BeaconCard self = cardOn(0, 1);
  self.addresses = {"127.0.0.1"};
  BeaconCard peer = cardOn(1, 1);
  peer.host = "elsewhere";
  peer.addresses = {"127.0.0.1"};
  EXPECT_EQ(askBeacons(self, {peer}, 0.2), std::vector<PeerState>{PeerState::kUnreachable});
}

TEST(Liveness, CardsTravelAsTextAndAMalformedOneIsAnError) {
  const BeaconCard c{3, "node-7", {"10.0.0.7", "192.168.1.7"}, 41234, "abc"};
  const BeaconCard back = BeaconCard::decode(c.encode());
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.host, "node-7");
  EXPECT_EQ(back.addresses, c.addresses);
  EXPECT_EQ(back.port, 41234);
  EXPECT_EQ(back.nonce, "abc");
  EXPECT_THROW(BeaconCard::decode("{\"rank\": 1}"), Error);
  EXPECT_THROW(BeaconCard::decode("not json"), Error);
}

TEST(PeerCensus, NamesEachLostHostWithItsRanksAndEachLostProcess) {
  const std::vector<BeaconCard> peers = {cardOn(1, 1), cardOn(2, 1), cardOn(3, 1), cardOn(4, 1), cardOn(5, 1)};
  std::vector<BeaconCard> placed = peers;
  placed[0].host = placed[1].host = "h2";  // ranks 1 and 2 on h2, 3 and 4 on h3, 5 on h4
  placed[2].host = placed[3].host = "h3";
  placed[4].host = "h4";
  EXPECT_EQ(describePeers(placed, {PeerState::kUnreachable, PeerState::kUnreachable, PeerState::kAlive, PeerState::kGone,
                                   PeerState::kFrozen}),
            "host h2 (ranks 1, 2) does not answer (the host or its link is down); rank 4 on host h3 is gone (the host answers, "
            "the process does not); rank 5 on host h4 accepts but does not answer (a stopped or stuck process)");
  EXPECT_EQ(describePeers(placed, std::vector<PeerState>(5, PeerState::kAlive)),
            "every peer's process answers (so the stall is in the communication itself: the network, or a peer stuck inside it)");
  EXPECT_EQ(describePeers({}, {}), "");
}

}  // namespace
}  // namespace ts
