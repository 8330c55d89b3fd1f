// Typed options of one qdisc or action kind, type-erased so that nothing central lists
// the kinds: each kind's header (sched/sch_<kind>.h, sched/act_<kind>.h) defines a struct
// deriving from KindOptionsBase (what the kind's netlink TCA_OPTIONS carry in Linux), the
// CLI's tc/q_<kind>.cc builds it from tc's words, the kind reads it back with get<T>().
// Disciplines never parse text.
#pragma once

#include <concepts>
#include <memory>

namespace pktpath {

struct KindOptionsBase {
  virtual ~KindOptionsBase() = default;
};

// Immutable once built; copies share the options.
class KindOptions {
 public:
  KindOptions() = default;
  template <class T>
    requires std::derived_from<T, KindOptionsBase>
  KindOptions(T v) : p_(std::make_shared<const T>(std::move(v))) {}

  // The options as the kind's type, or nullptr (none given, or another kind's).
  template <class T>
  const T* get() const {
    return dynamic_cast<const T*>(p_.get());
  }
  bool empty() const { return p_ == nullptr; }

 private:
  std::shared_ptr<const KindOptionsBase> p_;
};

using QdiscOptions = KindOptions;
using ActionOptions = KindOptions;
using QdiscXstats = KindOptions;  // a kind's extra statistics (TCA_STATS_APP), same scheme

}  // namespace pktpath
