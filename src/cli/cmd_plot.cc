// `pktpath plot TRACE -o FILE.png|FILE.svg`: pictures of a `pktpath run --trace` file,
// drawn by gnuplot (Debian's gnuplot-nox): sojourn time of each sent packet over time
// per class, each class's throughput over time (its summary's bins), and each device's
// queue length over time (the qlen of every record). Exit 1 when the trace cannot be
// read or gnuplot is missing or fails, 2 for usage.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"

extern char** environ;

namespace pktpath::cli {

namespace {

// The first executable `name` on PATH, or empty.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (dir.empty()) continue;
    const std::string f = dir + "/" + name;
    if (::access(f.c_str(), X_OK) == 0 && !std::filesystem::is_directory(f)) return f;
  }
  return {};
}

// A gnuplot single-quoted string ('' is a quote).
std::string gp_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("''") : std::string(1, c);
  return o + "'";
}

struct Series {
  std::string title;
  std::string data;  // "x y\n" lines
};

int plot_fail(const std::string& msg) {
  std::fprintf(stderr, "pktpath: plot: %s\n", msg.c_str());
  return 1;
}

int cmd_plot(const std::vector<std::string>& args) {
  CLI::App app{"plot a trace of `pktpath run --trace`", "pktpath plot"};
  std::string trace, out;
  app.add_option("trace", trace, "trace file (JSON Lines)")->required();
  app.add_option("-o,--output", out, "picture to write: FILE.png or FILE.svg")->required();
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    return usage_error(std::string("plot: ") + e.what());
  }
  const std::string ext = std::filesystem::path(out).extension().string();
  if (ext != ".png" && ext != ".svg") return usage_error("plot: -o: expected a name ending in .png or .svg, got \"" + out + "\"");
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty())
    return plot_fail("gnuplot not found on PATH; install Debian's gnuplot-nox (apt-get install gnuplot-nox)");

  std::ifstream in(trace);
  if (!in) return plot_fail(trace + ": cannot open");
  // Sojourn per class and queue length per device, against seconds since the first record.
  std::map<std::string, Series> sojourn, qlen, tput;
  std::string line;
  size_t lineno = 0, records = 0;
  bool have_t0 = false;
  uint64_t t0 = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return plot_fail(trace + ":" + std::to_string(lineno) + ": not a JSON object");
    try {
      if (j.contains("summary")) {
        const auto& s = j["summary"];
        const std::string key = s.value("dev", "") + " " + s.value("class", "");
        const uint64_t st0 = s.value("t0_ns", uint64_t{0}), bin = s.value("bin_ns", uint64_t{1});
        Series& se = tput[key];
        se.title = key;
        const auto& bins = s.at("throughput_bps");
        for (size_t i = 0; i < bins.size(); ++i) {
          const double t = (double(st0 + i * bin) - double(have_t0 ? t0 : st0)) / 1e9;
          se.data += std::to_string(t) + " " + std::to_string(bins[i].get<double>() / 1e6) + "\n";
        }
        continue;
      }
      if (!j.contains("t_ns")) continue;  // the end record
      const uint64_t t = j.at("t_ns").get<uint64_t>();
      if (!have_t0) {
        t0 = t;
        have_t0 = true;
      }
      ++records;
      const double ts = (double(t) - double(t0)) / 1e9;
      const std::string dev = j.value("dev", "-"), cls = j.value("class", "");
      if (j.value("verdict", "") == "sent") {
        Series& se = sojourn[dev + " " + cls];
        se.title = dev + " " + cls;
        se.data += std::to_string(ts) + " " + std::to_string(j.value("sojourn_ns", 0.0) / 1e6) + "\n";
      }
      Series& q = qlen[dev];
      q.title = dev;
      q.data += std::to_string(ts) + " " + std::to_string(j.value("qlen", 0)) + "\n";
    } catch (const nlohmann::json::exception& e) {
      return plot_fail(trace + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  if (records == 0) return plot_fail(trace + ": no packet records");

  // Data and script in a directory of their own, removed afterwards.
  char tmpl[] = "/tmp/pktpath-plot-XXXXXX";
  if (!::mkdtemp(tmpl)) return plot_fail(std::string("cannot make a temporary directory: ") + std::strerror(errno));
  const std::filesystem::path dir = tmpl;
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};
  int n = 0;
  auto plots = [&](const std::map<std::string, Series>& m, const char* style) {
    std::string p;
    for (const auto& [k, s] : m) {
      const std::string f = (dir / ("s" + std::to_string(n++) + ".dat")).string();
      std::ofstream(f) << s.data;
      p += (p.empty() ? "plot " : ", ") + gp_quote(f) + " using 1:2 " + style + " title " + gp_quote(s.title);
    }
    return p.empty() ? std::string("plot 0 notitle") : p;
  };
  std::string gp;
  gp += ext == ".svg" ? "set terminal svg size 900,900 dynamic background rgb 'white'\n"
                      : "set terminal pngcairo size 900,900\n";
  gp += "set output " + gp_quote(out) + "\n";
  gp += "set multiplot layout 3,1\nset key outside right\nset grid\nset xlabel 'time (s)'\n";
  gp += "set title 'sojourn time'\nset ylabel 'ms'\n" + plots(sojourn, "with points pt 7 ps 0.3") + "\n";
  gp += "set title 'throughput per class'\nset ylabel 'Mbit/s'\n" + plots(tput, "with steps") + "\n";
  gp += "set title 'queue length'\nset ylabel 'packets'\n" + plots(qlen, "with steps") + "\n";
  gp += "unset multiplot\n";
  const std::string script = (dir / "plot.gp").string();
  std::ofstream(script) << gp;

  pid_t pid;
  const char* argv[] = {"gnuplot", script.c_str(), nullptr};
  if (int rc = posix_spawn(&pid, gnuplot.c_str(), nullptr, nullptr, const_cast<char**>(argv), environ); rc != 0)
    return plot_fail(gnuplot + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return plot_fail("gnuplot failed drawing " + out);
  std::error_code ec;
  if (std::filesystem::file_size(out, ec) == 0 || ec) return plot_fail("gnuplot wrote nothing to " + out);
  return 0;
}

CommandRegistration reg("plot", "pictures of a trace: `plot TRACE -o FILE.png|FILE.svg`", cmd_plot);

}  // namespace
}  // namespace pktpath::cli
