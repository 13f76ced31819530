// cpp/json.hpp: a small JSON reader and JSON text helpers.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include <set>

#include "base.hpp"

namespace cltui {

// A small JSON reader (objects, arrays, strings, numbers, true/false/null): enough for the
// manifest, which cltui writes.

struct Json {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool b = false;
    double num = 0;
    std::string str;  // strings; also the literal text of numbers (exact 64-bit integers)
    std::vector<Json> arr;
    std::vector<std::pair<std::string, Json>> obj;

    const Json* find(const std::string& key) const {
        for (const auto& kv : obj)
            if (kv.first == key) return &kv.second;
        return nullptr;
    }
    const Json& at(const std::string& key) const {
        const Json* j = find(key);
        if (!j) throw UsageError("manifest: missing key '" + key + "'");
        return *j;
    }
    bool has(const std::string& key) const {
        const Json* j = find(key);
        return j && j->kind != Null;
    }
    long long as_int() const {
        if (kind != Number) throw UsageError("manifest: expected a number");
        return std::strtoll(str.c_str(), nullptr, 10);
    }
    double as_double() const {
        if (kind != Number) throw UsageError("manifest: expected a number");
        return num;
    }
    const std::string& as_str() const {
        if (kind != String) throw UsageError("manifest: expected a string");
        return str;
    }
    bool as_bool() const { return kind == Bool ? b : false; }
};

class JsonParser {
   public:
    explicit JsonParser(const std::string& text) : s_(text) {}
    Json parse() {
        Json v = value();
        ws();
        if (i_ != s_.size()) fail("trailing characters");
        return v;
    }

   private:
    const std::string& s_;
    size_t i_ = 0;

    [[noreturn]] void fail(const std::string& msg) {
        throw UsageError("manifest.json: " + msg + " at byte " + std::to_string(i_));
    }
    void ws() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    bool eat(const char* lit) {
        size_t n = std::strlen(lit);
        if (s_.compare(i_, n, lit) == 0) {
            i_ += n;
            return true;
        }
        return false;
    }
    size_t depth_ = 0;
    Json value() {
        ws();
        if (i_ >= s_.size()) fail("unexpected end");
        if (s_[i_] == '{' || s_[i_] == '[') {  // a hostile file's nesting: no stack overflow
            if (++depth_ > 900) fail("nested too deeply");
            Json v = s_[i_] == '{' ? object() : array();
            --depth_;
            return v;
        }
        Json v;
        if (s_[i_] == '"') {
            v.kind = Json::String;
            v.str = string();
            return v;
        }
        if (eat("true")) {
            v.kind = Json::Bool;
            v.b = true;
            return v;
        }
        if (eat("false")) {
            v.kind = Json::Bool;
            return v;
        }
        if (eat("null")) return v;
        size_t start = i_;
        while (i_ < s_.size() && std::strchr("+-0123456789.eE", s_[i_])) ++i_;
        if (start == i_) fail("unexpected character");
        v.kind = Json::Number;
        v.str = s_.substr(start, i_ - start);
        char* end = nullptr;
        v.num = std::strtod(v.str.c_str(), &end);
        if (v.str[0] == '+' || end != v.str.c_str() + v.str.size()) fail("bad number");
        return v;
    }
    Json object() {
        Json v;
        v.kind = Json::Object;
        std::set<std::string> keys;
        ++i_;
        ws();
        if (s_[i_] == '}') {
            ++i_;
            return v;
        }
        for (;;) {
            ws();
            if (s_[i_] != '"') fail("expected a key");
            std::string key = string();
            if (!keys.insert(key).second) fail("duplicate key");
            ws();
            if (s_[i_] != ':') fail("expected ':'");
            ++i_;
            v.obj.emplace_back(key, value());
            ws();
            if (s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (s_[i_] == '}') {
                ++i_;
                return v;
            }
            fail("expected ',' or '}'");
        }
    }
    Json array() {
        Json v;
        v.kind = Json::Array;
        ++i_;
        ws();
        if (s_[i_] == ']') {
            ++i_;
            return v;
        }
        for (;;) {
            v.arr.push_back(value());
            ws();
            if (s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (s_[i_] == ']') {
                ++i_;
                return v;
            }
            fail("expected ',' or ']'");
        }
    }
    std::string string() {
        ++i_;  // opening quote
        std::string out;
        while (i_ < s_.size() && s_[i_] != '"') {
            char c = s_[i_++];
            if (c != '\\') {
                out += c;
                continue;
            }
            char e = s_[i_++];
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'u': {
                    unsigned cp = std::stoul(s_.substr(i_, 4), nullptr, 16);
                    i_ += 4;
                    if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(i_, 2, "\\u") == 0) {
                        unsigned lo = std::stoul(s_.substr(i_ + 2, 4), nullptr, 16);
                        i_ += 6;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    utf8(out, cp);
                    break;
                }
                default: out += e;
            }
        }
        if (i_ >= s_.size()) fail("unterminated string");
        ++i_;
        return out;
    }
    static void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
};

inline std::string json_str(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

inline std::string json_num(double v) {
    if (std::isnan(v)) return "\"nan\"";
    if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace cltui
