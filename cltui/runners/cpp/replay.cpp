// replay.cpp: replays a range of OpenCL kernel enqueues exported by cltui.
//
// Standalone: C++17, the OpenCL headers and an ICD loader, nothing else.
// It reads the bundle's manifest.json (the same replay plan replay.py reads: programs, memory
// objects, steps) and the data files next to it, runs the steps on each chosen device, and
// compares what the kernels wrote with what the capture recorded, with replay.py's rules:
//   1. byte-exact first ("equal");
//   2. then per element: integers and raw bytes exact; floating point "within" tolerance when
//      |actual - expected| <= atol + rtol * |expected|  or  ULP distance <= ulp (NaN == NaN);
//   3. a check is "different" when any element is beyond tolerance or the sizes differ.
//
// Build:   cmake -S . -B build && cmake --build build
// Run:     ./build/replay --validate            (see --help)
// Exit:    0 all checks pass, 1 a check failed (with --validate), 2 bad usage, or a damaged
//          or bad bundle (one line: "bundle damaged: data/... sha256 mismatch"),
//          3 the device cannot run the bundle (OpenCL error, missing feature).
//
// The code is meant to be edited: every OpenCL call is in plain sight, in the order it runs.
// Files (one translation unit; each header includes what it builds on):
//   cpp/base.hpp      OpenCL and standard headers, errors, file helpers
//   cpp/json.hpp      a small JSON reader        cpp/options.hpp   the command line
//   cpp/devices.hpp   devices, the device rule, name matching
//   cpp/layout.hpp    element types, tolerances  cpp/plan.hpp      manifest.json as structs
//   cpp/feasible.hpp  what cannot run, and why   cpp/facts.hpp     the device facts it needs
//   cpp/compare.hpp   compare rules, the hash
//   cpp/replayer.hpp  the Replayer: outcomes and state
//   cpp/setup.hpp     context, programs, objects, arguments
//   cpp/steps.hpp     the passes over the steps, transfers, checks
//   cpp/verdict.hpp   the verdict                cpp/report.hpp    JSON and text
//   cpp/latency.hpp   the floor of launch cost, the launch-delay ladder (--floor, --latency)
//   cpp/cases.hpp     the shared edge cases (--...-cases FILE: cltui's tests)
//   cpp/verify.hpp    the bundle verifies itself first: manifest.json against the schema
//                     (cpp/manifest_schema.hpp), paths inside the bundle, sizes, sha256
//                     (cpp/sha256.hpp)
//   replay.cpp        run() and main()

#include "cpp/cases.hpp"
#include "cpp/latency.hpp"
#include "cpp/report.hpp"
#include "cpp/verify.hpp"

namespace {

using namespace cltui;

// stderr: which device(s) and why.
void announce(const Choice& choice, const std::vector<DeviceRef>& devices) {
    if (choice.rule == "user") {
        std::cerr << "replay: device:";
        for (size_t i = 0; i < devices.size(); ++i)
            std::cerr << (i ? ", " : " ") << devices[i].p << ":" << devices[i].d << " "
                      << devices[i].name;
        std::cerr << " (" << choice.why << ")\n";
    } else {
        std::cerr << "replay: device: " << choice.why << " (choose with --device)\n";
    }
}

// --out DIR for one device (DIR/P_D with several), created.
std::string device_out_dir(const Options& opt, const DeviceRef& dev, size_t n_devices) {
    std::string out_dir = opt.out_dir;
    if (out_dir.empty()) return out_dir;
    if (n_devices > 1) out_dir += "/" + std::to_string(dev.p) + "_" + std::to_string(dev.d);
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) throw UsageError("--out " + out_dir + ": " + ec.message());
    return out_dir;
}

struct DeviceRun {
    std::string error;  // the device could not run the bundle
    int code = 0;       // the verdict's exit code
};

// The bundle on one device: set up, run (--repeat times), report (text, or JSON into json).
DeviceRun run_device(const Plan& plan, const Options& opt, const DeviceRef& dev,
                     size_t n_devices, const Choice& choice, std::vector<std::string>& json) {
    Replayer r(plan, opt.bundle, dev, opt, device_out_dir(opt, dev, n_devices));
    if (opt.stream)  // each finished step as one line: a crash or a hang later keeps it
        r.step_done = [&r](size_t i) {
            std::string one = step_json(r, i);
            for (char& c : one)
                if (c == '\n') c = ' ';  // layout only: strings hold their newlines escaped
            std::cerr << "replay: step " << one << std::endl;
        };
    DeviceRun run;
    std::vector<PassTime> floor;
    LatencyRun lat;
    try {
        r.setup();
        r.run_once(true);
        if (opt.latency) {
            lat = measure_latency(r, opt);
        } else {
            for (int i = 1; i < opt.repeat; ++i) {  // (cpp/replayer.hpp: struct Pass)
                r.run_once(false, Pass::timed_pass(opt.delay_ns));
                r.run_once(false, Pass::staged_pass(opt.delay_ns));
            }
            for (int i = 0; opt.floor && i < std::max(opt.repeat, 2); ++i)
                floor.push_back(r.floor_once(0, true));
            r.collect_timing();
        }
    } catch (const DeviceError& e) {
        run.error = e.what();
    }
    if (run.error.empty()) run.error = r.set_up_error();
    if (opt.latency) {
        if (!run.error.empty()) std::cerr << "replay: " << dev.name << ": " << run.error << "\n";
        json.push_back(latency_json(r, lat, opt, dev, run.error));
        run.code = run.error.empty() ? 0 : 1;
        return run;
    }
    bool ok = run.error.empty();
    for (const auto& s : r.outcomes) ok = ok && step_ok(s);
    if (!run.error.empty()) std::cerr << "replay: " << dev.name << ": " << run.error << "\n";
    Verdict verdict = make_verdict(plan, r.outcomes, run.error);
    run.code = verdict_exit(verdict.status);
    if (opt.json) {
        std::string one = result_json(r, dev, ok, opt.repeat, run.error, choice, verdict);
        if (opt.floor && run.error.empty())  // one more key, before the object's end
            one.insert(one.size() - 1, ", \"floor\": " + passes_json(floor));
        json.push_back(one);
    } else if (run.error.empty()) {
        print_text(r, dev, opt.repeat, verdict);
        if (opt.floor) std::cout << floor_text(floor, r.launches());
    } else {
        std::cout << "== " << dev.p << ":" << dev.d << " " << dev.name << " ("
                  << dev.platform_name << ")\n   " << verdict.line << "\n";
    }
    return run;
}

int run(int argc, char** argv) {
    Options opt = parse_args(argc, argv);
    if (opt.list_devices) {
        for (const auto& d : all_devices())
            std::cout << d.p << ":" << d.d << "  " << d.name << "  (" << d.platform_name << ", "
                      << d.version << ")  driver " << d.driver << "\n";
        return 0;
    }
    if (!opt.cases.empty()) return print_cases(opt.cases, opt.cases_file);
    Json manifest = verify_bundle(opt.bundle);  // before anything runs (cpp/verify.hpp)
    Plan plan = read_plan(manifest);
    Choice choice;
    std::vector<DeviceRef> devices = pick_devices(opt.devices, captured_devices(manifest), choice);
    announce(choice, devices);
    bool any_error = false;
    std::vector<std::string> json;
    int worst = 0;  // the verdict exit codes: failure (1) dominates incomplete (3)
    for (const auto& dev : devices) {
        DeviceRun one = run_device(plan, opt, dev, devices.size(), choice, json);
        any_error = any_error || !one.error.empty();
        if (one.code == 1 || (one.code == 3 && worst == 0)) worst = one.code;
    }
    if (opt.json || opt.latency) {
        std::cout << "[";
        for (size_t i = 0; i < json.size(); ++i) std::cout << (i ? ",\n" : "") << json[i];
        std::cout << "]\n";
    }
    if (any_error) return 1;  // a device could not run the bundle
    return opt.validate ? worst : 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const UsageError& e) {
        std::cerr << "replay: " << e.what() << "\n";
        return 2;
    } catch (const DeviceError& e) {
        std::cerr << "replay: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "replay: " << e.what() << "\n";
        return 2;
    }
}
