// kernel_xdp_send: the plain AF_XDP sender pktpath's xdp driver is measured against. One
// AF_XDP socket (libxdp, its default program) on IF's queue 0 in copy mode with its own
// UMEM; the same 60-byte frame written once into every UMEM frame, then N descriptors
// produced on the tx ring 32 at a time, one sendto per 32 (TX_BATCH_SIZE, what one call
// sends in copy mode), completions reclaimed in batches. Prints `pps P frames N`, the
// rate of the sending loop. Needs CAP_NET_RAW, CAP_BPF and CAP_NET_ADMIN.
// Usage: kernel_xdp_send IF COUNT [native|generic]
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr unsigned kFrames = 4096, kFrameSize = 4096, kBatch = 32;

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || std::strtoull(argv[2], nullptr, 10) == 0) {
    std::fprintf(stderr, "usage: kernel_xdp_send IF COUNT [native|generic]\n");
    return 2;
  }
  const unsigned long long count = std::strtoull(argv[2], nullptr, 10);
  const unsigned xdp_flags = argc == 4 && std::strcmp(argv[3], "native") == 0    ? XDP_FLAGS_DRV_MODE
                             : argc == 4 && std::strcmp(argv[3], "generic") == 0 ? XDP_FLAGS_SKB_MODE
                                                                                 : 0;
  const size_t len = size_t{kFrames} * kFrameSize;
  void* area = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (area == MAP_FAILED) return 1;
  xsk_umem* umem = nullptr;
  xsk_ring_prod fill, tx;
  xsk_ring_cons comp, rx;
  const xsk_umem_config ucfg{.fill_size = kFrames, .comp_size = kFrames, .frame_size = kFrameSize,
                             .frame_headroom = 0, .flags = 0};
  if (int rc = xsk_umem__create(&umem, area, len, &fill, &comp, &ucfg)) {
    std::fprintf(stderr, "kernel_xdp_send: xsk_umem__create: %s\n", std::strerror(-rc));
    return 1;
  }
  xsk_socket_config scfg{};
  scfg.rx_size = kFrames;
  scfg.tx_size = kFrames;
  scfg.xdp_flags = xdp_flags;
  scfg.bind_flags = XDP_COPY;
  xsk_socket* xsk = nullptr;
  if (int rc = xsk_socket__create(&xsk, argv[1], 0, umem, &rx, &tx, &scfg)) {
    std::fprintf(stderr, "kernel_xdp_send: xsk_socket__create on %s: %s\n", argv[1], std::strerror(-rc));
    return 1;
  }
  const int fd = xsk_socket__fd(xsk);
  // pktgen's frame: Ethernet to 02:00:00:00:00:02, IPv4 (ttl 32, UDP), UDP 9 -> 9.
  const unsigned char f[60] = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00,
                               0x45, 0, 0, 46, 0, 0, 0, 0, 32, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
                               0, 9, 0, 9, 0, 26, 0, 0};
  for (unsigned i = 0; i < kFrames; ++i) std::memcpy(static_cast<char*>(area) + size_t{i} * kFrameSize, f, sizeof f);
  unsigned long long sent = 0, done = 0;
  unsigned next = 0, in_flight = 0;
  const double t0 = now_s();
  while (done < count) {
    uint32_t idx = 0;
    const unsigned want = static_cast<unsigned>(
        std::min<unsigned long long>({kBatch, count - sent, kFrames - in_flight}));
    if (want && xsk_ring_prod__reserve(&tx, want, &idx) == want) {
      for (unsigned i = 0; i < want; ++i) {
        xdp_desc* d = xsk_ring_prod__tx_desc(&tx, idx + i);
        d->addr = uint64_t{next} * kFrameSize;
        d->len = sizeof f;
        d->options = 0;
        next = (next + 1) % kFrames;
      }
      xsk_ring_prod__submit(&tx, want);
      sent += want;
      in_flight += want;
    }
    if (sendto(fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0) < 0 && errno != EAGAIN && errno != EBUSY &&
        errno != ENOBUFS) {
      std::fprintf(stderr, "kernel_xdp_send: sendto: %s\n", std::strerror(errno));
      return 1;
    }
    const unsigned n = xsk_ring_cons__peek(&comp, kFrames, &idx);
    if (n) {
      xsk_ring_cons__release(&comp, n);
      in_flight -= n;
      done += n;
    }
  }
  const double t = now_s() - t0;
  std::printf("pps %.0f frames %llu\n", static_cast<double>(done) / t, done);
  xsk_socket__delete(xsk);
  xsk_umem__delete(umem);
  return 0;
}
