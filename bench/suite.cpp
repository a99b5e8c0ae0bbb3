#include "suite.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "json_lite.h"

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

[[noreturn]] void bad_case(const std::string& path, const std::string& name, const std::string& what) {
    throw std::runtime_error(path + ": case '" + name + "': " + what);
}

const JsonValue& member(const JsonValue& object, const char* key, JsonValue::Kind kind,
                        const std::string& path, const std::string& name) {
    const JsonValue* value = object.find(key);
    if (!value || value->kind != kind) bad_case(path, name, std::string("missing or mistyped '") + key + "'");
    return *value;
}

int64_t integer(const JsonValue& value, const std::string& path, const std::string& name, const char* key) {
    if (value.kind != JsonValue::kNumber || value.number != std::floor(value.number) ||
        std::fabs(value.number) > 9.0e15)
        bad_case(path, name, std::string("'") + key + "' holds a non-integer");
    return static_cast<int64_t>(value.number);
}

}  // namespace

std::vector<MoeCase> load_suite(const std::string& path) {
    std::ifstream file(path);
    if (!file) throw std::runtime_error("cannot open the shape suite '" + path + "'");
    std::stringstream text;
    text << file.rdbuf();
    JsonValue root = parse_json(text.str());
    const JsonValue* cases = root.find("cases");
    if (!cases || cases->kind != JsonValue::kArray)
        throw std::runtime_error(path + ": no 'cases' array");

    std::vector<MoeCase> suite;
    for (const JsonValue& entry : cases->array) {
        MoeCase c;
        const JsonValue* name = entry.find("name");
        if (!name || name->kind != JsonValue::kString) throw std::runtime_error(path + ": a case has no name");
        c.name = name->string;
        c.experts = static_cast<int32_t>(integer(member(entry, "experts", JsonValue::kNumber, path, c.name), path, c.name, "experts"));
        c.n = integer(member(entry, "n", JsonValue::kNumber, path, c.name), path, c.name, "n");
        c.k = integer(member(entry, "k", JsonValue::kNumber, path, c.name), path, c.name, "k");
        for (const JsonValue& v : member(entry, "rows", JsonValue::kArray, path, c.name).array)
            c.rows.push_back(integer(v, path, c.name, "rows"));
        for (const JsonValue& v : member(entry, "padded_offsets", JsonValue::kArray, path, c.name).array)
            c.padded_offsets.push_back(static_cast<int32_t>(integer(v, path, c.name, "padded_offsets")));

        // The suite must describe a valid problem, or every number measured on it is moot.
        if (c.experts < 1 || static_cast<size_t>(c.experts) != c.padded_offsets.size())
            bad_case(path, c.name, "padded_offsets has " + std::to_string(c.padded_offsets.size()) +
                                       " entries for " + std::to_string(c.experts) + " experts");
        int32_t previous = 0;
        for (int32_t end : c.padded_offsets) {
            if (end < previous || end % 256 != 0)
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
