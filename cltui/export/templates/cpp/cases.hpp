// cpp/cases.hpp: the shared edge cases replay.cpp and the Python engine are both held to
// (cltui's tests, tests/fixtures/*_cases.json): each option runs one rule over every case of
// FILE and prints one JSON result per case, in order, for the test to compare.
//   --choose-device-cases FILE  the device rule (choose_device)
//   --compare-cases FILE        the comparison (compare)
//   --hash-cases FILE           the layer's hash (cli_hash64) and its file-name form
//   --name-cases FILE           device-name matching (name_tokens, name_likeness, pick_binary)
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "compare.hpp"
#include "devices.hpp"
#include "plan.hpp"

namespace cltui {

inline Json read_cases(const std::string& path) {
    auto bytes = read_file(path);
    Json cases = JsonParser(std::string(bytes.begin(), bytes.end())).parse();
    if (cases.kind != Json::Array) throw UsageError(path + ": expected a list of cases");
    return cases;
}

// --choose-device-cases FILE (for cltui's tests): run choose_device on each case of FILE,
// {"devices": [{"id", "platform", "name"}], "captured": [name | {"name", "platform"}]}, and
// print [{"index", "rule", "why"}] in order.
inline int print_choices(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        std::vector<Candidate> devices;
        for (const auto& d : c.at("devices").arr)
            devices.push_back({str_or(d, "id"), str_or(d, "platform"), str_or(d, "name")});
        std::vector<std::pair<std::string, std::string>> captured;
        for (const auto& k : c.at("captured").arr) {
            if (k.kind == Json::String)
                captured.push_back({k.str, ""});
            else
                captured.push_back({str_or(k, "name"), str_or(k, "platform")});
        }
        Choice ch = choose_device(devices, captured);
        std::cout << (n ? ",\n " : "") << "{\"index\": "
                  << (ch.index < 0 ? std::string("null") : std::to_string(ch.index))
                  << ", \"rule\": " << json_str(ch.rule) << ", \"why\": " << json_str(ch.why)
                  << "}";
    }
    std::cout << "]\n";
    return 0;
}

// --compare-cases FILE: [{"dtype", "shape"?, "tol"?, "expected": hex, "actual": hex}] ->
// [compare.py's result keys (see compare_json) and "summary"].
inline int print_comparisons(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        Layout layout = read_layout(c.find("dtype"));
        CompareResult r = compare(from_hex(c.at("expected").as_str()),
                                  from_hex(c.at("actual").as_str()), layout,
                                  read_tol(c.find("tol"), Tol{}), sizes(c.find("shape")));
        std::string result = compare_json(r, layout.label);  // with the summary line
        result.pop_back();
        std::cout << (n ? ",\n " : "") << result
                  << ", \"summary\": " << json_str(compare_summary(r)) << "}";
    }
    std::cout << "]\n";
    return 0;
}

// A hash case's input: "hex" bytes, "text" (UTF-8), or "pattern" (hex) repeated to "length".
inline std::vector<unsigned char> case_bytes(const Json& c) {
    if (c.has("hex")) return from_hex(c.at("hex").as_str());
    if (c.has("text")) {
        const std::string& t = c.at("text").as_str();
        return std::vector<unsigned char>(t.begin(), t.end());
    }
    std::vector<unsigned char> pattern = from_hex(c.at("pattern").as_str());
    std::vector<unsigned char> out(static_cast<size_t>(c.at("length").as_int()));
    for (size_t i = 0; i < out.size() && !pattern.empty(); ++i)
        out[i] = pattern[i % pattern.size()];
    return out;
}

// --hash-cases FILE: [{input (see case_bytes)}] -> [{"hash64": "%llx", "name": "%08X"}], the
// name being the low 32 bits as the layer writes them in CLI_ file names.
inline int print_hashes(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        std::uint64_t h = cli_hash64(case_bytes(cases.arr[n]));
        char name[16];
        std::snprintf(name, sizeof name, "%08X", static_cast<unsigned>(h & 0xFFFFFFFFu));
        std::cout << (n ? ",\n " : "") << "{\"hash64\": " << json_str(hex64(h))
                  << ", \"name\": " << json_str(name) << "}";
    }
    std::cout << "]\n";
    return 0;
}

inline std::string tokens_json(const std::string& name) {
    std::string out = "[";
    auto words = name_tokens(name);
    for (size_t i = 0; i < words.size(); ++i) out += (i ? ", " : "") + json_str(words[i]);
    return out + "]";
}

// pick_binary's choice in replay.py's words: "binary", "binary made on NAME", "" for none.
inline std::string pick_json(const BinaryPick& pick) {
    std::string how = pick.index < 0 ? ""
                      : pick.exact   ? "binary"
                                     : "binary made on " + pick.made_on;
    return "{\"index\": " + (pick.index < 0 ? std::string("null") : std::to_string(pick.index)) +
           ", \"how\": " + json_str(how) + "}";
}

// --name-cases FILE: [{"a", "b"}] -> [{"tokens_a", "tokens_b", "likeness"}], and
// [{"binaries": [device name], "device"}] -> [{"index", "how"}] (pick_binary).
inline int print_names(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        std::cout << (n ? ",\n " : "");
        if (c.has("binaries")) {
            std::vector<std::string> made_on;
            for (const auto& b : c.at("binaries").arr) made_on.push_back(b.as_str());
            std::cout << pick_json(pick_binary(made_on, c.at("device").as_str()));
            continue;
        }
        const std::string &a = c.at("a").as_str(), &b = c.at("b").as_str();
        std::cout << "{\"tokens_a\": " << tokens_json(a) << ", \"tokens_b\": " << tokens_json(b)
                  << ", \"likeness\": " << name_likeness(a, b) << "}";
    }
    std::cout << "]\n";
    return 0;
}

// The test option named by --...-cases.
inline int print_cases(const std::string& kind, const std::string& path) {
    if (kind == "choose-device-cases") return print_choices(path);
    if (kind == "compare-cases") return print_comparisons(path);
    if (kind == "hash-cases") return print_hashes(path);
    return print_names(path);
}

}  // namespace cltui
