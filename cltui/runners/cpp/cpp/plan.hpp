// cpp/plan.hpp: the replay plan, read from manifest.json.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "layout.hpp"

namespace cltui {

// The plan, as read from manifest.json (the same file replay.py reads):
//   programs  id -> {source | il: data key, binaries: [{data, device}], options, include_dirs}
//   memory    id -> {kind: buffer | subbuffer | image | svm, size, label, image, parent, origin}
//   steps     [{enqueue, kernel, program, global, local, offset, args, loads, prechecks, checks}]
//   data      key -> {path (relative to the bundle), size}
//   tolerance {atol, rtol, ulp}

struct MemDesc {
    std::string id, kind, label;  // kind: buffer | subbuffer | image | svm
    size_t size = 0;
    std::string parent;  // sub-buffers
    size_t origin = 0;
    cl_mem_object_type image_type = 0;  // images
    cl_image_format format{};
    size_t region[3] = {0, 0, 0};
    size_t element_size = 0;
    std::string order_name, type_name, image_type_name;  // "RGBA", "FLOAT", "IMAGE2D"
    std::string svm_level;  // SVM: coarse | fine | fine+atomics (the capture's flags)
};

struct ArgDesc {
    int index;
    std::string kind;  // buffer | image | svm | scalar | local | sampler | null
    std::string mem;
    std::string type;  // the OpenCL C type, e.g. "__write_only image3d_t" (may be empty)
    size_t offset = 0;                 // svm: bytes from the allocation base
    size_t size = 0;                   // local: bytes
    std::vector<unsigned char> bytes;  // scalar value
    cl_bool normalized = CL_FALSE;
    cl_addressing_mode addressing = CL_ADDRESS_NONE;
    cl_filter_mode filter = CL_FILTER_NEAREST;
};

struct Load {
    std::string mem, data, why, note;
};

struct Check {
    std::string mem, label, data;  // data: empty when the capture has nothing to compare with
    std::string hash64;  // the layer's 64-bit hash (hex) when the capture holds only that
    std::vector<int> args;
    Layout layout;
    Tol tol;
    std::string note;
    long long after_unreplayed = -1;  // the unreplayed host write this check follows
    std::vector<size_t> shape;  // an image's (width, height, depth): the first difference's place
};

// A host-side transfer of the capture before a step: replayed ("op": fill, copy, copy_rect,
// copy_whole) or only reported (replayed: "reload", "input" or empty: not replayed).
struct Transfer {
    long long enqueue = 0;
    std::string function, mem, replayed, why, op, src;
    size_t offset = 0, size = 0, src_offset = 0, dst_offset = 0;
    std::vector<unsigned char> pattern;
    size_t src_origin[3] = {0, 0, 0}, dst_origin[3] = {0, 0, 0}, region[3] = {1, 1, 1};
    size_t pitches[4] = {0, 0, 0, 0};  // src row, src slice, dst row, dst slice
    bool runs() const { return replayed == "op" && !op.empty(); }
};

struct Step {
    long long enqueue;
    std::string kernel, program;
    std::vector<size_t> global, local, offset;
    std::vector<ArgDesc> args;
    std::vector<Load> loads;
    std::vector<Check> prechecks, checks;
    std::vector<Transfer> transfers;
};

struct ProgramDesc {
    std::string id, label, source, il, options;
    std::vector<std::pair<std::string, std::string>> binaries;  // (data key, device name)
    std::vector<std::string> include_dirs;  // relative to the bundle
};

struct Plan {
    std::vector<MemDesc> mems;
    std::vector<ProgramDesc> programs;
    std::vector<Step> steps;
    std::map<std::string, std::string> data;  // key -> path relative to the bundle
    Tol tolerance;
    std::string mode;
    // the range's scope (the verdict's counts): kernels (-1: a plan without a scope),
    // skipped and recovered kernels, host transfers and those replayed
    long long kernels = -1, skipped = 0, recovered = 0, transfers = 0, transfers_replayed = 0;
    long long lost = 0;  // numbers of the range the log lost and no file names
};

// OpenCL enums may be written as numbers or as their names ("CL_RGBA", "CL_FLOAT", ...).
inline cl_uint enum_value(const Json& j) {
    if (j.kind == Json::Number) return static_cast<cl_uint>(j.as_int());
    static const std::map<std::string, cl_uint> names = {
        {"R", CL_R}, {"A", CL_A}, {"RG", CL_RG}, {"RA", CL_RA}, {"RGB", CL_RGB},
        {"RGBA", CL_RGBA}, {"BGRA", CL_BGRA}, {"ARGB", CL_ARGB}, {"INTENSITY", CL_INTENSITY},
        {"LUMINANCE", CL_LUMINANCE}, {"Rx", CL_Rx}, {"RGx", CL_RGx}, {"RGBx", CL_RGBx},
        {"DEPTH", CL_DEPTH}, {"sRGBA", CL_sRGBA}, {"sBGRA", CL_sBGRA},
        // by value: headers before OpenCL 2.0 (or 3.0 for ABGR) do not name these
        {"DEPTH_STENCIL", 0x10BE}, {"sRGB", 0x10BF}, {"sRGBx", 0x10C0}, {"ABGR", 0x10C3},
        {"UNORM_INT24", 0x10DF}, {"UNORM_INT_101010_2", 0x10E0},
        {"SNORM_INT8", CL_SNORM_INT8}, {"SNORM_INT16", CL_SNORM_INT16},
        {"UNORM_INT8", CL_UNORM_INT8}, {"UNORM_INT16", CL_UNORM_INT16},
        {"UNORM_SHORT_565", CL_UNORM_SHORT_565}, {"UNORM_SHORT_555", CL_UNORM_SHORT_555},
        {"UNORM_INT_101010", CL_UNORM_INT_101010}, {"SIGNED_INT8", CL_SIGNED_INT8},
        {"SIGNED_INT16", CL_SIGNED_INT16}, {"SIGNED_INT32", CL_SIGNED_INT32},
        {"UNSIGNED_INT8", CL_UNSIGNED_INT8}, {"UNSIGNED_INT16", CL_UNSIGNED_INT16},
        {"UNSIGNED_INT32", CL_UNSIGNED_INT32}, {"HALF_FLOAT", CL_HALF_FLOAT}, {"FLOAT", CL_FLOAT},
        {"IMAGE1D", CL_MEM_OBJECT_IMAGE1D}, {"IMAGE1D_ARRAY", CL_MEM_OBJECT_IMAGE1D_ARRAY},
        {"IMAGE1D_BUFFER", CL_MEM_OBJECT_IMAGE1D_BUFFER}, {"IMAGE2D", CL_MEM_OBJECT_IMAGE2D},
        {"IMAGE2D_ARRAY", CL_MEM_OBJECT_IMAGE2D_ARRAY}, {"IMAGE3D", CL_MEM_OBJECT_IMAGE3D},
        {"NONE", CL_ADDRESS_NONE}, {"CLAMP_TO_EDGE", CL_ADDRESS_CLAMP_TO_EDGE},
        {"CLAMP", CL_ADDRESS_CLAMP}, {"REPEAT", CL_ADDRESS_REPEAT},
        {"MIRRORED_REPEAT", CL_ADDRESS_MIRRORED_REPEAT}, {"NEAREST", CL_FILTER_NEAREST},
        {"LINEAR", CL_FILTER_LINEAR},
    };
    std::string key = j.as_str();
    for (const char* prefix : {"CL_MEM_OBJECT_", "CL_ADDRESS_", "CL_FILTER_", "CL_"}) {
        if (key.rfind(prefix, 0) == 0) {
            key = key.substr(std::strlen(prefix));
            break;
        }
    }
    auto it = names.find(key);
    if (it == names.end()) throw UsageError("manifest: unknown OpenCL enum '" + j.as_str() + "'");
    return it->second;
}

inline std::vector<size_t> sizes(const Json* j) {
    std::vector<size_t> v;
    if (j && j->kind == Json::Array)
        for (const auto& e : j->arr) v.push_back(static_cast<size_t>(e.as_int()));
    return v;
}

inline std::string str_or(const Json& j, const std::string& key, const std::string& dflt = "") {
    const Json* v = j.find(key);
    if (!v || v->kind == Json::Null) return dflt;
    if (v->kind == Json::Number) return v->str;
    return v->as_str();
}

inline std::vector<Check> read_checks(const Json* list, const Tol& base) {
    std::vector<Check> out;
    if (!list) return out;
    for (const auto& c : list->arr) {
        Check ch;
        ch.mem = str_or(c, "mem");
        ch.label = str_or(c, "label", ch.mem);
        ch.data = str_or(c, "data");
        ch.hash64 = str_or(c, "hash64");
        ch.note = str_or(c, "note");
        if (const Json* au = c.find("after_unreplayed"))
            if (au->kind == Json::Number) ch.after_unreplayed = au->as_int();
        if (const Json* a = c.find("args"))
            for (const auto& e : a->arr) ch.args.push_back(static_cast<int>(e.as_int()));
        ch.layout = read_layout(c.find("dtype"));
        ch.tol = read_tol(c.find("tol"), base);
        ch.shape = sizes(c.find("shape"));
        out.push_back(ch);
    }
    return out;
}

inline MemDesc read_mem(const std::string& id, const Json& j) {
    MemDesc d;
    d.id = id;
    d.kind = j.at("kind").as_str();
    d.size = j.has("size") ? static_cast<size_t>(j.at("size").as_int()) : 0;
    d.label = str_or(j, "label", d.id);
    d.parent = str_or(j, "parent");
    d.origin = j.has("origin") ? static_cast<size_t>(j.at("origin").as_int()) : 0;
    if (d.kind == "image") {
        const Json& im = j.at("image");
        d.format.image_channel_order = enum_value(im.at("order"));
        d.format.image_channel_data_type = enum_value(im.at("type"));
        d.image_type =
            im.has("image_type") ? enum_value(im.at("image_type")) : CL_MEM_OBJECT_IMAGE2D;
        auto shape = sizes(im.find("shape"));
        for (size_t i = 0; i < 3; ++i) d.region[i] = i < shape.size() ? shape[i] : 1;
        d.element_size = static_cast<size_t>(im.at("element_size").as_int());
        d.size = d.region[0] * d.region[1] * d.region[2] * d.element_size;
        auto bare = [&](const char* key, const char* prefix, const char* dflt) {
            std::string v = str_or(im, key, dflt);
            return v.rfind(prefix, 0) == 0 ? v.substr(std::strlen(prefix)) : v;
        };
        d.order_name = bare("order", "CL_", "");
        d.type_name = bare("type", "CL_", "");
        d.image_type_name = bare("image_type", "CL_MEM_OBJECT_", "IMAGE2D");
    }
    d.svm_level = str_or(j, "svm_level");
    return d;
}

inline ProgramDesc read_program(const std::string& id, const Json& j) {
    ProgramDesc d;
    d.id = id;
    d.label = str_or(j, "label", d.id);
    d.source = str_or(j, "source");
    d.il = str_or(j, "il");
    d.options = str_or(j, "options");
    if (const Json* b = j.find("binaries"))
        for (const auto& e : b->arr)
            d.binaries.emplace_back(str_or(e, "data"), str_or(e, "device"));
    if (const Json* inc = j.find("include_dirs"))
        for (const auto& e : inc->arr) d.include_dirs.push_back(e.as_str());
    return d;
}

inline ArgDesc read_arg(const Json& a) {
    ArgDesc d;
    d.index = static_cast<int>(a.at("index").as_int());
    d.kind = a.at("kind").as_str();
    d.mem = str_or(a, "mem");
    d.type = str_or(a, "type");
    if (a.has("offset")) d.offset = static_cast<size_t>(a.at("offset").as_int());
    if (a.has("size")) d.size = static_cast<size_t>(a.at("size").as_int());
    if (a.has("hex")) d.bytes = from_hex(a.at("hex").as_str());
    if (d.kind == "sampler") {
        d.normalized = a.at("normalized").as_bool() ? CL_TRUE : CL_FALSE;
        d.addressing = enum_value(a.at("addressing"));
        d.filter = enum_value(a.at("filter"));
    }
    return d;
}

// A transfer's "op" (what replay runs): offsets, sizes, pitches, the fill pattern, origins.
inline void read_transfer_op(const Json& op, Transfer& tr) {
    tr.op = str_or(op, "op");
    tr.src = str_or(op, "src");
    auto num = [&](const char* k) {
        const Json* v = op.find(k);
        return v && v->kind == Json::Number ? static_cast<size_t>(v->as_int()) : size_t(0);
    };
    tr.offset = num("offset");
    tr.size = num("size");
    tr.src_offset = num("src_offset");
    tr.dst_offset = num("dst_offset");
    tr.pitches[0] = num("src_row_pitch");
    tr.pitches[1] = num("src_slice_pitch");
    tr.pitches[2] = num("dst_row_pitch");
    tr.pitches[3] = num("dst_slice_pitch");
    if (op.has("pattern")) tr.pattern = from_hex(op.at("pattern").as_str());
    auto triple = [&](const char* k, size_t* out) {
        const Json* v = op.find(k);
        if (!v || v->kind != Json::Array) return;
        for (size_t i = 0; i < 3 && i < v->arr.size(); ++i)
            out[i] = static_cast<size_t>(v->arr[i].as_int());
    };
    triple("src_origin", tr.src_origin);
    triple("dst_origin", tr.dst_origin);
    triple("region", tr.region);
}

inline Transfer read_transfer(const Json& t) {
    Transfer tr;
    tr.enqueue = t.at("enqueue").as_int();
    tr.function = str_or(t, "function");
    tr.mem = str_or(t, "mem");
    tr.replayed = str_or(t, "replayed");
    tr.why = str_or(t, "why");
    const Json* op = t.find("op");
    if (op && op->kind == Json::Object) read_transfer_op(*op, tr);
    return tr;
}

inline Step read_step(const Json& s, const Tol& tolerance) {
    Step st;
    st.enqueue = s.at("enqueue").as_int();
    st.kernel = s.at("kernel").as_str();
    st.program = str_or(s, "program");
    st.global = sizes(s.find("global"));
    st.local = sizes(s.find("local"));
    st.offset = sizes(s.find("offset"));
    for (const auto& a : s.at("args").arr) st.args.push_back(read_arg(a));
    if (const Json* loads = s.find("loads"))
        for (const auto& l : loads->arr)
            st.loads.push_back({str_or(l, "mem"), str_or(l, "data"), str_or(l, "why", "input"),
                                str_or(l, "note")});
    st.prechecks = read_checks(s.find("prechecks"), tolerance);
    st.checks = read_checks(s.find("checks"), tolerance);
    if (const Json* ts = s.find("transfers"))
        for (const auto& t : ts->arr) st.transfers.push_back(read_transfer(t));
    return st;
}

// The range's scope (the verdict's counts): kernels, skipped and recovered, lost numbers,
// host transfers and those replayed.
inline void read_scope(const Json& m, Plan& plan) {
    const Json* scope = m.find("scope");
    if (!scope) return;
    if (const Json* ks = scope->find("kernels")) {
        plan.kernels = static_cast<long long>(ks->arr.size());
        for (const auto& k : ks->arr) {
            const Json* r = k.find("replayed");
            if (!(r && r->kind == Json::Bool && r->as_bool())) ++plan.skipped;
            const Json* rc = k.find("recovered");
            if (rc && rc->kind == Json::Bool && rc->as_bool()) ++plan.recovered;
        }
    }
    if (const Json* ls = m.find("lost"))
        for (const auto& l : ls->arr)
            if (const Json* c = l.find("count"))
                if (c->kind == Json::Number) plan.lost += c->as_int();
    if (const Json* ts = scope->find("transfers")) {
        plan.transfers = static_cast<long long>(ts->arr.size());
        for (const auto& t : ts->arr) {
            const Json* r = t.find("replayed");
            if (r && r->kind == Json::String && !r->as_str().empty()) ++plan.transfers_replayed;
        }
    }
}

inline Plan read_plan(const Json& m) {
    Plan plan;
    plan.mode = str_or(m, "mode");
    plan.tolerance = read_tol(m.find("tolerance"), Tol{});
    for (const auto& kv : m.at("data").obj) plan.data[kv.first] = kv.second.at("path").as_str();
    for (const auto& kv : m.at("memory").obj) plan.mems.push_back(read_mem(kv.first, kv.second));
    for (const auto& kv : m.at("programs").obj)
        plan.programs.push_back(read_program(kv.first, kv.second));
    for (const auto& s : m.at("steps").arr) plan.steps.push_back(read_step(s, plan.tolerance));
    read_scope(m, plan);
    return plan;
}

}  // namespace cltui
