// cpp/reading.hpp: --plan-cases FILE (cltui's tests): what this reader (cpp/plan.hpp) makes of
// each plan of FILE ([{"case", "manifest"}]), printed as the canonical reading the Python
// engine's cltui/replay/engine/reading.py prints, one JSON object a case, in order.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "plan.hpp"

namespace cltui {

inline std::string bytes_hex(const std::vector<unsigned char>& v) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : v) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

inline std::string sizes_json(const std::vector<size_t>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out + "]";
}

inline std::string tol_json(const Tol& t) {
    return "{\"atol\": " + json_num(t.atol) + ", \"rtol\": " + json_num(t.rtol) +
           ", \"ulp\": " + std::to_string(t.ulp) + "}";
}

inline std::string checks_json(const std::vector<Check>& checks) {
    std::string out = "[";
    for (size_t i = 0; i < checks.size(); ++i) {
        const Check& c = checks[i];
        std::string args = "[";
        for (size_t k = 0; k < c.args.size(); ++k)
            args += (k ? ", " : "") + std::to_string(c.args[k]);
        out += (i ? ", " : "");
        out += "{\"mem\": " + json_str(c.mem) + ", \"label\": " + json_str(c.label) +
               ", \"data\": " + json_str(c.data) + ", \"hash64\": " + json_str(c.hash64) +
               ", \"args\": " + args + "], \"shape\": " + sizes_json(c.shape) +
               ", \"tol\": " + tol_json(c.tol) + ", \"after_unreplayed\": " +
               (c.after_unreplayed < 0 ? std::string("null") : std::to_string(c.after_unreplayed)) +
               "}";
    }
    return out + "]";
}

inline std::string arg_json(const ArgDesc& a) {
    std::string out = "{\"index\": " + std::to_string(a.index) + ", \"kind\": " +
                      json_str(a.kind) + ", \"mem\": " + json_str(a.mem) +
                      ", \"offset\": " + std::to_string(a.offset) +
                      ", \"size\": " + std::to_string(a.size) + ", \"hex\": " +
                      json_str(bytes_hex(a.bytes));
    if (a.kind == "sampler")  // (its modes: enum values here, names in Python; not compared)
        out += std::string(", \"normalized\": ") + (a.normalized ? "true" : "false");
    return out + "}";
}

inline std::string step_json(const Step& s) {
    std::string args, loads, transfers;
    for (size_t i = 0; i < s.args.size(); ++i) args += (i ? ", " : "") + arg_json(s.args[i]);
    for (size_t i = 0; i < s.loads.size(); ++i)
        loads += std::string(i ? ", " : "") + "{\"mem\": " + json_str(s.loads[i].mem) +
                 ", \"data\": " + json_str(s.loads[i].data) + ", \"why\": " +
                 json_str(s.loads[i].why) + "}";
    for (size_t i = 0; i < s.transfers.size(); ++i) {
        const Transfer& t = s.transfers[i];
        transfers += std::string(i ? ", " : "") + "{\"enqueue\": " + std::to_string(t.enqueue) +
                     ", \"mem\": " + json_str(t.mem) + ", \"runs\": " +
                     (t.runs() ? "true" : "false") + ", \"op\": " + json_str(t.op) +
                     ", \"src\": " + json_str(t.src) + ", \"offset\": " +
                     std::to_string(t.offset) + ", \"size\": " + std::to_string(t.size) +
                     ", \"pattern\": " + json_str(bytes_hex(t.pattern)) + "}";
    }
    return "{\"enqueue\": " + std::to_string(s.enqueue) + ", \"kernel\": " + json_str(s.kernel) +
           ", \"program\": " + json_str(s.program) + ", \"global\": " + sizes_json(s.global) +
           ", \"local\": " + sizes_json(s.local) + ", \"offset\": " + sizes_json(s.offset) +
           ", \"args\": [" + args + "], \"loads\": [" + loads +
           "], \"prechecks\": " + checks_json(s.prechecks) +
           ", \"checks\": " + checks_json(s.checks) + ", \"transfers\": [" + transfers + "]}";
}

inline std::string mem_json(const MemDesc& d) {
    std::string out = "{\"kind\": " + json_str(d.kind) + ", \"size\": " + std::to_string(d.size) +
                      ", \"label\": " + json_str(d.label) + ", \"parent\": " + json_str(d.parent) +
                      ", \"origin\": " + std::to_string(d.origin);
    if (d.kind == "image")
        out += ", \"image\": {\"order\": " + json_str(d.order_name) + ", \"type\": " +
               json_str(d.type_name) + ", \"image_type\": " + json_str(d.image_type_name) +
               ", \"region\": [" + std::to_string(d.region[0]) + ", " +
               std::to_string(d.region[1]) + ", " + std::to_string(d.region[2]) +
               "], \"element_size\": " + std::to_string(d.element_size) + "}";
    return out + "}";
}

inline std::string program_json(const ProgramDesc& p) {
    std::string bins, incs;
    for (size_t i = 0; i < p.binaries.size(); ++i)
        bins += std::string(i ? ", " : "") + "[" + json_str(p.binaries[i].first) + ", " +
                json_str(p.binaries[i].second) + "]";
    for (size_t i = 0; i < p.include_dirs.size(); ++i)
        incs += (i ? ", " : "") + json_str(p.include_dirs[i]);
    return "{\"label\": " + json_str(p.label) + ", \"source\": " + json_str(p.source) +
           ", \"il\": " + json_str(p.il) + ", \"options\": " + json_str(p.options) +
           ", \"binaries\": [" + bins + "], \"include_dirs\": [" + incs + "]}";
}

inline std::string reading_json(const Plan& plan) {
    std::string data, mems, progs, steps;
    size_t n = 0;
    for (const auto& kv : plan.data)
        data += (n++ ? ", " : "") + json_str(kv.first) + ": " + json_str(kv.second);
    for (size_t i = 0; i < plan.mems.size(); ++i)
        mems += (i ? ", " : "") + json_str(plan.mems[i].id) + ": " + mem_json(plan.mems[i]);
    for (size_t i = 0; i < plan.programs.size(); ++i)
        progs += (i ? ", " : "") + json_str(plan.programs[i].id) + ": " +
                 program_json(plan.programs[i]);
    for (size_t i = 0; i < plan.steps.size(); ++i)
        steps += (i ? ",\n  " : "") + step_json(plan.steps[i]);
    return "{\"tolerance\": " + tol_json(plan.tolerance) + ", \"data\": {" + data +
           "}, \"memory\": {" + mems + "}, \"programs\": {" + progs + "}, \"steps\": [" + steps +
           "], \"counts\": {\"kernels\": " +
           (plan.kernels < 0 ? std::string("null") : std::to_string(plan.kernels)) +
           ", \"skipped\": " + std::to_string(plan.skipped) +
           ", \"recovered\": " + std::to_string(plan.recovered) +
           ", \"lost\": " + std::to_string(plan.lost) +
           ", \"transfers\": " + std::to_string(plan.transfers) +
           ", \"transfers_replayed\": " + std::to_string(plan.transfers_replayed) + "}}";
}

inline int print_readings(const std::string& path) {
    auto bytes = read_file(path);
    Json cases = JsonParser(std::string(bytes.begin(), bytes.end())).parse();
    if (cases.kind != Json::Array) throw UsageError(path + ": expected a list of cases");
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n)
        std::cout << (n ? ",\n " : "") << reading_json(read_plan(cases.arr[n].at("manifest")));
    std::cout << "]\n";
    return 0;
}

}  // namespace cltui
