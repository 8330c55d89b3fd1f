// tcpdump's options (tcpdump.c's getopt loop), for the flags pktpath takes.
#include "cli/tcpdump_args.h"

#include <strings.h>

#include "bpf/disasm.h"
#include "bpf/parse.h"
#include "cli/script.h"

namespace pktpath::cli {

namespace {

bool is_option_word(const std::string& w) { return w.size() > 1 && w[0] == '-'; }

// One option's value (already split from its word); false with err for a bad one.
bool take_value(char opt, const std::string& v, const std::string& cmd, TcpdumpArgs& a,
                Error& err) {
  const std::string flag = std::string("-") + opt;
  auto bad = [&](const std::string& what) { return fail(err, v, cmd + ": " + flag + ": " + what); };
  switch (opt) {
    case 'c': {
      uint64_t n = 0;
      if (!parse_u64(v, n) || n == 0)
        return bad("invalid packet count \"" + v + "\" (expected 1 or more)");
      a.count = n;
      return true;
    }
    case 's': {
      uint32_t n = 0;
      if (!parse_u32(v, n) || n > kTapDefaultSnaplen)
        return bad("invalid snaplen \"" + v + "\" (expected 0..262144; 0 = 262144)");
      a.snaplen = n == 0 ? kTapDefaultSnaplen : n;
      return true;
    }
    case 'Q':
      if (strcasecmp(v.c_str(), "in") == 0)
        a.direction = TapDirection::In;
      else if (strcasecmp(v.c_str(), "out") == 0)
        a.direction = TapDirection::Out;
      else if (strcasecmp(v.c_str(), "inout") == 0)
        a.direction = TapDirection::InOut;
      else
        return bad("unknown capture direction \"" + v + "\" (expected in, out or inout)");
      return true;
    case 'y':
      if (strcasecmp(v.c_str(), "EN10MB") != 0)
        return bad("data link type \"" + v +
                   "\" is not supported (only EN10MB; -i any is LINUX_SLL)");
      return true;
    case 'i':
    case 'w':
    case 'r': {
      if (v.empty()) return bad(opt == 'i' ? "empty device name" : "expected a file name");
      (opt == 'i' ? a.dev : opt == 'w' ? a.write : a.read) = v;
      return true;
    }
  }
  return false;
}

}  // namespace

bool parse_tcpdump_args(const std::vector<std::string>& w, const std::string& cmd, TcpdumpArgs& a,
                        Error& err) {
  bool options_done = false, link_en10mb = false;
  std::string filter;
  for (size_t i = 0; i < w.size(); ++i) {
    const std::string& word = w[i];
    if (options_done || !is_option_word(word)) {
      // tcpdump joins the words after its options into one expression.
      if (!filter.empty()) filter += ' ';
      filter += word;
      continue;
    }
    if (word == "--") {
      options_done = true;
      continue;
    }
    if (word.rfind("--", 0) == 0) {
      if (word != "--json")
        return fail(err, word, cmd + ": unknown option \"" + word + "\" (long options: --json)");
      a.json = true;
      continue;
    }
    // A cluster of one-letter options; one that takes a value ends it, with the rest of
    // the word or the next word as the value (getopt).
    for (size_t j = 1; j < word.size(); ++j) {
      const char c = word[j];
      switch (c) {
        case 'p':  // no promiscuous mode here
        case 'n':  // no name resolution here
          continue;
        case 'e':
          a.link_header = true;
          continue;
        case 'v':
          ++a.verbose;
          continue;
        case 'U':
          a.packet_buffered = true;
          continue;
        case 'd':
          ++a.dump;
          continue;
        case 'c':
        case 's':
        case 'Q':
        case 'y':
        case 'i':
        case 'w':
        case 'r': {
          std::string v;
          if (j + 1 < word.size()) {
            v = word.substr(j + 1);
          } else {
            if (i + 1 >= w.size())
              return fail(err, word, cmd + ": -" + std::string(1, c) + ": missing value");
            v = w[++i];
          }
          if (!take_value(c, v, cmd, a, err)) return false;
          if (c == 'y') link_en10mb = true;
          j = word.size();
          continue;
        }
        default:
          return fail(
              err, word,
              cmd + ": unknown option -" + std::string(1, c) +
                  (word.size() > 2 ? " in \"" + word + "\"" : "") +
                  " (expected -c, -d, -e, -i, -n, -p, -Q, -r, -s, -U, -v, -w, -y or a filter)");
      }
    }
  }
  if (link_en10mb && a.any())
    return fail(err, "-y", cmd + ": -y EN10MB: -i any captures LINUX_SLL (Linux cooked) only");
  a.filter = std::move(filter);
  return true;
}

}  // namespace pktpath::cli

namespace pktpath::cli {

bool tcpdump_compile(const TcpdumpArgs& a, bpf::Insns* out, std::string* err) {
  bpf::CompileOptions co;
  co.netmask = kTcpdumpNetmask;
  if (!a.read.empty()) {
    co.savefile = a.read;
  } else {
    co.linktype = tcpdump_linktype(a);
    co.snaplen = static_cast<int>(a.snaplen);
  }
  return bpf::compile_expression(a.filter, co, out, err);
}

std::string tcpdump_listing(const bpf::Insns& prog, int dump) {
  return dump >= 3   ? bpf::format_ddd(prog)
         : dump == 2 ? bpf::format_dd(prog)
                     : bpf::disassemble(prog);
}

}  // namespace pktpath::cli
