#include "core/bpf_engine.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "core/settings.h"

namespace pktpath {

namespace {
// -1: not chosen yet, use bpf::default_engine().
std::atomic<int> g_engine{-1};
std::mutex& engine_mu() {
  static std::mutex m;
  return m;
}
std::vector<BpfEngineReloadFn>& users() {
  static std::vector<BpfEngineReloadFn> v;
  return v;
}

const SettingRegistrar bpf_engine_setting{
    {"bpf_engine", "switch|threaded|jit", [](const std::string& v) -> std::optional<std::string> {
       auto e = bpf::parse_engine(v);
       if (!e) return "bpf_engine: expected switch, threaded or jit, not '" + v + "'";
       std::string err;
       if (!net_set_bpf_engine(*e, &err)) return "bpf_engine: " + err;
       return std::nullopt;
     }}};
}  // namespace

bpf::Engine net_bpf_engine() {
  const int e = g_engine.load();
  return e < 0 ? bpf::default_engine() : static_cast<bpf::Engine>(e);
}

bool net_set_bpf_engine(bpf::Engine e, std::string* err) {
  std::lock_guard g(engine_mu());
  g_engine.store(static_cast<int>(e));
  for (BpfEngineReloadFn fn : users())
    if (!fn(e, err)) return false;
  return true;
}

BpfEngineUser::BpfEngineUser(BpfEngineReloadFn reload) {
  std::lock_guard g(engine_mu());
  users().push_back(reload);
}

}  // namespace pktpath
