// cpp/verify.hpp: the bundle verifies itself before anything runs (replay.py's engine does the
// same, in the same order, with the same words: cltui/replay/engine/verify.py):
//   1. manifest.json parses and holds to manifest.schema.json (cpp/manifest_schema.hpp, written
//      by cltui export from the engine's file): the keywords $ref, type, enum, minimum,
//      minLength, minItems, required, properties, additionalProperties, prefixItems, items;
//   2. every name the plan uses is in its table (data keys, memory objects, programs);
//   3. every data path stays in the bundle (not absolute, no "..", no control character, no
//      link on the way) and is a regular file of the manifest's size whose sha256 is the
//      manifest's and SHA256SUMS's; every include folder stays in the bundle and is a folder.
// The first problem is one line ("bundle damaged: data/... sha256 mismatch", "bad manifest:
// steps: expected an array, got a string"), exit 2; no file outside the bundle is opened.
// Part of replay.cpp (see its head): one file of the C++ replay, included once.
#pragma once

#include <cerrno>

#include "json.hpp"
#include "manifest_schema.hpp"
#include "sha256.hpp"

namespace cltui {

// ---- the words both runners say --------------------------------------------------------------

// Control characters as \xNN (engine/schemacheck.py: printable).
inline std::string printable(const std::string& s) {
    std::string out;
    char b[8];
    for (unsigned char c : s) {
        if (c < 0x20 || c == 0x7f) {
            std::snprintf(b, sizeof b, "\\x%02x", c);
            out += b;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

[[noreturn]] inline void damaged(const std::string& what) {
    throw UsageError("bundle damaged: " + what);
}
[[noreturn]] inline void bad_manifest(const std::string& what) {
    throw UsageError("bad manifest: " + what);
}

// ---- the schema's keywords (engine/schemacheck.py) -------------------------------------------

// A number is an integer when its text has no fraction or exponent and fits 64 bits.
inline std::string json_type(const Json& j) {
    switch (j.kind) {
        case Json::Null: return "null";
        case Json::Bool: return "boolean";
        case Json::String: return "string";
        case Json::Array: return "array";
        case Json::Object: return "object";
        case Json::Number: break;
    }
    if (j.str.find_first_of(".eE") != std::string::npos) return "number";
    errno = 0;
    std::strtoll(j.str.c_str(), nullptr, 10);
    return errno == ERANGE ? "number" : "integer";
}

inline std::string article(const std::string& t) {
    if (t == "null") return t;
    return (t == "object" || t == "array" || t == "integer" ? "an " : "a ") + t;
}

inline std::string where(const std::string& path) { return path.empty() ? "manifest" : path; }

inline std::string member(const std::string& path, const std::string& key) {
    return path.empty() ? printable(key) : path + "." + printable(key);
}

class SchemaCheck {
   public:
    explicit SchemaCheck(const Json& root) : root_(root) {}

    // The first place where doc breaks the schema as "<where>: <what>", else "".
    std::string check(const Json& doc, const Json& node_in, const std::string& path) const {
        const Json& node = resolve(node_in);
        for (const auto& kv : node.obj)
            if (!known(kv.first)) throw std::runtime_error("schema: unsupported " + kv.first);
        std::string kind = json_type(doc);
        if (const Json* t = node.find("type")) {
            std::vector<std::string> want;
            if (t->kind == Json::Array)
                for (const auto& e : t->arr) want.push_back(e.str);
            else
                want.push_back(t->str);
            bool ok = false;
            std::string said;
            for (const auto& w : want) {
                ok = ok || w == kind || (w == "number" && kind == "integer");
                said += (said.empty() ? "" : " or ") + article(w);
            }
            if (!ok) return where(path) + ": expected " + said + ", got " + article(kind);
        }
        if (const Json* e = node.find("enum")) {
            bool in = false;
            std::string allowed;
            for (const auto& v : e->arr) {
                in = in || (v.kind == doc.kind && v.str == doc.str &&
                            (v.kind == Json::String || v.kind == Json::Null));
                allowed += (allowed.empty() ? "" : ", ") + (v.kind == Json::Null ? "null" : v.str);
            }
            if (!in) return where(path) + ": expected one of " + allowed;
        }
        const Json* low = node.find("minimum");
        if (low && (kind == "integer" || kind == "number") && below(doc, *low))
            return where(path) + ": must be at least " + low->str;
        const Json* ml = node.find("minLength");
        if (ml && kind == "string" && chars(doc.str) < ml->as_int())
            return where(path) + ": shorter than " + ml->str + " characters";
        if (doc.kind == Json::Object) return check_object(doc, node, path);
        if (doc.kind != Json::Array) return "";
        const Json* mi = node.find("minItems");
        if (mi && static_cast<long long>(doc.arr.size()) < mi->as_int())
            return where(path) + ": fewer than " + mi->str + " items";
        const Json* prefix = node.find("prefixItems");
        const Json* items = node.find("items");
        for (size_t i = 0; i < doc.arr.size(); ++i) {
            const Json* sub = prefix && i < prefix->arr.size() ? &prefix->arr[i] : items;
            if (!sub) continue;
            std::string said = check(doc.arr[i], *sub, path + "[" + std::to_string(i) + "]");
            if (!said.empty()) return said;
        }
        return "";
    }

   private:
    const Json& root_;

    static bool known(const std::string& k) {
        static const std::set<std::string> keys = {
            "$ref", "type", "enum", "minimum", "minLength", "minItems", "required", "properties",
            "additionalProperties", "prefixItems", "items", "$schema", "$id", "$defs", "title",
            "description"};
        return keys.count(k) > 0;
    }
    const Json& resolve(const Json& node) const {
        const Json* n = &node;
        for (int seen = 0; n->find("$ref"); ++seen) {
            const std::string& ref = n->find("$ref")->str;
            const std::string prefix = "#/$defs/";
            if (ref.rfind(prefix, 0) != 0 || seen > 32)
                throw std::runtime_error("schema: unsupported $ref " + ref);
            n = &root_.at("$defs").at(ref.substr(prefix.size()));
        }
        return *n;
    }
    static bool below(const Json& doc, const Json& low) {
        if (json_type(doc) == "integer" && json_type(low) == "integer")
            return std::strtoll(doc.str.c_str(), nullptr, 10) <
                   std::strtoll(low.str.c_str(), nullptr, 10);
        return doc.num < low.num;
    }
    static long long chars(const std::string& s) {  // code points of UTF-8 text
        long long n = 0;
        for (unsigned char c : s) n += (c & 0xC0) != 0x80;
        return n;
    }
    std::string check_object(const Json& doc, const Json& node, const std::string& path) const {
        if (const Json* req = node.find("required"))
            for (const auto& k : req->arr)
                if (!doc.find(k.str)) return where(path) + ": missing key '" + printable(k.str) + "'";
        const Json* props = node.find("properties");
        if (props)
            for (const auto& kv : props->obj)
                if (const Json* v = doc.find(kv.first)) {
                    std::string said = check(*v, kv.second, member(path, kv.first));
                    if (!said.empty()) return said;
                }
        const Json* extra = node.find("additionalProperties");
        if (extra && extra->kind == Json::Object)
            for (const auto& kv : doc.obj)
                if (!(props && props->find(kv.first))) {
                    std::string said = check(kv.second, *extra, member(path, kv.first));
                    if (!said.empty()) return said;
                }
        return "";
    }
};

// ---- files -------------------------------------------------------------------------------

// A manifest path held to the bundle by its text.
inline void confine(const std::string& at, const std::string& rel) {
    for (unsigned char c : rel)
        if (c < 0x20 || c == 0x7f || c == '\\')
            bad_manifest(at + ": '" + printable(rel) + "' has a control character or a backslash");
    if (!rel.empty() && rel[0] == '/') bad_manifest(at + ": '" + rel + "' is an absolute path");
    std::stringstream parts(rel);
    for (std::string part; std::getline(parts, part, '/');)
        if (part == "..") bad_manifest(at + ": '" + rel + "' leads outside the bundle");
}

// Each component of rel under base, never followed: no link, the last one a regular file
// (want_file) or a folder.
inline void walk(const std::string& base, const std::string& rel, bool want_file) {
    namespace fs = std::filesystem;
    std::vector<std::string> parts;
    std::stringstream in(rel);
    for (std::string part; std::getline(in, part, '/');)
        if (!part.empty() && part != ".") parts.push_back(part);
    if (parts.empty())
        damaged(printable(rel) + (want_file ? " is not a regular file" : " is not a folder"));
    std::string sofar, shown;
    for (size_t i = 0; i < parts.size(); ++i) {
        sofar += "/" + parts[i];
        shown += (i ? "/" : "") + parts[i];
        std::error_code ec;
        fs::file_status st = fs::symlink_status(base + sofar, ec);
        if (ec || !fs::exists(st)) damaged(printable(shown) + " is missing");
        if (fs::is_symlink(st)) damaged(printable(shown) + " is a link");
        bool last = i + 1 == parts.size();
        if (!last && !fs::is_directory(st)) damaged(printable(shown) + " is not a folder");
        if (last && want_file && !fs::is_regular_file(st))
            damaged(printable(shown) + " is not a regular file");
        if (last && !want_file && !fs::is_directory(st))
            damaged(printable(shown) + " is not a folder");
    }
}

inline std::string read_limited(const std::string& base, const std::string& name, size_t limit) {
    walk(base, name, true);
    std::ifstream f(base + "/" + name, std::ios::binary);
    if (!f) damaged("cannot read " + name);
    std::string out(limit + 1, '\0');
    f.read(&out[0], static_cast<std::streamsize>(limit + 1));
    out.resize(static_cast<size_t>(f.gcount()));
    if (out.size() > limit) damaged(name + " is larger than " + std::to_string(limit >> 20) + " MiB");
    return out;
}

// SHA256SUMS: path -> sha256 (sha256sum's format).
inline std::map<std::string, std::string> read_sums(const std::string& base) {
    std::map<std::string, std::string> out;
    std::stringstream in(read_limited(base, "SHA256SUMS", 16u << 20));
    size_t n = 0;
    for (std::string line; std::getline(in, line);) {
        ++n;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        size_t sep = line.find("  ");
        std::string digest = line.substr(0, sep);
        if (sep == std::string::npos || digest.size() != 64 ||
            digest.find_first_not_of("0123456789abcdef") != std::string::npos)
            damaged("SHA256SUMS line " + std::to_string(n) + " is not '<sha256>  <path>'");
        out[line.substr(sep + 2)] = digest;
    }
    return out;
}

inline std::string sha256_file(const std::string& base, const std::string& rel, size_t size) {
    std::ifstream f(base + "/" + rel, std::ios::binary);
    if (!f) damaged("cannot read " + printable(rel));
    Sha256 h;
    std::vector<char> buf(1 << 20);
    size_t left = size;
    while (left > 0 && f) {
        f.read(buf.data(), static_cast<std::streamsize>(std::min(buf.size(), left)));
        size_t got = static_cast<size_t>(f.gcount());
        if (got == 0) break;
        h.update(reinterpret_cast<const unsigned char*>(buf.data()), got);
        left -= got;
    }
    return h.hex();
}

struct Ref {
    std::string where, table, name;
};

// Every name the plan uses, with the table it names, in the manifest's order: programs (data),
// memory (parents), steps (program, arguments, loads, checks, replayed transfers).
inline std::vector<Ref> refs(const Json& m) {
    std::vector<Ref> out;
    for (const auto& kv : m.at("programs").obj) {
        std::string at = "programs." + printable(kv.first);
        for (const char* name : {"source", "il"}) {
            const Json* v = kv.second.find(name);
            if (v && v->kind == Json::String) out.push_back({at + "." + name, "data", v->str});
        }
        if (const Json* bins = kv.second.find("binaries"))
            for (size_t i = 0; i < bins->arr.size(); ++i)
                out.push_back({at + ".binaries[" + std::to_string(i) + "].data", "data",
                               bins->arr[i].at("data").str});
    }
    for (const auto& kv : m.at("memory").obj)
        if (const Json* p = kv.second.find("parent"))
            out.push_back({"memory." + printable(kv.first) + ".parent", "memory", p->str});
    const auto& steps = m.at("steps").arr;
    for (size_t n = 0; n < steps.size(); ++n) {
        const Json& st = steps[n];
        std::string at = "steps[" + std::to_string(n) + "]";
        out.push_back({at + ".program", "programs", st.at("program").str});
        const auto& args = st.at("args").arr;
        for (size_t i = 0; i < args.size(); ++i)
            if (const Json* mem = args[i].find("mem"))
                out.push_back({at + ".args[" + std::to_string(i) + "].mem", "memory", mem->str});
        for (const char* group : {"loads", "prechecks", "checks"})
            if (const Json* list = st.find(group))
                for (size_t i = 0; i < list->arr.size(); ++i) {
                    std::string here = at + "." + group + "[" + std::to_string(i) + "]";
                    out.push_back({here + ".mem", "memory", list->arr[i].at("mem").str});
                    if (const Json* d = list->arr[i].find("data"))
                        out.push_back({here + ".data", "data", d->str});
                }
        if (const Json* ts = st.find("transfers"))
            for (size_t i = 0; i < ts->arr.size(); ++i) {
                const Json& t = ts->arr[i];
                const Json* r = t.find("replayed");
                const Json* op = t.find("op");
                if (!(r && r->kind == Json::String && r->str == "op" && op &&
                      op->kind == Json::Object && !op->obj.empty()))
                    continue;
                std::string here = at + ".transfers[" + std::to_string(i) + "].";
                const Json* mem = t.find("mem");
                if (mem && mem->kind != Json::Null) out.push_back({here + "mem", "memory", mem->str});
                const Json* src = op->find("src");
                if (src && src->kind != Json::Null)
                    out.push_back({here + "op.src", "memory", src->str});
            }
    }
    return out;
}

// The plan's bytes written as hex: scalar arguments' values, fill patterns (steps' order).
inline std::vector<Ref> hex_fields(const Json& m) {
    std::vector<Ref> out;
    const auto& steps = m.at("steps").arr;
    for (size_t n = 0; n < steps.size(); ++n) {
        std::string at = "steps[" + std::to_string(n) + "]";
        const auto& args = steps[n].at("args").arr;
        for (size_t i = 0; i < args.size(); ++i)
            if (const Json* h = args[i].find("hex"))
                out.push_back({at + ".args[" + std::to_string(i) + "].hex", "", h->str});
        if (const Json* ts = steps[n].find("transfers"))
            for (size_t i = 0; i < ts->arr.size(); ++i) {
                const Json* op = ts->arr[i].find("op");
                const Json* pat = op && op->kind == Json::Object ? op->find("pattern") : nullptr;
                if (pat)
                    out.push_back(
                        {at + ".transfers[" + std::to_string(i) + "].op.pattern", "", pat->str});
            }
    }
    return out;
}

// The bundle's manifest after every check above, else UsageError (one line, exit 2).
inline Json verify_bundle(const std::string& base) {
    std::string text = read_limited(base, "manifest.json", 256u << 20);
    Json m;
    try {
        m = JsonParser(text).parse();
    } catch (const UsageError&) {
        bad_manifest("manifest.json is not valid JSON");
    }
    Json schema = JsonParser(kManifestSchema).parse();
    std::string said = SchemaCheck(schema).check(m, schema, "");
    if (!said.empty()) bad_manifest(said);
    const Json& data = m.at("data");
    for (const auto& ref : refs(m))
        if (!m.at(ref.table).find(ref.name))
            bad_manifest(ref.where + ": '" + printable(ref.name) + "' is not in " + ref.table);
    for (const auto& h : hex_fields(m))
        if (h.name.size() % 2 || h.name.find_first_not_of("0123456789abcdefABCDEF") !=
                                     std::string::npos)
            bad_manifest(h.where + ": '" + printable(h.name) + "' is not hex bytes");
    std::map<std::string, std::string> sums;
    bool have_sums = false;
    std::set<std::string> done;
    for (const auto& kv : data.obj) {
        const std::string& rel = kv.second.at("path").str;
        confine("data." + printable(kv.first) + ".path", rel);
        walk(base, rel, true);
        std::error_code ec;
        auto size = static_cast<unsigned long long>(std::filesystem::file_size(base + "/" + rel, ec));
        auto want = static_cast<unsigned long long>(kv.second.at("size").as_int());
        if (ec) damaged("cannot read " + printable(rel));
        if (size != want)
            damaged(printable(rel) + ": " + std::to_string(size) + " bytes, the manifest says " +
                    std::to_string(want));
        if (done.count(rel)) continue;
        if (!have_sums) {
            sums = read_sums(base);
            have_sums = true;
        }
        auto listed = sums.find(rel);
        if (listed == sums.end()) damaged(printable(rel) + " is not in SHA256SUMS");
        std::string digest = sha256_file(base, rel, static_cast<size_t>(want));
        const Json* in_manifest = kv.second.find("sha256");
        if (digest != listed->second || (in_manifest && in_manifest->str != digest))
            damaged(printable(rel) + " sha256 mismatch");
        done.insert(rel);
    }
    for (const auto& kv : m.at("programs").obj)
        if (const Json* inc = kv.second.find("include_dirs"))
            for (size_t i = 0; i < inc->arr.size(); ++i) {
                const std::string& rel = inc->arr[i].str;
                confine("programs." + printable(kv.first) + ".include_dirs[" + std::to_string(i) +
                            "]",
                        rel);
                walk(base, rel, false);
            }
    return m;
}

}  // namespace cltui
