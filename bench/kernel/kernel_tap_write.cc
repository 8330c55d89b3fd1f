// kernel_tap_write: the plain sender pktpath's tap driver is measured against. Opens a
// TAP interface (IFF_TAP|IFF_NO_PI) named IF in the current network namespace, sets it up,
// and write()s one 60-byte frame (pktgen's: 11:11:11:11:11:11, UDP 9 -> 9) in a loop for
// S seconds; prints `pps N frames M errors E`. Links libc only. Needs CAP_NET_ADMIN.
// Usage: kernel_tap_write IF SECONDS
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::strlen(argv[1]) >= IFNAMSIZ || std::atof(argv[2]) <= 0) {
    std::fprintf(stderr, "usage: kernel_tap_write IF SECONDS\n");
    return 2;
  }
  const int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  std::memcpy(ifr.ifr_name, argv[1], std::strlen(argv[1]));
  if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
    std::fprintf(stderr, "kernel_tap_write: %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  const int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sk < 0 || ioctl(sk, SIOCGIFFLAGS, &ifr) != 0 || (ifr.ifr_flags |= IFF_UP, ioctl(sk, SIOCSIFFLAGS, &ifr)) != 0) {
    std::fprintf(stderr, "kernel_tap_write: setting %s up: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  // pktgen's frame: Ethernet, IPv4 (20 bytes, ttl 32, UDP), UDP 9 -> 9, zero payload.
  unsigned char f[60] = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00,
                         0x45, 0, 0, 46, 0, 0, 0, 0, 32, 17, 0, 0, 10, 0, 0, 1, 1, 1, 1, 1,
                         0, 9, 0, 9, 0, 26, 0, 0};
  const double secs = std::atof(argv[2]);
  unsigned long long frames = 0, errors = 0;
  const double t0 = now_s();
  double t = t0;
  while (t - t0 < secs) {
    for (int i = 0; i < 256; ++i) {
      if (write(fd, f, sizeof f) == static_cast<ssize_t>(sizeof f)) ++frames;
      else ++errors;
    }
    t = now_s();
  }
  std::printf("pps %.0f frames %llu errors %llu\n", static_cast<double>(frames) / (t - t0), frames, errors);
  close(sk);
  close(fd);
  return 0;
}
