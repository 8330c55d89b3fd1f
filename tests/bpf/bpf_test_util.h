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

#include "bpf/jit.h"
#include "bpf/packet_set.h"
#include "bpf/program.h"

namespace pktpath::bpf::testing {

// The conformance vectors and captures under tests/data/conformance.
inline std::string data_path(const std::string& rel) {
  return std::string(PKTPATH_TEST_DATA_DIR) + "/conformance/" + rel;
}

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  return nlohmann::json::parse(f);
}

// Every engine: the two interpreters and the x86-64 JIT.
inline std::vector<Engine> engines() { return {Engine::Switch, Engine::Threaded, Engine::Jit}; }

// JIT options without the fallback, so that a program the JIT fails to compile is a test
// failure, not a silent interpreter run.
inline JitOptions strict_jit() {
  JitOptions o;
  o.allow_fallback = false;
  return o;
}

// Program::load with strict_jit().
inline std::optional<Program> load(std::span<const Insn> prog, Engine e, std::string* err,
                                   Acceptance mode = Acceptance::Kernel) {
  return Program::load(prog, e, mode, strict_jit(), err);
}

// libpcap's reference interpreter on the same instructions (wirelen, caplen as pcap has).
inline uint32_t pcap_run(const Insns& prog, const uint8_t* p, uint32_t wirelen, uint32_t caplen) {
  return bpf_filter(reinterpret_cast<const bpf_insn*>(prog.data()), p, wirelen, caplen);
}

}  // namespace pktpath::bpf::testing
