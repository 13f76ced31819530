// cpp/compare.hpp: the comparison (the same rules as compare.py) and the layer's hash.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "plan.hpp"

namespace cltui {

// Comparison (the same rules as compare.py)

struct CompareResult {
    std::string status = "equal";  // equal | within | different
    size_t elements = 0, expected_size = 0, actual_size = 0, n_diff = 0, n_bad = 0;
    double max_abs = 0, max_ulp = 0;
    bool has_float = false;
    long long first = -1;  // first element beyond tolerance (else first differing)
    std::string first_where, first_expected, first_actual;  // its first differing lane
    std::string note;
};

inline double half_to_double(uint16_t h) {
    int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    double v;
    if (exp == 0)
        v = std::ldexp(mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = std::ldexp(mant + 1024, exp - 25);
    return sign ? -v : v;
}

// Bits of a float (2, 4 or 8 bytes) as an integer whose difference is the ULP distance.
inline long long ordered(uint64_t bits, size_t size) {
    uint64_t sign = 1ULL << (size * 8 - 1);
    long long mag = static_cast<long long>(bits & (sign - 1));
    return (bits & sign) ? -mag : mag;
}

inline double to_double(const unsigned char* p, size_t size) {
    if (size == 2) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return half_to_double(h);
    }
    if (size == 4) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    double d;
    std::memcpy(&d, p, 8);
    return d;
}

inline std::string lane_text(const unsigned char* p, const Leaf& leaf) {
    char buf[64];
    if (leaf.kind == 'f' && (leaf.size == 2 || leaf.size == 4 || leaf.size == 8)) {
        std::snprintf(buf, sizeof buf, "%.9g", to_double(p, leaf.size));
        return buf;
    }
    if ((leaf.kind == 'i' || leaf.kind == 'u' || leaf.kind == 'b') && leaf.size <= 8) {
        uint64_t u = 0;
        std::memcpy(&u, p, leaf.size);
        if (leaf.kind == 'i' && leaf.size < 8 && (u >> (leaf.size * 8 - 1)) & 1)
            u |= ~0ULL << (leaf.size * 8);  // sign-extend
        if (leaf.kind == 'i')
            std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(u));
        else
            std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(u));
        return buf;
    }
    std::string hex;
    for (size_t i = 0; i < leaf.size; ++i) {
        std::snprintf(buf, sizeof buf, "%02x", p[i]);
        hex += buf;
    }
    return hex;
}

// Where (field, lane) the first reported element differs, with both values.
inline void describe_first(const std::vector<unsigned char>& expected,
                    const std::vector<unsigned char>& actual, const Layout& layout,
                    size_t itemsize, CompareResult& r) {
    size_t base = static_cast<size_t>(r.first) * itemsize;
    for (const Leaf& leaf : layout.leaves) {
        for (size_t lane = 0; lane < leaf.count; ++lane) {
            size_t off = base + leaf.offset + lane * leaf.size;
            if (std::memcmp(&expected[off], &actual[off], leaf.size) == 0) continue;
            r.first_where = "[" + std::to_string(r.first) + "]";
            if (!leaf.name.empty()) r.first_where += "." + leaf.name;
            if (leaf.count > 1) r.first_where += " lane " + std::to_string(lane);
            r.first_expected = lane_text(&expected[off], leaf);
            r.first_actual = lane_text(&actual[off], leaf);
            return;
        }
    }
}

inline CompareResult compare(const std::vector<unsigned char>& expected,
                      const std::vector<unsigned char>& actual, const Layout& layout, Tol tol) {
    CompareResult r;
    r.expected_size = expected.size();
    r.actual_size = actual.size();
    size_t common = std::min(expected.size(), actual.size());
    size_t itemsize = std::max<size_t>(layout.itemsize, 1);
    r.elements = common / itemsize;
    if (expected == actual) return r;
    long long first_diff = -1, first_bad = -1;
    for (size_t i = 0; i < r.elements; ++i) {
        const unsigned char* e = expected.data() + i * itemsize;
        const unsigned char* a = actual.data() + i * itemsize;
        if (std::memcmp(e, a, itemsize) == 0) continue;
        bool diff = false, bad = false;
        for (const Leaf& leaf : layout.leaves) {
            for (size_t lane = 0; lane < leaf.count; ++lane) {
                size_t off = leaf.offset + lane * leaf.size;
                if (std::memcmp(e + off, a + off, leaf.size) == 0) continue;
                bool is_float = leaf.kind == 'f' && (leaf.size == 2 || leaf.size == 4 ||
                                                     leaf.size == 8);
                if (!is_float) {
                    diff = bad = true;
                    continue;
                }
                r.has_float = true;
                double ev = to_double(e + off, leaf.size), av = to_double(a + off, leaf.size);
                bool en = std::isnan(ev), an = std::isnan(av);
                if (en && an) continue;  // NaN equals NaN
                diff = true;
                double absd, ulps;
                if (en != an) {
                    absd = ulps = INFINITY;
                } else {
                    absd = (std::isinf(ev) && ev == av) ? 0.0 : std::fabs(av - ev);
                    uint64_t eb = 0, ab = 0;
                    std::memcpy(&eb, e + off, leaf.size);
                    std::memcpy(&ab, a + off, leaf.size);
                    ulps = std::fabs(static_cast<double>(ordered(ab, leaf.size)) -
                                     static_cast<double>(ordered(eb, leaf.size)));
                }
                r.max_abs = std::max(r.max_abs, absd);
                r.max_ulp = std::max(r.max_ulp, ulps);
                double e_abs = en ? 0.0 : std::isinf(ev) ? DBL_MAX : std::fabs(ev);
                bool within = absd <= tol.atol + tol.rtol * e_abs ||
                              ulps <= static_cast<double>(tol.ulp);
                if (!within) bad = true;
            }
        }
        if (diff) {
            ++r.n_diff;
            if (first_diff < 0) first_diff = static_cast<long long>(i);
        }
        if (bad) {
            ++r.n_bad;
            if (first_bad < 0) first_bad = static_cast<long long>(i);
        }
    }
    size_t tail_start = r.elements * itemsize;
    if (tail_start < common &&
        std::memcmp(expected.data() + tail_start, actual.data() + tail_start,
                    common - tail_start) != 0) {
        ++r.n_diff;
        ++r.n_bad;
        r.note = "trailing " + std::to_string(common - tail_start) + " bytes differ";
    }
    if (expected.size() != actual.size()) {
        std::string n = "size differs: expected " + std::to_string(expected.size()) +
                        " bytes, got " + std::to_string(actual.size());
        r.note = r.note.empty() ? n : n + "; " + r.note;
    }
    r.first = first_bad >= 0 ? first_bad : first_diff;
    if (r.first >= 0) describe_first(expected, actual, layout, itemsize, r);
    r.status = (r.n_bad || expected.size() != actual.size()) ? "different" : "within";
    return r;
}


// The layer's 64-bit hash (capture-format §5.2): Bob Jenkins' 96-bit mix over little-endian
// 32-bit words, the last 1-3 bytes as one zero-padded word; the same as cltui's Python.
inline std::uint64_t cli_hash64(const std::vector<unsigned char>& d) {
    std::uint32_t a = 0x428A2F98u, b = 0x71374491u, c = 0xB5C0FBCFu;
    auto mix = [&](std::uint32_t w) {
        a ^= w;
        a -= b; a -= c; a ^= c >> 13;
        b -= c; b -= a; b ^= a << 8;
        c -= a; c -= b; c ^= b >> 13;
        a -= b; a -= c; a ^= c >> 12;
        b -= c; b -= a; b ^= a << 16;
        c -= a; c -= b; c ^= b >> 5;
        a -= b; a -= c; a ^= c >> 3;
        b -= c; b -= a; b ^= a << 10;
        c -= a; c -= b; c ^= b >> 15;
    };
    const size_t n = d.size() / 4;
    for (size_t i = 0; i < n; ++i)
        mix(static_cast<std::uint32_t>(d[4 * i]) | static_cast<std::uint32_t>(d[4 * i + 1]) << 8 |
            static_cast<std::uint32_t>(d[4 * i + 2]) << 16 |
            static_cast<std::uint32_t>(d[4 * i + 3]) << 24);
    if (d.size() % 4) {
        std::uint32_t w = 0;
        for (size_t k = 4 * n; k < d.size(); ++k)
            w |= static_cast<std::uint32_t>(d[k]) << (8 * (k - 4 * n));
        mix(w);
    }
    return static_cast<std::uint64_t>(b) << 32 | c;
}

inline std::string hex64(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace cltui
