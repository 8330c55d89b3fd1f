// Helpers shared by the classic BPF tests: conformance data paths, running a program on
// every engine, and libpcap's bpf_filter as the second oracle.
#pragma once

#include <pcap/pcap.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bpf/packet_set.h"
#include "bpf/program.h"

namespace pktpath::bpf::testing {

inline std::string shared_path(const std::string& rel) { return std::string(PKTPATH_SHARED_DIR) + "/" + rel; }

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  return nlohmann::json::parse(f);
}

// The interpreters this build has; the JIT joins when it loads.
inline std::vector<Engine> engines() { return {Engine::Switch, Engine::Threaded}; }

// libpcap's reference interpreter on the same instructions (wirelen, caplen as pcap has).
inline uint32_t pcap_run(const Insns& prog, const uint8_t* p, uint32_t wirelen, uint32_t caplen) {
  return bpf_filter(reinterpret_cast<const bpf_insn*>(prog.data()), p, wirelen, caplen);
}

}  // namespace pktpath::bpf::testing
