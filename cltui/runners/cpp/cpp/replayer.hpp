// cpp/replayer.hpp: the Replayer (one device's run of the steps): its outcomes and its state.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
// The members are defined in cpp/setup.hpp (context, programs, objects, arguments) and
// cpp/steps.hpp (the passes over the steps, transfers, reads and writes, checks).
#pragma once

#include "compare.hpp"
#include "plan.hpp"
#include "devices.hpp"
#include "facts.hpp"
#include "options.hpp"

namespace cltui {

// Running

struct Timing {  // nanoseconds per stage, one sample per repetition
    std::vector<double> queued_submit, submit_start, start_end, host_enqueue;
};

struct CheckOutcome {
    const Check* check;
    std::string status;  // equal | within | different | unchecked
    CompareResult result;
    std::string output;  // --out file
    bool hashed = false;  // compared by the layer's hash (no element-wise result)
    std::uint64_t hash = 0;  // the replayed bytes' hash
    long long after_unreplayed = -1;
    long long after_cannot_run = -1;  // it follows what this enqueue, which cannot run, left
    std::string why;                  // unchecked because its step cannot run: "cannot run: ..."
};



struct StepOutcome {
    const Step* step;
    std::vector<CheckOutcome> prechecks, checks;
    Timing timing;
    std::vector<bool> fired;  // per load: done in the validation pass
    bool ran = false;         // launched in the validation pass
    std::vector<Finding> cannot_run;  // not launched: it cannot run on this device, and why
};

// How a timing pass runs: a host wait before each launch, whether its launches keep an
// event (profiling) for the stage timing, and whether its loop time is the runner's host time.
// A timing repetition of --repeat is two passes: a timed one (no event, the queue without
// profiling: as an application runs; its loop time is loop_ns) and a staged one (an event per
// launch on the profiling queue: the stage figures).  An event costs a driver several
// microseconds per launch (about 7 us on NVIDIA's OpenCL), which would otherwise be counted
// as the range's own host time.
struct Pass {
    long long delay_ns = 0;
    bool events = true;
    bool plain = false;  // on a second queue without CL_QUEUE_PROFILING_ENABLE
    bool timed = false;  // its loop time goes to loop_ns (the runner's host time)

    static Pass timed_pass(long long delay_ns) {
        Pass p;
        p.delay_ns = delay_ns;
        p.events = false;
        p.plain = true;
        p.timed = true;
        return p;
    }
    static Pass staged_pass(long long delay_ns) {
        Pass p;
        p.delay_ns = delay_ns;
        return p;
    }
};

// What a timing pass took: the launch loop's host time, the wall time to the queue drained,
// the wait before its launches really spent and, for a busy pass (an event per launch), the
// device's busy time (the union of its kernels' START..END) and the time it waited for
// launches (a launch queued only after the one before had ended: from that end to its
// start) (ns; -1: not measured).
struct PassTime {
    double loop_ns = 0, wall_ns = 0, injected_ns = 0, device_ns = -1, wait_ns = -1;
};

// Waits of at least this long sleep; shorter ones busy-wait (no sleep is that short).
constexpr long long SLEEP_FROM_NS = 2000;

// Wait about ns nanoseconds on this thread before a launch; the time really spent (ns).  A
// wait of SLEEP_FROM_NS or more sleeps to its deadline (then busy-waits what is left), so the
// thread gives its core away: on a CPU device the host's wait does not take cores from the
// device's threads (a busy-wait did: the device slowed as the delay grew, which read as
// launch cost); a sleep can overshoot (a loaded machine wakes the thread late), and the time
// really spent is what is counted.
inline double spin(long long ns) {
#ifdef __linux__
    static const bool slack = prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0;
    (void)slack;  // timer slack 1 ns (the default 50 us would round every sleep up)
#endif
    auto t0 = std::chrono::steady_clock::now();
    auto until = t0 + std::chrono::nanoseconds(ns);
    if (ns >= SLEEP_FROM_NS) std::this_thread::sleep_until(until);
    auto t = t0;
    while ((t = std::chrono::steady_clock::now()) < until) {
    }
    return std::chrono::duration<double, std::nano>(t - t0).count();
}

// One launch of a timing pass with its event kept (cltui latency's per-launch rows).
struct LaunchRow {
    int pass;
    size_t step;
    double host_start, host_ns;
    cl_ulong queued, submit, start, end;
};

class Replayer {
   public:
    Replayer(const Plan& plan, const std::string& bundle, const DeviceRef& dev, const Options& opt,
             const std::string& out_dir)
        : plan_(plan), bundle_(bundle), dev_(dev), opt_(opt), out_dir_(out_dir) {}

    ~Replayer() {
        if (queue_) clFinish(queue_);
        if (plain_) clFinish(plain_);
        for (auto& e : events_) clReleaseEvent(e.ev);
        for (auto& kv : kernels_) clReleaseKernel(kv);
        for (auto& kv : programs_) clReleaseProgram(kv.second);
        for (auto& kv : stages_)
            if (kv.second.stage) clReleaseMemObject(kv.second.stage);
        for (auto& kv : subs_) clReleaseMemObject(kv.second);
        for (auto it = mems_.rbegin(); it != mems_.rend(); ++it) clReleaseMemObject(it->second);
        for (auto& kv : svms_) clSVMFree(ctx_, kv.second);
        for (auto& s : samplers_) clReleaseSampler(s);
        if (queue_) clReleaseCommandQueue(queue_);
        if (plain_) clReleaseCommandQueue(plain_);
        if (ctx_) clReleaseContext(ctx_);
    }

    std::vector<std::string> notes;
    std::vector<StepOutcome> outcomes;
    struct Build {
        std::string program, how;
        double seconds;
    };
    std::vector<Build> builds;    // per program built, in build order
    std::vector<double> loop_ns;  // host time of each timed pass's launch loop
    long long running = -1;       // the enqueue being set up or run (-1: none)
    std::function<void(size_t)> step_done;  // after step i of the validation pass (--stream)

    // Everything that can fail before a kernel runs: context, programs, objects, arguments.
    void setup();

    // One pass over all steps.  The first pass validates: pre-checks, loads ("input",
    // "reload", and "verify": reload only if the replayed state differs from the captured
    // Pre dump), the launch, a wait, the checks.  Later passes only time the launches: the
    // inputs each object starts from are restored before the pass, and inside it only the
    // reloads the first pass really did are repeated (as replay.py does).
    PassTime run_once(bool validate, const Pass& pass = Pass());

    // The floor (--floor, cpp/latency.hpp): the inputs restored, then every step's kernel
    // launched back to back, arguments as set once, no event, nothing else.
    PassTime floor_once(long long delay_ns = 0, bool plain = false);

    // Run f with queue_ swapped for a queue of the same context and device without
    // profiling (created on first use): a pass as an application without profiling runs.
    template <class F>
    PassTime on_plain_queue(F f) {
        if (!plain_) {
            cl_int err = CL_SUCCESS;
            plain_ = clCreateCommandQueue(ctx_, dev_.device, 0, &err);
            check(err, "clCreateCommandQueue (no profiling)");
        }
        std::swap(queue_, plain_);
        try {
            PassTime t = f();
            std::swap(queue_, plain_);
            return t;
        } catch (...) {
            std::swap(queue_, plain_);
            throw;
        }
    }

    // The launches of the timing passes, kept by collect_timing() (--latency).
    bool keep_rows = false;
    std::vector<LaunchRow> rows;

    // Whether load j of step i did happen in the validation pass.
    bool load_done(size_t i, size_t j) const {
        return i < fired_.size() && j < fired_[i].size() && fired_[i][j];
    }

    // Profiling information of every launch, gathered after the runs.
    void collect_timing();

    // The last timing pass's events taken out (not in the stage figures) and released: into
    // t, the time the device was busy with its kernels (the union of their START..END) and
    // the time it waited for the host (left -1 when the pass kept no event or the driver
    // gave no times) (cpp/latency.hpp).
    void take_device_busy(PassTime& t);

    // The pre-flight's findings: every step that cannot run on this device, and why.
    std::vector<Finding> findings() const {
        std::vector<Finding> out;
        for (const auto& kv : cannot_)
            for (const auto& f : kv.second) out.push_back(f);
        return out;
    }
    size_t launches() const {
        return plan_.steps.size() - cannot_.size() - set_up_failed_.size();
    }

    // After the runs: the first step whose kernel could not be set up (its error, and the
    // count of the others) is the run's error; those steps have no outcome (not replayed).
    std::string set_up_error() {
        if (set_up_failed_.empty()) return "";
        size_t first = set_up_failed_.begin()->first, more = set_up_failed_.size() - 1;
        std::string out = set_up_failed_.begin()->second;
        if (more)
            out += " (and " + std::to_string(more) + " more enqueue" + (more > 1 ? "s" : "") +
                   " not set up)";
        running = plan_.steps[first].enqueue;
        for (auto it = set_up_failed_.rbegin(); it != set_up_failed_.rend(); ++it)
            if (it->first < outcomes.size()) outcomes.erase(outcomes.begin() + it->first);
        set_up_failed_.clear();
        return out;
    }

   private:
    struct Launch {
        size_t step;
        cl_event ev;
        double host_ns;
        double host_start;
        int pass;
    };
    int pass_ = 0;  // timing passes so far
    std::vector<std::vector<const Load*>> inloop_;  // per step: the loads a pass repeats
    // A reload a timing pass repeats, as a device-side copy from a buffer staged once with
    // its bytes (null: the host write instead, as for SVM): Engine._restorer's way.
    struct Stage {
        cl_mem stage = nullptr, dst = nullptr;
        const MemDesc* desc = nullptr;
    };
    std::map<const Load*, Stage> stages_;
    const Plan& plan_;
    std::string bundle_;
    DeviceRef dev_;
    const Options& opt_;
    std::string out_dir_;  // --out (per device)
    cl_context ctx_ = nullptr;
    cl_command_queue queue_ = nullptr;
    cl_command_queue plain_ = nullptr;  // no profiling (on_plain_queue)
    bool has_svm_ = false;
    std::vector<std::pair<std::string, cl_mem>> mems_;  // creation order (parents first)
    std::map<std::string, void*> svms_;
    std::map<std::string, const MemDesc*> desc_;
    std::map<std::pair<std::string, size_t>, cl_mem> subs_;  // emulated SVM at an offset
    std::map<std::string, cl_program> programs_;
    std::vector<cl_kernel> kernels_;
    std::vector<cl_sampler> samplers_;
    std::vector<Launch> events_;
    std::map<std::string, std::vector<unsigned char>> cache_;
    std::vector<std::vector<bool>> fired_;  // per step and load: done in the validation pass
    DeviceFacts facts_;                       // the pre-flight (cpp/feasible.hpp)
    std::map<size_t, std::vector<Finding>> cannot_;  // step -> why it cannot run here
    std::map<size_t, std::string> set_up_failed_;     // step -> why its kernel was not set up
    std::map<size_t, std::vector<Finding>> at_launch_;  // step -> findings its launch decides
    BadMems bad_;                            // objects not made here, and why
    std::map<long long, Marks> marks_;       // enqueue -> checks after a step that cannot run
    std::string build_log_;                  // the last failed build's log

    // cpp/setup.hpp: the pre-flight
    void preflight_plan();
    bool explain_build(const ProgramDesc& p, const std::string& error);
    void not_launched(size_t i, const Step& s, StepOutcome& out);
    void refused(size_t i, const Step& s, StepOutcome& out);
    void mark_after_cannot_run();
    void accepted_notes();
    bool made(const std::string& id) const { return id.empty() || !bad_.count(id); }

    // cpp/setup.hpp
    bool device_has_svm() const;
    void build(const ProgramDesc& p);
    cl_program create_program(const ProgramDesc& p, std::string& how, std::string& built);
    cl_program create_from_binary(const ProgramDesc& p, std::string& how, std::string& built);
    void build_program(const ProgramDesc& p, cl_program prog, const std::string& how);
    void create_mem(const MemDesc& m);
    void zero_fill();
    void set_args(cl_kernel k, const Step& s);
    cl_mem emulated_svm(const Step& s, const ArgDesc& a);

    // cpp/steps.hpp
    void validate_step(size_t i, const Step& s, StepOutcome& out);
    void launch(size_t i, const Step& s, StepOutcome& out, bool validate, bool event = true);
    void restore_inputs();
    const std::vector<std::vector<const Load*>>& inloop();
    void run_transfers(const Step& s);
    cl_int run_copy(const Transfer& t, cl_mem dst, const MemDesc* dd);
    void write(const std::string& id, const std::vector<unsigned char>& bytes);
    void upload(const Load& l) { write(l.mem, data(l.data)); }
    void restore(const Load& l);  // a reload inside a timing pass (stages_)
    std::vector<unsigned char> read(const std::string& id);
    CheckOutcome evaluate(const Step& s, const Check& c, bool post);
    std::string save_output(const Step& s, const Check& c, const std::vector<unsigned char>& bytes);

    // An "input" load at the first step that uses its object: restored before each pass.
    bool is_first_input(size_t i, size_t j) const {
        const Load& l = plan_.steps[i].loads[j];
        if (l.why != "input") return false;
        for (size_t k = 0; k < i; ++k)
            for (const auto& a : plan_.steps[k].args)
                if (a.mem == l.mem) return false;
        return true;
    }

    const std::vector<unsigned char>& data(const std::string& key) {
        auto it = cache_.find(key);
        if (it != cache_.end()) return it->second;
        auto p = plan_.data.find(key);
        if (p == plan_.data.end()) throw UsageError("data '" + key + "' is not in the manifest");
        return cache_[key] = read_file(join(bundle_, p->second));
    }

    cl_mem mem(const std::string& id) {
        for (auto& kv : mems_)
            if (kv.first == id) return kv.second;
        throw UsageError("memory object '" + id + "' is not in the manifest");
    }

    cl_program program(const Step& s) {
        auto it = programs_.find(s.program);
        if (it == programs_.end())
            throw UsageError("enqueue " + std::to_string(s.enqueue) + ": program '" + s.program +
                             "' is not in the manifest");
        return it->second;
    }
};

}  // namespace cltui
