#include "worker/protocol/protocol.h"

#include "worker/answers/candidateparser.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

namespace kwb::protocol {

bool LineReader::fill()
{
    if (m_eof)
        return false;
    if (m_pos > 0) {
        m_buf.erase(0, m_pos);
        m_pos = 0;
    }
    char chunk[65536];
    for (;;) {
        ssize_t n = ::read(m_fd, chunk, sizeof chunk);
        if (n > 0) {
            m_buf.append(chunk, static_cast<std::size_t>(n));
            return true;
        }
        if (n < 0 && errno == EINTR)
            continue;
        m_eof = true;
        return false;
    }
}

std::optional<std::string> LineReader::next(bool* tooLong)
{
    *tooLong = false;
    std::size_t scanned = 0; // bytes after m_pos already known to hold no '\n'
    for (;;) {
        std::size_t nl = m_buf.find('\n', m_pos + scanned);
        if (nl != std::string::npos) {
            if (nl - m_pos > m_max)
                *tooLong = true;
            std::string line = *tooLong ? std::string() : m_buf.substr(m_pos, nl - m_pos);
            m_pos = nl + 1;
            return line;
        }
        scanned = m_buf.size() - m_pos;
        if (scanned > m_max) {
            // Drop what we have of an oversized line; keep reading to its end.
            *tooLong = true;
            m_buf.erase(m_pos);
            scanned = 0;
        }
        if (!fill()) { // fill() compacts the buffer: m_pos becomes 0, 'scanned' stays valid
            if (m_buf.size() > m_pos) {
                std::string line = *tooLong ? std::string() : m_buf.substr(m_pos);
                m_buf.clear();
                m_pos = 0;
                return line;
            }
            if (*tooLong)
                return std::string();
            return std::nullopt;
        }
    }
}

int takeOverStdout()
{
    int fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
        return -1;
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    return fd;
}

static void cutStrings(nlohmann::json& j, std::size_t limit)
{
    if (j.is_string()) {
        auto& s = j.get_ref<std::string&>();
        if (s.size() > limit)
            s = truncateLog(s, limit);
    } else if (j.is_structured()) {
        for (auto& v : j)
            cutStrings(v, limit);
    }
}

bool writeResponse(int fd, nlohmann::json response)
{
    std::string line = response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (line.size() + 1 > kMaxLineBytes) {
        cutStrings(response, 256u << 10);
        response[Key::kTruncated] = true;
        line = response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    line.push_back('\n');
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    return true;
}

nlohmann::json errorResponse(const nlohmann::json& id, const std::string& type, const std::string& code,
                             const std::string& message)
{
    return {{Field::kId, id},
            {Field::kType, type},
            {Key::kOk, false},
            {Key::kError, {{Key::kCode, code}, {Key::kMessage, message}}}};
}

bool nestedDeeperThan(const std::string& text, int maxDepth)
{
    int depth = 0;
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i; // the escaped character cannot end the string
            else if (c == '"')
                inString = false;
        } else if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > maxDepth)
                return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

std::string describeValue(const nlohmann::json& value, std::size_t maxBytes)
{
    if (value.is_array())
        return "an array";
    if (value.is_object())
        return "an object";
    if (value.is_string()) {
        const auto& s = value.get_ref<const std::string&>();
        if (s.size() <= maxBytes)
            return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return nlohmann::json(s.substr(0, maxBytes)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
               " (cut; " + std::to_string(s.size()) + " bytes)";
    }
    return value.dump(); // a number, true/false or null: short
}

namespace {

// Whether `v` is an integer (written 5 or 5.0) in [lo, hi].
bool integerIn(const nlohmann::json& v, double lo, double hi)
{
    if (v.is_number_integer() || v.is_number_unsigned() || v.is_number_float()) {
        const double d = v.get<double>();
        return d >= lo && d <= hi && d == static_cast<double>(static_cast<long long>(d));
    }
    return false;
}

} // namespace

nlohmann::json echoedId(const nlohmann::json& request)
{
    if (!request.contains(protocol::Field::kId))
        return nullptr;
    const auto& id = request[protocol::Field::kId];
    if (id.is_number() || (id.is_string() && id.get_ref<const std::string&>().size() <= kMaxIdBytes))
        return id;
    return nullptr;
}

std::string echoedType(const nlohmann::json& request)
{
    if (request.contains(protocol::Field::kType) && request[protocol::Field::kType].is_string() &&
        request[protocol::Field::kType].get_ref<const std::string&>().size() <= kMaxTypeBytes)
        return request[protocol::Field::kType].get<std::string>();
    return "";
}

std::optional<RequestProblem> checkRequest(const nlohmann::json& request)
{
    if (request.contains(protocol::Field::kId)) {
        const auto& id = request[protocol::Field::kId];
        if (!(id.is_string() || id.is_number() || id.is_null()))
            return RequestProblem{"bad_request", "id must be a string, a number or null, not " + describeValue(id)};
        if (id.is_string() && id.get_ref<const std::string&>().size() > kMaxIdBytes)
            return RequestProblem{"bad_request", "id is a string of " +
                                                     std::to_string(id.get_ref<const std::string&>().size()) +
                                                     " bytes; at most " + std::to_string(kMaxIdBytes) + " are echoed"};
    }
    if (request.contains(protocol::Field::kType) && request[protocol::Field::kType].is_string() &&
        request[protocol::Field::kType].get_ref<const std::string&>().size() > kMaxTypeBytes)
        return RequestProblem{"bad_request", "unknown request type " + describeValue(request[protocol::Field::kType])};
    // Counts a request may set, with what a run can need; a count beyond is a mistake or an
    // attempt to hold the GPU (hours of trials) or memory (one set of outputs per trial).
    // The bounds are core/protocol/protocollimits.h's, which the client checks too.
    struct Count
    {
        const char* field;
        int lo, hi;
    };
    static const Count kCounts[] = {
        {Field::kCorrectnessTrials, TrialLimits::Correctness.min, TrialLimits::Correctness.max},
        {Field::kTimingTrials, TrialLimits::Timing.min, TrialLimits::Timing.max},
        {Field::kWarmup, TrialLimits::Warmup.min, TrialLimits::Warmup.max},
        {Field::kTrials, TrialLimits::Profile.min, TrialLimits::Profile.max}};
    for (const Count& c : kCounts) {
        if (request.contains(c.field) && !integerIn(request[c.field], c.lo, c.hi))
            return RequestProblem{"bad_request", std::string(c.field) + " must be an integer from " +
                                                     std::to_string(c.lo) + " to " + std::to_string(c.hi) + ", not " +
                                                     describeValue(request[c.field])};
    }
    return std::nullopt;
}

Device parseDevice(const nlohmann::json& request, unsigned allowed, int cudaDeviceCount)
{
    Device d;
    if (!request.contains(protocol::Field::kDevice))
        return d;
    const auto& v = request[protocol::Field::kDevice];
    const std::string s = v.is_string() ? v.get<std::string>() : std::string();
    if (s == "cuda") {
        d.kind = Device::Cuda;
    } else if (s == "cpu") {
        d.kind = Device::Cpu;
    } else if (s == "none") {
        d.kind = Device::None;
    } else if (s.size() > 5 && s.size() <= 8 && s.compare(0, 5, "cuda:") == 0 &&
               s.find_first_not_of("0123456789", 5) == std::string::npos) {
        d.kind = Device::Cuda;
        d.ordinal = std::stoi(s.substr(5)); // at most 3 digits
        if (d.ordinal >= cudaDeviceCount)
            d.kind = Device::Absent; // out of range: refused below
    }
    const unsigned form = d.kind == Device::Cuda   ? unsigned(kDeviceCuda)
                          : d.kind == Device::Cpu  ? unsigned(kDeviceCpu)
                          : d.kind == Device::None ? unsigned(kDeviceNone)
                                                   : 0u;
    if (form & allowed)
        return d;
    std::string forms;
    auto add = [&](const std::string& f) { forms += (forms.empty() ? "" : ", ") + f; };
    if (allowed & kDeviceCuda) {
        add("\"cuda\"");
        add(cudaDeviceCount > 0 ? "\"cuda:N\" with 0 <= N < " + std::to_string(cudaDeviceCount)
                                : std::string("\"cuda:N\" (none here: this worker sees no CUDA device)"));
    }
    if (allowed & kDeviceCpu)
        add("\"cpu\"");
    if (allowed & kDeviceNone)
        add("\"none\"");
    throw std::invalid_argument("device " + describeValue(v) + " is not one of the forms allowed here: " + forms);
}

namespace {
const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string encodeBase64(const std::vector<char>& bytes)
{
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
        for (int s = 18; s >= 0; s -= 6)
            out.push_back(kAlphabet[(v >> s) & 63]);
    }
    if (i < bytes.size()) {
        uint32_t v = uint8_t(bytes[i]) << 16;
        if (i + 1 < bytes.size())
            v |= uint8_t(bytes[i + 1]) << 8;
        out.push_back(kAlphabet[(v >> 18) & 63]);
        out.push_back(kAlphabet[(v >> 12) & 63]);
        out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
        out.push_back('=');
    }
    return out;
}

bool decodeBase64(const std::string& text, std::vector<char>* bytes)
{
    bytes->clear();
    if (text.size() % 4 != 0)
        return false;
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z')
            return c - 'A';
        if (c >= 'a' && c <= 'z')
            return c - 'a' + 26;
        if (c >= '0' && c <= '9')
            return c - '0' + 52;
        if (c == '+')
            return 62;
        if (c == '/')
            return 63;
        return -1;
    };
    for (std::size_t i = 0; i < text.size(); i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = text[i + k];
            if (c == '=' && i + 4 == text.size() && k >= 2) {
                v[k] = 0;
                ++pad;
                continue;
            }
            if (pad > 0 || (v[k] = value(c)) < 0)
                return false;
        }
        const uint32_t w = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
        bytes->push_back(char((w >> 16) & 0xFF));
        if (pad < 2)
            bytes->push_back(char((w >> 8) & 0xFF));
        if (pad < 1)
            bytes->push_back(char(w & 0xFF));
    }
    return true;
}

nlohmann::json candidateEcho(const ParsedCandidate& c)
{
    using json = nlohmann::json;
    json kernels = json::array();
    for (const KernelDecl& k : c.kernels)
        kernels.push_back(k.name);
    auto lineOrNull = [](int line) { return line > 0 ? json(line) : json(nullptr); };
    // The parser sets pythonLine only where it found the python block (its content may be empty).
    return {{Field::kCuda, c.hasCuda ? json(c.cuda) : json(nullptr)},
            {Field::kPython, c.pythonLine > 0 ? json(c.python) : json(nullptr)},
            {Key::kKernels, kernels},
            {Key::kSourceHash, c.hasCuda ? json(sourceHash(c.cuda)) : json(nullptr)},
            {Key::kCudaLine, c.hasCuda ? lineOrNull(c.cudaLine) : json(nullptr)},
            {Key::kPythonLine, lineOrNull(c.pythonLine)}};
}

std::string sourceHash(const std::string& text)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : text) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

std::string truncateLog(const std::string& log, std::size_t maxBytes)
{
    if (log.size() <= maxBytes)
        return log;
    const std::size_t keep = maxBytes / 2;
    return log.substr(0, keep) + "\n[... " + std::to_string(log.size() - 2 * keep) + " bytes cut ...]\n" +
           log.substr(log.size() - keep);
}

} // namespace kwb::protocol
