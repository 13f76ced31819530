// cpp/replayer.hpp: running the steps on one device (validation, timing, checks).
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "compare.hpp"
#include "devices.hpp"
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
};



struct StepOutcome {
    const Step* step;
    std::vector<CheckOutcome> prechecks, checks;
    Timing timing;
    std::vector<bool> fired;  // per load: done in the validation pass
    bool ran = false;         // launched in the validation pass
};

class Replayer {
   public:
    Replayer(const Plan& plan, const std::string& bundle, const DeviceRef& dev, const Options& opt,
             const std::string& out_dir)
        : plan_(plan), bundle_(bundle), dev_(dev), opt_(opt), out_dir_(out_dir) {}

    ~Replayer() {
        if (queue_) clFinish(queue_);
        for (auto& e : events_) clReleaseEvent(e.ev);
        for (auto& kv : kernels_) clReleaseKernel(kv);
        for (auto& kv : programs_) clReleaseProgram(kv.second);
        for (auto& kv : subs_) clReleaseMemObject(kv.second);
        for (auto it = mems_.rbegin(); it != mems_.rend(); ++it) clReleaseMemObject(it->second);
        for (auto& kv : svms_) clSVMFree(ctx_, kv.second);
        for (auto& s : samplers_) clReleaseSampler(s);
        if (queue_) clReleaseCommandQueue(queue_);
        if (ctx_) clReleaseContext(ctx_);
    }

    std::vector<std::string> notes;
    std::vector<StepOutcome> outcomes;
    struct Build {
        std::string program, how;
        double seconds;
    };
    std::vector<Build> builds;    // per program built, in build order
    std::vector<double> loop_ns;  // host time of each timing pass's launch loop
    long long running = -1;       // the enqueue being set up or run (-1: none)

    // Everything that can fail before a kernel runs: context, programs, objects, arguments.
    void setup() {
        cl_int err;
        ctx_ = clCreateContext(nullptr, 1, &dev_.device, nullptr, nullptr, &err);
        check(err, "clCreateContext");
        queue_ = clCreateCommandQueue(ctx_, dev_.device, CL_QUEUE_PROFILING_ENABLE, &err);
        check(err, "clCreateCommandQueue");
        has_svm_ = device_has_svm();
        for (const auto& p : plan_.programs) {  // only the programs a step uses, as replay.py
            bool used = false;
            for (const auto& s : plan_.steps) used = used || s.program == p.id;
            if (used) build(p);
        }
        for (const auto& m : plan_.mems) create_mem(m);
        zero_fill();
        for (const auto& s : plan_.steps) {
            running = s.enqueue;
            cl_kernel k = clCreateKernel(program(s), s.kernel.c_str(), &err);
            check(err, "enqueue " + std::to_string(s.enqueue) + ": clCreateKernel(" + s.kernel +
                           ")");
            kernels_.push_back(k);
            set_args(k, s);
            outcomes.push_back({&s, {}, {}, {}, {}, false});
        }
        running = -1;
    }

    // One pass over all steps.  The first pass validates: pre-checks, loads ("input",
    // "reload", and "verify": reload only if the replayed state differs from the captured
    // Pre dump), the launch, a wait, the checks.  Later passes only time the launches: the
    // inputs each object starts from are restored before the pass, and inside it only the
    // reloads the first pass really did are repeated (as replay.py does).
    void run_once(bool validate) {
        if (validate) {
            fired_.assign(plan_.steps.size(), {});
        } else {
            for (size_t i = 0; i < plan_.steps.size(); ++i)
                for (size_t j = 0; j < plan_.steps[i].loads.size(); ++j)
                    if (is_first_input(i, j)) upload(plan_.steps[i].loads[j]);
            check(clFinish(queue_), "clFinish");
        }
        auto loop_start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < plan_.steps.size(); ++i) {
            const Step& s = plan_.steps[i];
            StepOutcome& out = outcomes[i];
            running = s.enqueue;
            if (validate) {
                if (opt_.trace)
                    std::cerr << "replay: enqueue " << s.enqueue << " (" << i + 1 << "/"
                              << plan_.steps.size() << ")" << std::endl;
                run_transfers(s);
                for (const auto& c : s.prechecks) out.prechecks.push_back(evaluate(s, c, false));
                for (const auto& l : s.loads) {
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
            } else {
                run_transfers(s);
                for (size_t j = 0; j < s.loads.size(); ++j)
                    if (fired_[i][j] && !is_first_input(i, j)) upload(s.loads[j]);
            }
            cl_event ev;
            auto t0 = std::chrono::steady_clock::now();
            cl_int err = clEnqueueNDRangeKernel(
                queue_, kernels_[i], static_cast<cl_uint>(s.global.size()),
                s.offset.empty() ? nullptr : s.offset.data(), s.global.data(),
                s.local.empty() ? nullptr : s.local.data(), 0, nullptr, &ev);
            auto t1 = std::chrono::steady_clock::now();
            check(err, "enqueue " + std::to_string(s.enqueue) + " (" + s.kernel +
                           "): clEnqueueNDRangeKernel");
            if (validate) {
                check(clWaitForEvents(1, &ev),
                      "enqueue " + std::to_string(s.enqueue) + " (" + s.kernel + ") on the device");
                for (const auto& c : s.checks) out.checks.push_back(evaluate(s, c, true));
                out.ran = true;
            }
            events_.push_back({i, ev, std::chrono::duration<double, std::nano>(t1 - t0).count()});
        }
        if (!validate)
            loop_ns.push_back(std::chrono::duration<double, std::nano>(
                                  std::chrono::steady_clock::now() - loop_start)
                                  .count());
        check(clFinish(queue_), "clFinish");
        running = -1;
    }

    // Whether load j of step i did happen in the validation pass.
    bool load_done(size_t i, size_t j) const {
        return i < fired_.size() && j < fired_[i].size() && fired_[i][j];
    }

    // Profiling information of every launch, gathered after the runs.
    void collect_timing() {
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
            clReleaseEvent(e.ev);
        }
        events_.clear();
    }

   private:
    struct Launch {
        size_t step;
        cl_event ev;
        double host_ns;
    };
    const Plan& plan_;
    std::string bundle_;
    DeviceRef dev_;
    const Options& opt_;
    std::string out_dir_;  // --out (per device)
    cl_context ctx_ = nullptr;
    cl_command_queue queue_ = nullptr;
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

    // The host-side transfers the plan replays before step s, in the capture's order.
    void run_transfers(const Step& s) {
        for (const auto& t : s.transfers) {
            if (!t.runs()) continue;
            const std::string what = "enqueue " + std::to_string(t.enqueue) + " (" + t.function +
                                     ", before " + std::to_string(s.enqueue) + ")";
            cl_mem dst = mem(t.mem);
            const MemDesc* dd = desc_.at(t.mem);
            cl_int err = CL_SUCCESS;
            if (t.op == "fill") {
                err = clEnqueueFillBuffer(queue_, dst, t.pattern.data(), t.pattern.size(),
                                          t.offset, t.size, 0, nullptr, nullptr);
            } else {
                cl_mem src = mem(t.src);
                const MemDesc* sd = desc_.at(t.src);
                const size_t zero[3] = {0, 0, 0};
                if (t.op == "copy") {
                    err = clEnqueueCopyBuffer(queue_, src, dst, t.src_offset, t.dst_offset,
                                              t.size, 0, nullptr, nullptr);
                } else if (t.op == "copy_rect") {
                    err = clEnqueueCopyBufferRect(queue_, src, dst, t.src_origin, t.dst_origin,
                                                  t.region, t.pitches[0], t.pitches[1],
                                                  t.pitches[2], t.pitches[3], 0, nullptr,
                                                  nullptr);
                } else if (sd->kind == "image" && dd->kind == "image") {
                    err = clEnqueueCopyImage(queue_, src, dst, zero, zero, sd->region, 0, nullptr,
                                             nullptr);
                } else if (sd->kind == "image") {
                    err = clEnqueueCopyImageToBuffer(queue_, src, dst, zero, sd->region, 0, 0,
                                                     nullptr, nullptr);
                } else if (dd->kind == "image") {
                    err = clEnqueueCopyBufferToImage(queue_, src, dst, 0, zero, dd->region, 0,
                                                     nullptr, nullptr);
                } else {
                    err = clEnqueueCopyBuffer(queue_, src, dst, 0, 0, dd->size, 0, nullptr,
                                              nullptr);
                }
            }
            check(err, what);
        }
    }

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

    bool device_has_svm() const {
        int major = 0;
        std::sscanf(dev_.version.c_str(), "OpenCL %d", &major);
        if (major < 2) return false;
        cl_device_svm_capabilities caps = 0;
        if (clGetDeviceInfo(dev_.device, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps,
                            nullptr) != CL_SUCCESS)
            return false;
        return (caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
    }

    void build(const ProgramDesc& p) {
        auto started = std::chrono::steady_clock::now();
        cl_int err = CL_SUCCESS;
        cl_program prog = nullptr;
        std::string how, built;  // built: how, in the words of replay.py's "builds"
        if (!p.source.empty()) {
            const auto& src = data(p.source);
            std::string text(src.begin(), src.end());
            while (!text.empty() && text.back() == '\0') text.pop_back();
            const char* ptr = text.c_str();
            size_t len = text.size();
            prog = clCreateProgramWithSource(ctx_, 1, &ptr, &len, &err);
            how = built = "source";
        } else if (!p.il.empty()) {
            const auto& il = data(p.il);
            prog = clCreateProgramWithIL(ctx_, il.data(), il.size(), &err);
            how = "SPIR-V";
            built = "il";
        } else {
            // the binary made on this device, else the one made on the device named most like
            // it (PoCL's load on another CPU of the same target; NVIDIA's are PTX)
            const std::pair<std::string, std::string>* pick = nullptr;
            int best = 0;
            std::string devices;
            for (const auto& b : p.binaries) {
                devices += (devices.empty() ? "" : ", ") + b.second;
                if (b.second == dev_.name) {
                    pick = &b;
                    best = -1;
                } else if (best >= 0 && name_likeness(b.second, dev_.name) > best) {
                    pick = &b;
                    best = name_likeness(b.second, dev_.name);
                }
            }
            if (!pick)
                throw DeviceError("program " + p.label + " has no source and no binary for " +
                                  dev_.name + " (binaries for: " +
                                  (devices.empty() ? "none" : devices) + ")");
            const auto& bin = data(pick->first);
            const unsigned char* ptr = bin.data();
            size_t len = bin.size();
            cl_int status;
            prog = clCreateProgramWithBinary(ctx_, 1, &dev_.device, &len, &ptr, &status, &err);
            how = "device binary";
            built = "binary";
            if (best >= 0) {
                how = "the binary made on " + pick->second;
                built = "binary made on " + pick->second;
                notes.push_back(p.label +
                                ": no source in the capture; built from the binary made on " +
                                pick->second + ", a device named like " + dev_.name +
                                " (its driver decides whether it loads)");
                if (err == CL_SUCCESS && status != CL_SUCCESS) err = status;
                if (err != CL_SUCCESS)
                    throw DeviceError("program " + p.label + ": " + how +
                                      " (no source in the capture) does not load on " + dev_.name +
                                      ": " + cl_error_name(err));
            }
        }
        check(err, "program " + p.label + ": creating it from " + how);
        std::string options = p.options;
        for (const auto& inc : p.include_dirs) {
            std::string dir = join(bundle_, inc);
            options += dir.find(' ') == std::string::npos ? " -I " + dir : " -I \"" + dir + "\"";
        }
        err = clBuildProgram(prog, 1, &dev_.device, options.c_str(), nullptr, nullptr);
        if (err != CL_SUCCESS) {
            size_t n = 0;
            clGetProgramBuildInfo(prog, dev_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
            std::string log(n, '\0');
            clGetProgramBuildInfo(prog, dev_.device, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
            std::cerr << log << "\n";
            clReleaseProgram(prog);
            if (how.rfind("the binary made on ", 0) == 0)
                throw DeviceError("program " + p.label + ": " + how +
                                  " (no source in the capture) does not load on " + dev_.name +
                                  ": " + cl_error_name(err));
            check(err, "program " + p.label + ": build on " + dev_.name);
        }
        programs_[p.id] = prog;
        builds.push_back({p.id, built,
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                              .count()});
    }

    void create_mem(const MemDesc& m) {
        cl_int err = CL_SUCCESS;
        desc_[m.id] = &m;
        cl_mem obj = nullptr;
        if (m.kind == "svm" && has_svm_) {
            void* p = clSVMAlloc(ctx_, CL_MEM_READ_WRITE, std::max<size_t>(m.size, 1), 0);
            if (!p) throw DeviceError("clSVMAlloc of " + std::to_string(m.size) + " bytes failed");
            svms_[m.id] = p;
            return;
        }
        if (m.kind == "image") {
            cl_image_desc desc{};
            desc.image_type = m.image_type;
            desc.image_width = m.region[0];
            desc.image_height = m.region[1];
            desc.image_depth = m.region[2];
            if (m.image_type == CL_MEM_OBJECT_IMAGE2D_ARRAY) {
                desc.image_depth = 1;
                desc.image_array_size = m.region[2];
            } else if (m.image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY) {
                desc.image_height = 1;
                desc.image_array_size = m.region[1];
            }
            obj = clCreateImage(ctx_, CL_MEM_READ_WRITE, &m.format, &desc, nullptr, &err);
        } else if (m.kind == "subbuffer") {
            cl_buffer_region r{m.origin, m.size};
            obj = clCreateSubBuffer(mem(m.parent), CL_MEM_READ_WRITE,
                                    CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
        } else {  // a buffer, or SVM emulated by a buffer (as replay.py does)
            if (m.kind == "svm")
                notes.push_back(m.label + ": " + dev_.name + " has no SVM: emulated with a buffer");
            obj = clCreateBuffer(ctx_, CL_MEM_READ_WRITE, std::max<size_t>(m.size, 1), nullptr,
                                 &err);
        }
        check(err, "creating " + m.label + " on " + dev_.name);
        mems_.emplace_back(m.id, obj);
    }

    // Objects start zeroed, so outputs that no load covers have defined contents.
    void zero_fill() {
        for (const auto& m : plan_.mems) {
            if (m.kind == "subbuffer") continue;
            std::vector<unsigned char> zeros(m.size, 0);
            write(m.id, zeros);
        }
        check(clFinish(queue_), "clFinish");
    }

    void write(const std::string& id, const std::vector<unsigned char>& bytes) {
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
            check(clEnqueueWriteImage(queue_, mem(id), CL_TRUE, origin, m.region, 0, 0,
                                      host.data(), 0, nullptr, nullptr),
                  what);
        } else if (!host.empty()) {
            check(clEnqueueWriteBuffer(queue_, mem(id), CL_TRUE, 0, host.size(), host.data(), 0,
                                       nullptr, nullptr),
                  what);
        }
    }

    void upload(const Load& l) { write(l.mem, data(l.data)); }

    std::vector<unsigned char> read(const std::string& id) {
        const MemDesc& m = *desc_.at(id);
        std::vector<unsigned char> out(m.size);
        const std::string what = "reading back " + m.label;
        auto svm = svms_.find(id);
        if (svm != svms_.end()) {
            check(clEnqueueSVMMemcpy(queue_, CL_TRUE, out.data(), svm->second, out.size(), 0,
                                     nullptr, nullptr),
                  what);
        } else if (m.kind == "image") {
            size_t origin[3] = {0, 0, 0};
            check(clEnqueueReadImage(queue_, mem(id), CL_TRUE, origin, m.region, 0, 0, out.data(),
                                     0, nullptr, nullptr),
                  what);
        } else if (!out.empty()) {
            check(clEnqueueReadBuffer(queue_, mem(id), CL_TRUE, 0, out.size(), out.data(), 0,
                                      nullptr, nullptr),
                  what);
        }
        return out;
    }

    void set_args(cl_kernel k, const Step& s) {
        for (const auto& a : s.args) {
            cl_int err;
            cl_uint i = static_cast<cl_uint>(a.index);
            if (a.kind == "buffer" || a.kind == "image") {
                cl_mem m = mem(a.mem);
                err = clSetKernelArg(k, i, sizeof(cl_mem), &m);
            } else if (a.kind == "svm" && svms_.count(a.mem)) {
                char* base = static_cast<char*>(svms_.at(a.mem));
                err = clSetKernelArgSVMPointer(k, i, base + a.offset);
            } else if (a.kind == "svm") {  // emulated: the buffer, or a sub-buffer at the offset
                cl_mem m = mem(a.mem);
                if (a.offset) {
                    auto key = std::make_pair(a.mem, a.offset);
                    if (!subs_.count(key)) {
                        cl_uint align_bits = 0;
                        clGetDeviceInfo(dev_.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                                        sizeof align_bits, &align_bits, nullptr);
                        size_t align = align_bits / 8;
                        if (align && a.offset % align)
                            throw DeviceError(
                                "enqueue " + std::to_string(s.enqueue) + ": " + dev_.name +
                                " has no SVM and the SVM offset " + std::to_string(a.offset) +
                                " is not a multiple of its " + std::to_string(align) +
                                "-byte sub-buffer alignment");
                        cl_buffer_region r{a.offset, desc_.at(a.mem)->size - a.offset};
                        cl_int e2;
                        subs_[key] = clCreateSubBuffer(m, CL_MEM_READ_WRITE,
                                                       CL_BUFFER_CREATE_TYPE_REGION, &r, &e2);
                        check(e2, "enqueue " + std::to_string(s.enqueue) +
                                      ": emulating SVM offset " + std::to_string(a.offset) +
                                      " with a sub-buffer");
                    }
                    m = subs_[key];
                }
                err = clSetKernelArg(k, i, sizeof(cl_mem), &m);
            } else if (a.kind == "local") {
                err = clSetKernelArg(k, i, std::max<size_t>(a.size, 1), nullptr);
            } else if (a.kind == "null") {
                err = clSetKernelArg(k, i, sizeof(cl_mem), nullptr);
            } else if (a.kind == "sampler") {
                cl_int e2;
                cl_sampler smp = clCreateSampler(ctx_, a.normalized, a.addressing, a.filter, &e2);
                check(e2, "enqueue " + std::to_string(s.enqueue) + ": clCreateSampler");
                samplers_.push_back(smp);
                err = clSetKernelArg(k, i, sizeof(cl_sampler), &smp);
            } else if (a.kind == "scalar") {  // scalars, vectors and structs by value
                err = clSetKernelArg(k, i, a.bytes.size(), a.bytes.data());
            } else {
                throw UsageError("enqueue " + std::to_string(s.enqueue) + ": argument " +
                                 std::to_string(a.index) + ": cannot replay a '" + a.kind +
                                 "' argument");
            }
            check(err, "enqueue " + std::to_string(s.enqueue) + ": clSetKernelArg(" +
                           std::to_string(a.index) + ", " + a.kind + ")");
        }
    }

    CheckOutcome evaluate(const Step& s, const Check& c, bool post) {
        CheckOutcome out{&c, "unchecked", {}, {}};
        out.after_unreplayed = c.after_unreplayed;
        auto actual = read(c.mem);
        if (post && !out_dir_.empty()) {
            std::string safe;
            for (char ch : c.mem)
                safe += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ||
                         ch == '.')
                            ? ch
                            : '_';
            out.output = out_dir_ + "/" + std::to_string(s.enqueue) + "_" + safe + ".bin";
            std::ofstream f(out.output, std::ios::binary);
            f.write(reinterpret_cast<const char*>(actual.data()),
                    static_cast<std::streamsize>(actual.size()));
            if (!f) throw UsageError("cannot write " + out.output);
        }
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
        out.result = compare(data(c.data), actual, c.layout, tol);
        out.status = out.result.status;
        return out;
    }
};

}  // namespace cltui
