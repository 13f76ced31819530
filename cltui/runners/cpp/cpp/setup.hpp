// cpp/setup.hpp: the Replayer's setup: context and queue, programs, memory objects, arguments.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "replayer.hpp"

namespace cltui {

inline void Replayer::setup() {
    cl_int err;
    ctx_ = clCreateContext(nullptr, 1, &dev_.device, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    queue_ = clCreateCommandQueue(ctx_, dev_.device, CL_QUEUE_PROFILING_ENABLE, &err);
    check(err, "clCreateCommandQueue");
    has_svm_ = device_has_svm();
    preflight_plan();  // what cannot run here: not built, not made, not launched
    for (const auto& p : plan_.programs) {  // only the programs a step that can run uses
        bool used = false;
        for (size_t i = 0; i < plan_.steps.size(); ++i)
            used = used || (plan_.steps[i].program == p.id && !cannot_.count(i));
        if (!used) continue;
        try {
            build(p);
        } catch (const DeviceError& e) {
            if (!explain_build(p, e.what())) throw;
        }
    }
    for (const auto& m : plan_.mems)
        if (made(m.id)) create_mem(m);
    zero_fill();
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
        const Step& s = plan_.steps[i];
        running = s.enqueue;
        outcomes.push_back({&s, {}, {}, {}, {}, false, {}});
        if (cannot_.count(i)) {
            kernels_.push_back(nullptr);
            continue;
        }
        cl_kernel k = clCreateKernel(program(s), s.kernel.c_str(), &err);
        if (err != CL_SUCCESS) {  // that step's error: the others still run
            set_up_failed_[i] = "enqueue " + std::to_string(s.enqueue) + ": kernel '" + s.kernel +
                                "' not found in program " + s.program + ": clCreateKernel failed: " +
                                cl_error_name(err) + " (" + std::to_string(err) + ")";
            kernels_.push_back(nullptr);
            continue;
        }
        std::vector<Finding> found = kernel_findings(s, kernel_facts(k, dev_.device), facts_);
        bool sure = false;  // what only the built kernel says (reqd size, local memory)
        for (const auto& f : found) sure = sure || !decided_at_launch(f.kind);
        if (sure) {
            cannot_[i] = found;
            clReleaseKernel(k);
            kernels_.push_back(nullptr);
            continue;
        }
        if (!found.empty()) at_launch_[i] = found;  // its work-group size: the launch decides
        kernels_.push_back(k);
        try {  // arguments that cannot be set: that step's error; the others still run
            set_args(k, s);
        } catch (const DeviceError& e) {
            set_up_failed_[i] = e.what();
        } catch (const UsageError& e) {
            set_up_failed_[i] = e.what();
        }
        if (set_up_failed_.count(i)) {
            clReleaseKernel(k);
            kernels_.back() = nullptr;
        }
    }
    for (size_t i = 0; i < outcomes.size(); ++i)
        if (cannot_.count(i)) outcomes[i].cannot_run = cannot_[i];
    mark_after_cannot_run();
    running = -1;
}

// The marks of the checks after every step that cannot run (again after a refused launch).
inline void Replayer::mark_after_cannot_run() {
    std::set<size_t> skip;
    for (const auto& kv : cannot_) skip.insert(kv.first);
    for (const auto& kv : set_up_failed_) skip.insert(kv.first);
    marks_.clear();
    for (const auto& kv : after_cannot_run(plan_, skip))
        marks_[plan_.steps[kv.first].enqueue] = kv.second;
}

// The device's facts and what the plan alone says cannot run here.
inline void Replayer::preflight_plan() {
    std::set<std::string> types;  // the image formats of the plan's image types only
    for (const auto& m : plan_.mems)
        if (m.kind == "image") types.insert(m.image_type_name);
    facts_ = device_facts(dev_, ctx_, types);
    bad_ = memory_findings(plan_, facts_);
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
        std::vector<Finding> found = step_findings(plan_, plan_.steps[i], facts_, bad_);
        if (!found.empty()) cannot_[i] = found;
    }
}

// A failed build that the source's needs and the device's lacks explain: its steps cannot run.
inline bool Replayer::explain_build(const ProgramDesc& p, const std::string& error) {
    if (p.source.empty()) return false;
    const auto& src = data(p.source);
    // the log's positions, in the program's own file (as replay.py)
    auto named = plan_.data.find(p.source);
    const std::string source = named != plan_.data.end() ? named->second : p.source;
    std::string log;
    std::istringstream lines(build_log_.empty() ? error : build_log_);
    for (std::string ln; std::getline(lines, ln);) log += at_source(ln, source) + "\n";
    std::vector<Finding> found = build_findings(plan_, p.id, source_needs(std::string(src.begin(), src.end())),
                                                facts_, log);
    for (const auto& f : found)
        for (size_t i = 0; i < plan_.steps.size(); ++i)
            if (plan_.steps[i].enqueue == f.enqueue) cannot_[i].push_back(f);
    return !found.empty();
}

inline bool Replayer::device_has_svm() const {
    int major = 0;
    std::sscanf(dev_.version.c_str(), "OpenCL %d", &major);
    if (major < 2) return false;
    cl_device_svm_capabilities caps = 0;
    if (clGetDeviceInfo(dev_.device, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, nullptr) !=
        CL_SUCCESS)
        return false;
    return (caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
}

// Programs

inline void Replayer::build(const ProgramDesc& p) {
    auto started = std::chrono::steady_clock::now();
    std::string how, built;  // built: how, in the words of replay.py's "builds"
    cl_program prog = create_program(p, how, built);
    build_program(p, prog, how);
    programs_[p.id] = prog;
    builds.push_back(
        {p.id, built,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()});
}

// The program object from the source, else the SPIR-V, else a captured binary.
inline cl_program Replayer::create_program(const ProgramDesc& p, std::string& how,
                                           std::string& built) {
    cl_int err = CL_SUCCESS;
    cl_program prog = nullptr;
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
        return create_from_binary(p, how, built);
    }
    check(err, "program " + p.label + ": creating it from " + how);
    return prog;
}

// The binary made on this device, else the one made on the device named most like it
// (PoCL's load on another CPU of the same target; NVIDIA's are PTX).
inline cl_program Replayer::create_from_binary(const ProgramDesc& p, std::string& how,
                                               std::string& built) {
    std::vector<std::string> made_on;
    std::string devices;
    for (const auto& b : p.binaries) {
        made_on.push_back(b.second);
        devices += (devices.empty() ? "" : ", ") + b.second;
    }
    BinaryPick pick = pick_binary(made_on, dev_.name);
    if (pick.index < 0)
        throw DeviceError("program " + p.label + " has no source and no binary for " + dev_.name +
                          " (binaries for: " + (devices.empty() ? "none" : devices) + ")");
    const auto& chosen = p.binaries[static_cast<size_t>(pick.index)];
    const auto& bin = data(chosen.first);
    const unsigned char* ptr = bin.data();
    size_t len = bin.size();
    cl_int status, err;
    cl_program prog =
        clCreateProgramWithBinary(ctx_, 1, &dev_.device, &len, &ptr, &status, &err);
    how = "device binary";
    built = "binary";
    if (!pick.exact) {
        how = "the binary made on " + pick.made_on;
        built = "binary made on " + pick.made_on;
        notes.push_back(p.label + ": no source in the capture; built from the binary made on " +
                        pick.made_on + ", a device named like " + dev_.name +
                        " (its driver decides whether it loads)");
        if (err == CL_SUCCESS && status != CL_SUCCESS) err = status;
        if (err != CL_SUCCESS)
            throw DeviceError("program " + p.label + ": " + how +
                              " (no source in the capture) does not load on " + dev_.name + ": " +
                              cl_error_name(err));
    }
    check(err, "program " + p.label + ": creating it from " + how);
    return prog;
}

// clBuildProgram with the bundle's include folders first (its headers win over a captured
// folder's) and the program's options as they are (bundle_options: the Python engine's
// string, so that PoCL's cache of builds serves both runners); a failed build prints the
// build log on stderr.
inline void Replayer::build_program(const ProgramDesc& p, cl_program prog, const std::string& how) {
    std::vector<std::string> dirs;
    for (const auto& inc : p.include_dirs) dirs.push_back(join(bundle_, inc));
    std::string options = bundle_options(p.options, dirs);
    cl_int err = clBuildProgram(prog, 1, &dev_.device, options.c_str(), nullptr, nullptr);
    if (err == CL_SUCCESS) return;
    size_t n = 0;
    clGetProgramBuildInfo(prog, dev_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(prog, dev_.device, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
    std::cerr << log << "\n";
    build_log_ = log;
    clReleaseProgram(prog);
    if (how.rfind("the binary made on ", 0) == 0)
        throw DeviceError("program " + p.label + ": " + how +
                          " (no source in the capture) does not load on " + dev_.name + ": " +
                          cl_error_name(err));
    // as replay.py: the build log's first error, at the line of the program's own source
    // file (not the driver's temp file); an empty log (a bad option): the error's name
    std::vector<std::string> errors = build_errors(log);
    if (errors.empty()) check(err, "program " + p.label + ": build on " + dev_.name);
    auto named = plan_.data.find(p.source);
    std::string source = named != plan_.data.end() ? named->second : p.source;
    std::string first = first_build_error(errors[0]);
    throw DeviceError("program " + p.label + ": build failed on " + dev_.name + ": " +
                      (p.source.empty() ? first : at_source(first, source)));
}

// Memory objects

inline void Replayer::create_mem(const MemDesc& m) {
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
        obj = clCreateSubBuffer(mem(m.parent), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r,
                                &err);
    } else {  // a buffer, or SVM emulated by a buffer (as replay.py does)
        if (m.kind == "svm")
            notes.push_back(m.label + ": " + dev_.name + " has no SVM: emulated with a buffer");
        obj = clCreateBuffer(ctx_, CL_MEM_READ_WRITE, std::max<size_t>(m.size, 1), nullptr, &err);
    }
    check(err, "creating " + m.label + " on " + dev_.name);
    mems_.emplace_back(m.id, obj);
}

// Objects start zeroed, so outputs that no load covers have defined contents.
inline void Replayer::zero_fill() {
    for (const auto& m : plan_.mems) {
        if (m.kind == "subbuffer" || !made(m.id)) continue;
        std::vector<unsigned char> zeros(m.size, 0);
        write(m.id, zeros);
    }
    check(clFinish(queue_), "clFinish");
}

// Arguments

inline void Replayer::set_args(cl_kernel k, const Step& s) {
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
            cl_mem m = emulated_svm(s, a);
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
        check(err, "enqueue " + std::to_string(s.enqueue) + ": cannot set argument " +
                       std::to_string(a.index) + " (" + a.kind + "): clSetKernelArg");
    }
}

// An SVM argument on a device without SVM: its buffer, or a sub-buffer at the offset.
inline cl_mem Replayer::emulated_svm(const Step& s, const ArgDesc& a) {
    cl_mem m = mem(a.mem);
    if (!a.offset) return m;
    auto key = std::make_pair(a.mem, a.offset);
    if (subs_.count(key)) return subs_[key];
    cl_uint align_bits = 0;
    clGetDeviceInfo(dev_.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                    nullptr);
    size_t align = align_bits / 8;
    if (align && a.offset % align)
        throw DeviceError("enqueue " + std::to_string(s.enqueue) + ": " + dev_.name +
                          " has no SVM and the SVM offset " + std::to_string(a.offset) +
                          " is not a multiple of its " + std::to_string(align) +
                          "-byte sub-buffer alignment");
    cl_buffer_region r{a.offset, desc_.at(a.mem)->size - a.offset};
    cl_int e2;
    subs_[key] = clCreateSubBuffer(m, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &e2);
    check(e2, "enqueue " + std::to_string(s.enqueue) + ": emulating SVM offset " +
                  std::to_string(a.offset) + " with a sub-buffer");
    return subs_[key];
}

}  // namespace cltui
