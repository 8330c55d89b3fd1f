// libFuzzer target for the capture-file reader behind `bpf run|bench --pcap`: the input
// is the file's bytes, read by read_pcap through a memfd path (as a file on disk is),
// then every packet's view is run through a small filter that loads from the packet
// and from its metadata. Every rejection must carry a message.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "bpf/packet_set.h"
#include "bpf/parse.h"
#include "bpf/program.h"

using namespace pktpath::bpf;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int fd = memfd_create("fuzz_pcap", 0);
  static std::optional<Program> prog = [] {
    Insns insns;
    std::string err;
    // ldh [12]; jeq #0x800, ipv4 : other; ld [26]; ret a ; other: ld #len; ret a
    if (!parse_bytecode_file_text("6,40 0 0 12,21 0 2 2048,32 0 0 26,22 0 0 0,128 0 0 0,22 0 0 0", &insns, &err))
      std::abort();
    return Program::load(insns, Engine::Switch, &err);
  }();
  if (fd < 0 || !prog) std::abort();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  PacketSet set;
  std::string err;
  if (!read_pcap(path, &set, &err)) {
    if (err.empty()) std::abort();
    return 0;
  }
  // Touch every byte the set claims (ASan checks the bounds), then run the filter.
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < set.size(); ++i)
    for (uint32_t k = 0; k < set.caplen(i); ++k) sink = sink ^ set.bytes(i)[k];
  for (const PacketView& v : set.views()) sink = sink ^ static_cast<uint8_t>(prog->run(v));
  return 0;
}
