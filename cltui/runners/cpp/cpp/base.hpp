// cpp/base.hpp: the OpenCL and standard headers, errors, and file helpers of replay.cpp.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#define CL_TARGET_OPENCL_VERSION 210
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#ifndef CLTUI_BUNDLE_DIR
#define CLTUI_BUNDLE_DIR "."
#endif


namespace cltui {

// Errors

struct UsageError : std::runtime_error {  // exit 2
    using std::runtime_error::runtime_error;
};
struct DeviceError : std::runtime_error {  // exit 3
    using std::runtime_error::runtime_error;
};

inline const char* cl_error_name(cl_int err) {
    switch (err) {
#define E(x) \
    case x:  \
        return #x;
        E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
        E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        E(CL_BUILD_PROGRAM_FAILURE) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE)
        E(CL_INVALID_CONTEXT) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_MEM_OBJECT)
        E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE) E(CL_INVALID_SAMPLER)
        E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
        E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL)
        E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
        E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
        E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT)
        E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE)
        E(CL_INVALID_PROPERTY) E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) E(CL_INVALID_HOST_PTR)
        E(CL_INVALID_PLATFORM) E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_EVENT_WAIT_LIST)
        E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS) E(CL_LINK_PROGRAM_FAILURE)
#undef E
        default:
            return "CL error";
    }
}

inline void check(cl_int err, const std::string& what) {
    if (err != CL_SUCCESS)
        throw DeviceError(what + " failed: " + cl_error_name(err) + " (" + std::to_string(err) +
                          ")");
}


// ------------------------------------------------------------------------------------------
// Files

inline std::vector<unsigned char> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UsageError("cannot read " + path);
    return std::vector<unsigned char>((std::istreambuf_iterator<char>(f)),
                                      std::istreambuf_iterator<char>());
}

inline std::string join(const std::string& dir, const std::string& rel) {
    if (rel.empty() || rel[0] == '/') return rel;
    return dir + "/" + rel;
}

// A word a driver reads whole without quotes: no white space, no double quote.
inline bool plain_word(const std::string& w) {
    for (char c : w)
        if (std::isspace(static_cast<unsigned char>(c)) || c == '"') return false;
    return true;
}

// How an include folder (path: absolute and normal) is named to the driver from the current
// folder cwd: the path where it has no space, else the folder relative to cwd where that has
// none, else the path (then quoted).  PoCL finds no header in an -I folder with a space,
// quoted or not; Oclgrind crashes on an unquoted one.  The Python engine's rule
// (engine/base.py include_spelling), held by tests/fixtures/include_path_cases.json.
inline std::string include_spelling(const std::string& path, const std::string& cwd) {
    if (plain_word(path)) return path;
    std::string rel = std::filesystem::path(path).lexically_relative(cwd).string();
    return !rel.empty() && plain_word(rel) ? rel : path;
}

// The same from the process's current folder; a current folder that is gone (or a folder
// that cannot be made absolute) names no relative folder.
inline std::string include_spelling(const std::string& dir) {
    std::error_code ec;
    std::string path = std::filesystem::absolute(dir, ec).lexically_normal().string();
    if (ec) return dir;
    if (plain_word(path)) return path;
    std::string cwd = std::filesystem::current_path(ec).string();
    return ec ? path : include_spelling(path, cwd);
}

// "-I DIR" for the driver, DIR in double quotes where it is not a plain word.
inline std::string include_option(const std::string& dir) {
    return plain_word(dir) ? "-I " + dir : "-I \"" + dir + "\"";
}

// The driver's text for a bundle's program: its include folders (absolute, in order; named
// as include_spelling says from cwd, else from the current folder) as -I options, one
// space between, then the program's options as they are, after one more space. The Python
// engine's bundle_options (engine/base.py); held by tests/fixtures/build_option_cases.json.
inline std::string bundle_options(const std::string& options, const std::vector<std::string>& dirs,
                                  const std::string* cwd = nullptr) {
    std::string out;
    for (const auto& d : dirs)
        out += (out.empty() ? "" : " ") +
               include_option(cwd ? include_spelling(d, *cwd) : include_spelling(d));
    if (!options.empty()) out += (out.empty() ? "" : " ") + options;
    return out;
}

inline std::vector<unsigned char> from_hex(const std::string& hex) {
    std::vector<unsigned char> out(hex.size() / 2);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    return out;
}


}  // namespace cltui
