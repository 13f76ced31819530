// cpp/report.hpp: results: statistics, the verdict, JSON and text output.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "replayer.hpp"

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

inline bool step_ok(const StepOutcome& s) {
    for (const auto& c : s.checks)
        if (c.status == "different") return false;
    return true;
}

// The verdict: the same rules as engine.verdict() (replay.py, cltui).  PASS: every kernel
// enqueue replayed, every output checked and none different, every host transfer replayed,
// nothing departed, no check after an unreplayed host write; FAIL: a check differs (one
// after an unreplayed host write only makes it incomplete); ERROR: the plan could not run.
struct Verdict {
    std::string status, line;
    std::vector<std::pair<std::string, long long>> counts;
    long long count(const std::string& k) const {
        for (const auto& kv : counts)
            if (kv.first == k) return kv.second;
        return 0;
    }
};

inline Verdict make_verdict(const Plan& plan, const std::vector<StepOutcome>& outcomes,
                     const std::string& error) {
    long long kernels = plan.kernels >= 0 ? plan.kernels
                                          : static_cast<long long>(plan.steps.size());
    long long replayed = 0, outputs = 0, checked = 0, equal = 0, within = 0, different = 0;
    long long departed = 0, after = 0, tainted_diff = 0;
    for (const auto& st : plan.steps) outputs += static_cast<long long>(st.checks.size());
    for (const auto& o : outcomes) {
        if (!o.ran) continue;  // not launched (an error before it)
        ++replayed;
        for (const auto& c : o.checks) {
            if (c.status == "equal") ++equal;
            if (c.status == "within") ++within;
            if (c.status == "different") ++different;
            if (c.status != "unchecked") ++checked;
            if (c.after_unreplayed >= 0) {
                ++after;
                if (c.status == "different") ++tainted_diff;
            }
        }
        for (const auto& p : o.prechecks) {
            if (p.status != "different") continue;
            bool reloaded = false;
            const auto& loads = o.step->loads;
            for (size_t j = 0; j < loads.size() && j < o.fired.size(); ++j)
                reloaded = reloaded || (loads[j].mem == p.check->mem && o.fired[j]);
            if (!reloaded) ++departed;
        }
    }
    long long unchecked = outputs - checked;
    Verdict v;
    v.counts = {{"kernels", kernels},
                {"replayed", replayed},
                {"skipped", plan.kernels >= 0 ? plan.skipped : 0},
                {"outputs", outputs},
                {"checked", checked},
                {"unchecked", unchecked},
                {"equal", equal},
                {"within", within},
                {"different", different},
                {"departed", departed},
                {"recovered", plan.recovered},
                {"lost", plan.lost},
                {"after_unreplayed", after},
                {"transfers", plan.transfers},
                {"transfers_replayed", plan.transfers_replayed}};
    std::string head;
    if (!error.empty()) {
        v.status = "error";
        head = error;
    } else if (different > tainted_diff) {
        long long bad = different - tainted_diff;
        v.status = "fail";
        head = std::to_string(bad) + " output" + (bad != 1 ? "s" : "") + " different";
    } else if (v.count("skipped") || plan.lost || unchecked || departed || after ||
               plan.transfers_replayed < plan.transfers ||
               replayed < static_cast<long long>(plan.steps.size())) {
        v.status = "incomplete";
    } else {
        v.status = "pass";
    }
    std::ostringstream o;
    o << replayed << "/" << kernels << " kernel enqueues replayed";
    std::vector<std::string> about;
    if (v.count("skipped")) about.push_back(std::to_string(v.count("skipped")) + " skipped");
    if (plan.recovered) about.push_back(std::to_string(plan.recovered) + " recovered");
    if (plan.lost)
        about.push_back(std::to_string(plan.lost) + " enqueue" + (plan.lost != 1 ? "s" : "") +
                        " lost with the log");
    for (size_t i = 0; i < about.size(); ++i) o << (i ? ", " : " (") << about[i];
    if (!about.empty()) o << ")";
    o << ", " << checked << "/" << outputs << " outputs checked";
    std::vector<std::string> how;
    if (equal) how.push_back(std::to_string(equal) + " equal");
    if (within) how.push_back(std::to_string(within) + " within");
    if (different) how.push_back(std::to_string(different) + " different");
    if (unchecked) how.push_back(std::to_string(unchecked) + " unchecked");
    for (size_t i = 0; i < how.size(); ++i) o << (i ? ", " : " (") << how[i];
    if (!how.empty()) o << ")";
    if (plan.transfers) {
        o << ", " << plan.transfers_replayed << "/" << plan.transfers << " host transfers replayed";
        if (plan.transfers_replayed < plan.transfers)
            o << " (" << plan.transfers - plan.transfers_replayed << " not)";
    }
    if (after) o << ", " << after << " checks after an unreplayed host write";
    if (departed) o << ", " << departed << " departed from the capture (not reloaded)";
    std::string upper = v.status;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    v.line = upper + ": " + (head.empty() ? o.str() : head + "; " + o.str());
    return v;
}

inline int verdict_exit(const std::string& status) {
    if (status == "pass") return 0;
    if (status == "incomplete") return 3;
    return 1;
}

inline std::string verdict_json(const Verdict& v) {
    std::ostringstream o;
    o << "{\"status\": " << json_str(v.status) << ", \"line\": " << json_str(v.line)
      << ", \"counts\": {";
    for (size_t i = 0; i < v.counts.size(); ++i)
        o << (i ? ", " : "") << json_str(v.counts[i].first) << ": " << v.counts[i].second;
    return o.str() + "}}";
}

inline std::string device_json(const DeviceRef& dev) {
    return "{\"id\": " + json_str(std::to_string(dev.p) + ":" + std::to_string(dev.d)) +
           ", \"platform\": " + json_str(dev.platform_name) + ", \"name\": " + json_str(dev.name) +
           ", \"version\": " + json_str(dev.version) + "}";
}

inline std::string summary(const CheckOutcome& oc);

inline std::string checks_json(const std::vector<CheckOutcome>& list) {
    std::ostringstream o;
    o << "[";
    for (size_t i = 0; i < list.size(); ++i) {
        const auto& oc = list[i];
        const auto& c = oc.result;
        o << (i ? ", " : "") << "{\"mem\": " << json_str(oc.check->mem) << ", \"args\": [";
        for (size_t a = 0; a < oc.check->args.size(); ++a)
            o << (a ? ", " : "") << oc.check->args[a];
        o << "], \"label\": " << json_str(oc.check->label)
          << ", \"status\": " << json_str(oc.status)
          << ", \"output\": " << (oc.output.empty() ? "null" : json_str(oc.output));
        if (oc.after_unreplayed >= 0)
            o << ", \"after_unreplayed\": " << oc.after_unreplayed
              << ", \"summary\": " << json_str(summary(oc));
        if (oc.hashed && oc.after_unreplayed < 0) {
            o << ", \"summary\": " << json_str(summary(oc));
        } else if (oc.status != "unchecked") {
            o << ", \"result\": {\"status\": " << json_str(c.status)
              << ", \"dtype\": " << json_str(oc.check->layout.label)
              << ", \"elements\": " << c.elements << ", \"expected_size\": " << c.expected_size
              << ", \"actual_size\": " << c.actual_size << ", \"n_diff\": " << c.n_diff
              << ", \"n_bad\": " << c.n_bad << ", \"max_abs\": "
              << (c.has_float ? json_num(c.max_abs) : "null")
              << ", \"max_ulp\": " << (c.has_float ? json_num(c.max_ulp) : "null")
              << ", \"first_index\": " << (c.first >= 0 ? std::to_string(c.first) : "null")
              << ", \"first\": "
              << (c.first_where.empty()
                      ? std::string("null")
                      : "{\"where\": " + json_str(c.first_where) + ", \"expected\": " +
                            json_str(c.first_expected) + ", \"actual\": " +
                            json_str(c.first_actual) + "}")
              << ", \"note\": " << json_str(c.note) << "}";
        }
        o << "}";
    }
    return o.str() + "]";
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
      << (error.empty() ? "{\"launches\": " + std::to_string(r.outcomes.size()) +
                              ", \"host_ns_per_repetition\": " + stats_json(r.loop_ns) + "}"
                        : std::string("null"))
      << ", \"builds\": {";
    for (size_t i = 0; i < r.builds.size(); ++i)
        o << (i ? ", " : "") << json_str(r.builds[i].program) << ": {\"how\": "
          << json_str(r.builds[i].how) << ", \"seconds\": " << json_num(r.builds[i].seconds)
          << "}";
    o << "}, \"notes\": [";
    for (size_t i = 0; i < r.notes.size(); ++i) o << (i ? ", " : "") << json_str(r.notes[i]);
    o << "], \"steps\": [";
    for (size_t i = 0; i < r.outcomes.size(); ++i) {
        const auto& s = r.outcomes[i];
        const Timing& t = s.timing;
        o << (i ? "," : "") << "\n  {\"enqueue\": " << s.step->enqueue
          << ", \"kernel\": " << json_str(s.step->kernel)
          << ", \"status\": " << (step_ok(s) ? "\"pass\"" : "\"fail\"")
          << ",\n   \"checks\": " << checks_json(s.checks)
          << ",\n   \"prechecks\": " << checks_json(s.prechecks) << ",\n   \"loads\": [";
        for (size_t j = 0; j < s.step->loads.size(); ++j) {
            const Load& l = s.step->loads[j];
            o << (j ? ", " : "") << "{\"mem\": " << json_str(l.mem) << ", \"why\": "
              << json_str(l.why) << ", \"note\": " << json_str(l.note)
              << ", \"done\": " << (r.load_done(i, j) ? "true" : "false") << "}";
        }
        o << "]";
        {
            o << ",\n   \"transfers\": [";
            for (size_t j = 0; j < s.step->transfers.size(); ++j) {
                const Transfer& tr = s.step->transfers[j];
                o << (j ? ", " : "") << "{\"enqueue\": " << tr.enqueue
                  << ", \"function\": " << json_str(tr.function)
                  << ", \"mem\": " << json_str(tr.mem) << ", \"replayed\": "
                  << (tr.replayed.empty() ? "null" : json_str(tr.replayed))
                  << ", \"why\": " << json_str(tr.why)
                  << ", \"done\": " << (tr.runs() ? "true" : "false") << "}";
            }
            o << "]";
        }
        o << ",\n   \"timing\": {\"queued_to_submit\": " << stats_json(t.queued_submit)
          << ", \"submit_to_start\": " << stats_json(t.submit_start)
          << ", \"start_to_end\": " << stats_json(t.start_end)
          << ", \"host_enqueue\": " << stats_json(t.host_enqueue)
          << ", \"samples\": " << t.start_end.size() << "}}";
    }
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
    if (oc.after_unreplayed >= 0)
        return "after unreplayed host write at " + std::to_string(oc.after_unreplayed) + ": " +
               plain_summary(oc);
    return plain_summary(oc);
}

inline std::string plain_summary(const CheckOutcome& oc) {
    const auto& c = oc.result;
    if (oc.hashed)
        return oc.status == "equal"
                   ? "hash matches"
                   : "hash " + hex64(oc.hash) + " != captured " +
                         hex64(std::strtoull(oc.check->hash64.c_str(), nullptr, 16));
    if (oc.status == "unchecked")
        return oc.check->note.empty() ? "no captured data" : oc.check->note;
    if (oc.status == "equal") return "bit-exact";
    std::ostringstream o;
    o << c.n_diff << "/" << c.elements << " differ";
    if (c.n_bad != c.n_diff) o << ", " << c.n_bad << " beyond tolerance";
    if (c.has_float) o << ", max " << c.max_ulp << " ULP, abs " << c.max_abs;
    if (!c.first_where.empty())
        o << ", first " << c.first_where << ": expected " << c.first_expected << " got "
          << c.first_actual;
    else if (c.first >= 0)
        o << ", first [" << c.first << "]";
    if (!c.note.empty()) o << ", " << c.note;
    return o.str();
}

inline void print_text(const Replayer& r, const DeviceRef& dev, int repeat, const Verdict& verdict) {
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
    for (size_t i = 0; i < r.outcomes.size(); ++i) {
        const StepOutcome& s = r.outcomes[i];
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

// --choose-device-cases FILE (for cltui's tests): run choose_device on each case of FILE,
// {"devices": [{"id", "platform", "name"}], "captured": [name | {"name", "platform"}]}, and
// print [{"index", "rule", "why"}] in order.
inline int print_choices(const std::string& path) {
    auto bytes = read_file(path);
    Json cases = JsonParser(std::string(bytes.begin(), bytes.end())).parse();
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

}  // namespace cltui
