// cpp/cases.hpp: the shared edge cases replay.cpp and the Python engine are both held to
// (cltui's tests, tests/fixtures/*_cases.json): each option runs one rule over every case of
// FILE and prints one JSON result per case, in order, for the test to compare.
//   --choose-device-cases FILE  the device rule (choose_device)
//   --match-device-cases FILE   the --device grammar (match_devices)
//   --enum-cases FILE           OpenCL enum names (enum_value, enum_name: image formats)
//   --compare-cases FILE        the comparison (compare)
//   --hash-cases FILE           the layer's hash (cli_hash64) and its file-name form
//   --name-cases FILE           device-name matching (name_tokens, name_likeness, pick_binary)
//   --feasibility-cases FILE    the feasibility rule (cpp/feasible.hpp)
//   --verdict-cases FILE        the verdict rule (cpp/verdict.hpp)
//   --plan-cases FILE           the plan reader (cpp/plan.hpp; printed by cpp/reading.hpp)
//   --build-log-cases FILE      a build log's lines, errors and positions (cpp/feasible.hpp)
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "compare.hpp"
#include "devices.hpp"
#include "facts.hpp"
#include "feasible.hpp"
#include "plan.hpp"
#include "reading.hpp"
#include "verdict.hpp"

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

// --match-device-cases FILE: [{"devices": [{"id", "name", "platform", "version",
// "platform_version"}], "specs": [...]}] -> [{"ids": [...]} | {"error": message}] in order.
inline int print_matches(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        std::vector<Named> devices;
        for (const auto& d : c.at("devices").arr)
            devices.push_back({str_or(d, "id"), str_or(d, "name"), str_or(d, "platform"),
                               str_or(d, "version"), str_or(d, "platform_version")});
        std::vector<std::string> specs;
        for (const auto& s : c.at("specs").arr) specs.push_back(s.as_str());
        std::cout << (n ? ",\n " : "");
        try {
            std::string ids;
            for (int i : match_devices(devices, specs))
                ids += (ids.empty() ? "" : ", ") + json_str(devices[i].id);
            std::cout << "{\"ids\": [" << ids << "]}";
        } catch (const UsageError& e) {
            std::cout << "{\"error\": " << json_str(e.what()) << "}";
        }
    }
    std::cout << "]\n";
    return 0;
}

// --enum-cases FILE: [{"name": "CL_RGBA", "order": true | false | null}] -> [{"value": N or
// null (unknown), "back": enum_name(value) or null}] in order (an image format's names, held
// to the Python table in cltui/capture/images.py).
inline int print_enums(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        std::cout << (n ? ",\n " : "");
        try {
            cl_uint v = enum_value(c.at("name"));
            const Json* order = c.find("order");
            std::string back = order && order->kind == Json::Bool
                                   ? json_str(enum_name(v, order->as_bool()))
                                   : std::string("null");
            std::cout << "{\"value\": " << v << ", \"back\": " << back << "}";
        } catch (const UsageError&) {
            std::cout << "{\"value\": null, \"back\": null}";
        }
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

// A JSON list of strings.
inline std::string strings_json(const std::vector<std::string>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + json_str(v[i]);
    return out + "]";
}

inline std::string tokens_json(const std::string& name) { return strings_json(name_tokens(name)); }

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
// A feasibility case's device facts: the file's "device", with the case's "device" over it.
inline DeviceFacts read_facts(const Json& base, const Json* over) {
    auto get = [&](const char* k) -> const Json& {
        return over && over->has(k) ? over->at(k) : base.at(k);
    };
    auto num = [&](const char* k) { return static_cast<unsigned long long>(get(k).as_int()); };
    auto nums = [&](const char* k) {
        std::vector<unsigned long long> v;
        for (const auto& e : get(k).arr) v.push_back(static_cast<unsigned long long>(e.as_int()));
        return v;
    };
    auto strs = [](const Json& j) {
        std::vector<std::string> v;
        for (const auto& e : j.arr) v.push_back(e.as_str());
        return v;
    };
    DeviceFacts f;
    f.name = get("name").as_str();
    f.max_work_group_size = num("max_work_group_size");
    f.max_work_item_sizes = nums("max_work_item_sizes");
    f.extensions = strs(get("extensions"));
    f.fp64 = get("fp64").as_bool();
    f.fp16 = get("fp16").as_bool();
    f.image_support = get("image_support").as_bool();
    for (const auto& kv : get("image_formats").obj) f.image_formats[kv.first] = strs(kv.second);
    f.image2d_max = nums("image2d_max");
    f.image3d_max = nums("image3d_max");
    f.image_max_array = num("image_max_array");
    f.svm = num("svm");
    f.opencl_c_versions = strs(get("opencl_c_versions"));
    f.non_uniform = get("non_uniform").as_bool();
    f.max_mem_alloc_size = num("max_mem_alloc_size");
    f.global_mem_size = num("global_mem_size");
    f.local_mem_size = num("local_mem_size");
    return f;
}

// --feasibility-cases FILE: {"device": facts, "cases": [{step, memory?, options?, device?,
// kernel?, source?, build_failed?, build_log?}]} -> [{"kinds": [...], "reasons": [...]}] in order.
inline int print_feasibility(const std::string& path) {
    auto bytes = read_file(path);
    Json doc = JsonParser(std::string(bytes.begin(), bytes.end())).parse();
    const Json& cases = doc.at("cases");
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        DeviceFacts dev = read_facts(doc.at("device"), c.find("device"));
        Plan plan;
        ProgramDesc prog;
        prog.id = "p";
        prog.options = str_or(c, "options");
        plan.programs.push_back(prog);
        if (const Json* mems = c.find("memory"))
            for (const auto& kv : mems->obj) plan.mems.push_back(read_mem(kv.first, kv.second));
        const Json& js = c.at("step");
        Step s;
        s.enqueue = 56;
        s.kernel = "k";
        s.program = "p";
        s.global = sizes(js.find("global"));
        s.local = sizes(js.find("local"));
        if (const Json* args = js.find("args"))
            for (const auto& a : args->arr) s.args.push_back(read_arg(a));
        plan.steps.push_back(s);
        std::vector<Finding> found = step_findings(plan, plan.steps[0], dev, memory_findings(plan, dev));
        const Json* k = c.find("kernel");
        if (found.empty() && k && k->kind == Json::Object) {
            KernelFacts kf;
            if (k->has("work_group_size")) kf.work_group_size = static_cast<unsigned long long>(k->at("work_group_size").as_int());
            if (k->has("local_mem_size")) kf.local_mem_size = static_cast<unsigned long long>(k->at("local_mem_size").as_int());
            for (auto v : sizes(k->find("reqd_work_group_size"))) kf.reqd.push_back(v);
            found = kernel_findings(plan.steps[0], kf, dev);
        }
        const Json* failed = c.find("build_failed");
        if (found.empty() && failed && failed->as_bool())
            found = build_findings(plan, "p", source_needs(c.at("source").as_str()), dev,
                                   c.has("build_log") ? c.at("build_log").as_str()
                                   : "error: use of type 'double' requires cl_khr_fp64 support");
        std::string kinds, reasons;
        for (size_t i = 0; i < found.size(); ++i) {
            kinds += (i ? ", " : "") + json_str(found[i].kind);
            reasons += (i ? ", " : "") + json_str(found[i].reason);
        }
        std::cout << (n ? ",\n " : "") << "{\"kinds\": [" << kinds << "], \"reasons\": [" << reasons
                  << "]}";
    }
    std::cout << "]\n";
    return 0;
}

// --build-log-cases FILE: [{"log", "name"}] -> [{"lines": at_source of each line,
// "errors", "first_error"}].
inline int print_build_logs(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        const std::string& log = c.at("log").as_str();
        std::vector<std::string> lines;
        std::istringstream in(log);
        for (std::string ln; std::getline(in, ln);) lines.push_back(at_source(ln, c.at("name").as_str()));
        std::cout << (n ? ",\n " : "") << "{\"lines\": " << strings_json(lines)
                  << ", \"errors\": " << strings_json(build_errors(log))
                  << ", \"first_error\": " << json_str(first_build_error(log)) << "}";
    }
    std::cout << "]\n";
    return 0;
}

// --include-path-cases: how each include folder is named to the driver from a current folder.
inline int print_include_paths(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        std::string spelled = include_spelling(c.at("path").as_str(), c.at("cwd").as_str());
        std::cout << (n ? ",\n " : "") << "{\"spelled\": " << json_str(spelled)
                  << ", \"option\": " << json_str(include_option(spelled)) << "}";
    }
    std::cout << "]\n";
    return 0;
}

// --build-option-cases: the driver's text for a bundle's program (bundle_options).
inline int print_build_options(const std::string& path) {
    Json cases = read_cases(path);
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        std::vector<std::string> dirs;
        for (const Json& d : c.at("include_dirs").arr) dirs.push_back(join(c.at("bundle").as_str(), d.as_str()));
        std::string cwd = c.at("cwd").as_str();
        std::cout << (n ? ",\n " : "") << "{\"driver\": "
                  << json_str(bundle_options(c.at("options").as_str(), dirs, &cwd)) << "}";
    }
    std::cout << "]\n";
    return 0;
}

inline int print_cases(const std::string& kind, const std::string& path) {
    if (kind == "feasibility-cases") return print_feasibility(path);
    if (kind == "verdict-cases") return print_verdicts(path);
    if (kind == "choose-device-cases") return print_choices(path);
    if (kind == "match-device-cases") return print_matches(path);
    if (kind == "enum-cases") return print_enums(path);
    if (kind == "compare-cases") return print_comparisons(path);
    if (kind == "hash-cases") return print_hashes(path);
    if (kind == "plan-cases") return print_readings(path);
    if (kind == "build-log-cases") return print_build_logs(path);
    if (kind == "include-path-cases") return print_include_paths(path);
    if (kind == "build-option-cases") return print_build_options(path);
    return print_names(path);
}

}  // namespace cltui
