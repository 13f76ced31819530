// cpp/compare.hpp: the comparison (the same rules as compare.py) and the layer's hash.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "layout.hpp"

namespace cltui {

// Comparison (the same rules as compare.py)

struct CompareResult {
    std::string status = "equal";  // equal | within | different
    size_t elements = 0, expected_size = 0, actual_size = 0, n_diff = 0, n_bad = 0;
    double max_abs = 0, max_ulp = 0, max_rel = 0;  // max_rel: NaN once one is (inf / inf)
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

// |ordered(a) - ordered(b)|, exact: taken in unsigned 64-bit arithmetic (it may exceed 2**63)
// and only then made a double (which keeps a count of 1 ULP exact).
inline double ulp_distance(uint64_t ab, uint64_t eb, size_t size) {
    long long oa = ordered(ab, size), oe = ordered(eb, size);
    uint64_t ua = static_cast<uint64_t>(oa), ue = static_cast<uint64_t>(oe);
    return static_cast<double>(oa >= oe ? ua - ue : ue - ua);
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

// A number as compare.py's summaries write it (_fmt): whole numbers below 1e15 in full
// (-0.0 as 0), others %.9g, "nan" whatever its sign.
inline std::string fmt_number(double v) {
    char buf[64];
    if (std::isnan(v)) return "nan";
    if (v == 0) return "0";
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else
        std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

// Raw bytes as compare.py shows them: the leaf's every lane, as lists of byte values
// ("[[4, 5, 6]]"), whichever lane differs.
inline std::string bytes_text(const unsigned char* leaf_start, const Leaf& leaf) {
    std::string out = "[";
    for (size_t lane = 0; lane < leaf.count; ++lane) {
        out += lane ? ", [" : "[";
        for (size_t i = 0; i < leaf.size; ++i)
            out += (i ? ", " : "") + std::to_string(leaf_start[lane * leaf.size + i]);
        out += "]";
    }
    return out + "]";
}

// A lane's value as compare.py shows it: floats by fmt_number, integers in decimal, booleans
// True/False, raw bytes by bytes_text (p: the lane, in an element at elem).
inline std::string lane_text(const unsigned char* elem, const unsigned char* p,
                             const Leaf& leaf) {
    char buf[64];
    if (leaf.kind == 'f' && (leaf.size == 2 || leaf.size == 4 || leaf.size == 8))
        return fmt_number(to_double(p, leaf.size));
    if ((leaf.kind == 'i' || leaf.kind == 'u' || leaf.kind == 'b') && leaf.size <= 8) {
        uint64_t u = 0;
        std::memcpy(&u, p, leaf.size);
        if (leaf.kind == 'b') return u ? "True" : "False";
        if (leaf.kind == 'i' && leaf.size < 8 && (u >> (leaf.size * 8 - 1)) & 1)
            u |= ~0ULL << (leaf.size * 8);  // sign-extend
        if (leaf.kind == 'i')
            std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(u));
        else
            std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(u));
        return buf;
    }
    return bytes_text(elem + leaf.offset, leaf);
}

inline bool is_float(const Leaf& leaf) {
    return leaf.kind == 'f' && (leaf.size == 2 || leaf.size == 4 || leaf.size == 8);
}

// One lane: the same bits (or NaN and NaN: equal), within tolerance, or beyond it.
enum class Lane { Same, Within, Bad };

// Compares one lane; a differing floating-point lane's errors raise r's maxima.
inline Lane compare_lane(const unsigned char* e, const unsigned char* a, const Leaf& leaf,
                         const Tol& tol, CompareResult& r) {
    if (std::memcmp(e, a, leaf.size) == 0) return Lane::Same;
    if (!is_float(leaf)) return Lane::Bad;  // integers and raw bytes: exact
    double ev = to_double(e, leaf.size), av = to_double(a, leaf.size);
    bool en = std::isnan(ev), an = std::isnan(av);
    if (en && an) return Lane::Same;  // NaN equals NaN
    double absd, ulps;
    if (en != an) {
        absd = ulps = INFINITY;
    } else {
        absd = (std::isinf(ev) && ev == av) ? 0.0 : std::fabs(av - ev);
        uint64_t eb = 0, ab = 0;
        std::memcpy(&eb, e, leaf.size);
        std::memcpy(&ab, a, leaf.size);
        ulps = ulp_distance(ab, eb, leaf.size);
    }
    r.max_abs = std::max(r.max_abs, absd);
    r.max_ulp = std::max(r.max_ulp, ulps);
    double rel = absd == 0 ? 0.0 : std::fabs(ev) > 0 ? absd / std::fabs(ev) : INFINITY;
    if (std::isnan(rel) || rel > r.max_rel) r.max_rel = rel;  // as numpy's max: NaN wins
    double e_abs = en ? 0.0 : std::isinf(ev) ? DBL_MAX : std::fabs(ev);
    bool within = absd <= tol.atol + tol.rtol * e_abs || ulps <= static_cast<double>(tol.ulp);
    return within ? Lane::Within : Lane::Bad;
}

// The lane index as compare.py writes it: "2", or "1,2" in a lane grid "(2,3)".
inline std::string lane_name(size_t lane, const std::vector<size_t>& dims) {
    std::vector<size_t> at(dims.size());
    for (size_t k = dims.size(); k-- > 0;) {
        at[k] = dims[k] ? lane % dims[k] : 0;
        lane = dims[k] ? lane / dims[k] : 0;
    }
    std::string out;
    for (size_t k = 0; k < at.size(); ++k) out += (k ? "," : "") + std::to_string(at[k]);
    return out;
}

// The element's place: "[12]", or "(x=3, y=1)" in a grid (shape: x fastest) that holds it.
inline std::string element_name(size_t index, const std::vector<size_t>& shape) {
    size_t total = 1;
    for (size_t s : shape) total *= s;
    if (shape.empty() || total == 0 || index >= total) return "[" + std::to_string(index) + "]";
    std::string out = "(";
    for (size_t k = 0; k < shape.size(); ++k) {
        if (k < 4)
            out += std::string(k ? ", " : "") + "xyzw"[k] + "=" + std::to_string(index % shape[k]);
        index /= shape[k];
    }
    return out + ")";
}

// Where (field, lane) the first reported element differs, with both values: its first lane
// beyond tolerance (bad) or its first differing lane.
inline void describe_first(const unsigned char* e, const unsigned char* a, const Layout& layout,
                           const std::vector<size_t>& shape, bool bad, Tol tol, CompareResult& r) {
    CompareResult scratch;  // the maxima are counted already
    for (const Leaf& leaf : layout.leaves) {
        for (size_t lane = 0; lane < leaf.count; ++lane) {
            size_t off = leaf.offset + lane * leaf.size;
            Lane how = compare_lane(e + off, a + off, leaf, tol, scratch);
            if (how == Lane::Same || (bad && how != Lane::Bad)) continue;
            r.first_where = element_name(static_cast<size_t>(r.first), shape);
            if (!leaf.name.empty()) r.first_where += "." + leaf.name;
            if (!leaf.dims.empty()) r.first_where += " lane " + lane_name(lane, leaf.dims);
            r.first_expected = lane_text(e, e + off, leaf);
            r.first_actual = lane_text(a, a + off, leaf);
            return;
        }
    }
}

// One element (whose bytes differ): does a lane differ (diff), is one beyond tolerance (bad)?
inline void compare_element(const unsigned char* e, const unsigned char* a, const Layout& layout,
                            const Tol& tol, CompareResult& r, bool& diff, bool& bad) {
    diff = bad = false;
    for (const Leaf& leaf : layout.leaves) {
        for (size_t lane = 0; lane < leaf.count; ++lane) {
            size_t off = leaf.offset + lane * leaf.size;
            Lane how = compare_lane(e + off, a + off, leaf, tol, r);
            diff = diff || how != Lane::Same;
            bad = bad || how == Lane::Bad;
        }
    }
}

// The notes on what lies past the whole elements: a differing tail, a size mismatch.
inline void compare_tail(const std::vector<unsigned char>& expected,
                         const std::vector<unsigned char>& actual, size_t tail_start,
                         CompareResult& r) {
    size_t common = std::min(expected.size(), actual.size());
    if (tail_start < common && std::memcmp(expected.data() + tail_start,
                                           actual.data() + tail_start, common - tail_start) != 0) {
        ++r.n_diff;
        ++r.n_bad;
        r.note = "trailing " + std::to_string(common - tail_start) + " bytes differ";
    }
    if (expected.size() != actual.size()) {
        std::string n = "size differs: expected " + std::to_string(expected.size()) +
                        " bytes, got " + std::to_string(actual.size());
        r.note = r.note.empty() ? n : n + "; " + r.note;
    }
}

// shape: the element grid (an image's width, height, depth), for the first difference's
// coordinates; empty: element indices.
inline CompareResult compare(const std::vector<unsigned char>& expected,
                             const std::vector<unsigned char>& actual, const Layout& layout,
                             Tol tol, const std::vector<size_t>& shape = {}) {
    CompareResult r;
    r.expected_size = expected.size();
    r.actual_size = actual.size();
    size_t itemsize = std::max<size_t>(layout.itemsize, 1);
    r.elements = std::min(expected.size(), actual.size()) / itemsize;
    if (expected == actual) return r;
    bool floats = false;  // as compare.py: maxima (0 at least) once an element's bytes differ
    for (const Leaf& leaf : layout.leaves) floats = floats || is_float(leaf);
    long long first_diff = -1, first_bad = -1;
    for (size_t i = 0; i < r.elements; ++i) {
        const unsigned char* e = expected.data() + i * itemsize;
        const unsigned char* a = actual.data() + i * itemsize;
        if (std::memcmp(e, a, itemsize) == 0) continue;
        r.has_float = r.has_float || floats;
        bool diff, bad;
        compare_element(e, a, layout, tol, r, diff, bad);
        if (diff && ++r.n_diff && first_diff < 0) first_diff = static_cast<long long>(i);
        if (bad && ++r.n_bad && first_bad < 0) first_bad = static_cast<long long>(i);
    }
    compare_tail(expected, actual, r.elements * itemsize, r);
    r.first = first_bad >= 0 ? first_bad : first_diff;
    if (r.first >= 0) {
        size_t at = static_cast<size_t>(r.first) * itemsize;
        describe_first(expected.data() + at, actual.data() + at, layout, shape, first_bad >= 0,
                       tol, r);
    }
    r.status = (r.n_bad || expected.size() != actual.size()) ? "different" : "within";
    return r;
}

// The one-line summary, in compare.py's words: "1/8 differ, max 1 ULP, abs 1.1920929e-07,
// rel 1.1920929e-07, first [0]: expected 1 got 1.00000012".
inline std::string compare_summary(const CompareResult& c) {
    if (c.status == "equal") return "bit-exact";
    std::string out = std::to_string(c.n_diff) + "/" + std::to_string(c.elements) + " differ";
    if (c.n_bad != c.n_diff) out += ", " + std::to_string(c.n_bad) + " beyond tolerance";
    if (c.has_float)
        out += ", max " + fmt_number(c.max_ulp) + " ULP, abs " + fmt_number(c.max_abs) +
               ", rel " + fmt_number(c.max_rel);
    if (!c.first_where.empty())
        out += ", first " + c.first_where + ": expected " + c.first_expected + " got " +
               c.first_actual;
    if (!c.note.empty()) out += ", " + c.note;
    return out;
}

// A comparison as JSON, in the keys of compare.py's result (dtype: the element type's label).
inline std::string compare_json(const CompareResult& c, const std::string& dtype) {
    std::ostringstream o;
    o << "{\"status\": " << json_str(c.status) << ", \"dtype\": " << json_str(dtype)
      << ", \"elements\": " << c.elements << ", \"expected_size\": " << c.expected_size
      << ", \"actual_size\": " << c.actual_size << ", \"n_diff\": " << c.n_diff
      << ", \"n_bad\": " << c.n_bad
      << ", \"max_abs\": " << (c.has_float ? json_num(c.max_abs) : "null")
      << ", \"max_ulp\": " << (c.has_float ? json_num(c.max_ulp) : "null")
      << ", \"first_index\": " << (c.first >= 0 ? std::to_string(c.first) : "null")
      << ", \"first\": "
      << (c.first_where.empty()
              ? std::string("null")
              : "{\"where\": " + json_str(c.first_where) +
                    ", \"expected\": " + json_str(c.first_expected) +
                    ", \"actual\": " + json_str(c.first_actual) + "}")
      << ", \"note\": " << json_str(c.note) << "}";
    return o.str();
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
