// cpp/options.hpp: the command line.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "base.hpp"

namespace cltui {

// Options

struct Options {
    std::string bundle = "";
    std::vector<std::string> devices;  // --device, repeatable
    bool list_devices = false;
    bool validate = false;
    bool json = false;
    bool trace = false;
    bool stream = false;  // --stream: each finished step as one JSON line on stderr
    int repeat = 1;
    bool floor = false;              // --floor: the bare launch loop only (cpp/latency.hpp)
    bool latency = false;            // --latency: runner, floor and delays side by side (JSON)
    long long delay_ns = 0;          // --delay-ns: wait before each timed launch (spin())
    std::vector<long long> delays{0, 50, 200, 1000, 5000, 20000};  // --delays (--latency)
    std::string out_dir;
    std::string cases, cases_file;  // --choose-device-cases, --match-device-cases, --compare-cases,
                                    // --hash-cases,
                                    // --name-cases, --build-log-cases, --include-path-cases,
                                    // --build-option-cases
                                    // FILE (cltui's
                                    // tests; see cpp/cases.hpp)
    bool have_atol = false, have_rtol = false, have_ulp = false;
    double atol = 0, rtol = 0;
    long long ulp = 0;
};

const char* kUsage =
    "usage: replay [--bundle DIR] [--list-devices] [--device P:D|NAME]... [--validate]\n"
    "              [--repeat N] [--json] [--out DIR] [--atol X] [--rtol X] [--ulp N] [--trace]\n"
    "              [--stream] [--floor] [--delay-ns N] [--latency [--delays N,N,...]]\n"
    "\n"
    "  --bundle DIR      the bundle folder (default: the current folder if it holds\n"
    "                    manifest.json, else the folder this program was built from)\n"
    "  --list-devices    list the OpenCL platforms and devices, then exit\n"
    "  --device SEL      P:D indices or a case-insensitive name substring; repeat it to\n"
    "                    replay on several devices (default: the device that made the\n"
    "                    capture, else the one named most like it, else the first that is\n"
    "                    not a simulator, else the first; stderr says which and why)\n"
    "  --validate        exit 1 when a check is 'different'\n"
    "  --repeat N        run the range N times (inputs restored): each repetition after\n"
    "                    the first is timed as an application runs (no event, no\n"
    "                    profiling: the host time) and run again with an event per\n"
    "                    launch for the stage timing\n"
    "  --json            print the results as JSON on stdout\n"
    "  --out DIR         write each checked object as replayed into DIR (DIR/P_D with\n"
    "                    several devices)\n"
    "  --atol/--rtol/--ulp  tolerances for floating point (override the manifest's)\n"
    "  --trace           print each enqueue on stderr before it runs (which one crashed?)\n"
    "  --stream          print each finished step on stderr as one JSON line (replay: step ...)\n"
    "  --floor           after the validation pass, time N passes of the bare launch loop\n"
    "                    (the same kernels, arguments set once, no event, nothing else, on a\n"
    "                    queue without profiling): this driver's floor of host time per launch\n"
    "  --delay-ns N      wait N ns on the host before each launch of the timing passes (a\n"
    "                    sleep from 2 us, so a CPU device keeps its cores; a busy-wait below)\n"
    "  --latency         JSON on stdout: N rounds, each a timed and a staged pass of this\n"
    "                    runner, one of the floor (also on the profiling queue) and one per\n"
    "                    --delays value\n"
    "                    (ns of wait before each launch, no profiling; default\n"
    "                    0,50,200,1000,5000,20000), every launch's stages\n";

// --delays 0,50,200: non-negative nanoseconds, at least one.
inline std::vector<long long> parse_delays(const std::string& text) {
    std::vector<long long> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty()) continue;
        long long v = std::stoll(item);
        if (v < 0) throw UsageError("--delays must not be negative");
        out.push_back(v);
    }
    if (out.empty()) throw UsageError("--delays needs at least one value");
    return out;
}

inline Options parse_args(int argc, char** argv) {
    Options o;
    auto need = [&](int& i) -> std::string {
        if (i + 1 >= argc) throw UsageError(std::string(argv[i]) + " needs a value");
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        try {
            if (a == "-h" || a == "--help") {
                std::cout << kUsage;
                std::exit(0);
            } else if (a == "--bundle") {
                o.bundle = need(i);
            } else if (a == "--device") {
                o.devices.push_back(need(i));
            } else if (a == "--list-devices") {
                o.list_devices = true;
            } else if (a == "--validate") {
                o.validate = true;
            } else if (a == "--json") {
                o.json = true;
            } else if (a == "--trace") {
                o.trace = true;
            } else if (a == "--stream") {
                o.stream = true;
            } else if (a == "--repeat") {
                o.repeat = std::stoi(need(i));
                if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
            } else if (a == "--floor") {
                o.floor = true;
            } else if (a == "--latency") {
                o.latency = true;
            } else if (a == "--delay-ns") {
                o.delay_ns = std::stoll(need(i));
                if (o.delay_ns < 0) throw UsageError("--delay-ns must not be negative");
            } else if (a == "--delays") {
                o.delays = parse_delays(need(i));
            } else if (a == "--out") {
                o.out_dir = need(i);
            } else if (a == "--choose-device-cases" || a == "--match-device-cases" ||
                       a == "--enum-cases" ||
                       a == "--compare-cases" ||
                       a == "--hash-cases" || a == "--name-cases" ||
                       a == "--feasibility-cases" || a == "--verdict-cases" ||
                       a == "--plan-cases" || a == "--build-log-cases" ||
                       a == "--include-path-cases" || a == "--build-option-cases") {
                o.cases = a.substr(2);
                o.cases_file = need(i);
            } else if (a == "--atol") {
                o.atol = std::stod(need(i));
                o.have_atol = true;
            } else if (a == "--rtol") {
                o.rtol = std::stod(need(i));
                o.have_rtol = true;
            } else if (a == "--ulp") {
                o.ulp = std::stoll(need(i));
                o.have_ulp = true;
            } else {
                throw UsageError("unknown option " + a + " (see --help)");
            }
        } catch (const std::invalid_argument&) {
            throw UsageError("bad value for " + a);
        } catch (const std::out_of_range&) {
            throw UsageError("value out of range for " + a);
        }
    }
    if (o.bundle.empty()) {
        std::ifstream here("manifest.json");
        o.bundle = here ? "." : CLTUI_BUNDLE_DIR;
    }
    return o;
}

}  // namespace cltui
