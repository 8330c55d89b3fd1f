// Printing time_bench results: the table people quote, and the JSON contract.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "tools/time_bench.h"

namespace pktpath::cli {

nlohmann::json micro_results_json(const std::vector<TimeBenchResult>& results);
void print_micro_table(const std::vector<TimeBenchResult>& results, std::FILE* out);

}  // namespace pktpath::cli
