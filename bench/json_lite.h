// A small JSON reader for the benchmark's shape suite: objects, arrays, numbers, strings,
// true/false/null. Enough for bench/moe_shapes.json; not a general-purpose library (no
// \u escapes beyond ASCII, numbers kept as double).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ggemm_bench {

struct JsonValue {
    enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
    Kind kind = kNull;
    bool boolean = false;
    double number = 0.0;
    std::string string;
    std::vector<JsonValue> array;
    std::vector<std::pair<std::string, JsonValue>> object;

    // The member named `key`, or nullptr when this is not an object or has no such member.
    const JsonValue* find(const std::string& key) const;
};

// Parses `text`; throws std::runtime_error naming the byte offset of the first error.
JsonValue parse_json(const std::string& text);

}  // namespace ggemm_bench
