#include "worker/compile/kernelfacts.h"

#include "core/protocol/protocolnames.h"
#include "worker/compile/nvrtccompiler.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

extern char** environ;

namespace kwb {
namespace {

// EIATTR codes (kernelfacts.h lists what each means).
constexpr uint8_t kMaxThreads = 0x05, kFrameSize = 0x11, kReqNtid = 0x10, kCbankParamSize = 0x19, kRegCount = 0x2f,
                  kNumBarriers = 0x4c;
// Attribute value formats: NVAL (none), BVAL (one byte), HVAL (two bytes) take the entry's 2
// bytes after code and format; SVAL has a u16 size and that many bytes.
constexpr uint8_t kFmtSval = 0x04;
constexpr unsigned char kStoCudaEntry = 0x10; // st_other of an entry function (a kernel)

template <typename T>
bool readAt(const char* data, std::size_t size, std::size_t off, T* out)
{
    if (off > size || size - off < sizeof(T))
        return false;
    std::memcpy(out, data + off, sizeof(T));
    return true;
}

struct Section
{
    std::string name;
    uint32_t type = 0;
    uint64_t offset = 0, size = 0;
    uint32_t link = 0, info = 0;
    uint64_t entsize = 0;
};

struct Elf
{
    const char* data = nullptr;
    std::size_t size = 0;
    std::vector<Section> sections;
    bool ok = false;
    std::string error;

    Elf(const char* d, std::size_t n)
        : data(d)
        , size(n)
    {
        if (n < 64 ||
            std::memcmp(d,
                        "\x7f"
                        "ELF",
                        4) != 0 ||
            d[4] != 2 || d[5] != 1) {
            error = "not a little-endian ELF64 file";
            return;
        }
        uint64_t shoff = 0;
        uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
        readAt(d, n, 0x28, &shoff);
        readAt(d, n, 0x3a, &shentsize);
        readAt(d, n, 0x3c, &shnum);
        readAt(d, n, 0x3e, &shstrndx);
        if (shentsize < 64 || shnum == 0 || shoff > n || (n - shoff) / shentsize < shnum || shstrndx >= shnum) {
            error = "malformed ELF section table";
            return;
        }
        for (uint16_t i = 0; i < shnum; ++i) {
            const std::size_t h = shoff + std::size_t(i) * shentsize;
            Section s;
            uint32_t nameOff = 0;
            readAt(d, n, h, &nameOff);
            readAt(d, n, h + 4, &s.type);
            readAt(d, n, h + 0x18, &s.offset);
            readAt(d, n, h + 0x20, &s.size);
            readAt(d, n, h + 0x28, &s.link);
            readAt(d, n, h + 0x2c, &s.info);
            readAt(d, n, h + 0x38, &s.entsize);
            s.name = std::to_string(nameOff); // resolved below, once the string table is known
            sections.push_back(s);
        }
        const Section& strtab = sections[shstrndx];
        for (Section& s : sections)
            s.name = string(strtab, std::stoul(s.name));
        ok = true;
    }

    // NOBITS sections (.nv.shared.*) have a size but no bytes in the file.
    bool hasBytes(const Section& s) const { return s.type != 8 && s.offset <= size && size - s.offset >= s.size; }

    std::string string(const Section& table, uint64_t off) const
    {
        if (!hasBytes(table) || off >= table.size)
            return {};
        const char* p = data + table.offset + off;
        const std::size_t room = table.size - off;
        return std::string(p, strnlen(p, room));
    }

    const Section* find(const std::string& name) const
    {
        for (const Section& s : sections)
            if (s.name == name)
                return &s;
        return nullptr;
    }
};

struct Symbol
{
    std::string name;
    unsigned char type = 0, other = 0;
    uint16_t shndx = 0;
    uint64_t value = 0;
};

std::vector<Symbol> symbols(const Elf& elf)
{
    std::vector<Symbol> out;
    for (const Section& s : elf.sections) {
        if (s.type != 2 || !elf.hasBytes(s) || s.link >= elf.sections.size())
            continue; // SHT_SYMTAB
        const Section& names = elf.sections[s.link];
        for (uint64_t off = 0; off + 24 <= s.size; off += 24) {
            const std::size_t at = s.offset + off;
            uint32_t nameOff = 0;
            Symbol sym;
            unsigned char info = 0;
            readAt(elf.data, elf.size, at, &nameOff);
            readAt(elf.data, elf.size, at + 4, &info);
            readAt(elf.data, elf.size, at + 5, &sym.other);
            readAt(elf.data, elf.size, at + 6, &sym.shndx);
            readAt(elf.data, elf.size, at + 8, &sym.value);
            sym.type = info & 0xf;
            sym.name = elf.string(names, nameOff);
            out.push_back(sym);
        }
        break;
    }
    return out;
}

struct Attribute
{
    uint8_t code = 0;
    std::vector<unsigned char> value; // SVAL's bytes, or the 2 bytes of the smaller formats
};

std::vector<Attribute> attributes(const Elf& elf, const Section& s)
{
    std::vector<Attribute> out;
    if (!elf.hasBytes(s))
        return out;
    const auto* p = reinterpret_cast<const unsigned char*>(elf.data + s.offset);
    for (uint64_t i = 0; i + 4 <= s.size;) {
        Attribute a;
        const uint8_t format = p[i];
        a.code = p[i + 1];
        if (format == kFmtSval) {
            const uint16_t n = uint16_t(p[i + 2] | (p[i + 3] << 8));
            if (i + 4 + n > s.size)
                break;
            a.value.assign(p + i + 4, p + i + 4 + n);
            i += 4 + n;
        } else {
            a.value.assign(p + i + 2, p + i + 4);
            i += 4;
        }
        out.push_back(std::move(a));
    }
    return out;
}

uint32_t u32(const std::vector<unsigned char>& v, std::size_t at)
{
    uint32_t x = 0;
    if (at + 4 <= v.size())
        std::memcpy(&x, v.data() + at, 4);
    return x;
}

bool startsWith(const std::string& s, const std::string& prefix)
{
    return s.compare(0, prefix.size(), prefix) == 0;
}

std::string capped(const std::string& text, std::size_t limit, std::string* note, const char* what)
{
    if (text.size() <= limit)
        return text;
    std::size_t cut = text.rfind('\n', limit);
    cut = cut == std::string::npos ? limit : cut + 1;
    *note = std::string(what) + " cut at " + std::to_string(limit / 1024) + " KiB of " + std::to_string(text.size()) +
            " bytes";
    return text.substr(0, cut);
}

bool executable(const std::string& p)
{
    return !p.empty() && ::access(p.c_str(), X_OK) == 0;
}

// Runs argv, its stdout read into `out` (at most `limit` bytes), stderr to /dev/null; false (and
// `why`) where it could not start, ran past `seconds` (then killed) or failed.
bool runCapture(const std::vector<std::string>& argv, std::string* out, std::size_t limit, int seconds,
                std::string* why)
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        *why = "pipe failed";
        return false;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        *why = argv[0] + " could not be started: " + std::strerror(rc);
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    bool timedOut = false, tooLong = false;
    char buf[65536];
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timedOut = true;
            break;
        }
        pollfd pfd{fds[0], POLLIN, 0};
        if (::poll(&pfd, 1, int(left.count())) <= 0)
            continue;
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n <= 0)
            break;
        if (out->size() < limit)
            out->append(buf, std::min<std::size_t>(std::size_t(n), limit - out->size()));
        else
            tooLong = true; // read on to the end, so the process is not left blocked on its pipe
    }
    ::close(fds[0]);
    if (timedOut)
        ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timedOut) {
        *why = argv[0] + " ran longer than " + std::to_string(seconds) + " s";
        return false;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        *why = argv[0] + " failed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
        return false;
    }
    if (tooLong)
        out->append("\n[nvdisasm output cut at " + std::to_string(limit / (1024 * 1024)) + " MiB]\n");
    return true;
}

std::string trimmed(const std::string& s)
{
    const std::size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos)
        return {};
    const std::size_t e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

} // namespace

std::string demangle(const std::string& name)
{
    if (!startsWith(name, "_Z"))
        return name;
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : name;
}

std::vector<KernelFacts> cubinKernelFacts(const char* data, std::size_t size, const std::string& arch,
                                          std::string* error)
{
    std::vector<KernelFacts> out;
    const Elf elf(data, size);
    if (!elf.ok) {
        if (error)
            *error = elf.error;
        return out;
    }
    const std::vector<Symbol> syms = symbols(elf);
    // The system's reserved shared memory inside each kernel's .nv.shared section (sm_90 on).
    int64_t reservedShared = 0;
    for (const Symbol& s : syms)
        if (s.name == ".nv.reservedSmem.offset0")
            reservedShared = 1024;
    for (const Symbol& s : syms)
        if (s.name == ".nv.reservedSmem.cap" && reservedShared)
            reservedShared = int64_t(s.value);

    std::map<uint32_t, std::size_t> bySymbol; // symbol index -> kernel
    for (std::size_t i = 0; i < syms.size(); ++i) {
        const Symbol& s = syms[i];
        if (s.type != 2 || !(s.other & kStoCudaEntry) || s.name.empty())
            continue; // STT_FUNC, entry
        KernelFacts k;
        k.name = s.name;
        k.demangled = demangle(s.name);
        k.arch = arch;
        bySymbol[uint32_t(i)] = out.size();
        out.push_back(std::move(k));
    }
    if (const Section* info = elf.find(".nv.info")) {
        for (const Attribute& a : attributes(elf, *info)) {
            if (a.value.size() < 8)
                continue;
            auto it = bySymbol.find(u32(a.value, 0));
            if (it == bySymbol.end())
                continue;
            KernelFacts& k = out[it->second];
            if (a.code == kRegCount)
                k.registers = int(u32(a.value, 4));
            if (a.code == kFrameSize)
                k.localBytes = u32(a.value, 4);
        }
    }
    for (KernelFacts& k : out) {
        int limitThreads = 0;
        std::string limit;
        if (const Section* info = elf.find(".nv.info." + k.name)) {
            for (const Attribute& a : attributes(elf, *info)) {
                if ((a.code == kMaxThreads || a.code == kReqNtid) && a.value.size() >= 12) {
                    const int64_t n = int64_t(std::max(1u, u32(a.value, 0))) * std::max(1u, u32(a.value, 4)) *
                                      std::max(1u, u32(a.value, 8));
                    if (!limitThreads || n < limitThreads) {
                        limitThreads = int(std::min<int64_t>(n, 1 << 30));
                        limit = a.code == kMaxThreads ? "launch_bounds" : "reqntid";
                    }
                }
                if (a.code == kCbankParamSize && a.value.size() >= 2)
                    k.paramBytes = a.value[0] | (a.value[1] << 8);
                if (a.code == kNumBarriers && !a.value.empty())
                    k.barriers = a.value[0];
            }
        }
        k.staticSharedBytes = 0;
        if (const Section* shared = elf.find(".nv.shared." + k.name))
            k.staticSharedBytes = std::max<int64_t>(0, int64_t(shared->size) - reservedShared);
        int64_t own = 0, module = 0;
        for (const Section& s : elf.sections) {
            if (!startsWith(s.name, ".nv.constant"))
                continue;
            const std::size_t dot = s.name.find('.', std::strlen(".nv.constant"));
            if (dot == std::string::npos)
                module += int64_t(s.size);
            else if (s.name.compare(dot + 1, std::string::npos, k.name) == 0)
                own += int64_t(s.size);
        }
        k.constantBytes = own;
        k.moduleConstantBytes = module;
        // Registers bound the block too: 64 Ki per block on every arch NVRTC 12/13 targets
        // (sm_75 on), allocated per warp in units of 256.
        int byRegisters = 1024;
        if (k.registers && *k.registers > 0) {
            const int perWarp = ((*k.registers * 32 + 255) / 256) * 256;
            byRegisters = std::min(1024, (65536 / perWarp) * 32);
        }
        if (limitThreads && limitThreads <= byRegisters) {
            k.maxThreadsPerBlock = limitThreads;
            k.maxThreadsLimit = limit;
        } else {
            k.maxThreadsPerBlock = byRegisters;
            k.maxThreadsLimit = byRegisters < 1024 ? "registers" : "hardware";
        }
    }
    std::sort(out.begin(), out.end(), [](const KernelFacts& a, const KernelFacts& b) { return a.name < b.name; });
    return out;
}

std::vector<FatbinEntry> fatbinEntries(const std::vector<char>& so, std::string* error, const FatbinInflater& inflater)
{
    std::vector<FatbinEntry> out;
    const Elf elf(so.data(), so.size());
    if (!elf.ok) {
        if (error)
            *error = elf.error;
        return out;
    }
    const Section* fat = elf.find(".nv_fatbin");
    if (!fat || !elf.hasBytes(*fat)) {
        if (error)
            *error = "no .nv_fatbin section (no device code)";
        return out;
    }
    const char* base = so.data() + fat->offset;
    const std::size_t size = fat->size;
    // Each fatbinary: {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload size},
    // then entries {u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64 payload size (padded to 8),
    // u32 compressed size at 0x10, u32 sm at 0x1c, u64 flags at 0x28, u64 uncompressed size at
    // 0x38}; fatbinaries follow each other 8-byte aligned. The two sizes are 0 where the entry is
    // not compressed (seen in nvcc 13's fatbins, checked against cuobjdump's -elf and -ptx).
    uint64_t inflated = 0;
    for (std::size_t q = 0; q + 16 <= size;) {
        uint32_t magic = 0;
        uint16_t headerSize = 0;
        uint64_t fatSize = 0;
        readAt(base, size, q, &magic);
        readAt(base, size, q + 6, &headerSize);
        readAt(base, size, q + 8, &fatSize);
        // Each size is checked against the room left (the file is the candidate's: a size field can lie).
        if (magic != 0xBA55ED50u || headerSize < 16 || headerSize > size - q || fatSize > size - q - headerSize)
            break;
        const std::size_t end = q + headerSize + fatSize;
        for (std::size_t p = q + headerSize; p + 0x40 <= end;) {
            uint16_t kind = 0;
            uint32_t entryHeader = 0, sm = 0, packed = 0;
            uint64_t payload = 0, flags = 0, unpacked = 0;
            readAt(base, size, p, &kind);
            readAt(base, size, p + 4, &entryHeader);
            readAt(base, size, p + 8, &payload);
            readAt(base, size, p + 0x10, &packed);
            readAt(base, size, p + 0x1c, &sm);
            readAt(base, size, p + 0x28, &flags);
            readAt(base, size, p + 0x38, &unpacked);
            if (entryHeader < 0x40 || entryHeader > end - p || payload > end - p - entryHeader)
                break;
            if (kind == 1 || kind == 2) {
                FatbinEntry e;
                e.elf = kind == 2;
                e.sm = int(sm);
                const char* data = base + p + entryHeader;
                if (flags & (0x8000 | 0x2000)) {
                    std::string why;
                    const bool zstd = flags & 0x8000;
                    e.compression = zstd ? "zstd" : "LZ4";
                    if (packed == 0 || packed > payload)
                        why = "its compressed size " + std::to_string(packed) + " is not within its " +
                              std::to_string(payload) + "-byte payload";
                    else if (unpacked > kMaxFatbinInflatedBytes - inflated)
                        why = "its header says it decompresses to " + std::to_string(unpacked) + " bytes, past the " +
                              std::to_string(kMaxFatbinInflatedBytes / (1024 * 1024)) +
                              " MiB decompressed per extension (its entries together)";
                    else
                        why = inflater.inflate(zstd ? FatbinCompression::Zstd : FatbinCompression::Lz4, data, packed,
                                               unpacked, &e.bytes);
                    if (why.empty())
                        inflated += unpacked;
                    else
                        e.unreadable = "compressed with " + e.compression +
                                       " (nvcc's fatbin compression) could not be read: " + why;
                } else {
                    e.bytes.assign(data, data + payload);
                }
                if (!e.elf) // PTX is text: the padding to 8 bytes is no part of it
                    while (!e.bytes.empty() && e.bytes.back() == '\0')
                        e.bytes.pop_back();
                out.push_back(std::move(e));
            }
            p += entryHeader + payload;
        }
        q = (end + 7) / 8 * 8;
    }
    if (out.empty() && error)
        *error = "the .nv_fatbin section holds no fatbinary nvcc wrote";
    return out;
}

void addPtxasInfo(std::vector<KernelFacts>& kernels, const std::string& info)
{
    // "ptxas info    : Function properties for NAME" then
    // "ptxas         .     256 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads"
    std::istringstream in(info);
    std::string line, current;
    const std::string props = "Function properties for ";
    while (std::getline(in, line)) {
        if (const std::size_t p = line.find(props); p != std::string::npos) {
            current = trimmed(line.substr(p + props.size()));
            continue;
        }
        const std::size_t stores = line.find(" bytes spill stores");
        const std::size_t loads = line.find(" bytes spill loads");
        if (current.empty() || stores == std::string::npos || loads == std::string::npos)
            continue;
        auto numberBefore = [&](std::size_t at) -> std::optional<int64_t> {
            std::size_t b = at;
            while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1])))
                --b;
            if (b == at)
                return std::nullopt;
            return std::stoll(line.substr(b, at - b));
        };
        for (KernelFacts& k : kernels)
            if (k.name == current) {
                k.spillStoreBytes = numberBefore(stores);
                k.spillLoadBytes = numberBefore(loads);
            }
        current.clear();
    }
}

std::string ptxEntry(const std::string& ptx, const std::string& name)
{
    // ".visible .entry NAME(" or ".entry NAME(" at a line start; the body ends at the first "}"
    // alone at the start of a line (PTX writers indent everything inside).
    for (std::size_t at = ptx.find(".entry " + name); at != std::string::npos;
         at = ptx.find(".entry " + name, at + 1)) {
        const std::size_t after = at + 7 + name.size();
        if (after >= ptx.size() || (ptx[after] != '(' && ptx[after] != '\n' && ptx[after] != ' '))
            continue;
        std::size_t begin = ptx.rfind('\n', at);
        begin = begin == std::string::npos ? 0 : begin + 1;
        const std::size_t close = ptx.find("\n}", after);
        const std::size_t end = close == std::string::npos ? ptx.size() : close + 3;
        return ptx.substr(begin, end - begin);
    }
    return {};
}

void addPtx(std::vector<KernelFacts>& kernels, const std::string& ptx)
{
    for (KernelFacts& k : kernels) {
        std::string entry = ptxEntry(ptx, k.name);
        if (entry.empty())
            k.ptxNote = "the PTX holds no .entry " + k.name;
        else
            k.ptx = std::move(entry);
    }
}

std::string findNvdisasm(const std::vector<std::string>& cudaIncludeDirs)
{
    if (const char* env = std::getenv("KWB_NVDISASM"); env && *env)
        return executable(env) ? env : "";
    for (const std::string& d : cudaIncludeDirs)
        for (const char* up : {"/../bin/nvdisasm", "/../../../bin/nvdisasm"})
            if (executable(d + up))
                return d + up;
    if (const char* path = std::getenv("PATH")) {
        std::istringstream in(path);
        std::string dir;
        while (std::getline(in, dir, ':'))
            if (!dir.empty() && executable(dir + "/nvdisasm"))
                return dir + "/nvdisasm";
    }
    return {};
}

std::map<std::string, std::string> sassByKernel(const std::string& text)
{
    // nvdisasm -c: each kernel's code follows ".section .text.NAME,…"; an instruction line is
    // "/*0040*/  LDG.E R2, desc[UR4][R2.64] ;", a label ".L_x_0:".
    std::map<std::string, std::string> byName;
    std::string current;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const std::string t = trimmed(line);
        if (startsWith(t, ".section") && t.size() > 8 && (t[8] == '\t' || t[8] == ' ')) { // not .sectioninfo
            const std::size_t p = t.find(".text.");
            current.clear();
            if (p != std::string::npos) {
                const std::size_t e = t.find_first_of(",\t ", p);
                current = t.substr(p + 6, e == std::string::npos ? std::string::npos : e - p - 6);
            }
            continue;
        }
        if (current.empty())
            continue;
        if (startsWith(t, "/*")) {
            const std::size_t close = t.find("*/");
            std::string instruction = close == std::string::npos ? t : trimmed(t.substr(close + 2));
            // an encoding comment after the instruction ("… ; /* 0x000fe2… */"), or a line of it
            instruction = trimmed(instruction.substr(0, instruction.find("/*")));
            if (!instruction.empty())
                byName[current] += instruction + "\n";
        } else if (startsWith(t, ".L") && !t.empty() && t.back() == ':') {
            byName[current] += t + "\n";
        }
    }
    return byName;
}

void addSass(std::vector<KernelFacts>& kernels, const std::vector<char>& cubin, const std::string& nvdisasm)
{
    auto noteAll = [&](const std::string& why) {
        for (KernelFacts& k : kernels)
            k.sassNote = why;
    };
    if (nvdisasm.empty()) {
        noteAll("no nvdisasm: this machine's CUDA toolkit has no disassembler (set KWB_NVDISASM or install "
                "the toolkit's nvdisasm)");
        return;
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/kwb-cubin-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
        noteAll("could not write the cubin for nvdisasm");
        return;
    }
    const bool written = ::write(fd, cubin.data(), cubin.size()) == ssize_t(cubin.size());
    ::close(fd);
    std::string text, why;
    const bool ran = written && runCapture({nvdisasm, "-c", path}, &text, 16 * 1024 * 1024, 30, &why);
    ::unlink(path.c_str());
    if (!ran) {
        noteAll(written ? why : "could not write the cubin for nvdisasm");
        return;
    }
    const std::map<std::string, std::string> byName = sassByKernel(text);
    for (KernelFacts& k : kernels) {
        auto it = byName.find(k.name);
        if (it == byName.end())
            k.sassNote = "nvdisasm printed no code for " + k.name;
        else
            k.sass = it->second;
    }
}

std::size_t capKernelTexts(std::vector<KernelFacts>& kernels)
{
    std::size_t dropped = 0;
    if (kernels.size() > kMaxFactKernels) {
        dropped = kernels.size() - kMaxFactKernels;
        kernels.resize(kMaxFactKernels);
    }
    std::size_t total = 0;
    auto cap = [&](std::optional<std::string>& text, std::string& note, const char* what) {
        if (!text)
            return;
        *text = capped(*text, kMaxKernelText, &note, what);
        if (total + text->size() > kMaxCandidateKernelText) {
            note = std::string(what) + " left out: the candidate's kernels passed " +
                   std::to_string(kMaxCandidateKernelText / 1024) + " KiB of PTX and SASS together";
            text.reset();
            return;
        }
        total += text->size();
    };
    for (KernelFacts& k : kernels)
        cap(k.sass, k.sassNote, "SASS");
    for (KernelFacts& k : kernels)
        cap(k.ptx, k.ptxNote, "PTX");
    return dropped;
}

std::vector<KernelFacts> extensionKernelFacts(const std::string& soPath, const std::string& module, int sm,
                                              const std::string& nvdisasm, std::string* note)
{
    std::vector<KernelFacts> out;
    std::ifstream in(soPath, std::ios::binary);
    struct stat st
    {};
    // A torch extension is a few MiB; the cap keeps a hostile build from costing the worker memory.
    constexpr off_t kMaxSharedObject = 512L * 1024 * 1024;
    if (!in || ::stat(soPath.c_str(), &st) != 0 || st.st_size > kMaxSharedObject) {
        *note = module + ": " + soPath + " could not be read";
        return out;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string error;
    const std::vector<FatbinEntry> entries = fatbinEntries(bytes, &error);
    if (entries.empty()) {
        *note = module + ": " + error;
        return out;
    }
    const bool haveArch =
        std::any_of(entries.begin(), entries.end(), [&](const FatbinEntry& e) { return e.elf && e.sm == sm; });
    std::string ptx, ptxUnreadable;
    for (const FatbinEntry& e : entries) {
        if (!e.elf && e.unreadable.empty() && (e.sm == sm || ptx.empty()))
            ptx.assign(e.bytes.begin(), e.bytes.end());
        else if (!e.elf && !e.unreadable.empty())
            ptxUnreadable = "the extension's PTX for compute_" + std::to_string(e.sm) + " " + e.unreadable;
    }
    for (const FatbinEntry& e : entries) {
        if (!e.elf || (haveArch && e.sm != sm))
            continue;
        if (!e.unreadable.empty()) {
            *note +=
                (note->empty() ? "" : "; ") + module + ": a cubin for sm_" + std::to_string(e.sm) + " " + e.unreadable;
            continue;
        }
        std::vector<KernelFacts> ks =
            cubinKernelFacts(e.bytes.data(), e.bytes.size(), "sm_" + std::to_string(e.sm), &error);
        for (KernelFacts& k : ks)
            k.module = module;
        if (ptx.empty())
            for (KernelFacts& k : ks)
                k.ptxNote = ptxUnreadable.empty() ? "the extension's fatbinary holds no PTX (built for SASS only)"
                                                  : ptxUnreadable;
        else
            addPtx(ks, ptx);
        addSass(ks, e.bytes, nvdisasm);
        out.insert(out.end(), ks.begin(), ks.end());
    }
    return out;
}

std::vector<KernelFacts> compiledKernelFacts(const CompileResult& compiled, const std::string& nvdisasm)
{
    std::vector<KernelFacts> ks =
        cubinKernelFacts(compiled.cubin.data(), compiled.cubin.size(), compiled.arch, nullptr);
    addPtxasInfo(ks, compiled.ptxasInfo);
    if (compiled.ptx.empty())
        for (KernelFacts& k : ks)
            k.ptxNote = "NVRTC returned no PTX";
    else
        addPtx(ks, compiled.ptx);
    addSass(ks, compiled.cubin, nvdisasm);
    return ks;
}

nlohmann::json kernelFactsJson(const std::vector<KernelFacts>& kernels)
{
    using nlohmann::json;
    namespace K = ProtocolNames::KernelFact;
    auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
    json out = json::array();
    for (const KernelFacts& k : kernels) {
        json o = {{ProtocolNames::Key::kName, k.name},
                  {K::kDemangled, k.demangled},
                  {ProtocolNames::Field::kArch, k.arch},
                  {K::kRegisters, opt(k.registers)},
                  {K::kLocalBytes, opt(k.localBytes)},
                  {K::kSpillStoreBytes, opt(k.spillStoreBytes)},
                  {K::kSpillLoadBytes, opt(k.spillLoadBytes)},
                  {K::kStaticSharedBytes, opt(k.staticSharedBytes)},
                  {K::kConstantBytes, opt(k.constantBytes)},
                  {K::kModuleConstantBytes, opt(k.moduleConstantBytes)},
                  {ProtocolNames::Key::kParamBytes, opt(k.paramBytes)},
                  {K::kBarriers, opt(k.barriers)},
                  {K::kMaxThreadsPerBlock, k.maxThreadsPerBlock},
                  {K::kMaxThreadsLimit, k.maxThreadsLimit},
                  {K::kPtx, opt(k.ptx)},
                  {K::kSass, opt(k.sass)}};
        if (!k.module.empty())
            o[K::kModule] = k.module;
        if (!k.ptxNote.empty())
            o[K::kPtxNote] = k.ptxNote;
        if (!k.sassNote.empty())
            o[K::kSassNote] = k.sassNote;
        out.push_back(std::move(o));
    }
    return out;
}

nlohmann::json kernelFactsRecord(std::vector<KernelFacts> kernels, std::string note)
{
    namespace K = ProtocolNames::KernelFact;
    if (const std::size_t dropped = capKernelTexts(kernels))
        note += (note.empty() ? "" : "; ") + std::to_string(dropped) + " more kernels not described (the first " +
                std::to_string(kMaxFactKernels) + " are)";
    nlohmann::json record = {{K::kKernelFacts, kernelFactsJson(kernels)}};
    if (!note.empty())
        record[K::kKernelFactsNote] = note;
    return record;
}

bool isKernelFactsRecord(const nlohmann::json& record)
{
    namespace K = ProtocolNames::KernelFact;
    if (!record.is_object() || !record.contains(K::kKernelFacts) || !record.at(K::kKernelFacts).is_array())
        return false;
    // Nothing else: the record is merged into the compile record as it is.
    if (record.size() != (record.contains(K::kKernelFactsNote) ? 2u : 1u))
        return false;
    if (record.contains(K::kKernelFactsNote) && !record.at(K::kKernelFactsNote).is_string())
        return false;
    const nlohmann::json& facts = record.at(K::kKernelFacts);
    return facts.size() <= kMaxFactKernels && std::all_of(facts.begin(), facts.end(), [](const nlohmann::json& k) {
               return k.is_object() && k.contains(ProtocolNames::Key::kName) &&
                      k.at(ProtocolNames::Key::kName).is_string();
           });
}

} // namespace kwb
