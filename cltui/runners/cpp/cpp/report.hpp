// cpp/report.hpp: results: statistics, the verdict, JSON and text output.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "verdict.hpp"

namespace cltui {

// Reporting

struct Stats {
    double min, median, max;
};

inline Stats stats(std::vector<double> v) {
    if (v.empty()) return {0, 0, 0};
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return {v.front(), med, v.back()};
}

inline std::string stats_json(const std::vector<double>& v) {
    if (v.empty()) return "null";
    Stats s = stats(v);
    return "{\"min\": " + json_num(s.min) + ", \"median\": " + json_num(s.median) +
           ", \"max\": " + json_num(s.max) + "}";
}

inline std::string device_json(const DeviceRef& dev) {
    return "{\"id\": " + json_str(std::to_string(dev.p) + ":" + std::to_string(dev.d)) +
           ", \"platform\": " + json_str(dev.platform_name) + ", \"name\": " + json_str(dev.name) +
           ", \"version\": " + json_str(dev.version) +
           ", \"platform_version\": " + json_str(dev.platform_version) +
           ", \"driver\": " + json_str(dev.driver) + "}";
}

inline std::string summary(const CheckOutcome& oc);

// The pre-flight's findings as JSON (docs/replay.schema.json#/$defs/finding).
inline std::string findings_json(const std::vector<Finding>& found) {
    std::string o = "[";
    for (size_t i = 0; i < found.size(); ++i)
        o += std::string(i ? ", " : "") + "{\"enqueue\": " + std::to_string(found[i].enqueue) +
             ", \"kernel\": " + json_str(found[i].kernel) + ", \"kind\": " +
             json_str(found[i].kind) + ", \"reason\": " + json_str(found[i].reason) + "}";
    return o + "]";
}

inline std::string checks_json(const std::vector<CheckOutcome>& list) {
    std::ostringstream o;
    o << "[";
    for (size_t i = 0; i < list.size(); ++i) {
        const auto& oc = list[i];
        o << (i ? ", " : "") << "{\"mem\": " << json_str(oc.check->mem) << ", \"args\": [";
        for (size_t a = 0; a < oc.check->args.size(); ++a)
            o << (a ? ", " : "") << oc.check->args[a];
        o << "], \"label\": " << json_str(oc.check->label)
          << ", \"status\": " << json_str(oc.status)
          << ", \"output\": " << (oc.output.empty() ? "null" : json_str(oc.output));
        if (oc.after_unreplayed >= 0) o << ", \"after_unreplayed\": " << oc.after_unreplayed;
        if (oc.after_cannot_run >= 0) o << ", \"after_cannot_run\": " << oc.after_cannot_run;
        bool said = oc.after_unreplayed >= 0 || oc.after_cannot_run >= 0 || !oc.why.empty();
        if (said) o << ", \"summary\": " << json_str(summary(oc));
        if (oc.hashed && !said) {
            o << ", \"summary\": " << json_str(summary(oc));
        } else if (oc.status != "unchecked") {
            o << ", \"result\": " << compare_json(oc.result, oc.check->layout.label);
        }
        o << "}";
    }
    return o.str() + "]";
}

// Step i of a device's result: its checks, loads, transfers and timing.
inline std::string step_json(const Replayer& r, size_t i) {
    const auto& s = r.outcomes[i];
    const Timing& t = s.timing;
    std::ostringstream o;
    o << "\n  {\"enqueue\": " << s.step->enqueue << ", \"kernel\": " << json_str(s.step->kernel)
      << ", \"status\": "
      << (!s.cannot_run.empty() ? "\"cannot-run\"" : step_ok(s) ? "\"pass\"" : "\"fail\"")
      << (s.cannot_run.empty() ? "" : ", \"cannot_run\": " + findings_json(s.cannot_run))
      << ",\n   \"checks\": " << checks_json(s.checks)
      << ",\n   \"prechecks\": " << checks_json(s.prechecks) << ",\n   \"loads\": [";
    for (size_t j = 0; j < s.step->loads.size(); ++j) {
        const Load& l = s.step->loads[j];
        o << (j ? ", " : "") << "{\"mem\": " << json_str(l.mem) << ", \"why\": " << json_str(l.why)
          << ", \"note\": " << json_str(l.note)
          << ", \"done\": " << (r.load_done(i, j) ? "true" : "false") << "}";
    }
    o << "],\n   \"transfers\": [";
    for (size_t j = 0; j < s.step->transfers.size(); ++j) {
        const Transfer& tr = s.step->transfers[j];
        o << (j ? ", " : "") << "{\"enqueue\": " << tr.enqueue
          << ", \"function\": " << json_str(tr.function) << ", \"mem\": " << json_str(tr.mem)
          << ", \"replayed\": " << (tr.replayed.empty() ? "null" : json_str(tr.replayed))
          << ", \"why\": " << json_str(tr.why) << ", \"done\": " << (tr.runs() ? "true" : "false")
          << "}";
    }
    o << "],\n   \"timing\": {\"queued_to_submit\": " << stats_json(t.queued_submit)
      << ", \"submit_to_start\": " << stats_json(t.submit_start)
      << ", \"start_to_end\": " << stats_json(t.start_end)
      << ", \"host_enqueue\": " << stats_json(t.host_enqueue)
      << ", \"samples\": " << t.start_end.size() << "}}";
    return o.str();
}

// One device's result, in the shape of replay.py --json (which prints a list of them).
inline std::string result_json(const Replayer& r, const DeviceRef& dev, bool ok, int repeat,
                               const std::string& error, const Choice& choice,
                               const Verdict& verdict) {
    std::ostringstream o;
    o << "{\"runner\": \"replay.cpp\", \"verdict\": " << verdict_json(verdict)
      << ", \"device\": " << device_json(dev)
      << ", \"status\": " << json_str(!error.empty() ? "error" : ok ? "ok" : "mismatch")
      << ", \"ok\": " << (ok ? "true" : "false")
      << ", \"error\": " << (error.empty() ? "null" : json_str(error)) << ", \"failed_enqueue\": "
      << (error.empty() || r.running < 0 ? std::string("null") : std::to_string(r.running))
      << ", \"device_choice\": {\"rule\": " << json_str(choice.rule)
      << ", \"why\": " << json_str(choice.why) << "}"
      << ", \"repeat\": " << repeat << ", \"loop\": "
      << (error.empty() ? "{\"launches\": " + std::to_string(r.launches()) +
                              ", \"host_ns_per_repetition\": " + stats_json(r.loop_ns) + "}"
                        : std::string("null"))
      << ", \"builds\": {";
    for (size_t i = 0; i < r.builds.size(); ++i)
        o << (i ? ", " : "") << json_str(r.builds[i].program) << ": {\"how\": "
          << json_str(r.builds[i].how) << ", \"seconds\": " << json_num(r.builds[i].seconds)
          << "}";
    o << "}, \"cannot_run\": " << findings_json(r.findings()) << ", \"notes\": [";
    for (size_t i = 0; i < r.notes.size(); ++i) o << (i ? ", " : "") << json_str(r.notes[i]);
    o << "], \"steps\": [";
    for (size_t i = 0; i < r.outcomes.size(); ++i) o << (i ? "," : "") << step_json(r, i);
    o << "]}";
    return o.str();
}

inline std::string fmt_ns(double ns) {
    char buf[32];
    if (ns >= 1e6)
        std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
    else if (ns >= 1e3)
        std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    return buf;
}

inline std::string plain_summary(const CheckOutcome& oc);

inline std::string summary(const CheckOutcome& oc) {
    std::string out = plain_summary(oc);
    if (oc.after_unreplayed >= 0)
        out = "after unreplayed host write at " + std::to_string(oc.after_unreplayed) + ": " + out;
    if (oc.after_cannot_run >= 0)
        out = "after enqueue " + std::to_string(oc.after_cannot_run) +
              ", which cannot run here: " + out;
    return out;
}

inline std::string plain_summary(const CheckOutcome& oc) {
    if (oc.hashed)
        return oc.status == "equal"
                   ? "hash matches"
                   : "hash " + hex64(oc.hash) + " != captured " +
                         hex64(std::strtoull(oc.check->hash64.c_str(), nullptr, 16));
    if (!oc.why.empty()) return oc.why;  // its step cannot run here
    if (oc.status == "unchecked")
        return oc.check->note.empty() ? "no captured data" : oc.check->note;
    return compare_summary(oc.result);
}

inline void print_text(const Replayer& r, const DeviceRef& dev, int repeat,
                       const Verdict& verdict) {
    std::cout << "== " << dev.p << ":" << dev.d << " " << dev.name << " (" << dev.platform_name
              << ")\n";
    std::cout << "   " << verdict.line << "\n";
    for (const auto& s : r.outcomes)
        for (const auto& t : s.step->transfers)
            if (t.replayed.empty())
                std::cout << "   host transfer " << t.enqueue << " " << t.function
                          << " before enqueue " << s.step->enqueue << ": not replayed (" << t.why
                          << ")\n";
    for (const auto& n : r.notes) std::cout << "   note: " << n << "\n";
    for (const auto& f : r.findings())
        std::cout << "   enqueue " << f.enqueue << " " << f.kernel << ": cannot run (" << f.kind
                  << "): " << f.reason << "\n";
    for (size_t i = 0; i < r.outcomes.size(); ++i) {
        const StepOutcome& s = r.outcomes[i];
        if (!s.cannot_run.empty()) {
            std::cout << "   enqueue " << s.step->enqueue << " " << s.step->kernel
                      << ": CANNOT RUN (not launched)\n";
            continue;
        }
        const Timing& t = s.timing;
        Stats e = stats(t.start_end), q = stats(t.queued_submit), st = stats(t.submit_start),
              h = stats(t.host_enqueue);
        std::cout << "   enqueue " << s.step->enqueue << " " << s.step->kernel << ": "
                  << (step_ok(s) ? "PASS" : "FAIL") << "  (kernel " << fmt_ns(e.median);
        if (repeat > 1)
            std::cout << " [" << fmt_ns(e.min) << " .. " << fmt_ns(e.max) << "], queued->submit "
                      << fmt_ns(q.median) << ", submit->start " << fmt_ns(st.median)
                      << ", host enqueue " << fmt_ns(h.median);
        std::cout << ")\n";
        for (size_t j = 0; j < s.step->loads.size(); ++j) {
            const Load& l = s.step->loads[j];
            if (l.why == "reload" || (l.why == "verify" && r.load_done(i, j)))
                std::cout << "      reload " << l.mem << ": " << l.note << "\n";
        }
        for (const auto& c : s.prechecks)
            std::cout << "      before: " << c.check->label << ": " << c.status << " "
                      << summary(c) << "\n";
        for (const auto& c : s.checks) {
            std::cout << "      " << c.check->label << ": " << c.status << " " << summary(c)
                      << "\n";
        }
    }
    std::cout << verdict.line << "\n";
}

// The capture's devices, most wanted first: the manifest's bundle.capture.device (name and
// platform), then the devices of the steps.
inline std::vector<std::pair<std::string, std::string>> captured_devices(const Json& manifest) {
    std::vector<std::pair<std::string, std::string>> out;
    const Json* bundle = manifest.find("bundle");
    const Json* cap = bundle ? bundle->find("capture") : nullptr;
    const Json* dev = cap ? cap->find("device") : nullptr;
    if (dev && dev->kind == Json::Object && dev->find("name") &&
        dev->find("name")->kind == Json::String) {
        const Json* plat = dev->find("platform");
        out.push_back({dev->find("name")->str,
                       plat && plat->kind == Json::String ? plat->str : std::string()});
    }
    if (const Json* steps = manifest.find("steps"))
        for (const auto& st : steps->arr)
            if (const Json* d = st.find("device"))
                if (d->kind == Json::String) out.push_back({d->str, ""});
    return out;
}

}  // namespace cltui
