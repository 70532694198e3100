// The headers every unit parses, LibTorch or not (fmt, nlohmann-json and the standard library's
// heaviest), compiled once per build for the libraries and tests without LibTorch; torch_headers.h
// starts with them.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
