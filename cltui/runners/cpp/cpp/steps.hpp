// cpp/steps.hpp: the Replayer's passes over the steps: host transfers, loads, launches, reads
// and writes of the objects, the checks and timing.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "setup.hpp"

namespace cltui {

inline PassTime Replayer::run_once(bool validate, const Pass& pass) {
    if (pass.plain && !validate) {
        Pass inner = pass;
        inner.plain = false;
        inner.events = false;  // (no profiling there)
        return on_plain_queue([&] { return run_once(false, inner); });
    }
    PassTime took;
    if (validate) {
        fired_.assign(plan_.steps.size(), {});
    } else {
        restore_inputs();
        ++pass_;
    }
    const auto& reloads = validate ? inloop_ : inloop();
    auto loop_start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
        const Step& s = plan_.steps[i];
        running = s.enqueue;
        if (validate) {
            validate_step(i, s, outcomes[i]);
        } else {
            run_transfers(s);
            for (const Load* l : reloads[i]) restore(*l);
            if (pass.delay_ns > 0) took.injected_ns += spin(pass.delay_ns);
        }
        if (!kernels_[i]) {  // it cannot run on this device (or was not set up): not launched
            if (validate && !set_up_failed_.count(i)) {
                not_launched(i, s, outcomes[i]);
                if (step_done) step_done(i);
            }
            continue;
        }
        launch(i, s, outcomes[i], validate, pass.events);
        if (validate && step_done) step_done(i);
    }
    auto loop_end = std::chrono::steady_clock::now();
    check(clFinish(queue_), "clFinish");
    auto drained = std::chrono::steady_clock::now();
    if (validate) accepted_notes();
    took.loop_ns = std::chrono::duration<double, std::nano>(loop_end - loop_start).count();
    took.wall_ns = std::chrono::duration<double, std::nano>(drained - loop_start).count();
    if (!validate && pass.timed) loop_ns.push_back(took.loop_ns);
    running = -1;
    return took;
}

// A reload inside a timing pass: a device-side copy from a buffer staged on first use (no
// wait, nothing copied on the host: the in-order queue keeps it between the launches), as
// the Python engine does; SVM, an empty object or no memory for the stage: the host write.
inline void Replayer::restore(const Load& l) {
    auto it = stages_.find(&l);
    if (it == stages_.end()) {
        Stage st;
        st.desc = desc_.at(l.mem);
        if (!svms_.count(l.mem) && st.desc->size > 0) {
            std::vector<unsigned char> host(data(l.data));
            host.resize(st.desc->size, 0);
            cl_int err = CL_SUCCESS;
            st.stage = clCreateBuffer(ctx_, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, host.size(),
                                      host.data(), &err);
            if (err != CL_SUCCESS) st.stage = nullptr;
            st.dst = mem(l.mem);
        }
        it = stages_.emplace(&l, st).first;
    }
    const Stage& st = it->second;
    if (!st.stage) return upload(l);
    size_t origin[3] = {0, 0, 0};
    cl_int err = st.desc->kind == "image"
                     ? clEnqueueCopyBufferToImage(queue_, st.stage, st.dst, 0, origin,
                                                  st.desc->region, 0, nullptr, nullptr)
                     : clEnqueueCopyBuffer(queue_, st.stage, st.dst, 0, 0, st.desc->size, 0,
                                           nullptr, nullptr);
    if (err != CL_SUCCESS) check(err, "restoring " + st.desc->label);
}

// Before a timing pass: the inputs each object starts from, and the queue drained.
inline void Replayer::restore_inputs() {
    for (size_t i = 0; i < plan_.steps.size(); ++i)
        for (size_t j = 0; j < plan_.steps[i].loads.size(); ++j)
            if (is_first_input(i, j) && made(plan_.steps[i].loads[j].mem))
                upload(plan_.steps[i].loads[j]);
    check(clFinish(queue_), "clFinish");
}

// Per step, the loads a timing pass repeats: those the validation pass did, except the
// inputs restored before the pass (worked out once, outside the launch loop).
inline const std::vector<std::vector<const Load*>>& Replayer::inloop() {
    if (inloop_.size() == plan_.steps.size()) return inloop_;
    inloop_.assign(plan_.steps.size(), {});
    for (size_t i = 0; i < plan_.steps.size(); ++i)
        for (size_t j = 0; j < plan_.steps[i].loads.size(); ++j)
            if (load_done(i, j) && !is_first_input(i, j))
                inloop_[i].push_back(&plan_.steps[i].loads[j]);
    return inloop_;
}

// Before step i's launch in the validation pass: transfers, pre-checks, loads.
inline void Replayer::validate_step(size_t i, const Step& s, StepOutcome& out) {
    if (opt_.trace)
        std::cerr << "replay: enqueue " << s.enqueue << " (" << i + 1 << "/" << plan_.steps.size()
                  << ")" << std::endl;
    run_transfers(s);
    if (kernels_[i])  // a step that is not launched reads nothing back
        for (const auto& c : s.prechecks) out.prechecks.push_back(evaluate(s, c, false));
    for (const auto& l : s.loads) {
        if (!made(l.mem)) {  // not made here: its steps cannot run
            fired_[i].push_back(false);
            out.fired.push_back(false);
            continue;
        }
        bool done = true;
        if (l.why == "verify") {
            std::vector<unsigned char> want(data(l.data));
            want.resize(desc_.at(l.mem)->size, 0);
            done = read(l.mem) != want;
        }
        if (done) upload(l);
        fired_[i].push_back(done);
        out.fired.push_back(done);
    }
}

// Step i's launch; in the validation pass also the wait and the checks.
inline void Replayer::launch(size_t i, const Step& s, StepOutcome& out, bool validate,
                             bool event) {
    if (!event && !validate) {  // a timed pass: the launch alone (no clock read, no event)
        cl_int err = clEnqueueNDRangeKernel(
            queue_, kernels_[i], static_cast<cl_uint>(s.global.size()),
            s.offset.empty() ? nullptr : s.offset.data(), s.global.data(),
            s.local.empty() ? nullptr : s.local.data(), 0, nullptr, nullptr);
        if (err != CL_SUCCESS)
            check(err, "enqueue " + std::to_string(s.enqueue) + " (" + s.kernel +
                           "): clEnqueueNDRangeKernel");
        return;
    }
    cl_event ev = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    cl_int err = clEnqueueNDRangeKernel(queue_, kernels_[i], static_cast<cl_uint>(s.global.size()),
                                        s.offset.empty() ? nullptr : s.offset.data(),
                                        s.global.data(), s.local.empty() ? nullptr : s.local.data(),
                                        0, nullptr, event || validate ? &ev : nullptr);
    auto t1 = std::chrono::steady_clock::now();
    if (validate && err == CL_INVALID_WORK_GROUP_SIZE && at_launch_.count(i))
        return refused(i, s, out);
    if (err != CL_SUCCESS)  // (the message only then: no string made per launch)
        check(err, "enqueue " + std::to_string(s.enqueue) + " (" + s.kernel +
                       "): clEnqueueNDRangeKernel");
    if (validate) {
        check(clWaitForEvents(1, &ev),
              "enqueue " + std::to_string(s.enqueue) + " (" + s.kernel + ") on the device");
        for (const auto& c : s.checks) out.checks.push_back(evaluate(s, c, true));
        out.ran = true;
    }
    if (!ev) return;
    events_.push_back({i, ev, std::chrono::duration<double, std::nano>(t1 - t0).count(),
                       std::chrono::duration<double, std::nano>(t0.time_since_epoch()).count(),
                       validate ? 0 : pass_});
}

// The driver refused step i's launch, as its at_launch_ findings said it might: it cannot run
// after all (not launched, its checks unchecked), and the checks after it are marked again.
inline void Replayer::refused(size_t i, const Step& s, StepOutcome& out) {
    std::vector<Finding> found = at_launch_.at(i);
    for (auto& f : found)
        f.reason += "; the driver refused the launch (CL_INVALID_WORK_GROUP_SIZE)";
    at_launch_.erase(i);
    cannot_[i] = found;
    out.cannot_run = found;
    out.prechecks.clear();
    clReleaseKernel(kernels_[i]);
    kernels_[i] = nullptr;
    mark_after_cannot_run();
    not_launched(i, s, out);
}

// After the validation pass: one note per reason of the at_launch_ findings whose launch ran.
inline void Replayer::accepted_notes() {
    std::vector<std::pair<std::string, std::vector<std::string>>> by;
    for (const auto& kv : at_launch_)
        for (const auto& f : kv.second) {
            auto it = std::find_if(by.begin(), by.end(),
                                   [&](const auto& b) { return b.first == f.reason; });
            if (it == by.end()) it = by.insert(by.end(), {f.reason, {}});
            it->second.push_back(std::to_string(f.enqueue) + " (" + f.kernel + ")");
        }
    for (const auto& b : by) {
        std::string e = b.second.size() > 1 ? "enqueues " : "enqueue ";
        for (size_t k = 0; k < b.second.size() && k < 8; ++k) e += (k ? ", " : "") + b.second[k];
        if (b.second.size() > 8) e += " and " + std::to_string(b.second.size() - 8) + " more";
        notes.push_back(e + ": " + b.first + "; the driver accepted the launch");
    }
}

// Step i cannot run here: its checks are unchecked and say why.
inline void Replayer::not_launched(size_t i, const Step& s, StepOutcome& out) {
    std::string why = "cannot run: ";
    std::set<std::string> seen;
    for (const auto& f : cannot_.at(i))
        if (seen.insert(f.reason).second) why += (seen.size() > 1 ? "; " : "") + f.reason;
    for (const auto& c : s.checks) {
        CheckOutcome oc{&c, "unchecked", {}, "", false, 0, -1, -1, why};
        out.checks.push_back(oc);
    }
}

inline void Replayer::collect_timing() {
    for (auto& e : events_) {
        cl_ulong q = 0, sub = 0, st = 0, en = 0;
        clGetEventProfilingInfo(e.ev, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, nullptr);
        clGetEventProfilingInfo(e.ev, CL_PROFILING_COMMAND_SUBMIT, sizeof sub, &sub, nullptr);
        clGetEventProfilingInfo(e.ev, CL_PROFILING_COMMAND_START, sizeof st, &st, nullptr);
        clGetEventProfilingInfo(e.ev, CL_PROFILING_COMMAND_END, sizeof en, &en, nullptr);
        Timing& t = outcomes[e.step].timing;
        t.queued_submit.push_back(static_cast<double>(sub) - static_cast<double>(q));
        t.submit_start.push_back(static_cast<double>(st) - static_cast<double>(sub));
        t.start_end.push_back(static_cast<double>(en) - static_cast<double>(st));
        t.host_enqueue.push_back(e.host_ns);
        if (keep_rows && e.pass > 0)
            rows.push_back({e.pass, e.step, e.host_start, e.host_ns, q, sub, st, en});
        clReleaseEvent(e.ev);
    }
    events_.clear();
}

// The host-side transfers the plan replays before step s, in the capture's order.
inline void Replayer::run_transfers(const Step& s) {
    for (const auto& t : s.transfers) {
        if (!t.runs() || !made(t.mem) || !made(t.src)) continue;
        const std::string what = "enqueue " + std::to_string(t.enqueue) + " (" + t.function +
                                 ", before " + std::to_string(s.enqueue) + ")";
        cl_mem dst = mem(t.mem);
        const MemDesc* dd = desc_.at(t.mem);
        cl_int err = CL_SUCCESS;
        if (t.op == "fill")
            err = clEnqueueFillBuffer(queue_, dst, t.pattern.data(), t.pattern.size(), t.offset,
                                      t.size, 0, nullptr, nullptr);
        else
            err = run_copy(t, dst, dd);
        check(err, what);
    }
}

// A copy transfer: between buffers (whole, a range or a rectangle), images, or both.
inline cl_int Replayer::run_copy(const Transfer& t, cl_mem dst, const MemDesc* dd) {
    cl_mem src = mem(t.src);
    const MemDesc* sd = desc_.at(t.src);
    const size_t zero[3] = {0, 0, 0};
    if (t.op == "copy")
        return clEnqueueCopyBuffer(queue_, src, dst, t.src_offset, t.dst_offset, t.size, 0,
                                   nullptr, nullptr);
    if (t.op == "copy_rect")
        return clEnqueueCopyBufferRect(queue_, src, dst, t.src_origin, t.dst_origin, t.region,
                                       t.pitches[0], t.pitches[1], t.pitches[2], t.pitches[3], 0,
                                       nullptr, nullptr);
    if (sd->kind == "image" && dd->kind == "image")
        return clEnqueueCopyImage(queue_, src, dst, zero, zero, sd->region, 0, nullptr, nullptr);
    if (sd->kind == "image")
        return clEnqueueCopyImageToBuffer(queue_, src, dst, zero, sd->region, 0, 0, nullptr,
                                          nullptr);
    if (dd->kind == "image")
        return clEnqueueCopyBufferToImage(queue_, src, dst, 0, zero, dd->region, 0, nullptr,
                                          nullptr);
    return clEnqueueCopyBuffer(queue_, src, dst, 0, 0, dd->size, 0, nullptr, nullptr);
}

inline void Replayer::write(const std::string& id, const std::vector<unsigned char>& bytes) {
    const MemDesc& m = *desc_.at(id);
    std::vector<unsigned char> host(bytes);
    host.resize(m.size, 0);  // as replay.py: pad or cut to the object's size
    const std::string what = "writing " + m.label;
    auto svm = svms_.find(id);
    if (svm != svms_.end()) {
        check(clEnqueueSVMMemcpy(queue_, CL_TRUE, svm->second, host.data(), host.size(), 0,
                                 nullptr, nullptr),
              what);
    } else if (m.kind == "image") {
        size_t origin[3] = {0, 0, 0};
        check(clEnqueueWriteImage(queue_, mem(id), CL_TRUE, origin, m.region, 0, 0, host.data(),
                                  0, nullptr, nullptr),
              what);
    } else if (!host.empty()) {
        check(clEnqueueWriteBuffer(queue_, mem(id), CL_TRUE, 0, host.size(), host.data(), 0,
                                   nullptr, nullptr),
              what);
    }
}

inline std::vector<unsigned char> Replayer::read(const std::string& id) {
    const MemDesc& m = *desc_.at(id);
    std::vector<unsigned char> out(m.size);
    const std::string what = "reading back " + m.label;
    auto svm = svms_.find(id);
    if (svm != svms_.end()) {
        check(clEnqueueSVMMemcpy(queue_, CL_TRUE, out.data(), svm->second, out.size(), 0, nullptr,
                                 nullptr),
              what);
    } else if (m.kind == "image") {
        size_t origin[3] = {0, 0, 0};
        check(clEnqueueReadImage(queue_, mem(id), CL_TRUE, origin, m.region, 0, 0, out.data(), 0,
                                 nullptr, nullptr),
              what);
    } else if (!out.empty()) {
        check(clEnqueueReadBuffer(queue_, mem(id), CL_TRUE, 0, out.size(), out.data(), 0, nullptr,
                                  nullptr),
              what);
    }
    return out;
}

// A check: the object read back, written to --out (after the launch), then compared with
// the captured bytes (or the captured hash).
inline CheckOutcome Replayer::evaluate(const Step& s, const Check& c, bool post) {
    CheckOutcome out{&c, "unchecked", {}, {}};
    out.after_unreplayed = c.after_unreplayed;
    auto mark = marks_.find(s.enqueue);  // it follows what an enqueue that cannot run left
    if (mark != marks_.end()) {
        const auto& by_mem = post ? mark->second.post : mark->second.pre;
        auto at = by_mem.find(c.mem);
        if (at != by_mem.end()) out.after_cannot_run = at->second;
    }
    auto actual = read(c.mem);
    if (post && !out_dir_.empty()) out.output = save_output(s, c, actual);
    if (c.data.empty() && !c.hash64.empty()) {  // the capture holds only a hash
        out.hashed = true;
        out.hash = cli_hash64(actual);
        const std::uint64_t want = std::strtoull(c.hash64.c_str(), nullptr, 16);
        out.status = out.hash == want ? "equal" : "different";
        return out;
    }
    if (c.data.empty()) return out;  // the capture has nothing to compare with
    Tol tol = c.tol;
    if (opt_.have_atol) tol.atol = opt_.atol;
    if (opt_.have_rtol) tol.rtol = opt_.rtol;
    if (opt_.have_ulp) tol.ulp = opt_.ulp;
    out.result = compare(data(c.data), actual, c.layout, tol, c.shape);
    out.status = out.result.status;
    return out;
}

// --out DIR: the object as replayed, in DIR/<enqueue>_<object>.bin.
inline std::string Replayer::save_output(const Step& s, const Check& c,
                                         const std::vector<unsigned char>& bytes) {
    std::string safe;
    for (char ch : c.mem)
        safe += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ||
                 ch == '.')
                    ? ch
                    : '_';
    std::string path = out_dir_ + "/" + std::to_string(s.enqueue) + "_" + safe + ".bin";
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    if (!f) throw UsageError("cannot write " + path);
    return path;
}

}  // namespace cltui
