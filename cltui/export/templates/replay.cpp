// replay.cpp: replays a range of OpenCL kernel enqueues exported by cltui.
//
// Standalone: C++17, the OpenCL headers and an ICD loader, nothing else.
// It reads the bundle's manifest.json (the same replay plan replay.py reads: programs, memory
// objects, steps) and the data files next to it, runs the steps on each chosen device, and
// compares what the kernels wrote with what the capture recorded, with replay.py's rules:
//   1. byte-exact first ("equal");
//   2. then per element: integers and raw bytes exact; floating point "within" tolerance when
//      |actual - expected| <= atol + rtol * |expected|  or  ULP distance <= ulp (NaN == NaN);
//   3. a check is "different" when any element is beyond tolerance or the sizes differ.
//
// Build:   cmake -S . -B build && cmake --build build
// Run:     ./build/replay --validate            (see --help)
// Exit:    0 all checks pass, 1 a check failed (with --validate), 2 bad usage or bundle,
//          3 the device cannot run the bundle (OpenCL error, missing feature).
//
// The code is meant to be edited: every OpenCL call is in plain sight, in the order it runs.

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
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef CLTUI_BUNDLE_DIR
#define CLTUI_BUNDLE_DIR "."
#endif

namespace {

// ------------------------------------------------------------------------------------------
// Errors

struct UsageError : std::runtime_error {  // exit 2
    using std::runtime_error::runtime_error;
};
struct DeviceError : std::runtime_error {  // exit 3
    using std::runtime_error::runtime_error;
};

const char* cl_error_name(cl_int err) {
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

void check(cl_int err, const std::string& what) {
    if (err != CL_SUCCESS)
        throw DeviceError(what + " failed: " + cl_error_name(err) + " (" + std::to_string(err) +
                          ")");
}

// ------------------------------------------------------------------------------------------
// A small JSON reader (objects, arrays, strings, numbers, true/false/null): enough for the
// manifest, which cltui writes.

struct Json {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool b = false;
    double num = 0;
    std::string str;  // strings; also the literal text of numbers (exact 64-bit integers)
    std::vector<Json> arr;
    std::vector<std::pair<std::string, Json>> obj;

    const Json* find(const std::string& key) const {
        for (const auto& kv : obj)
            if (kv.first == key) return &kv.second;
        return nullptr;
    }
    const Json& at(const std::string& key) const {
        const Json* j = find(key);
        if (!j) throw UsageError("manifest: missing key '" + key + "'");
        return *j;
    }
    bool has(const std::string& key) const {
        const Json* j = find(key);
        return j && j->kind != Null;
    }
    long long as_int() const {
        if (kind != Number) throw UsageError("manifest: expected a number");
        return std::strtoll(str.c_str(), nullptr, 10);
    }
    double as_double() const {
        if (kind != Number) throw UsageError("manifest: expected a number");
        return num;
    }
    const std::string& as_str() const {
        if (kind != String) throw UsageError("manifest: expected a string");
        return str;
    }
    bool as_bool() const { return kind == Bool ? b : false; }
};

class JsonParser {
   public:
    explicit JsonParser(const std::string& text) : s_(text) {}
    Json parse() {
        Json v = value();
        ws();
        if (i_ != s_.size()) fail("trailing characters");
        return v;
    }

   private:
    const std::string& s_;
    size_t i_ = 0;

    [[noreturn]] void fail(const std::string& msg) {
        throw UsageError("manifest.json: " + msg + " at byte " + std::to_string(i_));
    }
    void ws() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    bool eat(const char* lit) {
        size_t n = std::strlen(lit);
        if (s_.compare(i_, n, lit) == 0) {
            i_ += n;
            return true;
        }
        return false;
    }
    Json value() {
        ws();
        if (i_ >= s_.size()) fail("unexpected end");
        Json v;
        char c = s_[i_];
        if (c == '{') {
            v.kind = Json::Object;
            ++i_;
            ws();
            if (s_[i_] == '}') {
                ++i_;
                return v;
            }
            for (;;) {
                ws();
                if (s_[i_] != '"') fail("expected a key");
                std::string key = string();
                ws();
                if (s_[i_] != ':') fail("expected ':'");
                ++i_;
                v.obj.emplace_back(key, value());
                ws();
                if (s_[i_] == ',') {
                    ++i_;
                    continue;
                }
                if (s_[i_] == '}') {
                    ++i_;
                    return v;
                }
                fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            v.kind = Json::Array;
            ++i_;
            ws();
            if (s_[i_] == ']') {
                ++i_;
                return v;
            }
            for (;;) {
                v.arr.push_back(value());
                ws();
                if (s_[i_] == ',') {
                    ++i_;
                    continue;
                }
                if (s_[i_] == ']') {
                    ++i_;
                    return v;
                }
                fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            v.kind = Json::String;
            v.str = string();
            return v;
        }
        if (eat("true")) {
            v.kind = Json::Bool;
            v.b = true;
            return v;
        }
        if (eat("false")) {
            v.kind = Json::Bool;
            return v;
        }
        if (eat("null")) return v;
        size_t start = i_;
        while (i_ < s_.size() && std::strchr("+-0123456789.eE", s_[i_])) ++i_;
        if (start == i_) fail("unexpected character");
        v.kind = Json::Number;
        v.str = s_.substr(start, i_ - start);
        v.num = std::strtod(v.str.c_str(), nullptr);
        return v;
    }
    std::string string() {
        ++i_;  // opening quote
        std::string out;
        while (i_ < s_.size() && s_[i_] != '"') {
            char c = s_[i_++];
            if (c != '\\') {
                out += c;
                continue;
            }
            char e = s_[i_++];
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'u': {
                    unsigned cp = std::stoul(s_.substr(i_, 4), nullptr, 16);
                    i_ += 4;
                    if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(i_, 2, "\\u") == 0) {
                        unsigned lo = std::stoul(s_.substr(i_ + 2, 4), nullptr, 16);
                        i_ += 6;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    utf8(out, cp);
                    break;
                }
                default: out += e;
            }
        }
        if (i_ >= s_.size()) fail("unterminated string");
        ++i_;
        return out;
    }
    static void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
};

std::string json_str(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string json_num(double v) {
    if (std::isnan(v)) return "\"nan\"";
    if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

// ------------------------------------------------------------------------------------------
// Files

std::vector<unsigned char> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UsageError("cannot read " + path);
    return std::vector<unsigned char>((std::istreambuf_iterator<char>(f)),
                                      std::istreambuf_iterator<char>());
}

std::string join(const std::string& dir, const std::string& rel) {
    if (rel.empty() || rel[0] == '/') return rel;
    return dir + "/" + rel;
}

std::vector<unsigned char> from_hex(const std::string& hex) {
    std::vector<unsigned char> out(hex.size() / 2);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    return out;
}

// ------------------------------------------------------------------------------------------
// Options

struct Options {
    std::string bundle = "";
    std::vector<std::string> devices;  // --device, repeatable
    bool list_devices = false;
    bool validate = false;
    bool json = false;
    bool trace = false;
    int repeat = 1;
    std::string out_dir;
    std::string choose_cases;  // --choose-device-cases FILE (tests)
    bool have_atol = false, have_rtol = false, have_ulp = false;
    double atol = 0, rtol = 0;
    long long ulp = 0;
};

const char* kUsage =
    "usage: replay [--bundle DIR] [--list-devices] [--device P:D|NAME]... [--validate]\n"
    "              [--repeat N] [--json] [--out DIR] [--atol X] [--rtol X] [--ulp N] [--trace]\n"
    "\n"
    "  --bundle DIR      the bundle folder (default: the current folder if it holds\n"
    "                    manifest.json, else the folder this program was built from)\n"
    "  --list-devices    list the OpenCL platforms and devices, then exit\n"
    "  --device SEL      P:D indices or a case-insensitive name substring; repeat it to\n"
    "                    replay on several devices (default: the device that made the\n"
    "                    capture, else the one named most like it, else the first that is\n"
    "                    not a simulator, else the first; stderr says which and why)\n"
    "  --validate        exit 1 when a check is 'different'\n"
    "  --repeat N        run the range N times (inputs restored) and report stage timing\n"
    "  --json            print the results as JSON on stdout\n"
    "  --out DIR         write each checked object as replayed into DIR (DIR/P_D with\n"
    "                    several devices)\n"
    "  --atol/--rtol/--ulp  tolerances for floating point (override the manifest's)\n"
    "  --trace           print each enqueue on stderr before it runs (which one crashed?)\n";

Options parse_args(int argc, char** argv) {
    Options o;
    auto need = [&](int& i) -> std::string {
        if (i + 1 >= argc) throw UsageError(std::string(argv[i]) + " needs a value");
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        try {
            if (a == "-h" || a == "--help") {
                std::cout << kUsage;
                std::exit(0);
            } else if (a == "--bundle") {
                o.bundle = need(i);
            } else if (a == "--device") {
                o.devices.push_back(need(i));
            } else if (a == "--list-devices") {
                o.list_devices = true;
            } else if (a == "--validate") {
                o.validate = true;
            } else if (a == "--json") {
                o.json = true;
            } else if (a == "--trace") {
                o.trace = true;
            } else if (a == "--repeat") {
                o.repeat = std::stoi(need(i));
                if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
            } else if (a == "--out") {
                o.out_dir = need(i);
            } else if (a == "--choose-device-cases") {
                o.choose_cases = need(i);
            } else if (a == "--atol") {
                o.atol = std::stod(need(i));
                o.have_atol = true;
            } else if (a == "--rtol") {
                o.rtol = std::stod(need(i));
                o.have_rtol = true;
            } else if (a == "--ulp") {
                o.ulp = std::stoll(need(i));
                o.have_ulp = true;
            } else {
                throw UsageError("unknown option " + a + " (see --help)");
            }
        } catch (const std::invalid_argument&) {
            throw UsageError("bad value for " + a);
        } catch (const std::out_of_range&) {
            throw UsageError("value out of range for " + a);
        }
    }
    if (o.bundle.empty()) {
        std::ifstream here("manifest.json");
        o.bundle = here ? "." : CLTUI_BUNDLE_DIR;
    }
    return o;
}

// ------------------------------------------------------------------------------------------
// Devices

struct DeviceRef {
    int p, d;
    cl_platform_id platform;
    cl_device_id device;
    std::string platform_name, name, version, platform_version;
};

std::string platform_info(cl_platform_id p, cl_platform_info what) {
    size_t n = 0;
    clGetPlatformInfo(p, what, 0, nullptr, &n);
    std::string s(n, '\0');
    clGetPlatformInfo(p, what, n, &s[0], nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

std::string device_info(cl_device_id d, cl_device_info what) {
    size_t n = 0;
    clGetDeviceInfo(d, what, 0, nullptr, &n);
    std::string s(n, '\0');
    clGetDeviceInfo(d, what, n, &s[0], nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

std::vector<DeviceRef> all_devices() {
    cl_uint np = 0;
    if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0)
        throw DeviceError("no OpenCL platform found (is an ICD installed?)");
    std::vector<cl_platform_id> plats(np);
    clGetPlatformIDs(np, plats.data(), nullptr);
    std::vector<DeviceRef> out;
    for (cl_uint p = 0; p < np; ++p) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
        std::vector<cl_device_id> devs(nd);
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr);
        for (cl_uint d = 0; d < nd; ++d)
            out.push_back({static_cast<int>(p), static_cast<int>(d), plats[p], devs[d],
                           platform_info(plats[p], CL_PLATFORM_NAME),
                           device_info(devs[d], CL_DEVICE_NAME),
                           device_info(devs[d], CL_DEVICE_VERSION),
                           platform_info(plats[p], CL_PLATFORM_VERSION)});
    }
    return out;
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

int name_likeness(const std::string& a, const std::string& b);  // below

// Device choice without --device: the rule of replay.py's engine.choose_device (and of cltui),
// in the same words; tests/device_choice_cases.json holds both to the same cases.
struct Candidate {
    std::string id, platform, name;
};
struct Choice {
    int index = -1;  // into the candidates; -1: no device at all
    std::string rule, why;
};

std::string trim(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
}

// A device that simulates OpenCL instead of running it (Oclgrind), by platform or name.
bool is_simulator(const Candidate& c) {
    return lower(c.platform + " " + c.name).find("oclgrind") != std::string::npos;
}

// A name from the capture (untrusted), control characters escaped as Python's repr does.
std::string shown(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

// captured: (name, platform or "") of the capture's devices, most wanted first.
Choice choose_device(const std::vector<Candidate>& devices,
                     const std::vector<std::pair<std::string, std::string>>& captured) {
    std::vector<std::pair<std::string, std::string>> ids;
    for (const auto& c : captured) {
        std::string name = trim(c.first);
        bool seen = name.empty();
        for (const auto& i : ids) seen = seen || i.first == name;
        if (!seen) ids.push_back({name, trim(c.second)});
    }
    auto label = [&](int i) { return devices[i].id + " " + devices[i].name; };
    Choice ch;
    if (devices.empty()) {
        ch.rule = "first";
        ch.why = "no OpenCL device found";
        return ch;
    }
    for (const auto& id : ids) {
        int same = -1;
        for (int i = 0; i < static_cast<int>(devices.size()); ++i) {
            if (trim(devices[i].name) != id.first) continue;
            if (same < 0) same = i;
            if (!id.second.empty() && trim(devices[i].platform) == id.second) {
                same = i;
                break;
            }
        }
        if (same >= 0) {
            ch.index = same;
            ch.rule = "captured";
            ch.why = label(same) + " is the device the capture ran on";
            return ch;
        }
    }
    std::string gone;
    for (const auto& id : ids) gone += (gone.empty() ? "" : ", ") + shown(id.first);
    int best_words = 0, best = -1;
    for (const auto& id : ids) {
        int pick = -1, score = 0;  // most_alike: the first of the names sharing the most words
        for (int i = 0; i < static_cast<int>(devices.size()); ++i) {
            int k = name_likeness(devices[i].name, id.first);
            if (k > score) {
                pick = i;
                score = k;
            }
        }
        if (pick >= 0 && (best < 0 || score > best_words || (score == best_words && pick < best))) {
            best = pick;
            best_words = score;
        }
    }
    if (best >= 0) {
        ch.index = best;
        ch.rule = "most-alike";
        ch.why = "the capture ran on " + gone + ", which is not here; " + label(best) +
                 " shares the most leading words with it (" + std::to_string(best_words) +
                 (best_words == 1 ? " word)" : " words)");
        return ch;
    }
    std::string head = ids.empty() ? std::string("the capture does not name its device")
                                   : "the capture ran on " + gone +
                                         ", which is not here and no device is named like it";
    for (int i = 0; i < static_cast<int>(devices.size()); ++i) {
        if (!is_simulator(devices[i])) {
            ch.index = i;
            ch.rule = "real-before-simulator";
            ch.why = head + "; " + label(i) + " is the first device that is not a simulator";
            return ch;
        }
    }
    ch.index = 0;
    ch.rule = "first";
    ch.why = head + "; every device here is a simulator: the first, " + label(0);
    return ch;
}

// The devices --device names, in order (as replay.py: a name substring selects every device
// it matches); without --device the one choose_device picks for the capture's devices.
std::vector<DeviceRef> pick_devices(const std::vector<std::string>& specs,
                                    const std::vector<std::pair<std::string, std::string>>& captured,
                                    Choice& choice) {
    auto devs = all_devices();
    if (devs.empty()) throw DeviceError("no OpenCL device found");
    if (specs.empty()) {
        std::vector<Candidate> cands;
        for (const auto& r : devs)
            cands.push_back({std::to_string(r.p) + ":" + std::to_string(r.d), r.platform_name,
                             r.name});
        choice = choose_device(cands, captured);
        return {devs[choice.index]};
    }
    choice.rule = "user";
    choice.why = "chosen with --device";
    for (size_t i = 0; i < specs.size(); ++i) choice.why += (i ? " --device " : " ") + specs[i];
    std::vector<DeviceRef> chosen;
    auto add = [&](const DeviceRef& r) {
        for (const auto& c : chosen)
            if (c.p == r.p && c.d == r.d) return;
        chosen.push_back(r);
    };
    for (const auto& sel : specs) {
        int p = -1, d = -1;
        char tail = 0;
        bool found = false;
        if (std::sscanf(sel.c_str(), "%d:%d%c", &p, &d, &tail) == 2) {
            for (auto& r : devs)
                if (r.p == p && r.d == d) {
                    add(r);
                    found = true;
                }
        } else {
            for (auto& r : devs) {
                // the name, the platform, and both versions (where PoCL says "PoCL")
                std::string hay = r.name + " " + r.platform_name + " " + r.version + " " +
                                  r.platform_version;
                if (lower(hay).find(lower(sel)) != std::string::npos) {
                    add(r);
                    found = true;
                }
            }
        }
        if (!found) throw UsageError("no device matches '" + sel + "' (see --list-devices)");
    }
    return chosen;
}

// ------------------------------------------------------------------------------------------
// The plan, as read from manifest.json (the same file replay.py reads):
//   programs  id -> {source | il: data key, binaries: [{data, device}], options, include_dirs}
//   memory    id -> {kind: buffer | subbuffer | image | svm, size, label, image, parent, origin}
//   steps     [{enqueue, kernel, program, global, local, offset, args, loads, prechecks, checks}]
//   data      key -> {path (relative to the bundle), size}
//   tolerance {atol, rtol, ulp}

struct Leaf {  // one scalar field of an element: `count` lanes of `size` bytes at `offset`
    size_t offset, size, count;
    char kind;  // 'f' float, 'i' signed, 'u' unsigned, 'b' bool, 'V' raw bytes
    std::string name;
};

struct Layout {
    size_t itemsize = 1;
    std::vector<Leaf> leaves;
    std::string label = "uint8";
};

struct Tol {
    double atol = 0, rtol = 0;
    long long ulp = 0;
};

struct MemDesc {
    std::string id, kind, label;  // kind: buffer | subbuffer | image | svm
    size_t size = 0;
    std::string parent;  // sub-buffers
    size_t origin = 0;
    cl_mem_object_type image_type = 0;  // images
    cl_image_format format{};
    size_t region[3] = {0, 0, 0};
    size_t element_size = 0;
};

struct ArgDesc {
    int index;
    std::string kind;  // buffer | image | svm | scalar | local | sampler | null
    std::string mem;
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
cl_uint enum_value(const Json& j) {
    if (j.kind == Json::Number) return static_cast<cl_uint>(j.as_int());
    static const std::map<std::string, cl_uint> names = {
        {"R", CL_R}, {"A", CL_A}, {"RG", CL_RG}, {"RA", CL_RA}, {"RGB", CL_RGB},
        {"RGBA", CL_RGBA}, {"BGRA", CL_BGRA}, {"ARGB", CL_ARGB}, {"INTENSITY", CL_INTENSITY},
        {"LUMINANCE", CL_LUMINANCE}, {"Rx", CL_Rx}, {"RGx", CL_RGx}, {"RGBx", CL_RGBx},
        {"DEPTH", CL_DEPTH}, {"sRGBA", CL_sRGBA}, {"sBGRA", CL_sBGRA},
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

// numpy dtype specs as compare.py writes them: "<f4", "(4,)<f4", "float32", or a struct
// [[name, spec, offset], ...].  The result lists every scalar leaf with its byte offset.
void add_leaves(const Json& spec, size_t base, const std::string& prefix, Layout& out,
                size_t& itemsize);

void add_scalar(std::string s, size_t base, const std::string& name, Layout& out,
                size_t& itemsize) {
    size_t lanes = 1;
    if (!s.empty() && s[0] == '(') {  // "(4,)<f4" or "(2,3)<i4"
        size_t close = s.find(')');
        std::stringstream dims(s.substr(1, close - 1));
        std::string d;
        while (std::getline(dims, d, ','))
            if (!d.empty()) lanes *= static_cast<size_t>(std::stoul(d));
        s = s.substr(close + 1);
    }
    static const std::map<std::string, std::string> named = {
        {"float16", "<f2"}, {"float32", "<f4"}, {"float64", "<f8"}, {"int8", "|i1"},
        {"int16", "<i2"}, {"int32", "<i4"}, {"int64", "<i8"}, {"uint8", "|u1"},
        {"uint16", "<u2"}, {"uint32", "<u4"}, {"uint64", "<u8"}, {"bool", "|b1"}};
    auto it = named.find(s);
    if (it != named.end()) s = it->second;
    if (!s.empty() && std::strchr("<>|=", s[0])) s = s.substr(1);
    if (s.size() < 2) throw UsageError("manifest: bad dtype '" + s + "'");
    char kind = s[0];
    size_t size = static_cast<size_t>(std::stoul(s.substr(1)));
    if (kind == 'S' || kind == 'a') kind = 'V';
    out.leaves.push_back({base, size, lanes, kind, name});
    itemsize = std::max(itemsize, base + size * lanes);
}

void add_leaves(const Json& spec, size_t base, const std::string& prefix, Layout& out,
                size_t& itemsize) {
    if (spec.kind == Json::String) {
        add_scalar(spec.str, base, prefix, out, itemsize);
        return;
    }
    if (spec.kind != Json::Array) throw UsageError("manifest: bad dtype");
    size_t cursor = base;
    for (const auto& field : spec.arr) {
        std::string name = field.arr.at(0).as_str();
        size_t offset = field.arr.size() >= 3
                            ? base + static_cast<size_t>(field.arr[2].as_int())
                            : cursor;
        size_t end = offset;
        add_leaves(field.arr.at(1), offset, prefix.empty() ? name : prefix + "." + name, out,
                   end);
        cursor = end;
        itemsize = std::max(itemsize, end);
    }
}

Layout read_layout(const Json* spec) {
    Layout l;
    if (!spec || spec->kind == Json::Null) {
        l.leaves.push_back({0, 1, 1, 'u', ""});
        return l;
    }
    size_t itemsize = 0;
    add_leaves(*spec, 0, "", l, itemsize);
    l.itemsize = std::max<size_t>(itemsize, 1);
    l.label = spec->kind == Json::String ? spec->str : "struct";
    return l;
}

Tol read_tol(const Json* j, Tol base) {
    if (!j || j->kind != Json::Object) return base;
    if (j->has("atol")) base.atol = j->at("atol").as_double();
    if (j->has("rtol")) base.rtol = j->at("rtol").as_double();
    if (j->has("ulp")) base.ulp = j->at("ulp").as_int();
    return base;
}

std::vector<size_t> sizes(const Json* j) {
    std::vector<size_t> v;
    if (j && j->kind == Json::Array)
        for (const auto& e : j->arr) v.push_back(static_cast<size_t>(e.as_int()));
    return v;
}

std::string str_or(const Json& j, const std::string& key, const std::string& dflt = "") {
    const Json* v = j.find(key);
    if (!v || v->kind == Json::Null) return dflt;
    if (v->kind == Json::Number) return v->str;
    return v->as_str();
}

std::vector<Check> read_checks(const Json* list, const Tol& base) {
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
        out.push_back(ch);
    }
    return out;
}

Plan read_plan(const Json& m) {
    Plan plan;
    plan.mode = str_or(m, "mode");
    plan.tolerance = read_tol(m.find("tolerance"), Tol{});
    for (const auto& kv : m.at("data").obj) plan.data[kv.first] = kv.second.at("path").as_str();
    for (const auto& kv : m.at("memory").obj) {
        const Json& j = kv.second;
        MemDesc d;
        d.id = kv.first;
        d.kind = j.at("kind").as_str();
        d.size = j.has("size") ? static_cast<size_t>(j.at("size").as_int()) : 0;
        d.label = str_or(j, "label", d.id);
        d.parent = str_or(j, "parent");
        d.origin = j.has("origin") ? static_cast<size_t>(j.at("origin").as_int()) : 0;
        if (d.kind == "image") {
            const Json& im = j.at("image");
            d.format.image_channel_order = enum_value(im.at("order"));
            d.format.image_channel_data_type = enum_value(im.at("type"));
            d.image_type = im.has("image_type") ? enum_value(im.at("image_type"))
                                                : CL_MEM_OBJECT_IMAGE2D;
            auto shape = sizes(im.find("shape"));
            for (size_t i = 0; i < 3; ++i) d.region[i] = i < shape.size() ? shape[i] : 1;
            d.element_size = static_cast<size_t>(im.at("element_size").as_int());
            d.size = d.region[0] * d.region[1] * d.region[2] * d.element_size;
        }
        plan.mems.push_back(d);
    }
    for (const auto& kv : m.at("programs").obj) {
        const Json& j = kv.second;
        ProgramDesc d;
        d.id = kv.first;
        d.label = str_or(j, "label", d.id);
        d.source = str_or(j, "source");
        d.il = str_or(j, "il");
        d.options = str_or(j, "options");
        if (const Json* b = j.find("binaries"))
            for (const auto& e : b->arr)
                d.binaries.emplace_back(str_or(e, "data"), str_or(e, "device"));
        if (const Json* inc = j.find("include_dirs"))
            for (const auto& e : inc->arr) d.include_dirs.push_back(e.as_str());
        plan.programs.push_back(d);
    }
    for (const auto& s : m.at("steps").arr) {
        Step st;
        st.enqueue = s.at("enqueue").as_int();
        st.kernel = s.at("kernel").as_str();
        st.program = str_or(s, "program");
        st.global = sizes(s.find("global"));
        st.local = sizes(s.find("local"));
        st.offset = sizes(s.find("offset"));
        for (const auto& a : s.at("args").arr) {
            ArgDesc d;
            d.index = static_cast<int>(a.at("index").as_int());
            d.kind = a.at("kind").as_str();
            d.mem = str_or(a, "mem");
            if (a.has("offset")) d.offset = static_cast<size_t>(a.at("offset").as_int());
            if (a.has("size")) d.size = static_cast<size_t>(a.at("size").as_int());
            if (a.has("hex")) d.bytes = from_hex(a.at("hex").as_str());
            if (d.kind == "sampler") {
                d.normalized = a.at("normalized").as_bool() ? CL_TRUE : CL_FALSE;
                d.addressing = enum_value(a.at("addressing"));
                d.filter = enum_value(a.at("filter"));
            }
            st.args.push_back(d);
        }
        if (const Json* loads = s.find("loads"))
            for (const auto& l : loads->arr)
                st.loads.push_back({str_or(l, "mem"), str_or(l, "data"), str_or(l, "why", "input"),
                                    str_or(l, "note")});
        st.prechecks = read_checks(s.find("prechecks"), plan.tolerance);
        st.checks = read_checks(s.find("checks"), plan.tolerance);
        if (const Json* ts = s.find("transfers"))
            for (const auto& t : ts->arr) {
                Transfer tr;
                tr.enqueue = t.at("enqueue").as_int();
                tr.function = str_or(t, "function");
                tr.mem = str_or(t, "mem");
                tr.replayed = str_or(t, "replayed");
                tr.why = str_or(t, "why");
                const Json* op = t.find("op");
                if (op && op->kind == Json::Object) {
                    tr.op = str_or(*op, "op");
                    tr.src = str_or(*op, "src");
                    auto num = [&](const char* k) {
                        const Json* v = op->find(k);
                        return v && v->kind == Json::Number ? static_cast<size_t>(v->as_int())
                                                            : size_t(0);
                    };
                    tr.offset = num("offset");
                    tr.size = num("size");
                    tr.src_offset = num("src_offset");
                    tr.dst_offset = num("dst_offset");
                    tr.pitches[0] = num("src_row_pitch");
                    tr.pitches[1] = num("src_slice_pitch");
                    tr.pitches[2] = num("dst_row_pitch");
                    tr.pitches[3] = num("dst_slice_pitch");
                    if (op->has("pattern")) tr.pattern = from_hex(op->at("pattern").as_str());
                    auto triple = [&](const char* k, size_t* out) {
                        const Json* v = op->find(k);
                        if (!v || v->kind != Json::Array) return;
                        for (size_t i = 0; i < 3 && i < v->arr.size(); ++i)
                            out[i] = static_cast<size_t>(v->arr[i].as_int());
                    };
                    triple("src_origin", tr.src_origin);
                    triple("dst_origin", tr.dst_origin);
                    triple("region", tr.region);
                }
                st.transfers.push_back(tr);
            }
        plan.steps.push_back(st);
    }
    if (const Json* scope = m.find("scope")) {
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
    return plan;
}

// ------------------------------------------------------------------------------------------
// Comparison (the same rules as compare.py)

struct CompareResult {
    std::string status = "equal";  // equal | within | different
    size_t elements = 0, expected_size = 0, actual_size = 0, n_diff = 0, n_bad = 0;
    double max_abs = 0, max_ulp = 0;
    bool has_float = false;
    long long first = -1;  // first element beyond tolerance (else first differing)
    std::string first_where, first_expected, first_actual;  // its first differing lane
    std::string note;
};

double half_to_double(uint16_t h) {
    int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    double v;
    if (exp == 0)
        v = std::ldexp(mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = std::ldexp(mant + 1024, exp - 25);
    return sign ? -v : v;
}

// Bits of a float (2, 4 or 8 bytes) as an integer whose difference is the ULP distance.
long long ordered(uint64_t bits, size_t size) {
    uint64_t sign = 1ULL << (size * 8 - 1);
    long long mag = static_cast<long long>(bits & (sign - 1));
    return (bits & sign) ? -mag : mag;
}

double to_double(const unsigned char* p, size_t size) {
    if (size == 2) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return half_to_double(h);
    }
    if (size == 4) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    double d;
    std::memcpy(&d, p, 8);
    return d;
}

std::string lane_text(const unsigned char* p, const Leaf& leaf) {
    char buf[64];
    if (leaf.kind == 'f' && (leaf.size == 2 || leaf.size == 4 || leaf.size == 8)) {
        std::snprintf(buf, sizeof buf, "%.9g", to_double(p, leaf.size));
        return buf;
    }
    if ((leaf.kind == 'i' || leaf.kind == 'u' || leaf.kind == 'b') && leaf.size <= 8) {
        uint64_t u = 0;
        std::memcpy(&u, p, leaf.size);
        if (leaf.kind == 'i' && leaf.size < 8 && (u >> (leaf.size * 8 - 1)) & 1)
            u |= ~0ULL << (leaf.size * 8);  // sign-extend
        if (leaf.kind == 'i')
            std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(u));
        else
            std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(u));
        return buf;
    }
    std::string hex;
    for (size_t i = 0; i < leaf.size; ++i) {
        std::snprintf(buf, sizeof buf, "%02x", p[i]);
        hex += buf;
    }
    return hex;
}

// Where (field, lane) the first reported element differs, with both values.
void describe_first(const std::vector<unsigned char>& expected,
                    const std::vector<unsigned char>& actual, const Layout& layout,
                    size_t itemsize, CompareResult& r) {
    size_t base = static_cast<size_t>(r.first) * itemsize;
    for (const Leaf& leaf : layout.leaves) {
        for (size_t lane = 0; lane < leaf.count; ++lane) {
            size_t off = base + leaf.offset + lane * leaf.size;
            if (std::memcmp(&expected[off], &actual[off], leaf.size) == 0) continue;
            r.first_where = "[" + std::to_string(r.first) + "]";
            if (!leaf.name.empty()) r.first_where += "." + leaf.name;
            if (leaf.count > 1) r.first_where += " lane " + std::to_string(lane);
            r.first_expected = lane_text(&expected[off], leaf);
            r.first_actual = lane_text(&actual[off], leaf);
            return;
        }
    }
}

CompareResult compare(const std::vector<unsigned char>& expected,
                      const std::vector<unsigned char>& actual, const Layout& layout, Tol tol) {
    CompareResult r;
    r.expected_size = expected.size();
    r.actual_size = actual.size();
    size_t common = std::min(expected.size(), actual.size());
    size_t itemsize = std::max<size_t>(layout.itemsize, 1);
    r.elements = common / itemsize;
    if (expected == actual) return r;
    long long first_diff = -1, first_bad = -1;
    for (size_t i = 0; i < r.elements; ++i) {
        const unsigned char* e = expected.data() + i * itemsize;
        const unsigned char* a = actual.data() + i * itemsize;
        if (std::memcmp(e, a, itemsize) == 0) continue;
        bool diff = false, bad = false;
        for (const Leaf& leaf : layout.leaves) {
            for (size_t lane = 0; lane < leaf.count; ++lane) {
                size_t off = leaf.offset + lane * leaf.size;
                if (std::memcmp(e + off, a + off, leaf.size) == 0) continue;
                bool is_float = leaf.kind == 'f' && (leaf.size == 2 || leaf.size == 4 ||
                                                     leaf.size == 8);
                if (!is_float) {
                    diff = bad = true;
                    continue;
                }
                r.has_float = true;
                double ev = to_double(e + off, leaf.size), av = to_double(a + off, leaf.size);
                bool en = std::isnan(ev), an = std::isnan(av);
                if (en && an) continue;  // NaN equals NaN
                diff = true;
                double absd, ulps;
                if (en != an) {
                    absd = ulps = INFINITY;
                } else {
                    absd = (std::isinf(ev) && ev == av) ? 0.0 : std::fabs(av - ev);
                    uint64_t eb = 0, ab = 0;
                    std::memcpy(&eb, e + off, leaf.size);
                    std::memcpy(&ab, a + off, leaf.size);
                    ulps = std::fabs(static_cast<double>(ordered(ab, leaf.size)) -
                                     static_cast<double>(ordered(eb, leaf.size)));
                }
                r.max_abs = std::max(r.max_abs, absd);
                r.max_ulp = std::max(r.max_ulp, ulps);
                double e_abs = en ? 0.0 : std::isinf(ev) ? DBL_MAX : std::fabs(ev);
                bool within = absd <= tol.atol + tol.rtol * e_abs ||
                              ulps <= static_cast<double>(tol.ulp);
                if (!within) bad = true;
            }
        }
        if (diff) {
            ++r.n_diff;
            if (first_diff < 0) first_diff = static_cast<long long>(i);
        }
        if (bad) {
            ++r.n_bad;
            if (first_bad < 0) first_bad = static_cast<long long>(i);
        }
    }
    size_t tail_start = r.elements * itemsize;
    if (tail_start < common &&
        std::memcmp(expected.data() + tail_start, actual.data() + tail_start,
                    common - tail_start) != 0) {
        ++r.n_diff;
        ++r.n_bad;
        r.note = "trailing " + std::to_string(common - tail_start) + " bytes differ";
    }
    if (expected.size() != actual.size()) {
        std::string n = "size differs: expected " + std::to_string(expected.size()) +
                        " bytes, got " + std::to_string(actual.size());
        r.note = r.note.empty() ? n : n + "; " + r.note;
    }
    r.first = first_bad >= 0 ? first_bad : first_diff;
    if (r.first >= 0) describe_first(expected, actual, layout, itemsize, r);
    r.status = (r.n_bad || expected.size() != actual.size()) ? "different" : "within";
    return r;
}

// ------------------------------------------------------------------------------------------
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

// The layer's 64-bit hash (capture-format §5.2): Bob Jenkins' 96-bit mix over little-endian
// 32-bit words, the last 1-3 bytes as one zero-padded word; the same as cltui's Python.
std::uint64_t cli_hash64(const std::vector<unsigned char>& d) {
    std::uint32_t a = 0x428A2F98u, b = 0x71374491u, c = 0xB5C0FBCFu;
    auto mix = [&](std::uint32_t w) {
        a ^= w;
        a -= b; a -= c; a ^= c >> 13;
        b -= c; b -= a; b ^= a << 8;
        c -= a; c -= b; c ^= b >> 13;
        a -= b; a -= c; a ^= c >> 12;
        b -= c; b -= a; b ^= a << 16;
        c -= a; c -= b; c ^= b >> 5;
        a -= b; a -= c; a ^= c >> 3;
        b -= c; b -= a; b ^= a << 10;
        c -= a; c -= b; c ^= b >> 15;
    };
    const size_t n = d.size() / 4;
    for (size_t i = 0; i < n; ++i)
        mix(static_cast<std::uint32_t>(d[4 * i]) | static_cast<std::uint32_t>(d[4 * i + 1]) << 8 |
            static_cast<std::uint32_t>(d[4 * i + 2]) << 16 |
            static_cast<std::uint32_t>(d[4 * i + 3]) << 24);
    if (d.size() % 4) {
        std::uint32_t w = 0;
        for (size_t k = 4 * n; k < d.size(); ++k)
            w |= static_cast<std::uint32_t>(d[k]) << (8 * (k - 4 * n));
        mix(w);
    }
    return static_cast<std::uint64_t>(b) << 32 | c;
}

// How many leading words two device names share (words: lower-case, split at white space,
// '-', '_', '/' and ','); the same as the Python engine's name_likeness.
std::vector<std::string> name_tokens(const std::string& name) {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : name) {
        if (std::isspace(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '/' ||
            ch == ',') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

int name_likeness(const std::string& a, const std::string& b) {
    const auto x = name_tokens(a), y = name_tokens(b);
    int k = 0;
    while (k < static_cast<int>(std::min(x.size(), y.size())) && x[k] == y[k]) ++k;
    return k;
}

std::string hex64(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
}

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

// ------------------------------------------------------------------------------------------
// Reporting

struct Stats {
    double min, median, max;
};

Stats stats(std::vector<double> v) {
    if (v.empty()) return {0, 0, 0};
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return {v.front(), med, v.back()};
}

std::string stats_json(const std::vector<double>& v) {
    if (v.empty()) return "null";
    Stats s = stats(v);
    return "{\"min\": " + json_num(s.min) + ", \"median\": " + json_num(s.median) +
           ", \"max\": " + json_num(s.max) + "}";
}

bool step_ok(const StepOutcome& s) {
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

Verdict make_verdict(const Plan& plan, const std::vector<StepOutcome>& outcomes,
                     const std::string& error) {
    long long kernels = plan.kernels >= 0 ? plan.kernels
                                          : static_cast<long long>(plan.steps.size());
    long long replayed = 0, outputs = 0, checked = 0, equal = 0, within = 0, different = 0;
    long long departed = 0, after = 0, tainted_diff = 0;
    for (const auto& st : plan.steps) outputs += static_cast<long long>(st.checks.size());
    for (const auto& o : outcomes) {
        if (!o.ran) continue;  // not launched (an error before it)
        ++replayed;
        for (const auto& c : o.checks) {
            if (c.status == "equal") ++equal;
            if (c.status == "within") ++within;
            if (c.status == "different") ++different;
            if (c.status != "unchecked") ++checked;
            if (c.after_unreplayed >= 0) {
                ++after;
                if (c.status == "different") ++tainted_diff;
            }
        }
        for (const auto& p : o.prechecks) {
            if (p.status != "different") continue;
            bool reloaded = false;
            const auto& loads = o.step->loads;
            for (size_t j = 0; j < loads.size() && j < o.fired.size(); ++j)
                reloaded = reloaded || (loads[j].mem == p.check->mem && o.fired[j]);
            if (!reloaded) ++departed;
        }
    }
    long long unchecked = outputs - checked;
    Verdict v;
    v.counts = {{"kernels", kernels},
                {"replayed", replayed},
                {"skipped", plan.kernels >= 0 ? plan.skipped : 0},
                {"outputs", outputs},
                {"checked", checked},
                {"unchecked", unchecked},
                {"equal", equal},
                {"within", within},
                {"different", different},
                {"departed", departed},
                {"recovered", plan.recovered},
                {"lost", plan.lost},
                {"after_unreplayed", after},
                {"transfers", plan.transfers},
                {"transfers_replayed", plan.transfers_replayed}};
    std::string head;
    if (!error.empty()) {
        v.status = "error";
        head = error;
    } else if (different > tainted_diff) {
        long long bad = different - tainted_diff;
        v.status = "fail";
        head = std::to_string(bad) + " output" + (bad != 1 ? "s" : "") + " different";
    } else if (v.count("skipped") || plan.lost || unchecked || departed || after ||
               plan.transfers_replayed < plan.transfers ||
               replayed < static_cast<long long>(plan.steps.size())) {
        v.status = "incomplete";
    } else {
        v.status = "pass";
    }
    std::ostringstream o;
    o << replayed << "/" << kernels << " kernel enqueues replayed";
    std::vector<std::string> about;
    if (v.count("skipped")) about.push_back(std::to_string(v.count("skipped")) + " skipped");
    if (plan.recovered) about.push_back(std::to_string(plan.recovered) + " recovered");
    if (plan.lost)
        about.push_back(std::to_string(plan.lost) + " enqueue" + (plan.lost != 1 ? "s" : "") +
                        " lost with the log");
    for (size_t i = 0; i < about.size(); ++i) o << (i ? ", " : " (") << about[i];
    if (!about.empty()) o << ")";
    o << ", " << checked << "/" << outputs << " outputs checked";
    std::vector<std::string> how;
    if (equal) how.push_back(std::to_string(equal) + " equal");
    if (within) how.push_back(std::to_string(within) + " within");
    if (different) how.push_back(std::to_string(different) + " different");
    if (unchecked) how.push_back(std::to_string(unchecked) + " unchecked");
    for (size_t i = 0; i < how.size(); ++i) o << (i ? ", " : " (") << how[i];
    if (!how.empty()) o << ")";
    if (plan.transfers) {
        o << ", " << plan.transfers_replayed << "/" << plan.transfers << " host transfers replayed";
        if (plan.transfers_replayed < plan.transfers)
            o << " (" << plan.transfers - plan.transfers_replayed << " not)";
    }
    if (after) o << ", " << after << " checks after an unreplayed host write";
    if (departed) o << ", " << departed << " departed from the capture (not reloaded)";
    std::string upper = v.status;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    v.line = upper + ": " + (head.empty() ? o.str() : head + "; " + o.str());
    return v;
}

int verdict_exit(const std::string& status) {
    if (status == "pass") return 0;
    if (status == "incomplete") return 3;
    return 1;
}

std::string verdict_json(const Verdict& v) {
    std::ostringstream o;
    o << "{\"status\": " << json_str(v.status) << ", \"line\": " << json_str(v.line)
      << ", \"counts\": {";
    for (size_t i = 0; i < v.counts.size(); ++i)
        o << (i ? ", " : "") << json_str(v.counts[i].first) << ": " << v.counts[i].second;
    return o.str() + "}}";
}

std::string device_json(const DeviceRef& dev) {
    return "{\"id\": " + json_str(std::to_string(dev.p) + ":" + std::to_string(dev.d)) +
           ", \"platform\": " + json_str(dev.platform_name) + ", \"name\": " + json_str(dev.name) +
           ", \"version\": " + json_str(dev.version) + "}";
}

std::string summary(const CheckOutcome& oc);

std::string checks_json(const std::vector<CheckOutcome>& list) {
    std::ostringstream o;
    o << "[";
    for (size_t i = 0; i < list.size(); ++i) {
        const auto& oc = list[i];
        const auto& c = oc.result;
        o << (i ? ", " : "") << "{\"mem\": " << json_str(oc.check->mem) << ", \"args\": [";
        for (size_t a = 0; a < oc.check->args.size(); ++a)
            o << (a ? ", " : "") << oc.check->args[a];
        o << "], \"label\": " << json_str(oc.check->label)
          << ", \"status\": " << json_str(oc.status)
          << ", \"output\": " << (oc.output.empty() ? "null" : json_str(oc.output));
        if (oc.after_unreplayed >= 0)
            o << ", \"after_unreplayed\": " << oc.after_unreplayed
              << ", \"summary\": " << json_str(summary(oc));
        if (oc.hashed && oc.after_unreplayed < 0) {
            o << ", \"summary\": " << json_str(summary(oc));
        } else if (oc.status != "unchecked") {
            o << ", \"result\": {\"status\": " << json_str(c.status)
              << ", \"dtype\": " << json_str(oc.check->layout.label)
              << ", \"elements\": " << c.elements << ", \"expected_size\": " << c.expected_size
              << ", \"actual_size\": " << c.actual_size << ", \"n_diff\": " << c.n_diff
              << ", \"n_bad\": " << c.n_bad << ", \"max_abs\": "
              << (c.has_float ? json_num(c.max_abs) : "null")
              << ", \"max_ulp\": " << (c.has_float ? json_num(c.max_ulp) : "null")
              << ", \"first_index\": " << (c.first >= 0 ? std::to_string(c.first) : "null")
              << ", \"first\": "
              << (c.first_where.empty()
                      ? std::string("null")
                      : "{\"where\": " + json_str(c.first_where) + ", \"expected\": " +
                            json_str(c.first_expected) + ", \"actual\": " +
                            json_str(c.first_actual) + "}")
              << ", \"note\": " << json_str(c.note) << "}";
        }
        o << "}";
    }
    return o.str() + "]";
}

// One device's result, in the shape of replay.py --json (which prints a list of them).
std::string result_json(const Replayer& r, const DeviceRef& dev, bool ok, int repeat,
                        const std::string& error, const Choice& choice,
                        const Verdict& verdict) {
    std::ostringstream o;
    o << "{\"runner\": \"replay.cpp\", \"verdict\": " << verdict_json(verdict)
      << ", \"device\": " << device_json(dev)
      << ", \"status\": " << json_str(!error.empty() ? "error" : ok ? "ok" : "mismatch")
      << ", \"ok\": " << (ok ? "true" : "false")
      << ", \"error\": " << (error.empty() ? "null" : json_str(error)) << ", \"failed_enqueue\": "
      << (error.empty() || r.running < 0 ? std::string("null") : std::to_string(r.running))
      << ", \"device_choice\": {\"rule\": " << json_str(choice.rule)
      << ", \"why\": " << json_str(choice.why) << "}"
      << ", \"repeat\": " << repeat << ", \"loop\": "
      << (error.empty() ? "{\"launches\": " + std::to_string(r.outcomes.size()) +
                              ", \"host_ns_per_repetition\": " + stats_json(r.loop_ns) + "}"
                        : std::string("null"))
      << ", \"builds\": {";
    for (size_t i = 0; i < r.builds.size(); ++i)
        o << (i ? ", " : "") << json_str(r.builds[i].program) << ": {\"how\": "
          << json_str(r.builds[i].how) << ", \"seconds\": " << json_num(r.builds[i].seconds)
          << "}";
    o << "}, \"notes\": [";
    for (size_t i = 0; i < r.notes.size(); ++i) o << (i ? ", " : "") << json_str(r.notes[i]);
    o << "], \"steps\": [";
    for (size_t i = 0; i < r.outcomes.size(); ++i) {
        const auto& s = r.outcomes[i];
        const Timing& t = s.timing;
        o << (i ? "," : "") << "\n  {\"enqueue\": " << s.step->enqueue
          << ", \"kernel\": " << json_str(s.step->kernel)
          << ", \"status\": " << (step_ok(s) ? "\"pass\"" : "\"fail\"")
          << ",\n   \"checks\": " << checks_json(s.checks)
          << ",\n   \"prechecks\": " << checks_json(s.prechecks) << ",\n   \"loads\": [";
        for (size_t j = 0; j < s.step->loads.size(); ++j) {
            const Load& l = s.step->loads[j];
            o << (j ? ", " : "") << "{\"mem\": " << json_str(l.mem) << ", \"why\": "
              << json_str(l.why) << ", \"note\": " << json_str(l.note)
              << ", \"done\": " << (r.load_done(i, j) ? "true" : "false") << "}";
        }
        o << "]";
        {
            o << ",\n   \"transfers\": [";
            for (size_t j = 0; j < s.step->transfers.size(); ++j) {
                const Transfer& tr = s.step->transfers[j];
                o << (j ? ", " : "") << "{\"enqueue\": " << tr.enqueue
                  << ", \"function\": " << json_str(tr.function)
                  << ", \"mem\": " << json_str(tr.mem) << ", \"replayed\": "
                  << (tr.replayed.empty() ? "null" : json_str(tr.replayed))
                  << ", \"why\": " << json_str(tr.why)
                  << ", \"done\": " << (tr.runs() ? "true" : "false") << "}";
            }
            o << "]";
        }
        o << ",\n   \"timing\": {\"queued_to_submit\": " << stats_json(t.queued_submit)
          << ", \"submit_to_start\": " << stats_json(t.submit_start)
          << ", \"start_to_end\": " << stats_json(t.start_end)
          << ", \"host_enqueue\": " << stats_json(t.host_enqueue)
          << ", \"samples\": " << t.start_end.size() << "}}";
    }
    o << "]}";
    return o.str();
}

std::string fmt_ns(double ns) {
    char buf[32];
    if (ns >= 1e6)
        std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
    else if (ns >= 1e3)
        std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    return buf;
}

std::string plain_summary(const CheckOutcome& oc);

std::string summary(const CheckOutcome& oc) {
    if (oc.after_unreplayed >= 0)
        return "after unreplayed host write at " + std::to_string(oc.after_unreplayed) + ": " +
               plain_summary(oc);
    return plain_summary(oc);
}

std::string plain_summary(const CheckOutcome& oc) {
    const auto& c = oc.result;
    if (oc.hashed)
        return oc.status == "equal"
                   ? "hash matches"
                   : "hash " + hex64(oc.hash) + " != captured " +
                         hex64(std::strtoull(oc.check->hash64.c_str(), nullptr, 16));
    if (oc.status == "unchecked")
        return oc.check->note.empty() ? "no captured data" : oc.check->note;
    if (oc.status == "equal") return "bit-exact";
    std::ostringstream o;
    o << c.n_diff << "/" << c.elements << " differ";
    if (c.n_bad != c.n_diff) o << ", " << c.n_bad << " beyond tolerance";
    if (c.has_float) o << ", max " << c.max_ulp << " ULP, abs " << c.max_abs;
    if (!c.first_where.empty())
        o << ", first " << c.first_where << ": expected " << c.first_expected << " got "
          << c.first_actual;
    else if (c.first >= 0)
        o << ", first [" << c.first << "]";
    if (!c.note.empty()) o << ", " << c.note;
    return o.str();
}

void print_text(const Replayer& r, const DeviceRef& dev, int repeat, const Verdict& verdict) {
    std::cout << "== " << dev.p << ":" << dev.d << " " << dev.name << " (" << dev.platform_name
              << ")\n";
    std::cout << "   " << verdict.line << "\n";
    for (const auto& s : r.outcomes)
        for (const auto& t : s.step->transfers)
            if (t.replayed.empty())
                std::cout << "   host transfer " << t.enqueue << " " << t.function
                          << " before enqueue " << s.step->enqueue << ": not replayed (" << t.why
                          << ")\n";
    for (const auto& n : r.notes) std::cout << "   note: " << n << "\n";
    for (size_t i = 0; i < r.outcomes.size(); ++i) {
        const StepOutcome& s = r.outcomes[i];
        const Timing& t = s.timing;
        Stats e = stats(t.start_end), q = stats(t.queued_submit), st = stats(t.submit_start),
              h = stats(t.host_enqueue);
        std::cout << "   enqueue " << s.step->enqueue << " " << s.step->kernel << ": "
                  << (step_ok(s) ? "PASS" : "FAIL") << "  (kernel " << fmt_ns(e.median);
        if (repeat > 1)
            std::cout << " [" << fmt_ns(e.min) << " .. " << fmt_ns(e.max) << "], queued->submit "
                      << fmt_ns(q.median) << ", submit->start " << fmt_ns(st.median)
                      << ", host enqueue " << fmt_ns(h.median);
        std::cout << ")\n";
        for (size_t j = 0; j < s.step->loads.size(); ++j) {
            const Load& l = s.step->loads[j];
            if (l.why == "reload" || (l.why == "verify" && r.load_done(i, j)))
                std::cout << "      reload " << l.mem << ": " << l.note << "\n";
        }
        for (const auto& c : s.prechecks)
            std::cout << "      before: " << c.check->label << ": " << c.status << " "
                      << summary(c) << "\n";
        for (const auto& c : s.checks) {
            std::cout << "      " << c.check->label << ": " << c.status << " " << summary(c)
                      << "\n";
        }
    }
    std::cout << verdict.line << "\n";
}

// The capture's devices, most wanted first: the manifest's bundle.capture.device (name and
// platform), then the devices of the steps.
std::vector<std::pair<std::string, std::string>> captured_devices(const Json& manifest) {
    std::vector<std::pair<std::string, std::string>> out;
    const Json* bundle = manifest.find("bundle");
    const Json* cap = bundle ? bundle->find("capture") : nullptr;
    const Json* dev = cap ? cap->find("device") : nullptr;
    if (dev && dev->kind == Json::Object && dev->find("name") &&
        dev->find("name")->kind == Json::String) {
        const Json* plat = dev->find("platform");
        out.push_back({dev->find("name")->str,
                       plat && plat->kind == Json::String ? plat->str : std::string()});
    }
    if (const Json* steps = manifest.find("steps"))
        for (const auto& st : steps->arr)
            if (const Json* d = st.find("device"))
                if (d->kind == Json::String) out.push_back({d->str, ""});
    return out;
}

// --choose-device-cases FILE (for cltui's tests): run choose_device on each case of FILE,
// {"devices": [{"id", "platform", "name"}], "captured": [name | {"name", "platform"}]}, and
// print [{"index", "rule", "why"}] in order.
int print_choices(const std::string& path) {
    auto bytes = read_file(path);
    Json cases = JsonParser(std::string(bytes.begin(), bytes.end())).parse();
    std::cout << "[";
    for (size_t n = 0; n < cases.arr.size(); ++n) {
        const Json& c = cases.arr[n];
        std::vector<Candidate> devices;
        for (const auto& d : c.at("devices").arr)
            devices.push_back({str_or(d, "id"), str_or(d, "platform"), str_or(d, "name")});
        std::vector<std::pair<std::string, std::string>> captured;
        for (const auto& k : c.at("captured").arr) {
            if (k.kind == Json::String)
                captured.push_back({k.str, ""});
            else
                captured.push_back({str_or(k, "name"), str_or(k, "platform")});
        }
        Choice ch = choose_device(devices, captured);
        std::cout << (n ? ",\n " : "") << "{\"index\": "
                  << (ch.index < 0 ? std::string("null") : std::to_string(ch.index))
                  << ", \"rule\": " << json_str(ch.rule) << ", \"why\": " << json_str(ch.why)
                  << "}";
    }
    std::cout << "]\n";
    return 0;
}

int run(int argc, char** argv) {
    Options opt = parse_args(argc, argv);
    if (opt.list_devices) {
        for (const auto& d : all_devices())
            std::cout << d.p << ":" << d.d << "  " << d.name << "  (" << d.platform_name << ", "
                      << d.version << ")\n";
        return 0;
    }
    if (!opt.choose_cases.empty()) return print_choices(opt.choose_cases);
    auto manifest_bytes = read_file(join(opt.bundle, "manifest.json"));
    std::string text(manifest_bytes.begin(), manifest_bytes.end());
    Json manifest = JsonParser(text).parse();
    Plan plan = read_plan(manifest);
    Choice choice;
    std::vector<DeviceRef> devices = pick_devices(opt.devices, captured_devices(manifest), choice);
    if (choice.rule == "user") {
        std::cerr << "replay: device:";
        for (size_t i = 0; i < devices.size(); ++i)
            std::cerr << (i ? ", " : " ") << devices[i].p << ":" << devices[i].d << " "
                      << devices[i].name;
        std::cerr << " (" << choice.why << ")\n";
    } else {
        std::cerr << "replay: device: " << choice.why << " (choose with --device)\n";
    }
    bool all_ok = true, any_error = false;
    std::vector<std::string> json;
    int worst = 0;  // the verdict exit codes: failure (1) dominates incomplete (3)
    for (const auto& dev : devices) {
        std::string out_dir = opt.out_dir;
        if (!out_dir.empty()) {
            if (devices.size() > 1)
                out_dir += "/" + std::to_string(dev.p) + "_" + std::to_string(dev.d);
            std::error_code ec;
            std::filesystem::create_directories(out_dir, ec);
            if (ec) throw UsageError("--out " + out_dir + ": " + ec.message());
        }
        Replayer r(plan, opt.bundle, dev, opt, out_dir);
        std::string error;
        try {
            r.setup();
            for (int i = 0; i < opt.repeat; ++i) r.run_once(i == 0);
            r.collect_timing();
        } catch (const DeviceError& e) {
            error = e.what();
        }
        bool ok = error.empty();
        for (const auto& s : r.outcomes) ok = ok && step_ok(s);
        all_ok = all_ok && ok;
        if (!error.empty()) {
            any_error = true;
            std::cerr << "replay: " << dev.name << ": " << error << "\n";
        }
        Verdict verdict = make_verdict(plan, r.outcomes, error);
        int code = verdict_exit(verdict.status);
        if (code == 1 || (code == 3 && worst == 0)) worst = code;
        if (opt.json)
            json.push_back(result_json(r, dev, ok, opt.repeat, error, choice, verdict));
        else if (error.empty())
            print_text(r, dev, opt.repeat, verdict);
        else
            std::cout << "== " << dev.p << ":" << dev.d << " " << dev.name << " ("
                      << dev.platform_name << ")\n   " << verdict.line << "\n";
    }
    if (opt.json) {
        std::cout << "[";
        for (size_t i = 0; i < json.size(); ++i) std::cout << (i ? ",\n" : "") << json[i];
        std::cout << "]\n";
    }
    if (any_error) return 1;  // a device could not run the bundle
    (void)all_ok;
    return opt.validate ? worst : 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const UsageError& e) {
        std::cerr << "replay: " << e.what() << "\n";
        return 2;
    } catch (const DeviceError& e) {
        std::cerr << "replay: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "replay: " << e.what() << "\n";
        return 2;
    }
}
