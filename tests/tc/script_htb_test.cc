// htb through tc lines: qdisc and class words, grafting a leaf's qdisc, `tc class show`
// / `tc -s class show` / `tc -j class show` and `tc qdisc show` in iproute2's format,
// filters at `parent 1:` (u32 and flower with flowid/classid) classifying packets sent
// through the device, and parse errors naming the word.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "script_runner.h"
#include "core/dev_xmit.h"
#include "sched/sch_api.h"

namespace pktpath::cli {
namespace {

class HtbCli : public DeviceCliTest {
 protected:
  // An IPv4/UDP frame to `dst` (port `dport`) sent through t0 on the control Cpu.
  void send_ip(const char* dst, uint16_t dport = 80, uint32_t priority = 0) {
    Cpu& cpu = runner_.control_cpu();
    Packet* p = cpu.alloc();
    ASSERT_NE(p, nullptr);
    uint8_t* d = p->put(14 + 20 + 8);
    std::memset(d, 0, p->len);
    d[12] = 0x08;
    d[14] = 0x45;
    d[14 + 3] = 28;
    d[14 + 8] = 64;
    d[14 + 9] = 17;
    inet_pton(AF_INET, "192.168.1.2", d + 14 + 12);
    inet_pton(AF_INET, dst, d + 14 + 16);
    d[34 + 2] = static_cast<uint8_t>(dport >> 8);
    d[34 + 3] = dport & 0xff;
    p->protocol = htons(0x0800);
    p->priority = priority;
    p->dev = runner_.table().find("t0");
    dev_queue_xmit(cpu, p);
  }
  // A class's packets as the qdisc counts them.
  uint64_t class_packets(uint32_t classid) {
    Qdisc* q = runner_.table().find("t0")->qdisc();
    for (const auto& c : q->class_dump(0))
      if (c.classid == classid) return c.stats.packets;
    return ~uint64_t{0};
  }
  void setup_tree() {
    run("tc qdisc add dev t0 root handle 1: htb default 20");
    run("tc class add dev t0 parent 1: classid 1:1 htb rate 2mbit");
    run("tc class add dev t0 parent 1:1 classid 1:10 htb rate 1mbit ceil 2mbit");
    run("tc class add dev t0 parent 1:1 classid 1:20 htb rate 1mbit ceil 2mbit prio 1");
  }
};

TEST_F(HtbCli, ClassShowQdiscShowAndGraft) {
  setup_tree();
  run("tc qdisc add dev t0 parent 1:10 handle 10: fq_codel");
  // The kernel's class hash order (1:1 and 1:10 share a bucket, the later first) and
  // print_class's trailing space.
  EXPECT_EQ(show("tc class show dev t0"),
            "class htb 1:10 parent 1:1 leaf 10: prio 0 rate 1Mbit ceil 2Mbit burst 1600b cburst 1600b \n"
            "class htb 1:1 root rate 2Mbit ceil 2Mbit burst 1600b cburst 1600b \n"
            "class htb 1:20 parent 1:1 prio 1 rate 1Mbit ceil 2Mbit burst 1600b cburst 1600b \n");
  const std::string qs = show("tc qdisc show dev t0");
  EXPECT_EQ(qs.substr(0, qs.find('\n')),
            "qdisc htb 1: root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000");
  EXPECT_NE(qs.find("qdisc fq_codel 10: parent 1:10 limit 10240p"), std::string::npos) << qs;
  const std::string st = show("tc -s class show dev t0");
  EXPECT_NE(st.find("class htb 1:20 parent 1:1 prio 1 rate 1Mbit ceil 2Mbit burst 1600b cburst 1600b \n"
                    " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
                    " backlog 0b 0p requeues 0\n"
                    " lended: 0 borrowed: 0 giants: 0\n"
                    " tokens: 200000 ctokens: 100000\n\n"),
            std::string::npos)
      << st;
  auto j = nlohmann::json::parse(show("tc -j class show dev t0"));
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[1]["class"], "htb");
  EXPECT_EQ(j[1]["handle"], "1:1");
  EXPECT_EQ(j[1]["root"], true);
  EXPECT_EQ(j[0]["parent"], "1:1");
  EXPECT_EQ(j[0]["leaf"], "10:");
  EXPECT_EQ(j[0]["rate"], 125000);
  EXPECT_EQ(j[0]["ceil"], 250000);
  EXPECT_EQ(j[0]["burst"], 1600);
  // change keeps the class, with its new words; del of the grafted qdisc brings a pfifo back.
  run("tc class change dev t0 classid 1:20 htb rate 512kbit ceil 1mbit burst 3200");
  EXPECT_NE(show("tc class show dev t0").find("class htb 1:20 parent 1:1 prio 0 rate 512Kbit ceil 1Mbit burst 3200b"),
            std::string::npos);
  run("tc qdisc del dev t0 parent 1:10 handle 10:");
  EXPECT_EQ(show("tc qdisc show dev t0").find("fq_codel"), std::string::npos);
  run("tc class del dev t0 classid 1:20");
  EXPECT_EQ(show("tc class show dev t0").find("1:20"), std::string::npos);
}

// u32's hashed form as the LARTC guide writes it: the pref, a 256-bucket table, a root
// node hashing 10.0.0.0/24 destinations on their last byte into it, one node per host
// (placed by `ht 2:N:` and by `sample`); tc filter show lists tables and nodes in the
// kernel's order, and deleting a table still linked to is refused.
TEST_F(HtbCli, U32HashTableClassifies) {
  setup_tree();
  run("tc filter add dev t0 parent 1: prio 5 protocol ip u32");
  run("tc filter add dev t0 parent 1: prio 5 handle 2: protocol ip u32 divisor 256");
  run("tc filter add dev t0 parent 1: prio 5 protocol ip u32 ht 800:: match ip dst 10.0.0.0/24 "
      "hashkey mask 0x000000ff at 16 link 2:");
  run("tc filter add dev t0 parent 1: prio 5 protocol ip u32 ht 2:1: match ip dst 10.0.0.1 flowid 1:10");
  run("tc filter add dev t0 parent 1: prio 5 protocol ip u32 ht 2: sample ip dst 10.0.0.7 match ip dst 10.0.0.7 "
      "flowid 1:10");
  send_ip("10.0.0.1");
  send_ip("10.0.0.7");
  send_ip("10.0.0.9");  // an empty bucket: no class, the default 1:20
  send_ip("10.0.1.1");  // the root node does not match
  runner_.drain_pending();
  EXPECT_EQ(class_packets(0x10010), 2u);
  EXPECT_EQ(class_packets(0x10020), 2u);
  EXPECT_EQ(show("tc -s filter show dev t0 parent 1:"),
            "filter protocol ip pref 5 u32 chain 0 \n"
            "filter protocol ip pref 5 u32 chain 0 fh 2: ht divisor 256 \n"
            "filter protocol ip pref 5 u32 chain 0 fh 2:1:800 order 2048 key ht 2 bkt 1 *flowid 1:10 not_in_hw "
            "(rule hit 1 success 1)\n"
            "  match 0a000001/ffffffff at 16\n"
            "filter protocol ip pref 5 u32 chain 0 fh 2:7:800 order 2048 key ht 2 bkt 7 *flowid 1:10 not_in_hw "
            "(rule hit 1 success 1)\n"
            "  match 0a000007/ffffffff at 16\n"
            "filter protocol ip pref 5 u32 chain 0 fh 800: ht divisor 1 \n"
            "filter protocol ip pref 5 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 link 2: not_in_hw "
            "(rule hit 4 success 0)\n"
            "  match 0a000000/ffffff00 at 16\n"
            "    hash mask 000000ff at 16 \n");
  EXPECT_NE(run_error("tc filter del dev t0 parent 1: prio 5 handle 2: u32").find("in-use"), std::string::npos);
  EXPECT_NE(run_error("tc filter add dev t0 parent 1: prio 5 protocol ip u32 ht 3:1: match ip dst 10.0.0.3 "
                      "flowid 1:10")
                .find("not found (3:)"),
            std::string::npos);
  run("tc filter del dev t0 parent 1: prio 5 handle 800::800 u32");
  EXPECT_NE(show("tc filter show dev t0 parent 1:"), "");
  // The table goes with its knodes: the qdisc's only u32 pref has no knode left, so it
  // goes whole (u32_delete's *last), as the kernel shows.
  run("tc filter del dev t0 parent 1: prio 5 handle 2: u32");
  EXPECT_EQ(show("tc filter show dev t0 parent 1:"), "");
}

// tc_ctl_tclass picks the qdisc from the classid's major (the root's only when it has
// none, `parent root` too) and completes a parent without a major (`:10`).
TEST_F(HtbCli, ClassLinesFindTheirQdiscAsTheKernel) {
  run("tc qdisc add dev t0 root handle 1: htb");
  run("tc class add dev t0 parent 1: classid 1:10 htb rate 1mbit");
  run("tc qdisc add dev t0 parent 1:10 handle 2: htb");
  run("tc class add dev t0 parent root classid 2:5 htb rate 1mbit");  // in 2:, a root class
  run("tc class add dev t0 parent 1: classid 1:11 htb rate 1mbit");
  run("tc class add dev t0 parent :11 classid 1:21 htb rate 1mbit");  // under 1:11
  const std::string shown = show("tc class show dev t0");
  EXPECT_NE(shown.find("class htb 2:5 root "), std::string::npos) << shown;
  EXPECT_NE(shown.find("class htb 1:21 parent 1:11 "), std::string::npos) << shown;
  EXPECT_EQ(shown.find("class htb 1:5 "), std::string::npos) << shown;
  ScriptError e;
  EXPECT_FALSE(try_run("tc class add dev t0 parent root classid 7:5 htb rate 1mbit", e));
  EXPECT_NE(e.msg.find("No such file or directory"), std::string::npos) << e.msg;
}

// An htb class's filter list shares its qdisc's u32 numbering: when the class goes, its
// prefs leave the numbering, so the qdisc's last pref losing its knode goes whole and
// the next pref starts at 800: again.
TEST_F(HtbCli, U32IdsForgetAClassThatGoes) {
  run("tc qdisc add dev t0 root handle 1: htb");
  run("tc class add dev t0 parent 1: classid 1:10 htb rate 1mbit");
  run("tc filter add dev t0 parent 1: prio 3 u32 match u32 0 0 flowid 1:1");
  run("tc filter add dev t0 parent 1:10 prio 4 u32 match u32 0 0 flowid 1:1");
  EXPECT_NE(show("tc filter show dev t0 parent 1:10").find("fh 801::800 "), std::string::npos);
  run("tc class del dev t0 classid 1:10");
  run("tc filter del dev t0 parent 1: prio 3 handle 800::800 u32");
  EXPECT_EQ(show("tc filter show dev t0 parent 1:"), "");
  run("tc filter add dev t0 parent 1: prio 5 u32 match u32 1 1 flowid 1:1");
  EXPECT_NE(show("tc filter show dev t0 parent 1:").find("fh 800::800 "), std::string::npos);
}

TEST_F(HtbCli, FiltersAtTheQdiscClassify) {
  setup_tree();
  run("tc filter add dev t0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.1/32 flowid 1:10");
  run("tc filter add dev t0 parent 1: protocol ip prio 2 flower dst_ip 10.0.0.2 classid 1:20");
  run("tc filter add dev t0 parent 1: protocol ip prio 3 u32 match ip dst 10.0.0.3/32 flowid 1:");
  send_ip("10.0.0.1");
  send_ip("10.0.0.1");
  send_ip("10.0.0.2");
  send_ip("10.9.9.9");           // no filter: default 1:20
  send_ip("10.0.0.3");           // flowid 1: = X:0: the direct queue
  send_ip("10.0.0.2", 80, 0x10010);  // priority names a leaf: before the filters
  runner_.drain_pending();
  EXPECT_EQ(class_packets(0x10010), 3u);
  EXPECT_EQ(class_packets(0x10020), 2u);
  EXPECT_NE(show("tc qdisc show dev t0").find("direct_packets_stat 1"), std::string::npos);
  const std::string fs = show("tc filter show dev t0 parent 1:");
  EXPECT_NE(fs.find("filter protocol ip pref 1 u32 chain 0"), std::string::npos) << fs;
  EXPECT_NE(fs.find("flowid 1:10"), std::string::npos) << fs;
  EXPECT_NE(fs.find("filter protocol ip pref 2 flower chain 0"), std::string::npos) << fs;
  run("tc filter del dev t0 parent 1: prio 1");
  send_ip("10.0.0.1");  // now unclassified: default
  runner_.drain_pending();
  EXPECT_EQ(class_packets(0x10020), 3u);
  const QdiscStats s = runner_.table().find("t0")->qdisc()->stats();
  EXPECT_EQ(s.packets, 7u);
  EXPECT_EQ(s.qlen, 0u);
  // 42-byte frames: the leaf sent on its own tokens (lended), the parent counts them too.
  const std::string cs = show("tc -s class show dev t0");
  EXPECT_NE(cs.find("class htb 1:10 parent 1:1 prio 0 rate 1Mbit ceil 2Mbit burst 1600b cburst 1600b \n"
                    " Sent 126 bytes 3 pkt (dropped 0, overlimits 0 requeues 0) \n"
                    " backlog 0b 0p requeues 0\n"
                    " lended: 3 borrowed: 0 giants: 0\n"),
            std::string::npos)
      << cs;
  EXPECT_NE(cs.find("class htb 1:1 root rate 2Mbit ceil 2Mbit burst 1600b cburst 1600b \n"
                    " Sent 252 bytes 6 pkt"),
            std::string::npos)
      << cs;
  EXPECT_NE(show("tc -s qdisc show dev t0").find(" Sent 294 bytes 7 pkt (dropped 0, overlimits 0 requeues 0) \n"),
            std::string::npos);
}

// Filters at an inner class: the qdisc's filter chooses 1:1 (inner), whose own filters
// choose the leaf (htb_classify's walk down cl->filter_list); a frame no class filter
// takes falls to the default. `tc filter show parent 1:1` lists the class's filters.
TEST_F(HtbCli, FiltersAtAnInnerClassContinueTheWalk) {
  setup_tree();
  run("tc filter add dev t0 parent 1: protocol ip prio 1 matchall classid 1:1");
  run("tc filter add dev t0 parent 1:1 protocol ip prio 1 u32 match ip dst 10.0.0.1/32 flowid 1:10");
  run("tc filter add dev t0 parent 1:1 protocol ip prio 2 flower dst_ip 10.0.0.2 classid 1:20");
  send_ip("10.0.0.1");
  send_ip("10.0.0.2");
  send_ip("10.0.0.2");
  send_ip("10.9.9.9");  // 1:1's filters take none of it: the default, 1:20
  send_ip("10.0.0.1", 80, 0x10001);  // priority names the inner class: its filters run
  runner_.drain_pending();
  EXPECT_EQ(class_packets(0x10010), 2u);
  EXPECT_EQ(class_packets(0x10020), 3u);
  const std::string fs = show("tc filter show dev t0 parent 1:1");
  EXPECT_NE(fs.find("filter protocol ip pref 1 u32 chain 0"), std::string::npos) << fs;
  EXPECT_NE(fs.find("pref 2 flower"), std::string::npos) << fs;
  EXPECT_EQ(fs.find("matchall"), std::string::npos) << fs;
  // A class filter that points back at its own inner class ends at the default.
  run("tc filter add dev t0 parent 1:1 protocol ip prio 3 matchall classid 1:1");
  send_ip("10.9.9.9");
  runner_.drain_pending();
  EXPECT_EQ(class_packets(0x10020), 4u);
  run("tc filter del dev t0 parent 1:1 prio 1");
  send_ip("10.0.0.1");
  runner_.drain_pending();
  EXPECT_EQ(class_packets(0x10010), 2u);
  EXPECT_EQ(class_packets(0x10020), 5u);
  const QdiscStats s = runner_.table().find("t0")->qdisc()->stats();
  EXPECT_EQ(s.packets, 7u);
  EXPECT_EQ(s.qlen, 0u);
}

TEST_F(HtbCli, ParseErrorsNameTheWord) {
  struct Case {
    const char* line;
    const char* word;
  };
  run("tc qdisc add dev t0 root handle 1: htb");
  const Case cases[] = {
      {"tc qdisc add dev t0 root handle 2: htb default zz", "zz"},
      {"tc qdisc add dev t0 root handle 2: htb bogus 1", "bogus"},
      {"tc class add dev t0 parent 1: classid 1:10 htb ceil 1mbit", "htb"},
      {"tc class add dev t0 parent 1: classid 1:10 htb rate fast", "fast"},
      {"tc class add dev t0 parent 1: classid 1:10 htb rate 1mbit burst big", "big"},
      {"tc class add dev t0 parent 1: classid 1:10 htb rate 1mbit prio", "prio"},
      {"tc class add dev t0 parent 1: classid 1:10 htb rate 1mbit linklayer atm", "linklayer"},
      {"tc class add dev t0 parent 1: classid 1:10 htb rate 1mbit quux 3", "quux"},
      {"tc class add dev t0 parent 1: classid zz htb rate 1mbit", "zz"},
      {"tc class add dev t0 parent 1: htb rate 1mbit", "htb"},
      {"tc class add dev t0 parent 1: classid 1:10 nosuch rate 1mbit", "nosuch"},
      {"tc class change dev t0 parent 1: classid 1:77 htb rate 1mbit", "htb"},  // runs: no class 1:77
      {"tc class add dev t0 parent 1: classid 5:10 htb rate 1mbit", "htb"},   // runs: no qdisc 5:
      {"tc class del dev t0 classid 1:99", "1:99"},                           // runs: no class
      {"tc filter add dev t0 parent 1:5 protocol ip prio 1 matchall flowid 1:10", "t0"},  // runs: no class 1:5
      {"tc filter add dev t0 parent 7: protocol ip prio 1 matchall flowid 1:10", "t0"},  // runs: no qdisc 7:
  };
  for (const Case& c : cases) {
    ScriptError e;
    EXPECT_FALSE(try_run(c.line, e)) << c.line;
    EXPECT_EQ(e.word, c.word) << c.line << ": " << e.msg;
  }
  // A class add for an existing class is refused; change of a missing one too.
  run("tc class add dev t0 parent 1: classid 1:10 htb rate 1mbit");
  ScriptError e;
  EXPECT_FALSE(try_run("tc class add dev t0 parent 1: classid 1:10 htb rate 1mbit", e));
  EXPECT_NE(e.msg.find("exists"), std::string::npos) << e.msg;
  EXPECT_FALSE(try_run("tc class change dev t0 classid 1:11 htb rate 1mbit", e));
  EXPECT_FALSE(try_run("tc qdisc change dev t0 root handle 1: htb default 10", e));
}

}  // namespace
}  // namespace pktpath::cli
