// cpp/verdict.hpp: the verdict of one device's run (the same rules as the Python engine's).
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "steps.hpp"

namespace cltui {

inline bool step_ok(const StepOutcome& s) {
    if (!s.cannot_run.empty()) return true;  // not launched: "cannot-run", not a failure
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

// The verdict's counts over what ran (tainted_diff: differing checks after an unreplayed
// host write, which make a replay incomplete, not failed).
struct Tally {
    long long replayed = 0, outputs = 0, checked = 0, equal = 0, within = 0, different = 0;
    long long departed = 0, after = 0, tainted_diff = 0;
    long long cannot_run = 0, after_cannot_run = 0;
};

inline void tally_step(const StepOutcome& o, Tally& t) {
    if (o.cannot_run.empty())
        ++t.replayed;
    else
        ++t.cannot_run;
    for (const auto& c : o.checks) {
        if (c.status == "equal") ++t.equal;
        if (c.status == "within") ++t.within;
        if (c.status == "different") ++t.different;
        if (c.status != "unchecked") ++t.checked;
        if (c.after_unreplayed >= 0 && c.status != "unchecked") ++t.after;  // checks made
        if (c.after_cannot_run >= 0) ++t.after_cannot_run;
        if ((c.after_unreplayed >= 0 || c.after_cannot_run >= 0) && c.status == "different")
            ++t.tainted_diff;
    }
    for (const auto& p : o.prechecks) {  // departed: a pre-check differs and no load fixed it
        if (p.status != "different" || p.after_cannot_run >= 0) continue;
        bool reloaded = false;
        const auto& loads = o.step->loads;
        for (size_t j = 0; j < loads.size() && j < o.fired.size(); ++j)
            reloaded = reloaded || (loads[j].mem == p.check->mem && o.fired[j]);
        if (!reloaded) ++t.departed;
    }
}

// " (a, b)" after a clause, or nothing when the list is empty.
inline std::string listed(const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : " (") + items[i];
    return items.empty() ? out : out + ")";
}

// The verdict line's account: kernels, outputs, transfers, taints.
inline std::string verdict_account(const Plan& plan, const Verdict& v, const Tally& t) {
    long long kernels = v.count("kernels"), unchecked = v.count("unchecked");
    std::ostringstream o;
    o << t.replayed << "/" << kernels << " kernel enqueues replayed";
    std::vector<std::string> about;
    if (v.count("skipped")) about.push_back(std::to_string(v.count("skipped")) + " skipped");
    if (plan.recovered) about.push_back(std::to_string(plan.recovered) + " recovered");
    if (t.cannot_run)
        about.push_back(std::to_string(t.cannot_run) + " cannot run on this device");
    o << listed(about) << ", " << t.checked << "/" << t.outputs << " outputs checked";
    std::vector<std::string> how;
    if (t.equal) how.push_back(std::to_string(t.equal) + " equal");
    if (t.within) how.push_back(std::to_string(t.within) + " within");
    if (t.different) how.push_back(std::to_string(t.different) + " different");
    if (unchecked) how.push_back(std::to_string(unchecked) + " unchecked");
    o << listed(how);
    if (plan.transfers) {
        o << ", " << plan.transfers_replayed << "/" << plan.transfers << " host transfers replayed";
        if (plan.transfers_replayed < plan.transfers)
            o << " (" << plan.transfers - plan.transfers_replayed << " not)";
    }
    if (t.after) o << ", " << t.after << " checks after an unreplayed host write";
    if (t.after_cannot_run)
        o << ", " << t.after_cannot_run << " checks after an enqueue that cannot run";
    if (t.departed) o << ", " << t.departed << " departed from the capture (not reloaded)";
    return o.str();
}

// "enqueue 56 (reduce) cannot run here: REASON" (and how many more), or "".
inline std::string cannot_run_head(const std::vector<StepOutcome>& outcomes) {
    const Finding* first = nullptr;
    long long more = -1;
    for (const auto& o : outcomes)
        if (!o.cannot_run.empty()) {
            if (!first) first = &o.cannot_run[0];
            ++more;
        }
    if (!first) return "";
    std::string head = "enqueue " + std::to_string(first->enqueue) + " (" + first->kernel +
                       ") cannot run here: " + first->reason;
    if (more > 0)
        head += " (and " + std::to_string(more) + " more enqueue" + (more != 1 ? "s" : "") + ")";
    return head;
}

inline Verdict make_verdict(const Plan& plan, const std::vector<StepOutcome>& outcomes,
                            const std::string& error) {
    long long kernels =
        plan.kernels >= 0 ? plan.kernels : static_cast<long long>(plan.steps.size());
    Tally t;
    for (const auto& st : plan.steps) t.outputs += static_cast<long long>(st.checks.size());
    for (const auto& o : outcomes)
        if (o.ran || !o.cannot_run.empty()) tally_step(o, t);  // else an error before it
    long long unchecked = t.outputs - t.checked;
    Verdict v;
    v.counts = {{"kernels", kernels},          {"replayed", t.replayed},
                {"skipped", plan.kernels >= 0 ? plan.skipped : 0},
                {"outputs", t.outputs},        {"checked", t.checked},
                {"unchecked", unchecked},      {"equal", t.equal},
                {"within", t.within},          {"different", t.different},
                {"departed", t.departed},      {"recovered", plan.recovered},
                {"lost", plan.lost},           {"after_unreplayed", t.after},
                {"transfers", plan.transfers}, {"transfers_replayed", plan.transfers_replayed},
                {"cannot_run", t.cannot_run},  {"after_cannot_run", t.after_cannot_run}};
    std::string head;
    std::string lost_head = std::to_string(plan.lost) + " enqueue" + (plan.lost != 1 ? "s" : "") +
                            " of the range lost with the log";
    if (!error.empty()) {
        v.status = "error";
        head = error;
    } else if (t.different > t.tainted_diff) {
        long long bad = t.different - t.tainted_diff;
        v.status = "fail";
        head = std::to_string(bad) + " output" + (bad != 1 ? "s" : "") + " different";
    } else if (v.count("skipped") || plan.lost || unchecked || t.departed || t.after ||
               plan.transfers_replayed < plan.transfers ||
               t.replayed < static_cast<long long>(plan.steps.size()) || t.cannot_run ||
               t.after_cannot_run) {
        v.status = "incomplete";
        if (plan.lost)  // lost enqueues lead the line, whatever file names them
            head = lost_head;
        std::string cr = cannot_run_head(outcomes);
        if (!cr.empty()) head += (head.empty() ? "" : "; ") + cr;
    } else {
        v.status = "pass";
    }
    // a finding or an error first, then what the log lost of the range
    if (plan.lost && v.status != "incomplete") head += "; " + lost_head;
    std::string upper = v.status;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    std::string account = verdict_account(plan, v, t);
    v.line = upper + ": " + (head.empty() ? account : head + "; " + account);
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

// --verdict-cases FILE (cltui's tests, tests/fixtures/verdict_cases.json): [{"plan": a
// manifest, "result": {"steps": [{"checks": [{status, after_unreplayed?}], "prechecks":
// [{status}], "loads": [{done}]}], "error"?}}] -> [verdict_json with "exit"] in order: the
// rule above on the same cases as the Python engine's verdict() and verdict_exit().
inline int print_verdicts(const std::string& path) {
    auto bytes = read_file(path);
    Json cases = JsonParser(std::string(bytes.begin(), bytes.end())).parse();
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        Plan plan = read_plan(c.at("plan"));
        const Json& res = c.at("result");
        const Json* steps = res.find("steps");
        std::vector<StepOutcome> outs;
        for (size_t i = 0; steps && i < steps->arr.size() && i < plan.steps.size(); ++i) {
            const Json& js = steps->arr[i];
            StepOutcome o;
            o.step = &plan.steps[i];
            o.ran = true;
            auto outcomes = [&js](const char* key, const std::vector<Check>& specs,
                                  std::vector<CheckOutcome>& into) {
                const Json* list = js.find(key);
                for (size_t j = 0; list && j < list->arr.size() && j < specs.size(); ++j) {
                    CheckOutcome co;
                    co.check = &specs[j];
                    co.status = str_or(list->arr[j], "status");
                    if (const Json* au = list->arr[j].find("after_unreplayed"))
                        if (au->kind == Json::Number) co.after_unreplayed = au->as_int();
                    into.push_back(co);
                }
            };
            outcomes("checks", plan.steps[i].checks, o.checks);
            outcomes("prechecks", plan.steps[i].prechecks, o.prechecks);
            if (const Json* loads = js.find("loads"))
                for (const auto& l : loads->arr) {
                    const Json* d = l.find("done");
                    o.fired.push_back(d && d->kind == Json::Bool && d->as_bool());
                }
            outs.push_back(o);
        }
        Verdict v = make_verdict(plan, outs, str_or(res, "error"));
        // the verdict's exit code too: one table, held to the Python engine's VERDICT_EXIT
        std::cout << (n ? ",\n " : "") << "{\"exit\": " << verdict_exit(v.status) << ", "
                  << verdict_json(v).substr(1);
    }
    std::cout << "]\n";
    return 0;
}

}  // namespace cltui
