// cpp/layout.hpp: element types (numpy dtype specs as compare.py writes them) and tolerances.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "json.hpp"

namespace cltui {

struct Leaf {  // one scalar field of an element: `count` lanes of `size` bytes at `offset`
    size_t offset, size, count;
    char kind;  // 'f' float, 'i' signed, 'u' unsigned, 'b' bool, 'V' raw bytes
    std::string name;
    std::vector<size_t> dims;  // a vector's lane grid ("(4,)": {4}); empty for a scalar
};

struct Layout {
    size_t itemsize = 1;
    std::vector<Leaf> leaves;
    std::string label = "uint8";
};

struct Tol {
    double atol = 0, rtol = 0;
    long long ulp = 0;
};

// numpy dtype specs as compare.py writes them: "<f4", "(4,)<f4", "float32", or a struct
// [[name, spec, offset], ...].  The result lists every scalar leaf with its byte offset; each
// step returns the type's label as compare.py's dtype_label writes it ("float32x4",
// "struct{a: float32, b: int32}").
inline std::string add_leaves(const Json& spec, size_t base, const std::string& prefix,
                              Layout& out, size_t& itemsize);

// numpy's name of a scalar type ("float32", "uint8", "bool", "void24", "bytes32").
inline std::string scalar_label(char kind, size_t size, const std::string& spec) {
    const std::string bits = std::to_string(size * 8);
    switch (kind) {
        case 'f': return "float" + bits;
        case 'i': return "int" + bits;
        case 'u': return "uint" + bits;
        case 'b': return "bool";
        case 'V': return "void" + bits;
        case 'S': return "bytes" + bits;
        default: return spec;
    }
}

inline std::string add_scalar(std::string s, size_t base, const std::string& name, Layout& out,
                size_t& itemsize) {
    size_t lanes = 1;
    std::vector<size_t> dims;
    if (!s.empty() && s[0] == '(') {  // "(4,)<f4" or "(2,3)<i4"
        size_t close = s.find(')');
        std::stringstream grid(s.substr(1, close - 1));
        std::string d;
        while (std::getline(grid, d, ','))
            if (!d.empty()) dims.push_back(static_cast<size_t>(std::stoul(d)));
        for (size_t n : dims) lanes *= n;
        s = s.substr(close + 1);
    }
    static const std::map<std::string, std::string> named = {
        {"float16", "<f2"}, {"float32", "<f4"}, {"float64", "<f8"}, {"int8", "|i1"},
        {"int16", "<i2"}, {"int32", "<i4"}, {"int64", "<i8"}, {"uint8", "|u1"},
        {"uint16", "<u2"}, {"uint32", "<u4"}, {"uint64", "<u8"}, {"bool", "|b1"}};
    auto it = named.find(s);
    if (it != named.end()) s = it->second;
    if (!s.empty() && std::strchr("<>|=", s[0])) s = s.substr(1);
    if (s.size() < 2) throw UsageError("manifest: bad dtype '" + s + "'");
    char kind = s[0] == 'a' ? 'S' : s[0];
    size_t size = static_cast<size_t>(std::stoul(s.substr(1)));
    std::string label = scalar_label(kind, size, s);
    for (size_t i = 0; i < dims.size(); ++i) label += "x" + std::to_string(dims[i]);
    out.leaves.push_back({base, size, lanes, kind == 'S' ? 'V' : kind, name, dims});
    itemsize = std::max(itemsize, base + size * lanes);
    return label;
}

inline std::string add_leaves(const Json& spec, size_t base, const std::string& prefix,
                              Layout& out, size_t& itemsize) {
    if (spec.kind == Json::String) return add_scalar(spec.str, base, prefix, out, itemsize);
    if (spec.kind != Json::Array) throw UsageError("manifest: bad dtype");
    size_t cursor = base;
    std::string label = "struct{";
    for (const auto& field : spec.arr) {
        std::string name = field.arr.at(0).as_str();
        size_t offset = field.arr.size() >= 3
                            ? base + static_cast<size_t>(field.arr[2].as_int())
                            : cursor;
        size_t end = offset;
        std::string sub = add_leaves(field.arr.at(1), offset,
                                     prefix.empty() ? name : prefix + "." + name, out, end);
        label += (label == "struct{" ? "" : ", ") + name + ": " + sub;
        cursor = end;
        itemsize = std::max(itemsize, end);
    }
    return label + "}";
}

inline Layout read_layout(const Json* spec) {
    Layout l;
    if (!spec || spec->kind == Json::Null) {
        l.leaves.push_back({0, 1, 1, 'u', "", {}});
        return l;
    }
    size_t itemsize = 0;
    l.label = add_leaves(*spec, 0, "", l, itemsize);
    l.itemsize = std::max<size_t>(itemsize, 1);
    return l;
}

inline Tol read_tol(const Json* j, Tol base) {
    if (!j || j->kind != Json::Object) return base;
    if (j->has("atol")) base.atol = j->at("atol").as_double();
    if (j->has("rtol")) base.rtol = j->at("rtol").as_double();
    if (j->has("ulp")) base.ulp = j->at("ulp").as_int();
    return base;
}

}  // namespace cltui
