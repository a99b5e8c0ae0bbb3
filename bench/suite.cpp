#include "bench/suite.h"

#include <cmath>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "ggemm.h"

namespace ggemm_bench {

int32_t MoeCase::active_experts() const {
    int32_t active = 0;
    int32_t begin = 0;
    for (int32_t end : padded_offsets) {
        if (end > begin) ++active;
        begin = end;
    }
    return active;
}

namespace {

using Json = nlohmann::json;

[[noreturn]] void bad_case(const std::string& path, const std::string& name, const std::string& what) {
    throw std::runtime_error(path + ": case '" + name + "': " + what);
}

// The member `key` of a case: a number when `array` is false, else an array.
const Json& member(const Json& entry, const char* key, bool array, const std::string& path, const std::string& name) {
    const auto value = entry.find(key);
    if (value == entry.end() || (array ? !value->is_array() : !value->is_number()))
        bad_case(path, name, std::string("missing or mistyped '") + key + "'");
    return *value;
}

int64_t integer(const Json& value, const std::string& path, const std::string& name, const char* key) {
    if (value.is_number_integer()) return value.get<int64_t>();
    const double number = value.is_number_float() ? value.get<double>() : 0.5;
    if (number != std::floor(number) || std::fabs(number) > 9.0e15)
        bad_case(path, name, std::string("'") + key + "' holds a non-integer");
    return static_cast<int64_t>(number);
}

}  // namespace

std::vector<MoeCase> load_suite(const std::string& path) {
    std::ifstream file(path);
    if (!file) throw std::runtime_error("cannot open the shape suite '" + path + "'");
    Json root;
    try {
        root = Json::parse(file);
    } catch (const Json::parse_error& error) {
        throw std::runtime_error(path + ": " + error.what());
    }
    const auto cases = root.is_object() ? root.find("cases") : root.end();
    if (cases == root.end() || !cases->is_array()) throw std::runtime_error(path + ": no 'cases' array");

    std::vector<MoeCase> suite;
    for (const Json& entry : *cases) {
        MoeCase c;
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string())
            throw std::runtime_error(path + ": a case has no name");
        c.name = entry["name"].get<std::string>();
        c.experts = static_cast<int32_t>(integer(member(entry, "experts", false, path, c.name), path, c.name, "experts"));
        c.n = integer(member(entry, "n", false, path, c.name), path, c.name, "n");
        c.k = integer(member(entry, "k", false, path, c.name), path, c.name, "k");
        for (const Json& v : member(entry, "rows", true, path, c.name)) c.rows.push_back(integer(v, path, c.name, "rows"));
        for (const Json& v : member(entry, "padded_offsets", true, path, c.name))
            c.padded_offsets.push_back(static_cast<int32_t>(integer(v, path, c.name, "padded_offsets")));

        // The suite must describe a valid problem, or every number measured on it is moot.
        if (c.experts < 1 || static_cast<size_t>(c.experts) != c.padded_offsets.size())
            bad_case(path, c.name, "padded_offsets has " + std::to_string(c.padded_offsets.size()) +
                                       " entries for " + std::to_string(c.experts) + " experts");
        int32_t previous = 0;
        for (int32_t end : c.padded_offsets) {
            if (end < previous || end % GGEMM_ROW_ALIGNMENT != 0)
                bad_case(path, c.name, "padded_offsets must be nondecreasing multiples of 256, got " +
                                           std::to_string(end) + " after " + std::to_string(previous));
            previous = end;
        }
        if (c.n < 8 || c.n % 8 || c.k < 8 || c.k % 8)
            bad_case(path, c.name, "n and k must be multiples of 8, at least 8");
        suite.push_back(std::move(c));
    }
    if (suite.empty()) throw std::runtime_error(path + ": the suite has no cases");
    return suite;
}

}  // namespace ggemm_bench
