// cpp/facts.hpp: the facts the feasibility rule (cpp/feasible.hpp) needs, queried from the
// device (as cltui/replay/engine/facts.py does): limits, extensions, read-write image
// formats, OpenCL C versions; and a built kernel's work-group facts.  A query the driver
// refuses leaves the most permissive value.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "devices.hpp"
#include "feasible.hpp"

namespace cltui {

template <class T>
inline T device_value(cl_device_id d, cl_device_info what, T dflt) {
    T v{};
    return clGetDeviceInfo(d, what, sizeof v, &v, nullptr) == CL_SUCCESS ? v : dflt;
}

inline std::string device_text(cl_device_id d, cl_device_info what) {
    size_t n = 0;
    if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || !n) return "";
    std::string s(n, '\0');
    clGetDeviceInfo(d, what, n, &s[0], nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

// "major.minor" of the first "X.Y" in a version text (1.2 when none).
inline std::pair<int, int> version_of(const std::string& text) {
    for (size_t i = 0; i + 2 < text.size(); ++i)
        if (std::isdigit(static_cast<unsigned char>(text[i])) && text[i + 1] == '.' &&
            std::isdigit(static_cast<unsigned char>(text[i + 2])))
            return {text[i] - '0', std::atoi(text.c_str() + i + 2)};
    return {1, 2};
}

inline std::string enum_name(cl_uint v, bool order) {
    static const std::vector<std::string> orders = {
        "R", "A", "RG", "RA", "RGB", "RGBA", "BGRA", "ARGB", "INTENSITY", "LUMINANCE", "Rx",
        "RGx", "RGBx", "DEPTH", "DEPTH_STENCIL", "sRGB", "sRGBx", "sRGBA", "sBGRA", "ABGR"};
    static const std::vector<std::string> types = {
        "SNORM_INT8", "SNORM_INT16", "UNORM_INT8", "UNORM_INT16", "UNORM_SHORT_565",
        "UNORM_SHORT_555", "UNORM_INT_101010", "SIGNED_INT8", "SIGNED_INT16", "SIGNED_INT32",
        "UNSIGNED_INT8", "UNSIGNED_INT16", "UNSIGNED_INT32", "HALF_FLOAT", "FLOAT",
        "UNORM_INT24", "UNORM_INT_101010_2"};
    for (const auto& n : order ? orders : types) {
        Json j;
        j.kind = Json::String;
        j.str = n;
        if (enum_value(j) == v) return n;
    }
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%X", v);
    return hex;
}

inline std::map<std::string, std::vector<std::string>> image_formats(
    cl_context ctx, const std::set<std::string>& types) {
    std::map<std::string, std::vector<std::string>> out;
    const std::pair<const char*, cl_mem_object_type> kinds[] = {
        {"IMAGE1D", CL_MEM_OBJECT_IMAGE1D}, {"IMAGE1D_ARRAY", CL_MEM_OBJECT_IMAGE1D_ARRAY},
        {"IMAGE2D", CL_MEM_OBJECT_IMAGE2D}, {"IMAGE2D_ARRAY", CL_MEM_OBJECT_IMAGE2D_ARRAY},
        {"IMAGE3D", CL_MEM_OBJECT_IMAGE3D}};
    for (const auto& k : kinds) {
        if (!types.count(k.first)) continue;  // only the plan's image types (each costs)
        cl_uint n = 0;
        if (clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, k.second, 0, nullptr, &n) !=
            CL_SUCCESS)
            continue;
        std::vector<cl_image_format> fmts(n);
        if (n) clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, k.second, n, fmts.data(), nullptr);
        auto& names = out[k.first];
        for (const auto& f : fmts)
            names.push_back(enum_name(f.image_channel_order, true) + "/" +
                            enum_name(f.image_channel_data_type, false));
    }
    return out;
}

// The OpenCL C versions -cl-std may name: CL_DEVICE_OPENCL_C_ALL_VERSIONS (OpenCL 3.0), else
// every version up to CL_DEVICE_OPENCL_C_VERSION.
inline std::vector<std::string> c_versions(cl_device_id d, std::pair<int, int> version) {
    const cl_device_info all_versions = 0x1066;  // CL_DEVICE_OPENCL_C_ALL_VERSIONS
    struct NameVersion {
        cl_uint version;
        char name[64];
    };
    std::vector<std::string> out;
    size_t n = 0;
    if (version.first >= 3 && clGetDeviceInfo(d, all_versions, 0, nullptr, &n) == CL_SUCCESS &&
        n >= sizeof(NameVersion)) {
        std::vector<NameVersion> list(n / sizeof(NameVersion));
        clGetDeviceInfo(d, all_versions, list.size() * sizeof(NameVersion), list.data(), nullptr);
        std::vector<std::pair<unsigned, unsigned>> vs;
        for (const auto& nv : list) vs.emplace_back(nv.version >> 22, (nv.version >> 12) & 0x3FF);
        std::sort(vs.begin(), vs.end());
        vs.erase(std::unique(vs.begin(), vs.end()), vs.end());
        for (const auto& v : vs) out.push_back(std::to_string(v.first) + "." + std::to_string(v.second));
        return out;
    }
    auto top = version_of(device_text(d, CL_DEVICE_OPENCL_C_VERSION));
    for (const char* v : {"1.0", "1.1", "1.2", "2.0", "3.0"})
        if (std::make_pair(v[0] - '0', v[2] - '0') <= top) out.push_back(v);
    return out;
}

inline DeviceFacts device_facts(const DeviceRef& ref, cl_context ctx,
                                const std::set<std::string>& image_types) {
    cl_device_id d = ref.device;
    DeviceFacts f;
    f.name = ref.name;
    f.max_work_group_size = device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, 0);
    cl_uint dims = device_value<cl_uint>(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, 0);
    std::vector<size_t> items(dims);
    if (dims && clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t),
                                items.data(), nullptr) == CL_SUCCESS)
        f.max_work_item_sizes.assign(items.begin(), items.end());
    std::istringstream ext(device_text(d, CL_DEVICE_EXTENSIONS));
    for (std::string e; ext >> e;) f.extensions.push_back(e);
    f.fp64 = f.has("cl_khr_fp64") ||
             device_value<cl_device_fp_config>(d, CL_DEVICE_DOUBLE_FP_CONFIG, 0) != 0;
    f.fp16 = f.has("cl_khr_fp16");
    f.image_support = device_value<cl_bool>(d, CL_DEVICE_IMAGE_SUPPORT, CL_FALSE) != CL_FALSE;
    if (f.image_support) f.image_formats = image_formats(ctx, image_types);
    f.image2d_max = {device_value<size_t>(d, CL_DEVICE_IMAGE2D_MAX_WIDTH, 0),
                     device_value<size_t>(d, CL_DEVICE_IMAGE2D_MAX_HEIGHT, 0)};
    f.image3d_max = {device_value<size_t>(d, CL_DEVICE_IMAGE3D_MAX_WIDTH, 0),
                     device_value<size_t>(d, CL_DEVICE_IMAGE3D_MAX_HEIGHT, 0),
                     device_value<size_t>(d, CL_DEVICE_IMAGE3D_MAX_DEPTH, 0)};
    f.image_max_array = device_value<size_t>(d, CL_DEVICE_IMAGE_MAX_ARRAY_SIZE, 0);
    auto version = version_of(ref.version);
    if (version.first >= 2)
        f.svm = device_value<cl_device_svm_capabilities>(d, CL_DEVICE_SVM_CAPABILITIES, 0);
    f.opencl_c_versions = c_versions(d, version);
    const cl_device_info non_uniform = 0x1065;  // CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT
    f.non_uniform = version.first == 2 ||
                    (version.first >= 3 && device_value<cl_bool>(d, non_uniform, CL_FALSE));
    f.max_mem_alloc_size = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, 0);
    f.global_mem_size = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE, 0);
    f.local_mem_size = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE, 0);
    return f;
}

inline KernelFacts kernel_facts(cl_kernel k, cl_device_id d) {
    KernelFacts f;
    size_t wgs = 0, reqd[3] = {0, 0, 0};
    cl_ulong local = 0;
    if (clGetKernelWorkGroupInfo(k, d, CL_KERNEL_WORK_GROUP_SIZE, sizeof wgs, &wgs, nullptr) ==
        CL_SUCCESS)
        f.work_group_size = wgs;
    if (clGetKernelWorkGroupInfo(k, d, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, nullptr) ==
        CL_SUCCESS)
        f.local_mem_size = local;
    if (clGetKernelWorkGroupInfo(k, d, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof reqd, reqd,
                                 nullptr) == CL_SUCCESS &&
        (reqd[0] || reqd[1] || reqd[2]))
        f.reqd.assign(reqd, reqd + 3);
    return f;
}

}  // namespace cltui
