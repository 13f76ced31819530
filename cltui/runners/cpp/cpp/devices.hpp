// cpp/devices.hpp: listing OpenCL devices and the device rule (the same as the Python engine's).
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include "base.hpp"

namespace cltui {

// White space as Python's str.isspace() has it in ASCII (\x1c-\x1f too).
inline bool is_space(char ch) {
    unsigned char c = static_cast<unsigned char>(ch);
    return std::isspace(c) || (c >= 0x1c && c <= 0x1f);
}

// How many leading words two device names share (words: lower-case, split at white space,
// '-', '_', '/' and ','); the same as the Python engine's name_likeness.
inline std::vector<std::string> name_tokens(const std::string& name) {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : name) {
        if (is_space(ch) || ch == '-' || ch == '_' || ch == '/' || ch == ',') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

inline std::string trim(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && is_space(s[a])) ++a;
    while (b > a && is_space(s[b - 1])) --b;
    return s.substr(a, b - a);
}

inline int name_likeness(const std::string& a, const std::string& b) {
    const auto x = name_tokens(a), y = name_tokens(b);
    int k = 0;
    while (k < static_cast<int>(std::min(x.size(), y.size())) && x[k] == y[k]) ++k;
    return k;
}

// The captured binary to build a program from on `device` (made_on: the device each binary
// was made on): the first made on it (exact), else the first made on the device named most
// like it; the same as the Python engine's _pick_binary.
struct BinaryPick {
    int index = -1;  // -1: none
    bool exact = false;
    std::string made_on;  // trimmed
};

inline BinaryPick pick_binary(const std::vector<std::string>& made_on, const std::string& device) {
    BinaryPick pick;
    int best = 0;
    for (size_t i = 0; i < made_on.size(); ++i) {
        if (trim(made_on[i]) == device) {
            pick.index = static_cast<int>(i);
            pick.exact = true;
            break;
        }
        int k = name_likeness(made_on[i], device);
        if (k > best) {
            pick.index = static_cast<int>(i);
            best = k;
        }
    }
    if (pick.index >= 0) pick.made_on = trim(made_on[static_cast<size_t>(pick.index)]);
    return pick;
}

// ------------------------------------------------------------------------------------------
// Devices

struct DeviceRef {
    int p, d;
    cl_platform_id platform;
    cl_device_id device;
    std::string platform_name, name, version, platform_version;
    std::string driver;  // CL_DRIVER_VERSION (the fleet's column shows it, as replay.py's)
};

inline std::string platform_info(cl_platform_id p, cl_platform_info what) {
    size_t n = 0;
    clGetPlatformInfo(p, what, 0, nullptr, &n);
    std::string s(n, '\0');
    clGetPlatformInfo(p, what, n, &s[0], nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

inline std::string device_info(cl_device_id d, cl_device_info what) {
    size_t n = 0;
    clGetDeviceInfo(d, what, 0, nullptr, &n);
    std::string s(n, '\0');
    clGetDeviceInfo(d, what, n, &s[0], nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

inline std::vector<DeviceRef> all_devices() {
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
                           platform_info(plats[p], CL_PLATFORM_VERSION),
                           device_info(devs[d], CL_DRIVER_VERSION)});
    }
    return out;
}

inline std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}


// Device choice without --device: the rule of replay.py's engine.choose_device (and of cltui),
// in the same words; tests/fixtures/device_choice_cases.json holds both to the same cases.
struct Candidate {
    std::string id, platform, name;
};
struct Choice {
    int index = -1;  // into the candidates; -1: no device at all
    std::string rule, why;
};

// A device that simulates OpenCL instead of running it (Oclgrind), by platform or name.
inline bool is_simulator(const Candidate& c) {
    return lower(c.platform + " " + c.name).find("oclgrind") != std::string::npos;
}

// A name from the capture (untrusted), control characters escaped as Python's repr does.
inline std::string shown(const std::string& s) {
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

// The capture's device names (trimmed, each once, empty ones dropped) with their platforms.
inline std::vector<std::pair<std::string, std::string>> captured_ids(
    const std::vector<std::pair<std::string, std::string>>& captured) {
    std::vector<std::pair<std::string, std::string>> ids;
    for (const auto& c : captured) {
        std::string name = trim(c.first);
        bool seen = name.empty();
        for (const auto& i : ids) seen = seen || i.first == name;
        if (!seen) ids.push_back({name, trim(c.second)});
    }
    return ids;
}

// The first device named as one of ids (the first id found wins; the same platform
// preferred among devices of that name), else -1.
inline int captured_device(const std::vector<Candidate>& devices,
                           const std::vector<std::pair<std::string, std::string>>& ids) {
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
        if (same >= 0) return same;
    }
    return -1;
}

// The device sharing the most leading words with one of ids (the first of equals), else -1.
inline int most_alike_device(const std::vector<Candidate>& devices,
                             const std::vector<std::pair<std::string, std::string>>& ids,
                             int& best_words) {
    int best = -1;
    best_words = 0;
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
    return best;
}

// captured: (name, platform or "") of the capture's devices, most wanted first.
inline Choice choose_device(const std::vector<Candidate>& devices,
                            const std::vector<std::pair<std::string, std::string>>& captured) {
    const auto ids = captured_ids(captured);
    auto label = [&](int i) { return devices[i].id + " " + devices[i].name; };
    if (devices.empty()) return {-1, "first", "no OpenCL device found"};
    int same = captured_device(devices, ids);
    if (same >= 0) return {same, "captured", label(same) + " is the device the capture ran on"};
    std::string gone;
    for (const auto& id : ids) gone += (gone.empty() ? "" : ", ") + shown(id.first);
    int best_words = 0, best = most_alike_device(devices, ids, best_words);
    if (best >= 0)
        return {best, "most-alike",
                "the capture ran on " + gone + ", which is not here; " + label(best) +
                    " shares the most leading words with it (" + std::to_string(best_words) +
                    (best_words == 1 ? " word)" : " words)")};
    std::string head = ids.empty() ? std::string("the capture does not name its device")
                                   : "the capture ran on " + gone +
                                         ", which is not here and no device is named like it";
    for (int i = 0; i < static_cast<int>(devices.size()); ++i)
        if (!is_simulator(devices[i]))
            return {i, "real-before-simulator",
                    head + "; " + label(i) + " is the first device that is not a simulator"};
    return {0, "first", head + "; every device here is a simulator: the first, " + label(0)};
}

// What --device matches a device against (the pure part of a listed device).
struct Named {
    std::string id, name, platform, version, platform_version;
};

// "P:D" with decimal digits only -> "p:d" (leading zeros dropped), else "".
inline std::string index_spec(const std::string& s) {
    size_t colon = s.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return "";
    for (size_t i = 0; i < s.size(); ++i)
        if (i != colon && !std::isdigit(static_cast<unsigned char>(s[i]))) return "";
    auto number = [](const std::string& digits) {
        size_t k = 0;
        while (k + 1 < digits.size() && digits[k] == '0') ++k;
        return digits.substr(k);
    };
    return number(s.substr(0, colon)) + ":" + number(s.substr(colon + 1));
}

// The rule of --device (replay.py's engine.match_devices, held to the same cases:
// tests/fixtures/device_spec_cases.json): the indices of the devices the specs name, in the
// order named, each once. A spec, without the blanks around it, is P:D (decimal digits only)
// or else a case-insensitive substring of the name, the platform name and both versions
// (where PoCL says "PoCL"); an empty spec names nothing. A spec that matches none throws.
inline std::vector<int> match_devices(const std::vector<Named>& devs,
                                      const std::vector<std::string>& specs) {
    std::vector<int> chosen;
    for (const auto& spec : specs) {
        std::string s = trim(spec), want = index_spec(s);
        bool found = false;
        for (int i = 0; i < static_cast<int>(devs.size()); ++i) {
            const Named& r = devs[i];
            bool hit = !want.empty() ? r.id == want
                       : !s.empty()  ? lower(r.name + " " + r.platform + " " + r.version + " " +
                                             r.platform_version)
                                            .find(lower(s)) != std::string::npos
                                     : false;
            if (!hit) continue;
            found = true;
            if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
        }
        if (!found) throw UsageError("no device matches '" + spec + "' (see --list-devices)");
    }
    return chosen;
}

// The devices --device names, in order; without --device the one choose_device picks for the
// capture's devices.
inline std::vector<DeviceRef> pick_devices(
    const std::vector<std::string>& specs,
    const std::vector<std::pair<std::string, std::string>>& captured, Choice& choice) {
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
    std::vector<Named> named;
    for (const auto& r : devs)
        named.push_back({std::to_string(r.p) + ":" + std::to_string(r.d), r.name, r.platform_name,
                         r.version, r.platform_version});
    std::vector<DeviceRef> chosen;
    for (int i : match_devices(named, specs)) chosen.push_back(devs[i]);
    return chosen;
}

}  // namespace cltui
