// Program::view_needs: what of a packet a program can read decides what the tc
// classifier puts in the view it hands the program; a wrong answer would feed a program
// an empty view, so every load form is checked here, and the results against full views.
#include <gtest/gtest.h>

#include "bpf/parse.h"
#include "bpf/program.h"

namespace pktpath::bpf {
namespace {

uint8_t needs_of(const char* bytecode) {
  Insns p;
  std::string err;
  EXPECT_TRUE(parse_bytecode(bytecode, &p, &err)) << err;
  return view_needs(p);
}

TEST(ViewNeeds, ProgramsWithoutLoadsNeedNothing) {
  EXPECT_EQ(needs_of("1,6 0 0 0,"), kViewNeedsNothing);                 // ret #0 (document 000)
  EXPECT_EQ(needs_of("3,0 0 0 7,7 0 0 0,22 0 0 0,"), kViewNeedsNothing);  // ld #7; tax; ret a
  EXPECT_EQ(needs_of("3,0 0 0 5,2 0 0 3,96 0 0 3,"), kViewNeedsNothing);  // scratch memory only
}

TEST(ViewNeeds, PacketLoadsNeedData) {
  EXPECT_EQ(needs_of("2,40 0 0 12,22 0 0 0,"), kViewNeedsData);         // ldh [12]
  EXPECT_EQ(needs_of("2,80 0 0 0,22 0 0 0,"), kViewNeedsData);          // ldb [x + 0]
  EXPECT_EQ(needs_of("2,128 0 0 0,22 0 0 0,"), kViewNeedsData);         // ld len
  EXPECT_EQ(needs_of("2,129 0 0 0,22 0 0 0,"), kViewNeedsData);         // ldx len
  EXPECT_EQ(needs_of("3,177 0 0 14,135 0 0 0,22 0 0 0,"), kViewNeedsData);  // ldx msh; txa
  EXPECT_EQ(needs_of("2,48 0 0 4293918720,22 0 0 0,"), kViewNeedsData);  // ldb [SKF_NET_OFF]
}

TEST(ViewNeeds, AncillaryLoadsNeedMetadata) {
  // ld proto (SKF_AD_OFF + 0) and ld ifindex (+ 8).
  EXPECT_EQ(needs_of("2,32 0 0 4294963200,22 0 0 0,"), kViewNeedsData | kViewNeedsMeta);
  EXPECT_EQ(needs_of("2,32 0 0 4294963208,22 0 0 0,"), kViewNeedsData | kViewNeedsMeta);
}

TEST(ViewNeeds, ProgramRecordsItsNeedsAtLoad) {
  Insns p;
  std::string err;
  ASSERT_TRUE(parse_bytecode("1,6 0 0 0,", &p, &err));
  for (Engine e : {Engine::Switch, Engine::Threaded, Engine::Jit}) {
    auto prog = Program::load(p, e, &err);
    ASSERT_TRUE(prog) << err;
    EXPECT_EQ(prog->view_needs(), kViewNeedsNothing);
    // A program that reads nothing gives the same result on an empty view as on a full one.
    uint8_t frame[60] = {};
    EXPECT_EQ(prog->run(PacketView{}), prog->run(PacketView::linear(frame, sizeof frame)));
  }
}

}  // namespace
}  // namespace pktpath::bpf
