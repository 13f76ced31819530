// cpp/latency.hpp: the floor of launch cost and the launch-delay ladder (--floor, --latency).
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
//
// The floor is this driver's cheapest launch loop over the bundle's kernels: every kernel's
// arguments were set once by setup(), and a pass only calls clEnqueueNDRangeKernel for each
// step, with no event, no transfer, no reload, nothing else, on a queue without profiling.
// --latency measures, round by round, one timed pass of this runner (as replay --repeat
// times it: no event, the queue without profiling, as an application runs), one staged pass
// (an event per launch on the profiling queue: the stages of every launch, and what the
// events cost), one pass of the floor, one of the floor on the profiling queue (what
// profiling alone costs), one timed pass per --delays value (a wait before each launch: a
// sleep from 2 us, a busy-wait below, see spin()) and one busy pass per --delays value (the
// same wait, an event per launch on the profiling queue: the time the device waited for a
// launch, so that cltui latency can tell launch cost from the device's own time growing, as
// a CPU device's does when its cores are busy; the events of a busy pass are not in the
// stage figures), the order shuffled each round (a fixed seed) so that a drift of the machine
// spreads over all of them and no pass always follows the same one (on PoCL the pass right
// after the 20 us ladder pass ran ~30x slower: with a rotation that was always the runner's).
// cltui latency reads the JSON.
#pragma once

#include "report.hpp"

namespace cltui {

inline PassTime Replayer::floor_once(long long delay_ns, bool plain) {
    if (plain) return on_plain_queue([&] { return floor_once(delay_ns, false); });
    PassTime took;
    restore_inputs();
    const size_t n = kernels_.size();
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
        if (!kernels_[i]) continue;  // it cannot run on this device: not launched
        const Step& s = plan_.steps[i];
        if (delay_ns > 0) took.injected_ns += spin(delay_ns);
        cl_int err = clEnqueueNDRangeKernel(
            queue_, kernels_[i], static_cast<cl_uint>(s.global.size()),
            s.offset.empty() ? nullptr : s.offset.data(), s.global.data(),
            s.local.empty() ? nullptr : s.local.data(), 0, nullptr, nullptr);
        if (err != CL_SUCCESS) check(err, "enqueue " + std::to_string(s.enqueue) + " (floor)");
    }
    auto t1 = std::chrono::steady_clock::now();
    check(clFinish(queue_), "clFinish");
    auto t2 = std::chrono::steady_clock::now();
    took.loop_ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    took.wall_ns = std::chrono::duration<double, std::nano>(t2 - t0).count();
    return took;
}

inline std::string nums_json(const std::vector<double>& v) {
    std::string o = "[";
    for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + json_num(v[i]);
    return o + "]";
}

// --floor without --latency: the bare loop's host time per launch (median of the passes).
inline std::string floor_text(const std::vector<PassTime>& passes, size_t launches) {
    std::vector<double> per;
    for (const auto& p : passes) per.push_back(p.loop_ns / static_cast<double>(launches));
    std::sort(per.begin(), per.end());
    double med = per.empty() ? 0 : per[per.size() / 2];
    return "floor: " + std::to_string(passes.size()) + " passes of " + std::to_string(launches) +
           " launches, host time per launch (median) " + fmt_ns(med) + "\n";
}

struct LatencyRun {
    std::vector<PassTime> runner, staged, floor, floor_profiling;
    std::vector<std::vector<PassTime>> ladder;  // per --delays value
    std::vector<std::vector<PassTime>> busy;    // per --delays value: with the device's time
};

inline void Replayer::take_device_busy(PassTime& t) {
    std::vector<std::pair<cl_ulong, cl_ulong>> spans;  // START..END, in launch order
    std::vector<cl_ulong> queued;
    bool any = false, all = true;
    for (auto it = events_.begin(); it != events_.end();) {
        if (it->pass != pass_) {
            ++it;
            continue;
        }
        any = true;
        cl_ulong q = 0, st = 0, en = 0;
        cl_int a = clGetEventProfilingInfo(it->ev, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q,
                                           nullptr);
        cl_int b = clGetEventProfilingInfo(it->ev, CL_PROFILING_COMMAND_START, sizeof st, &st,
                                           nullptr);
        cl_int c = clGetEventProfilingInfo(it->ev, CL_PROFILING_COMMAND_END, sizeof en, &en,
                                           nullptr);
        if (a != CL_SUCCESS || b != CL_SUCCESS || c != CL_SUCCESS || en < st || q == 0 ||
            q > st) {  // (a driver without a QUEUED time: not measured)
            all = false;
        } else {
            spans.emplace_back(st, en);
            queued.push_back(q);
        }
        clReleaseEvent(it->ev);
        it = events_.erase(it);
    }
    if (!any || !all) return;
    // waiting for a launch: it was queued only after the launch before had ended, so the
    // device's gap from that end to its start is the launch's (its wake-up included); a gap
    // before a launch queued in time is the device's own (an in-order queue; one clock)
    double wait = 0;
    for (size_t k = 1; k < spans.size(); ++k)
        if (queued[k] > spans[k - 1].second && spans[k].first > spans[k - 1].second)
            wait += static_cast<double>(spans[k].first - spans[k - 1].second);
    std::sort(spans.begin(), spans.end());
    double busy = 0;
    cl_ulong lo = 0, hi = 0;
    bool open = false;
    for (const auto& sp : spans) {
        if (open && sp.first <= hi) {
            hi = std::max(hi, sp.second);
            continue;
        }
        if (open) busy += static_cast<double>(hi - lo);
        lo = sp.first;
        hi = sp.second;
        open = true;
    }
    if (open) busy += static_cast<double>(hi - lo);
    t.device_ns = busy;
    t.wait_ns = wait;
}

// --latency: rounds of (runner timed, runner staged, floor, floor profiling, each delay),
// the order shuffled per round.
inline LatencyRun measure_latency(Replayer& r, const Options& opt) {
    LatencyRun run;
    run.ladder.resize(opt.delays.size());
    run.busy.resize(opt.delays.size());
    const size_t kinds = 4 + 2 * opt.delays.size();
    r.keep_rows = true;
    std::vector<size_t> order(kinds);
    for (size_t k = 0; k < kinds; ++k) order[k] = k;
    unsigned long long seed = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < opt.repeat; ++round) {
        for (size_t k = kinds - 1; k > 0; --k) {  // Fisher-Yates over a 64-bit LCG
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            std::swap(order[k], order[static_cast<size_t>(seed >> 33) % (k + 1)]);
        }
        for (size_t k = 0; k < kinds; ++k) {
            size_t which = order[k];
            if (which == 0) {
                run.runner.push_back(r.run_once(false, Pass::timed_pass(0)));
            } else if (which == 1) {
                run.staged.push_back(r.run_once(false, Pass::staged_pass(0)));
            } else if (which == 2) {
                run.floor.push_back(r.floor_once(0, true));
            } else if (which == 3) {
                run.floor_profiling.push_back(r.floor_once(0, false));
            } else if (which < 4 + opt.delays.size()) {
                run.ladder[which - 4].push_back(
                    r.run_once(false, Pass::timed_pass(opt.delays[which - 4])));
            } else {
                const size_t d = which - 4 - opt.delays.size();
                PassTime t = r.run_once(false, Pass::staged_pass(opt.delays[d]));
                r.take_device_busy(t);
                run.busy[d].push_back(t);
            }
        }
    }
    r.collect_timing();
    return run;
}

// A pass kind's figures; device_ns only where its passes measured the device's busy time.
inline std::string passes_json(const std::vector<PassTime>& passes, bool device = false) {
    std::vector<double> loop, wall, injected, busy, wait;
    for (const auto& p : passes) {
        loop.push_back(p.loop_ns);
        wall.push_back(p.wall_ns);
        injected.push_back(p.injected_ns);
        busy.push_back(p.device_ns);
        wait.push_back(p.wait_ns);
    }
    return "{\"loop_ns\": " + nums_json(loop) + ", \"wall_ns\": " + nums_json(wall) +
           ", \"injected_ns\": " + nums_json(injected) +
           (device ? ", \"device_ns\": " + nums_json(busy) + ", \"wait_ns\": " + nums_json(wait)
                   : std::string()) +
           "}";
}

inline std::string latency_json(const Replayer& r, const LatencyRun& run, const Options& opt,
                                const DeviceRef& dev, const std::string& error) {
    std::ostringstream o;
    o << "{\"runner\": \"replay.cpp\", \"device\": " << device_json(dev)
      << ", \"error\": " << (error.empty() ? "null" : json_str(error))
      << ", \"failed_enqueue\": "
      << (error.empty() || r.running < 0 ? std::string("null") : std::to_string(r.running))
      << ", \"launches\": " << r.launches() << ", \"clock\": \"steady_clock\""
      << ", \"runner_passes\": " << passes_json(run.runner)
      << ", \"staged_passes\": " << passes_json(run.staged)
      << ", \"floor_passes\": " << passes_json(run.floor)
      << ", \"floor_profiling_passes\": " << passes_json(run.floor_profiling)
      << ", \"ladder\": [";
    for (size_t i = 0; i < run.ladder.size(); ++i)
        o << (i ? ", " : "") << "{\"delay_ns\": " << opt.delays[i]
          << ", \"passes\": " << passes_json(run.ladder[i]) << "}";
    o << "], \"busy_ladder\": [";
    for (size_t i = 0; i < run.busy.size(); ++i)
        o << (i ? ", " : "") << "{\"delay_ns\": " << opt.delays[i]
          << ", \"passes\": " << passes_json(run.busy[i], true) << "}";
    o << "], \"rows\": [";
    for (size_t i = 0; i < r.rows.size(); ++i) {
        const LaunchRow& w = r.rows[i];
        o << (i ? ", " : "") << "[" << w.pass << ", " << w.step << ", " << json_num(w.host_start)
          << ", " << json_num(w.host_ns) << ", " << w.queued << ", " << w.submit << ", "
          << w.start << ", " << w.end << "]";
    }
    o << "]}";
    return o.str();
}

}  // namespace cltui
