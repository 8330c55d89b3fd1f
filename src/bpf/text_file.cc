#include "bpf/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pktpath::bpf {

namespace {

std::string limit_text(size_t limit) {
  return limit % (1u << 20) == 0 ? std::to_string(limit >> 20) + " MiB" : std::to_string(limit) + " bytes";
}

}  // namespace

bool read_text_file(const std::string& path, size_t limit, std::string* out, std::string* err) {
  const bool is_stdin = path == "-";
  const std::string name = is_stdin ? "<stdin>" : path;
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = name + ": cannot open: " + std::strerror(errno);
    return false;
  }
  auto done = [&](bool ok, std::string why) {
    if (!is_stdin) ::close(fd);
    if (!ok) *err = name + ": " + why;
    return ok;
  };
  struct stat st;
  if (::fstat(fd, &st) != 0) return done(false, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return done(false, "is a directory");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
    return done(false, "not a regular file");
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > limit)
    return done(false, "larger than " + limit_text(limit));
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return done(false, std::string("read failed: ") + std::strerror(errno));
    }
    if (n == 0) break;
    if (std::memchr(buf, '\0', static_cast<size_t>(n))) return done(false, "binary data (a NUL byte), not text");
    if (text.size() + static_cast<size_t>(n) > limit) return done(false, "larger than " + limit_text(limit));
    text.append(buf, static_cast<size_t>(n));
  }
  *out = std::move(text);
  return done(true, "");
}

}  // namespace pktpath::bpf
