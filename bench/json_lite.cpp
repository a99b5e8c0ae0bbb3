#include "json_lite.h"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace ggemm_bench {

const JsonValue* JsonValue::find(const std::string& key) const {
    if (kind != kObject) return nullptr;
    for (const auto& member : object)
        if (member.first == key) return &member.second;
    return nullptr;
}

namespace {

class Parser {
public:
    explicit Parser(const std::string& text) : text_(text) {}

    JsonValue document() {
        JsonValue value = parse_value(0);
        skip_space();
        if (pos_ != text_.size()) fail("trailing characters after the document");
        return value;
    }

private:
    // Nesting bound: the suite is three levels deep; a runaway input must not overflow the stack.
    static constexpr int kMaxDepth = 64;

    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("JSON error at byte " + std::to_string(pos_) + ": " + what);
    }

    void skip_space() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }

    char peek() {
        skip_space();
        if (pos_ >= text_.size()) fail("unexpected end of input");
        return text_[pos_];
    }

    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++pos_;
    }

    bool consume_word(const char* word) {
        std::size_t len = std::char_traits<char>::length(word);
        if (text_.compare(pos_, len, word) != 0) return false;
        pos_ += len;
        return true;
    }

    JsonValue parse_value(int depth) {
        if (depth > kMaxDepth) fail("nesting deeper than 64");
        char c = peek();
        JsonValue value;
        if (c == '{') {
            value.kind = JsonValue::kObject;
            ++pos_;
            if (peek() == '}') { ++pos_; return value; }
            for (;;) {
                std::string key = parse_string();
                expect(':');
                value.object.emplace_back(std::move(key), parse_value(depth + 1));
                if (peek() == ',') { ++pos_; continue; }
                expect('}');
                return value;
            }
        }
        if (c == '[') {
            value.kind = JsonValue::kArray;
            ++pos_;
            if (peek() == ']') { ++pos_; return value; }
            for (;;) {
                value.array.push_back(parse_value(depth + 1));
                if (peek() == ',') { ++pos_; continue; }
                expect(']');
                return value;
            }
        }
        if (c == '"') {
            value.kind = JsonValue::kString;
            value.string = parse_string();
            return value;
        }
        if (consume_word("true")) { value.kind = JsonValue::kBool; value.boolean = true; return value; }
        if (consume_word("false")) { value.kind = JsonValue::kBool; return value; }
        if (consume_word("null")) return value;
        value.kind = JsonValue::kNumber;
        value.number = parse_number();
        return value;
    }

    std::string parse_string() {
        expect('"');
        std::string out;
        while (pos_ < text_.size() && text_[pos_] != '"') {
            char c = text_[pos_++];
            if (c != '\\') { out.push_back(c); continue; }
            if (pos_ >= text_.size()) break;
            char escaped = text_[pos_++];
            switch (escaped) {
                case 'n': out.push_back('\n'); break;
                case 't': out.push_back('\t'); break;
                case 'r': out.push_back('\r'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'u': {
                    if (pos_ + 4 > text_.size()) fail("short \\u escape");
                    long code = std::strtol(text_.substr(pos_, 4).c_str(), nullptr, 16);
                    pos_ += 4;
                    out.push_back(code < 128 ? static_cast<char>(code) : '?');
                    break;
                }
                default: out.push_back(escaped);  // \" \\ \/
            }
        }
        if (pos_ >= text_.size()) fail("unterminated string");
        ++pos_;
        return out;
    }

    double parse_number() {
        const char* begin = text_.c_str() + pos_;
        char* end = nullptr;
        double number = std::strtod(begin, &end);
        if (end == begin) fail("expected a value");
        pos_ += static_cast<std::size_t>(end - begin);
        return number;
    }

    const std::string& text_;
    std::size_t pos_ = 0;
};

}  // namespace

JsonValue parse_json(const std::string& text) { return Parser(text).document(); }

}  // namespace ggemm_bench
