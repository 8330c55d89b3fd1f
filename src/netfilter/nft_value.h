// Values of nft's data types as words: set elements (keys, prefixes, ranges,
// concatenations, a verdict map's verdicts) parsed for a declared key type, and printed
// back as nft lists them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "netfilter/nft_set.h"

namespace pktpath::nf {

// An element as the parser saw it, before the set's type is known (`add element` names
// the set, not its type): the key's words ("10.0.0.1", ".", "22"), and for a map the
// words after ':' ("jump", "sub").
struct NftRawElem {
  std::vector<std::string> key;
  std::vector<std::string> data;
  size_t index = 0;  // the word it started at
};

// A decimal or 0x-hexadecimal number.
std::optional<uint64_t> nft_parse_uint(std::string_view s);
std::optional<uint32_t> nft_parse_ipv4(std::string_view s);
bool nft_parse_mac(std::string_view s, uint8_t* out);

// What a set's elements carry after ':'.
enum class NftMapData : uint8_t { NONE, VERDICT, MARK };
inline NftMapData nft_map_data(const NftSetSpec& s) {
  return !s.map ? NftMapData::NONE : s.mark_data ? NftMapData::MARK : NftMapData::VERDICT;
}

// One element for a set of `types` carrying `data`.
Status nft_parse_elem(const std::vector<NftType>& types, NftMapData data, const NftRawElem& raw, NftElemSpec& out);

// A duration as nft prints it: 1d2h3m4s5ms, zero components left out.
std::string nft_time_str(uint64_t ns);
// A duration as nft reads it (`30s`, `1h30m`, `500ms`, `2d`; a bare number is seconds).
std::optional<uint64_t> nft_parse_time(std::string_view s);

// The key's text as nft prints it ("10.0.0.1 . 22").
std::string nft_key_str(const std::vector<NftType>& types, const uint8_t* key);
// An element as nft lists it: key, prefix or range, its own timeout and what is left of
// it at `now`, its counter, then " : verdict" or " : 0x0000000a" for a map.
std::string nft_elem_str(const std::vector<NftType>& types, NftMapData data, const NftElem& e, uint64_t now = 0);
// A verdict as nft prints it: accept, drop, continue, return, jump C, goto C.
std::string nft_verdict_str(NftRuleVerdict code, const std::string& chain);

}  // namespace pktpath::nf
