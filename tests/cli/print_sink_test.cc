#include "cli/print_sink.h"

#include <gtest/gtest.h>

namespace pktpath::cli {
namespace {

// One sequence of calls, both renderings.
template <typename F>
std::pair<std::string, std::string> both(F&& show) {
  PrintSink text(false), json(true);
  show(text);
  show(json);
  return {text.take_text(), json.json_text()};
}

TEST(PrintSink, OneSequenceRendersTextOrJsonInTheSameOrder) {
  auto [text, json] = both([](PrintSink& p) {
    p.open_object(nullptr);
    p.print_string(PRINT_ANY, "kind", "qdisc %s", "tbf");
    p.print_string(PRINT_ANY, "handle", " %s", "5:");
    p.print_string(PRINT_FP, nullptr, " ", "");
    p.print_bool(PRINT_ANY, "root", "root ", true);
    p.print_uint(PRINT_ANY, "refcnt", "refcnt %u ", 2);
    p.open_object("options");
    p.print_uint(PRINT_ANY, "rate", "rate %llu ", 1250000);
    p.print_uint(PRINT_JSON, "burst", nullptr, 1600);
    p.close_object();
    p.close_object();
  });
  EXPECT_EQ(text, "qdisc tbf 5: root refcnt 2 rate 1250000 ");
  EXPECT_EQ(json, R"([{"kind":"tbf","handle":"5:","root":true,"refcnt":2,"options":{"rate":1250000,"burst":1600}}])");
}

TEST(PrintSink, HexAndNullAndArrays) {
  auto [text, json] = both([](PrintSink& p) {
    p.open_object(nullptr);
    p.print_hex(PRINT_ANY, "fh", "fh %x ", 0x800);
    p.print_0xhex(PRINT_ANY, "mask", "mask %#x ", 0xff);
    p.print_null(PRINT_ANY, "flowid", "%s ", "???");
    p.open_array("keys");
    p.print_int(PRINT_ANY, nullptr, "%d,", -3);
    p.print_uint(PRINT_ANY, nullptr, "%08x", 0xab);
    p.close_array();
  });
  EXPECT_EQ(text, "fh 800 mask 0xff ??? -3,000000ab");
  EXPECT_EQ(json, R"([{"fh":"800","mask":"0xff","flowid":null,"keys":[-3,171]}])");
}

TEST(PrintSink, AKeyGivenTwiceAppearsTwiceAsIproute2WritesIt) {
  PrintSink p(true);
  p.open_object(nullptr);
  p.open_object("match");
  p.print_hex(PRINT_ANY, "value", "%08x", 1);
  p.close_object();
  p.open_object("match");
  p.print_hex(PRINT_ANY, "value", "%08x", 2);
  p.close_object();
  EXPECT_EQ(p.json_text(), R"([{"match":{"value":"1"},"match":{"value":"2"}}])");
}

TEST(PrintSink, FormatsTakeOneConversionOfTheValuesOwnType) {
  EXPECT_EQ(format_one("limit %up", uint64_t{100}), "limit 100p");
  EXPECT_EQ(format_one("%5s|", std::string_view("ab")), "   ab|");
  EXPECT_EQ(format_one("100%% of %s", std::string_view("x")), "100% of x");
  // A %s given a number prints the number; a second conversion stays as written.
  EXPECT_EQ(format_one("%s %n", uint64_t{7}), "7 %n");
  // A value never becomes a format.
  EXPECT_EQ(format_one("[%s]", std::string_view("%s%n%x")), "[%s%n%x]");
  EXPECT_EQ(format_one("%lld", int64_t{-5}), "-5");
  EXPECT_EQ(format_one("dangling %", uint64_t{1}), "dangling %");
}

TEST(PrintSink, TextModeIgnoresJsonOnlyFieldsAndStructure) {
  PrintSink p(false);
  p.open_object("x");
  p.print_uint(PRINT_JSON, "hidden", "hidden %u", 1);
  p.text(PRINT_FP, "shown");
  p.print_nl();
  p.close_object();
  EXPECT_EQ(p.take_text(), "shown\n");
  EXPECT_EQ(p.json_text(), "[]");
}

}  // namespace
}  // namespace pktpath::cli
