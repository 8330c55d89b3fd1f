// `pktpath plot TRACE [TRACE2] [--label A --label B] -o FILE.png|FILE.svg`: pictures of
// a `pktpath run --trace` file, drawn by gnuplot (Debian's gnuplot-nox): sojourn time of
// each sent packet over time per class, each class's throughput over time (its summary's
// bins), and each device's queue length over time (the qlen of every record). Two traces
// (two configurations run on the same capture) are overlaid, each series titled with its
// trace's label (the file's name unless --label gives one). Exit 1 when a trace cannot
// be read or gnuplot is missing or fails, 2 for usage.
//
// Nothing from the trace or the command line reaches gnuplot as a command: names are
// checked free of control characters and single-quoted (where gnuplot expands neither
// backquotes nor macros), data goes through data files, and gnuplot draws into a private
// directory (never the user's path, which `set output` would run as a pipe if it began
// with '|'); the picture is copied to -o afterwards.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/plot_trace.h"

extern char** environ;

namespace pktpath::cli {

namespace {

namespace fs = std::filesystem;

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
    if (::access(f.c_str(), X_OK) == 0 && !fs::is_directory(f)) return f;
  }
  return {};
}

// A gnuplot single-quoted string ('' is a quote). Callers pass only plot_safe_string
// text: a newline would end the command.
std::string gp_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("''") : std::string(1, c);
  return o + "'";
}

int plot_fail(const std::string& msg) {
  std::fprintf(stderr, "pktpath: plot: %s\n", msg.c_str());
  return 1;
}

// Where the picture goes must be a file we can write: its folder exists, it is not a
// folder itself. Checked before drawing so gnuplot never sees the path.
std::string output_problem(const std::string& out) {
  const fs::path p(out);
  std::error_code ec;
  if (fs::is_directory(p, ec)) return out + ": is a directory";
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) return out + ": no such directory " + parent.string();
  if (::access(parent.c_str(), W_OK) != 0) return out + ": cannot write in " + parent.string() + ": " + std::strerror(errno);
  return {};
}

// The last non-empty line of a file (gnuplot's own message on failure).
std::string last_line_of(const fs::path& f) {
  std::ifstream in(f);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// One trace read into `d`, its series keyed and titled "LABEL: ..." when `label` is set.
int read_into(PlotData& d, const std::string& trace, const std::string& label) {
  std::error_code ec;
  if (fs::is_directory(trace, ec)) return plot_fail(trace + ": is a directory");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(trace.c_str(), "r"), std::fclose);
  if (!in) return plot_fail(trace + ": " + std::strerror(errno));
  Result<PlotData> data = read_plot_trace(in.get());
  if (!data) return plot_fail(trace + ":" + data.error().msg);
  if (std::ferror(in.get())) return plot_fail(trace + ": read error");
  if (data->records == 0) return plot_fail(trace + ": no packet records");
  auto merge = [&](std::map<std::string, PlotSeries>& to, std::map<std::string, PlotSeries>& from) {
    for (auto& [k, se] : from) {
      if (!label.empty()) se.title = label + ": " + se.title;
      to[label.empty() ? k : label + ": " + k] = std::move(se);
    }
  };
  merge(d.sojourn, data->sojourn);
  merge(d.tput, data->tput);
  merge(d.qlen, data->qlen);
  d.records += data->records;
  return 0;
}

int cmd_plot(const std::vector<std::string>& args) {
  CLI::App app{"plot a trace of `pktpath run --trace`, or two overlaid", "pktpath plot"};
  std::vector<std::string> traces, labels;
  std::string out;
  app.add_option("trace", traces, "trace file (JSON Lines); a second one is overlaid on the first")
      ->required()
      ->expected(1, 2);
  app.add_option("--label", labels, "a trace's name in the legend, in the traces' order (default: the file's name)")
      ->expected(1, 2)
      ->take_all();
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
  const std::string ext = fs::path(out).extension().string();
  if (ext != ".png" && ext != ".svg") return usage_error("plot: -o: expected a name ending in .png or .svg, got \"" + out + "\"");
  if (std::string why = output_problem(out); !why.empty()) return plot_fail(why);
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty())
    return plot_fail("gnuplot not found on PATH; install Debian's gnuplot-nox (apt-get install gnuplot-nox)");

  if (labels.size() > traces.size())
    return usage_error("plot: --label: " + std::to_string(labels.size()) + " labels for " + std::to_string(traces.size()) +
                       " trace(s)");
  for (const std::string& l : labels)
    if (l.empty() || !plot_safe_string(l)) return usage_error("plot: --label: empty or holds a control character");
  // One trace keeps its series' own titles; two are told apart by their labels.
  if (traces.size() == 2) {
    for (size_t i = labels.size(); i < 2; ++i) {
      const std::string name = fs::path(traces[i]).filename().string();
      labels.push_back(plot_safe_string(name) && !name.empty() ? name : "trace " + std::to_string(i + 1));
    }
    if (labels[0] == labels[1]) labels[0] += " (1)", labels[1] += " (2)";
  }
  PlotData data;
  for (size_t i = 0; i < traces.size(); ++i)
    if (int rc = read_into(data, traces[i], i < labels.size() ? labels[i] : std::string()); rc) return rc;
  std::error_code ec;

  // Data, script and picture in a directory of their own, removed afterwards.
  char tmpl[] = "/tmp/pktpath-plot-XXXXXX";
  if (!::mkdtemp(tmpl)) return plot_fail(std::string("cannot make a temporary directory: ") + std::strerror(errno));
  const fs::path dir = tmpl;
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(d, e);
    }
  } cleanup{dir};
  int n = 0;
  auto plots = [&](const std::map<std::string, PlotSeries>& m, const char* style) {
    std::string p;
    for (const auto& [k, s] : m) {
      const std::string f = (dir / ("s" + std::to_string(n++) + ".dat")).string();
      std::ofstream(f) << s.data;
      p += (p.empty() ? "plot " : ", ") + gp_quote(f) + " using 1:2 " + style + " title " + gp_quote(s.title) + " noenhanced";
    }
    return p.empty() ? std::string("plot 0 notitle") : p;
  };
  const fs::path picture = dir / ("picture" + ext);
  std::string gp;
  gp += ext == ".svg" ? "set terminal svg size 900,900 dynamic background rgb 'white'\n"
                      : "set terminal pngcairo size 900,900\n";
  gp += "set output " + gp_quote(picture.string()) + "\n";
  gp += "set multiplot layout 3,1\nset key outside right\nset grid\nset xlabel 'time (s)'\n";
  gp += "set title 'sojourn time'\nset ylabel 'ms'\n" + plots(data.sojourn, "with points pt 7 ps 0.3") + "\n";
  gp += "set title 'throughput per class'\nset ylabel 'Mbit/s'\n" + plots(data.tput, "with steps") + "\n";
  gp += "set title 'queue length'\nset ylabel 'packets'\n" + plots(data.qlen, "with steps") + "\n";
  gp += "unset multiplot\n";
  const std::string script = (dir / "plot.gp").string();
  std::ofstream(script) << gp;

  // gnuplot's messages go to a log in the directory, shown only when it fails.
  const std::string log = (dir / "gnuplot.log").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  const char* argv[] = {"gnuplot", script.c_str(), nullptr};
  const int rc = posix_spawn(&pid, gnuplot.c_str(), &fa, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return plot_fail(gnuplot + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return plot_fail("gnuplot failed drawing the picture: " + last_line_of(log));
  if (fs::file_size(picture, ec) == 0 || ec) return plot_fail("gnuplot drew nothing: " + last_line_of(log));
  fs::copy_file(picture, out, fs::copy_options::overwrite_existing, ec);
  if (ec) return plot_fail(out + ": " + ec.message());
  return 0;
}

CommandRegistration reg("plot", "pictures of a trace, or two overlaid: `plot TRACE [TRACE2] [--label A --label B] -o FILE.png|FILE.svg`",
                        cmd_plot);

}  // namespace
}  // namespace pktpath::cli
