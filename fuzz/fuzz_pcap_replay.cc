// libFuzzer target for the pcap device's replay: the input is a capture file's bytes,
// written to a memfd and replayed twice over (`loop 2`, `pace max`) by `ip link add ...
// type pcap rx` and `ip link set ... up` on a fresh ScriptRunner: libpcap checks the
// file's header, then the records are read in place from the mapped file up to one
// libpcap would refuse, which libpcap then reads from that offset. A failure must say
// why. (ASan does not see the mapping's bounds: a read past the file's end within its
// last page reads zeros unreported; the reader's bounds checks are what stop it.)
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/script_text.h"
#include "fuzz_script_run.h"

using namespace pktpath::cli;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 20) return 0;
  static std::FILE* devnull = std::fopen("/dev/null", "w");
  static int fd = memfd_create("fuzz_pcap_replay", 0);
  if (!devnull || fd < 0) std::abort();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  const std::string text = "ip link add dev p0 type pcap rx /proc/self/fd/" + std::to_string(fd) +
                           " pace max loop 2\nip link set dev p0 up\nip -s link show dev p0\n";
  std::vector<ScriptLine> lines;
  size_t bad = 0, last = 0;
  ScriptError err;
  if (!parse_script(text, lines, &bad, &last, err)) std::abort();
  fuzz_run_lines(lines, false, devnull);
  return 0;
}
