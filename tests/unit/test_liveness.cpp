// The liveness census (comm/liveness.h, bench/failures/peer_census.h): what a peer's beacon answers tells a live
// process from a frozen one, a gone one and (in tests/integration/test_netns_cluster.py) an unreachable host.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include <gtest/gtest.h>

#include "base/error.h"
#include "bench/failures/peer_census.h"
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

BeaconCard cardOn(int rank, int port, const std::string& nonce = "n") {
  return BeaconCard{rank, "here", {"127.0.0.1"}, port, nonce};
}

TEST(Liveness, ALiveBeaconAnswersWithItsNonceAndOnlyThatCounts) {
  const LivenessBeacon self(0, "here", "127.0.0.1");
  const LivenessBeacon peer(1, "here", "127.0.0.1");
  BeaconCard impostor = peer.card();
  impostor.nonce = "another run's";
  const auto states = askBeacons(self.card(), {peer.card(), impostor}, 5.0);
  EXPECT_EQ(states, (std::vector<PeerState>{PeerState::kAlive, PeerState::kGone}));
}

TEST(Liveness, APortNobodyHoldsIsAGoneProcessAndASilentOneAFrozenProcess) {
  const LivenessBeacon self(0, "here", "127.0.0.1");
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
  // Its only address is one of ours (a docker bridge on every host, loopback): asking it would reach this host, so
  // the peer is not asked at all, and stays unreachable rather than being called gone by our own refusal.
  BeaconCard self = cardOn(0, 1);
  BeaconCard peer = cardOn(1, 1);
  peer.host = "elsewhere";
  peer.addresses = {"127.0.0.1"};
  EXPECT_EQ(askBeacons(self, {peer}, 0.2), std::vector<PeerState>{PeerState::kUnreachable});
  for (const std::string& mine : localIpv4Addresses()) {
    EXPECT_TRUE(isAddressOfThisHost(mine)) << mine;
    EXPECT_TRUE(addressesToReach(self, "elsewhere", {mine}).empty()) << mine;
  }
  EXPECT_EQ(addressesToReach(self, "elsewhere", {"127.0.0.1", "192.0.2.7"}), std::vector<std::string>{"192.0.2.7"});
  EXPECT_FALSE(isAddressOfThisHost("192.0.2.7"));  // TEST-NET-1: nobody's
  // On its own host a peer is asked where it listens.
  EXPECT_EQ(addressesToReach(self, "here", {"127.0.0.1"}), std::vector<std::string>{"127.0.0.1"});
}

// Issue #34: a beacon listened on every interface (0.0.0.0). It listens where it is told, and nowhere else.
TEST(Liveness, ABeaconListensOnlyOnTheAddressItIsGiven) {
  const LivenessBeacon beacon(1, "here", "127.0.0.1");
  EXPECT_EQ(beacon.card().addresses, std::vector<std::string>{"127.0.0.1"});
  std::vector<std::string> elsewhere = localIpv4Addresses();  // this host's other addresses, and loopback's
  elsewhere.push_back("127.0.0.2");
  for (const std::string& other : elsewhere) {
    const auto a = numericAddress(other, beacon.card().port);
    ASSERT_TRUE(a);
    const Socket s(::socket(AF_INET, SOCK_STREAM, 0));
    EXPECT_NE(::connect(s.fd(), reinterpret_cast<const sockaddr*>(&a->storage), a->length), 0) << other;
    EXPECT_EQ(errno, ECONNREFUSED) << other;
  }
  const LivenessBeacon asker(0, "here", "127.0.0.1");
  EXPECT_EQ(askBeacons(asker.card(), {beacon.card()}, 5.0), std::vector<PeerState>{PeerState::kAlive});
  EXPECT_THROW(LivenessBeacon(2, "here", "not an address"), Error);
  EXPECT_THROW(LivenessBeacon(2, "here", "192.0.2.7"), Error);  // no address of this host
}

TEST(Liveness, ABeaconOnIpv6LoopbackIsAskedThere) {
  std::unique_ptr<LivenessBeacon> peer;
  try {
    peer = std::make_unique<LivenessBeacon>(1, "here", "::1");
  } catch (const Error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  EXPECT_EQ(askBeacons(cardOn(0, 1), {peer->card()}, 5.0), std::vector<PeerState>{PeerState::kAlive});
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
