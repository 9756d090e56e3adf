#pragma once
// Worker side of docs/protocol.md: JSON lines on stdin, responses on a private descriptor.
#include "core/protocol/protocollimits.h" // plain C++: the limits both sides check
#include "core/protocol/protocolnames.h"  // plain C++: the version, request types and fields

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kwb {
struct ParsedCandidate;
}

namespace kwb::protocol {

/// core/protocol/protocolnames.h's names, shared with the client: the worker reads requests and
/// writes responses by them.
namespace Request = ProtocolNames::Request;
namespace Field = ProtocolNames::Field;
namespace Key = ProtocolNames::Key;

constexpr int kVersion = ProtocolNames::kVersion;
/// core/protocol/protocollimits.h's, shared with the client.
constexpr std::size_t kMaxLineBytes = std::size_t(ProtocolLimits::kMaxLineBytes);

/// `evaluate`'s request flag (a boolean, default false) and the response key it adds: the
/// candidate's measured HBM traffic (docs/protocol.md §evaluate, "traffic").
constexpr const char* kProfileTrafficField = Field::kProfileTraffic;
constexpr const char* kTrafficField = Key::kTraffic;

/// Reads one '\n'-terminated line from a file descriptor. Returns nullopt at EOF.
/// A line longer than maxBytes is consumed up to its end and reported through *tooLong.
class LineReader
{
public:
    explicit LineReader(int fd, std::size_t maxBytes = kMaxLineBytes)
        : m_fd(fd)
        , m_max(maxBytes)
    {}
    std::optional<std::string> next(bool* tooLong);

private:
    bool fill();
    int m_fd;
    std::size_t m_max;
    std::string m_buf;
    std::size_t m_pos = 0;
    bool m_eof = false;
};

/// Moves the real stdout to a private descriptor and points fd 1 at stderr, so nothing printed
/// by CUDA, kernels or libtorch reaches the response stream. Returns the protocol descriptor.
int takeOverStdout();

/// Writes one response line (whole, retrying short writes). Oversized string fields are cut
/// so the line stays under kMaxLineBytes.
bool writeResponse(int fd, nlohmann::json response);

/// Requests deeper than this (arrays and objects inside each other) are refused before they are
/// parsed: nlohmann's writer recurses once per level, and a deep `id` echoed back crashed it.
constexpr int kMaxRequestDepth = 64;
/// An `id` is echoed in every response: a string of at most this many bytes, a number or null.
constexpr std::size_t kMaxIdBytes = 256;
/// So is `type`: known types are short.
constexpr std::size_t kMaxTypeBytes = 64;

/// Whether a JSON text nests arrays/objects more than maxDepth deep, counted outside strings in
/// one pass (no parsing, no recursion; stops at the first level too deep).
bool nestedDeeperThan(const std::string& text, int maxDepth);

/// What a response may echo of the request: its `id` when that is valid (else null) and its
/// `type` when that is a string of at most kMaxTypeBytes (else "").
nlohmann::json echoedId(const nlohmann::json& request);
std::string echoedType(const nlohmann::json& request);

/// What a request-level check reports before any work: the error code and message.
struct RequestProblem
{
    std::string code, message;
};

/// The checks every request gets before it is handled (docs/protocol.md "Framing and limits"):
/// `id` a string of at most kMaxIdBytes, a number or null; `type` a string of at most
/// kMaxTypeBytes; the trial counts (correctness_trials, timing_trials, warmup, trials) integers
/// within core/protocol/protocollimits.h's TrialLimits, shared with the client. Returns nullopt
/// when all hold.
std::optional<RequestProblem> checkRequest(const nlohmann::json& request);

/// The request's "device" field: the one place it is read. Forms: "cuda" (the first GPU, or
/// no_device where there is none), "cuda:N" with 0 <= N < cudaDeviceCount, "cpu", "none"; a
/// request type takes those of `allowed` (DeviceForm bits). Anything else throws
/// std::invalid_argument (a bad_request) naming the value and the forms allowed.
enum DeviceForm : unsigned { kDeviceCuda = 1, kDeviceCpu = 2, kDeviceNone = 4 };
struct Device
{
    enum Kind { Absent, Cuda, Cpu, None } kind = Absent;
    int ordinal = 0; // Cuda: N of "cuda:N", 0 for "cuda"
};
Device parseDevice(const nlohmann::json& request, unsigned allowed, int cudaDeviceCount);

/// A request value for an error message: strings quoted and cut to maxBytes, scalars as JSON,
/// arrays and objects by kind (a message never echoes an unbounded value).
std::string describeValue(const nlohmann::json& value, std::size_t maxBytes = 64);

nlohmann::json errorResponse(const nlohmann::json& id, const std::string& type, const std::string& code,
                             const std::string& message);

/// Base64 (RFC 4648) for binary fields such as a compiled cubin. decode returns false on bad input.
std::string encodeBase64(const std::vector<char>& bytes);
bool decodeBase64(const std::string& text, std::vector<char>* bytes);

/// FNV-1a 64-bit of a text, as 16 hex digits: ties a compiled-ahead cubin to the exact source.
std::string sourceHash(const std::string& text);

/// The `candidate` that `evaluate` and `compile` echo: the blocks the parser found, as evaluated.
/// {cuda, python, kernels, source_hash (of cuda, as compile-ahead checks it), cuda_line,
/// python_line (1-based answer lines of each block's first line)}; null where a block (or, for
/// a bare `cuda` source, the answer line) is missing.
nlohmann::json candidateEcho(const ParsedCandidate& candidate);

/// Cuts a log to at most maxBytes, keeping the head and the tail, and says so in the text.
std::string truncateLog(const std::string& log, std::size_t maxBytes);

} // namespace kwb::protocol
