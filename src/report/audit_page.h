#pragma once
// One page for one audit (grassaudit audit --report DIR): README.md with the verdict, the leak map
// picture, the contract, each check's result and cost, the evidence rows and the summary the CLI
// printed, from the audit's JSON alone (report/ does not link the engine).
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace grassaudit {

// File name -> bytes: "README.md", "leakmap.svg", "leakmap.png" (the pictures when the audit has a
// leak map). `gnuplot`: the program that draws them. Throws std::runtime_error if gnuplot fails.
std::map<std::string, std::string> audit_page(const nlohmann::json& audit, const std::string& summary,
                                              const std::string& gnuplot);

}  // namespace grassaudit
