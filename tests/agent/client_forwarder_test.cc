// The forwarder's pacing arithmetic (src/agent/client_forwarder.h): how many
// pieces an operation takes, and when a piece may start at a memory node.
#include "agent/client_forwarder.h"

#include <gtest/gtest.h>

namespace pulse::agent {
namespace {

TEST(ClientForwarder, PieceCount) {
  constexpr uint64_t k64 = 64 << 10;
  EXPECT_EQ(PieceCount(0, k64), 1u);
  EXPECT_EQ(PieceCount(1, k64), 1u);
  EXPECT_EQ(PieceCount(k64, k64), 1u);
  EXPECT_EQ(PieceCount(k64 + 1, k64), 2u);
  EXPECT_EQ(PieceCount(1 << 20, k64), 16u);
}

TEST(ClientForwarder, FitsWindow) {
  constexpr uint64_t k64 = 64 << 10, window = 256 << 10;
  EXPECT_TRUE(FitsWindow(0, k64, window));
  EXPECT_TRUE(FitsWindow(3 * k64, k64, window)) << "the window's last piece";
  EXPECT_FALSE(FitsWindow(4 * k64, k64, window)) << "full";
  EXPECT_FALSE(FitsWindow(k64, window, window)) << "a large piece waits for the node to drain";
  EXPECT_TRUE(FitsWindow(0, 4 * window, window)) << "a piece larger than the window still goes alone";
}

}  // namespace
}  // namespace pulse::agent
