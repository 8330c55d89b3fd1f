// TraceWriter's sojourn histogram: every value lands in a bucket whose top bounds it
// within 1/128; an empty trace still ends with its end record.
#include "core/packet_trace.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace pktpath {
namespace {

TEST(PacketTrace, BucketsBoundTheirValuesWithinOnePart128) {
  for (unsigned b = 0; b < TraceWriter::kBuckets; ++b) {
    EXPECT_EQ(TraceWriter::bucket_of(TraceWriter::bucket_top(b)), b) << b;
    if (b + 1 < TraceWriter::kBuckets) {
      EXPECT_EQ(TraceWriter::bucket_of(TraceWriter::bucket_top(b) + 1), b + 1) << b;
    }
  }
  for (uint64_t v : {uint64_t{0}, uint64_t{15}, uint64_t{127}, uint64_t{128}, uint64_t{1000}, uint64_t{123456789},
                     UINT64_MAX / 3}) {
    const uint64_t top = TraceWriter::bucket_top(TraceWriter::bucket_of(v));
    EXPECT_GE(top, v);
    EXPECT_LE(top - v, v / 128) << v;
    if (v < 128) {
      EXPECT_EQ(top, v);  // exact below 128 ns
    }
  }
  EXPECT_EQ(TraceWriter::bucket_of(UINT64_MAX), TraceWriter::kBuckets - 1);
}

TEST(PacketTrace, AnEmptyTraceEndsWithItsEndRecord) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  TraceWriter w(f);
  EXPECT_TRUE(w.finish(42, 3));
  EXPECT_TRUE(w.finish(43, 4));  // once only
  std::rewind(f);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  EXPECT_EQ(std::string(buf, n), "{\"end\":{\"t_ns\":42,\"sent\":0,\"dropped\":0,\"queued\":3}}\n");
  std::fclose(f);
}

}  // namespace
}  // namespace pktpath
