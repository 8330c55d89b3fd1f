// The installed C++ library (pktpath::pktpath): `cxx_consumer 'EXPR' FILE.pcap` prints
// what `pktpath bpf run --expr EXPR --pcap FILE` prints (userland acceptance, the
// capture's own handle), through Program and PacketSet;
// it first checks that the self-registering qdisc kinds survived the link.
#include <cstdio>
#include <string>

#include "bpf/check.h"
#include "bpf/packet_set.h"
#include "bpf/parse.h"
#include "bpf/program.h"
#include "core/netdevice.h"
#include "sched/qdisc.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: cxx_consumer 'EXPR' FILE.pcap\n");
    return 2;
  }
  if (pktpath::qdisc_lookup_ops("pfifo_fast") == nullptr) {
    std::fprintf(stderr, "cxx_consumer: no pfifo_fast kind (library not linked whole)\n");
    return 1;
  }
  namespace bpf = pktpath::bpf;
  std::string err;
  bpf::PacketSet set;
  if (!bpf::read_pcap(argv[2], &set, &err)) {
    std::fprintf(stderr, "cxx_consumer: %s\n", err.c_str());
    return 1;
  }
  bpf::CompileOptions co;
  co.savefile = argv[2];
  bpf::Insns insns;
  if (!bpf::compile_expression(argv[1], co, &insns, &err)) {
    std::fprintf(stderr, "cxx_consumer: %s\n", err.c_str());
    return 1;
  }
  auto prog = bpf::Program::load(insns, bpf::default_engine(), bpf::Acceptance::Userland, &err);
  if (!prog) {
    std::fprintf(stderr, "cxx_consumer: %s\n", err.c_str());
    return 1;
  }
  for (const bpf::PacketView& v : set.views()) std::printf("%u\n", prog->run(v));
  return 0;
}
