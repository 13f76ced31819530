// cpp/feasible.hpp: will the plan run on this device?  The feasibility rule of the Python
// engine (cltui/replay/engine/feasible.py), held to the same cases
// (tests/fixtures/feasibility_cases.json, --feasibility-cases): a device's facts, a step, the
// built kernel's facts and the source of a program that did not build in, per kernel enqueue
// what cannot run and why out.  Pure: device_facts() (the queries) is the only OpenCL here.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include <set>
#include <sstream>

#include "plan.hpp"

namespace cltui {

struct DeviceFacts {
    std::string name;
    unsigned long long max_work_group_size = 0;
    std::vector<unsigned long long> max_work_item_sizes;
    std::vector<std::string> extensions;
    bool fp64 = false, fp16 = false, image_support = false, non_uniform = false;
    std::map<std::string, std::vector<std::string>> image_formats;  // "IMAGE2D" -> "RGBA/FLOAT"
    std::vector<unsigned long long> image2d_max{0, 0}, image3d_max{0, 0, 0};
    unsigned long long image_max_array = 0, svm = 0;
    std::vector<std::string> opencl_c_versions;  // "1.2", "2.0", ...
    unsigned long long max_mem_alloc_size = 0, global_mem_size = 0, local_mem_size = 0;
    bool has(const std::string& ext) const {
        return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
    }
};

struct KernelFacts {
    unsigned long long work_group_size = 0;  // 0: unknown
    unsigned long long local_mem_size = 0;
    std::vector<unsigned long long> reqd;  // empty: none
};

struct Finding {
    long long enqueue;
    std::string kernel, kind, reason;
};

using BadMems = std::map<std::string, std::pair<std::string, std::string>>;  // id -> kind, why

// Kinds the launch decides (feasible.py AT_LAUNCH): such a step is launched anyway, and it
// cannot run only when the driver refuses the launch (CL_INVALID_WORK_GROUP_SIZE).
inline bool decided_at_launch(const std::string& kind) { return kind == "kernel-work-group-size"; }

inline std::string commas(unsigned long long n) {
    std::string s = std::to_string(n);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
    return s;
}

template <class T>
inline std::string dims(const std::vector<T>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "x" : "") + std::to_string(v[i]);
    return out;
}

inline Finding finding(const Step& s, const std::string& kind, const std::string& why) {
    return {s.enqueue, s.kernel, kind, why};
}

inline std::string svm_words(unsigned long long caps) {
    if (!caps) return "no SVM";
    std::string out;
    const char* words[] = {"coarse-grained", "fine-grained buffer", "fine-grained system",
                           "atomics"};
    for (int b = 0; b < 4; ++b)
        if (caps & (1ull << b)) out += (out.empty() ? "" : ", ") + std::string(words[b]);
    return "SVM: " + out;
}

inline std::string image_problem(const MemDesc& m, const DeviceFacts& dev, std::string& kind) {
    std::string fmt = m.order_name + "/" + m.type_name, it = m.image_type_name;
    const std::vector<unsigned long long> shape{m.region[0], m.region[1], m.region[2]};
    if (!dev.image_support) {
        kind = "images";
        return m.label + " (" + it + " " + dims(shape) + " " + fmt + "): " + dev.name +
               " has no image support";
    }
    auto f = dev.image_formats.find(it);
    if (f != dev.image_formats.end() &&
        std::find(f->second.begin(), f->second.end(), fmt) == f->second.end()) {
        kind = "image-format";
        return m.label + ": format " + fmt + " is not supported for read-write " + it + " on " +
               dev.name;
    }
    std::vector<unsigned long long> limit, want;
    if (it == "IMAGE3D") {
        limit = dev.image3d_max, want = shape;
    } else if (it == "IMAGE2D") {
        limit = {dev.image2d_max[0], dev.image2d_max[1]}, want = {shape[0], shape[1]};
    } else if (it == "IMAGE1D") {
        limit = {dev.image2d_max[0]}, want = {shape[0]};
    } else if (it == "IMAGE2D_ARRAY") {
        limit = {dev.image2d_max[0], dev.image2d_max[1], dev.image_max_array}, want = shape;
    } else if (it == "IMAGE1D_ARRAY") {
        limit = {dev.image2d_max[0], dev.image_max_array}, want = {shape[0], shape[1]};
    }
    for (size_t i = 0; i < limit.size() && i < want.size(); ++i)
        if (limit[i] && want[i] > limit[i]) {
            kind = "image-size";
            return m.label + ": " + it + " " + dims(want) + " > the device's largest " +
                   dims(limit) + " on " + dev.name;
        }
    return "";
}

inline std::string memory_problem(const MemDesc& m, const DeviceFacts& dev, std::string& kind) {
    if (m.kind == "image") return image_problem(m, dev, kind);
    if (m.kind != "subbuffer" && dev.max_mem_alloc_size && m.size > dev.max_mem_alloc_size) {
        kind = "max-alloc";
        return m.label + ": " + commas(m.size) + " bytes > CL_DEVICE_MAX_MEM_ALLOC_SIZE " +
               commas(dev.max_mem_alloc_size) + " on " + dev.name;
    }
    if (m.kind == "svm" && m.svm_level.rfind("fine", 0) == 0) {
        bool atomics = m.svm_level.find("atomics") != std::string::npos;
        unsigned long long need = 2 | (atomics ? 8 : 0);
        if ((dev.svm & need) != need) {
            kind = "svm";
            return m.label + ": the capture allocated fine-grained SVM" +
                   (atomics ? " with atomics" : "") + "; " + dev.name + " offers " +
                   svm_words(dev.svm);
        }
    }
    return "";
}

// The objects that cannot be made on the device; the total is counted in first-use order.
inline BadMems memory_findings(const Plan& plan, const DeviceFacts& dev) {
    BadMems out;
    std::map<std::string, const MemDesc*> by_id;
    for (const auto& m : plan.mems) {
        by_id[m.id] = &m;
        std::string kind, why = memory_problem(m, dev, kind);
        if (!why.empty()) out[m.id] = {kind, why};
    }
    unsigned long long total = 0;
    std::set<std::string> seen;
    for (const auto& s : plan.steps)
        for (const auto& a : s.args) {
            if (a.mem.empty() || !seen.insert(a.mem).second || out.count(a.mem)) continue;
            auto it = by_id.find(a.mem);
            if (it == by_id.end() || it->second->kind == "subbuffer") continue;
            total += it->second->size;
            if (dev.global_mem_size && total > dev.global_mem_size)
                out[a.mem] = {"global-memory",
                              it->second->label + ": the range's objects up to it need " +
                                  commas(total) + " bytes > CL_DEVICE_GLOBAL_MEM_SIZE " +
                                  commas(dev.global_mem_size) + " on " + dev.name};
        }
    return out;
}

// The OpenCL C version -cl-std=CLx.y asks for (the last one), or "".
inline std::string cl_std(const std::string& options) {
    std::string out;
    for (size_t at = options.find("-cl-std="); at != std::string::npos;
         at = options.find("-cl-std=", at + 1)) {
        size_t i = at + 8;
        if (options.compare(i, 2, "CL") == 0) i += 2;
        size_t j = i;
        while (j < options.size() && std::isdigit(static_cast<unsigned char>(options[j]))) ++j;
        size_t k = j + 1;
        while (k < options.size() && std::isdigit(static_cast<unsigned char>(options[k]))) ++k;
        if (j > i && j < options.size() && options[j] == '.' && k > j + 1)
            out = options.substr(i, k - i);
    }
    return out;
}

inline std::vector<Finding> local_memory(const Step& s, const DeviceFacts& dev,
                                         unsigned long long fixed) {
    unsigned long long args = 0;
    for (const auto& a : s.args)
        if (a.kind == "local") args += a.size;
    unsigned long long need = args + fixed;
    if (!dev.local_mem_size || need <= dev.local_mem_size) return {};
    std::string parts = commas(args) + " in local arguments";
    if (fixed) parts += " + " + commas(fixed) + " in the kernel";
    return {finding(s, "local-memory", "local memory " + commas(need) + " bytes (" + parts +
                                           ") > CL_DEVICE_LOCAL_MEM_SIZE " +
                                           commas(dev.local_mem_size) + " on " + dev.name)};
}

inline void geometry(const Step& s, const DeviceFacts& dev, const std::string& std_,
                     const std::string& options, std::vector<Finding>& out) {
    if (s.local.empty()) return;
    unsigned long long total = 1;
    for (size_t d = 0; d < s.local.size(); ++d) {
        total *= s.local[d];
        if (d < dev.max_work_item_sizes.size() && dev.max_work_item_sizes[d] &&
            s.local[d] > dev.max_work_item_sizes[d])
            out.push_back(finding(s, "work-item-size",
                                  "local size " + dims(s.local) + ": " + std::to_string(s.local[d]) +
                                      " in dimension " + std::to_string(d) +
                                      " > CL_DEVICE_MAX_WORK_ITEM_SIZES[" + std::to_string(d) +
                                      "] " + std::to_string(dev.max_work_item_sizes[d]) + " on " +
                                      dev.name));
    }
    if (dev.max_work_group_size && total > dev.max_work_group_size)
        out.push_back(finding(s, "work-group-size",
                              "local size " + std::to_string(total) + " (" + dims(s.local) +
                                  ") > CL_DEVICE_MAX_WORK_GROUP_SIZE " +
                                  std::to_string(dev.max_work_group_size) + " on " + dev.name));
    bool uneven = false;
    for (size_t d = 0; d < s.local.size() && d < s.global.size(); ++d)
        uneven = uneven || (s.local[d] && s.global[d] % s.local[d]);
    if (!uneven) return;
    bool modern = !std_.empty() && std::stod(std_) >= 2.0;
    if (dev.non_uniform && modern && options.find("-cl-uniform-work-group-size") == std::string::npos)
        return;
    std::string why = !dev.non_uniform ? "the device does not support them"
                                       : "the program is not built with -cl-std=CL2.0 or later";
    out.push_back(finding(s, "non-uniform-work-group",
                          "global size " + dims(s.global) + " is not a multiple of local size " +
                              dims(s.local) + " (non-uniform work-groups) and on " + dev.name +
                              " " + why));
}

inline std::vector<int> version_key(const std::string& v) {
    std::vector<int> out;
    std::istringstream in(v);
    for (std::string part; std::getline(in, part, '.');) out.push_back(std::atoi(part.c_str()));
    return out;
}

// -cl-std asks for more than the newest OpenCL C the device lists (certain); a version in a
// gap of the list (PoCL 3.0 lists 1.0-1.2 and 3.0, and builds CL2.0) counts only when the
// build fails (build_findings).
inline bool above(const std::string& want, const DeviceFacts& dev) {
    if (dev.opencl_c_versions.empty()) return true;
    std::vector<int> top;
    for (const auto& v : dev.opencl_c_versions) top = std::max(top, version_key(v));
    return version_key(want) > top;
}

inline std::string std_reason(const std::string& want, const DeviceFacts& dev) {
    std::string have;
    for (const auto& v : dev.opencl_c_versions) have += (have.empty() ? "" : ", ") + v;
    return "the program is built with -cl-std=CL" + want + "; " + dev.name +
           " supports OpenCL C " + (have.empty() ? "none" : have);
}

// What the plan alone says step s cannot do on the device.
inline std::vector<Finding> step_findings(const Plan& plan, const Step& s, const DeviceFacts& dev,
                                          const BadMems& bad) {
    std::vector<Finding> out;
    std::string options;
    for (const auto& p : plan.programs)
        if (p.id == s.program) options = p.options;
    std::string want = cl_std(options);
    if (!want.empty() && above(want, dev))
        out.push_back(finding(s, "opencl-c-version", std_reason(want, dev)));
    geometry(s, dev, want, options, out);
    std::set<std::string> seen;
    for (const auto& a : s.args) {
        auto it = bad.find(a.mem);
        if (!a.mem.empty() && it != bad.end() && seen.insert(a.mem).second)
            out.push_back(finding(s, it->second.first,
                                  "argument " + std::to_string(a.index) + ": " + it->second.second));
        if (a.kind == "image" && a.type.find("image3d_t") != std::string::npos &&
            a.type.find("write") != std::string::npos && !dev.has("cl_khr_3d_image_writes"))
            out.push_back(finding(s, "image-3d-writes",
                                  "argument " + std::to_string(a.index) + " is a " + a.type + ": " +
                                      dev.name + " lacks cl_khr_3d_image_writes"));
    }
    for (auto& f : local_memory(s, dev, 0)) out.push_back(f);
    return out;
}

// What the built kernel says step s cannot do (its work-group size, reqd_work_group_size,
// its local memory with the local arguments).
inline std::vector<Finding> kernel_findings(const Step& s, const KernelFacts& kf,
                                            const DeviceFacts& dev) {
    std::vector<Finding> out;
    unsigned long long total = 1;
    for (auto l : s.local) total *= l;
    if (!s.local.empty() && kf.work_group_size && total > kf.work_group_size)
        out.push_back(finding(s, "kernel-work-group-size",
                              "local size " + std::to_string(total) + " (" + dims(s.local) +
                                  ") > kernel work-group size " +
                                  std::to_string(kf.work_group_size) + " on " + dev.name +
                                  " (CL_KERNEL_WORK_GROUP_SIZE)"));
    if (!kf.reqd.empty()) {
        if (s.local.empty()) {
            out.push_back(finding(s, "reqd-work-group-size",
                                  "the kernel requires work-group size " + dims(kf.reqd) +
                                      " (reqd_work_group_size); the capture launched it without "
                                      "a local size"));
        } else {
            std::vector<unsigned long long> padded(s.local.begin(), s.local.end());
            padded.resize(3, 1);
            std::vector<unsigned long long> reqd(kf.reqd.begin(), kf.reqd.end());
            reqd.resize(3, 1);
            if (padded != reqd)
                out.push_back(finding(s, "reqd-work-group-size",
                                      "local size " + dims(padded) +
                                          " contradicts reqd_work_group_size(" + dims(kf.reqd) +
                                          ")"));
        }
    }
    for (auto& f : local_memory(s, dev, kf.local_mem_size)) out.push_back(f);
    return out;
}

// The source without comments and string literals (linear).
inline std::string without_noise(const std::string& src) {
    std::string out;
    out.reserve(src.size());
    for (size_t i = 0; i < src.size();) {
        if (src.compare(i, 2, "//") == 0) {
            while (i < src.size() && src[i] != '\n') ++i;
        } else if (src.compare(i, 2, "/*") == 0) {
            size_t end = src.find("*/", i + 2);
            i = end == std::string::npos ? src.size() : end + 2;
            out += ' ';
        } else if (src[i] == '"') {
            for (++i; i < src.size() && src[i] != '"' && src[i] != '\n'; ++i)
                if (src[i] == '\\') ++i;
            ++i;
            out += ' ';
        } else {
            out += src[i++];
        }
    }
    return out;
}

// What a source seems to use that not every device has: fp64, fp16, images, image-3d-writes,
// subgroups (the words of feasible.source_needs).
inline std::vector<std::string> source_needs(const std::string& source) {
    std::string t = without_noise(source);
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::vector<std::pair<std::string, size_t>> words;  // each identifier and where it ends
    for (size_t i = 0; i < t.size();) {
        if (!word(t[i])) { ++i; continue; }
        size_t j = i;
        while (j < t.size() && word(t[j])) ++j;
        words.emplace_back(t.substr(i, j - i), j);
        i = j;
    }
    auto next_char = [&](size_t at) {
        while (at < t.size() && std::isspace(static_cast<unsigned char>(t[at]))) ++at;
        return at < t.size() ? t[at] : '\0';
    };
    auto vec = [](const std::string& w, const std::string& base) {
        if (w.rfind(base, 0) != 0) return false;
        std::string n = w.substr(base.size());
        return n == "2" || n == "3" || n == "4" || n == "8" || n == "16";
    };
    bool fp64 = false, fp16 = false, images = false, writes3d = false, subgroups = false;
    for (size_t k = 0; k < words.size(); ++k) {
        const std::string& w = words[k].first;
        fp64 = fp64 || w == "double" || vec(w, "double") || w == "cl_khr_fp64";
        fp16 = fp16 || vec(w, "half") || w == "cl_khr_fp16" ||
               (w == "half" && next_char(words[k].second) != '*');
        bool image = w.size() > 8 && w.rfind("image", 0) == 0 && w.substr(w.size() - 2) == "_t" &&
                     (w.compare(5, 2, "1d") == 0 || w.compare(5, 2, "2d") == 0 ||
                      w.compare(5, 2, "3d") == 0);
        images = images || image;
        if (w == "image3d_t" && k > 0) {
            const std::string& q = words[k - 1].first;
            writes3d = writes3d || q == "write_only" || q == "__write_only" || q == "read_write" ||
                       q == "__read_write";
        }
        subgroups = subgroups || w == "cl_khr_subgroups" ||
                    ((w.rfind("sub_group_", 0) == 0 || w.rfind("get_sub_group_", 0) == 0) &&
                     w.size() > 10 && next_char(words[k].second) == '(');
    }
    std::vector<std::string> out;
    if (fp64) out.push_back("fp64");
    if (fp16) out.push_back("fp16");
    if (images) out.push_back("images");
    if (writes3d) out.push_back("image-3d-writes");
    if (subgroups) out.push_back("subgroups");
    return out;
}

// A build log's rule, the same as cltui/replay/engine/buildlog.py (held by
// tests/fixtures/build_log_cases.json): lines split at '\n' (getline), ASCII blanks stripped,
// ASCII case folded, a first error cut at 200 bytes (never inside a UTF-8 character).
inline bool log_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

inline std::string log_strip(const std::string& t) {
    size_t a = 0, b = t.size();
    while (a < b && log_blank(t[a])) ++a;
    while (b > a && log_blank(t[b - 1])) --b;
    return t.substr(a, b - a);
}

inline std::string log_fold(std::string t) {
    for (auto& ch : t)
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    return t;
}

// The lines of a build log that say "error" (any case), stripped.
inline std::vector<std::string> build_errors(const std::string& log) {
    std::vector<std::string> out;
    std::istringstream lines(log);
    for (std::string ln; std::getline(lines, ln);) {
        ln = log_strip(ln);
        if (!ln.empty() && log_fold(ln).find("error") != std::string::npos) out.push_back(ln);
    }
    return out;
}

// The first line of a build log that says "error" (else its first line), at most 200 bytes.
inline std::string first_build_error(const std::string& log) {
    std::vector<std::string> errors = build_errors(log);
    std::string first = errors.empty() ? std::string() : errors[0];
    if (first.empty()) {
        std::istringstream lines(log);
        for (std::string ln; std::getline(lines, ln);) {
            first = log_strip(ln);
            if (!first.empty()) break;
        }
    }
    if (first.empty()) first = "build failed";
    if (first.size() > 200) {
        size_t cut = 200;  // not inside a character: back to the start of the one cut
        while (cut > 0 && (static_cast<unsigned char>(first[cut]) & 0xC0) == 0x80) --cut;
        first.resize(cut);
    }
    return log_strip(first);
}

// Whether a path's last part is a source the driver compiled: NAME.cl, NAME.c, NAME.h,
// <stdin> or <source>.
inline bool log_source_name(const std::string& token) {
    size_t slash = token.rfind('/');
    std::string base = slash == std::string::npos ? token : token.substr(slash + 1);
    if (base == "<stdin>" || base == "<source>") return true;
    for (const char* ext : {".cl", ".c", ".h"}) {
        std::string e(ext);
        if (base.size() > e.size() && base.compare(base.size() - e.size(), e.size(), e) == 0)
            return true;
    }
    return false;
}

// A build log line with the compiler's position in the driver's temp file (PoCL's kernel
// cache tempfile_XXXXXX.cl, Oclgrind's input.cl) given as the same line and column of the
// program's own source file: PoCL's "error: FILE:L:C: what" becomes "NAME:L:C: error: what".
// The first FILE:L:C: after the line's start or a blank, found in one pass (std::regex, used
// before, overflowed the stack on a 64 KB line and took a sixth of the runner's build).
inline std::string at_source(const std::string& line, const std::string& name) {
    const size_t n = line.size();
    auto digits = [&](size_t i) {
        while (i < n && line[i] >= '0' && line[i] <= '9') ++i;
        return i;
    };
    size_t s = 0;
    while (s < n) {
        if (s > 0 && !log_blank(line[s - 1])) {
            ++s;
            continue;
        }
        size_t e = s;
        while (e < n && line[e] != ':' && !log_blank(line[e])) ++e;
        if (s < e && e < n && line[e] == ':' && log_source_name(line.substr(s, e - s))) {
            size_t a = e + 1, b = digits(a);
            if (a < b && b < n && line[b] == ':') {
                size_t c = digits(b + 1);
                if (b + 1 < c && c < n && line[c] == ':') {
                    std::string where = name + ":" + line.substr(a, b - a) + ":" +
                                        line.substr(b + 1, c - b - 1) + ":";
                    std::string before = log_strip(line.substr(0, s));
                    std::string after = log_strip(line.substr(c + 1));
                    std::string low = log_fold(before);
                    while (!low.empty() && low.back() == ':') low.pop_back();
                    if (low == "error") return where + " error: " + after;
                    return log_strip(before + " " + where + " " + after);
                }
            }
        }
        s = e > s ? e : s + 1;
    }
    return line;
}

// A program that did not build, explained by what its source needs and the device lacks and
// the build log's errors name (a syntax error or a bad option stays a build failure).
inline std::vector<Finding> build_findings(const Plan& plan, const std::string& pid,
                                           const std::vector<std::string>& needs,
                                           const DeviceFacts& dev, const std::string& error) {
    static const std::map<std::string, std::string> words = {
        {"fp64", "double"}, {"fp16", "half"}, {"images", "images"},
        {"image-3d-writes", "writes to a 3D image"}, {"subgroups", "subgroup functions"}};
    static const std::map<std::string, std::vector<std::string>> said_as = {
        {"fp64", {"double", "fp64"}}, {"fp16", {"half", "fp16"}}, {"images", {"image"}},
        {"image-3d-writes", {"image3d", "3d_image"}}, {"subgroups", {"sub_group", "subgroup"}},
        {"opencl-c-version", {"cl-std", "opencl c"}}};
    std::vector<std::pair<std::string, std::string>> missing;
    for (const auto& k : needs) {
        std::string lacks;
        if (k == "fp64" && !dev.fp64) lacks = "cl_khr_fp64";
        if (k == "fp16" && !dev.fp16) lacks = "cl_khr_fp16";
        if (k == "images" && !dev.image_support) lacks = "image support";
        if (k == "image-3d-writes" && !dev.has("cl_khr_3d_image_writes"))
            lacks = "cl_khr_3d_image_writes";
        if (k == "subgroups" && !dev.has("cl_khr_subgroups") && !dev.has("cl_intel_subgroups"))
            lacks = "cl_khr_subgroups";
        if (!lacks.empty())
            missing.emplace_back(k, "the source uses " + words.at(k) + ", " + dev.name +
                                        " lacks " + lacks);
    }
    std::string options;
    for (const auto& p : plan.programs)
        if (p.id == pid) options = p.options;
    std::string want = cl_std(options);
    if (!want.empty() && std::find(dev.opencl_c_versions.begin(), dev.opencl_c_versions.end(),
                                   want) == dev.opencl_c_versions.end())
        missing.emplace_back("opencl-c-version", std_reason(want, dev));
    std::string said_by_log;
    for (const auto& ln : build_errors(error)) said_by_log += ln + " ";
    for (auto& ch : said_by_log)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::vector<std::pair<std::string, std::string>> named;
    for (const auto& m : missing)
        for (const auto& w : said_as.at(m.first))
            if (said_by_log.find(w) != std::string::npos) {
                named.push_back(m);
                break;
            }
    if (named.empty()) return {};
    std::string said;
    for (const auto& m : named) said += (said.empty() ? "" : "; ") + m.second;
    std::string first = first_build_error(error);
    std::vector<Finding> out;
    for (const auto& s : plan.steps)
        if (s.program == pid)
            out.push_back(finding(s, named[0].first, said + " (build: " + first + ")"));
    return out;
}

inline bool reads_only(const std::string& type) {
    auto has_word = [&](const std::string& w) {
        for (size_t at = type.find(w); at != std::string::npos; at = type.find(w, at + 1)) {
            bool left = at == 0 || !(std::isalnum(static_cast<unsigned char>(type[at - 1])) ||
                                     type[at - 1] == '_');
            size_t e = at + w.size();
            bool right = e >= type.size() || !(std::isalnum(static_cast<unsigned char>(type[e])) ||
                                               type[e] == '_');
            if (left && right) return true;
        }
        return false;
    };
    return has_word("const") || has_word("__constant") || has_word("constant") ||
           has_word("read_only") || has_word("__read_only");
}

// The checks after a step that could not run: step -> (pre: mem -> enqueue, post: the same).
struct Marks {
    std::map<std::string, long long> pre, post;
};

inline std::map<size_t, Marks> after_cannot_run(const Plan& plan, const std::set<size_t>& skip) {
    std::map<std::string, long long> taint;
    std::map<size_t, Marks> out;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const Step& s = plan.steps[i];
        Marks m;
        for (const auto& c : s.prechecks)
            if (taint.count(c.mem)) m.pre[c.mem] = taint[c.mem];
        for (const auto& l : s.loads) taint.erase(l.mem);
        if (skip.count(i)) {
            for (const auto& a : s.args)
                if (!a.mem.empty() && !reads_only(a.type)) taint.emplace(a.mem, s.enqueue);
            continue;
        }
        long long at = -1;
        for (const auto& a : s.args)
            if (!a.mem.empty() && taint.count(a.mem) && (at < 0 || taint[a.mem] < at))
                at = taint[a.mem];
        if (at >= 0) {
            for (const auto& c : s.checks) m.post[c.mem] = taint.count(c.mem) ? taint[c.mem] : at;
            for (const auto& a : s.args)
                if (!a.mem.empty() && !reads_only(a.type)) taint.emplace(a.mem, at);
        }
        if (!m.pre.empty() || !m.post.empty()) out[i] = m;
    }
    return out;
}

}  // namespace cltui
