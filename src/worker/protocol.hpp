#pragma once
// Worker side of docs/protocol.md: JSON lines on stdin, responses on a private descriptor.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kwb::protocol {

constexpr int kVersion = 1;
constexpr std::size_t kMaxLineBytes = 16u << 20;

/// Reads one '\n'-terminated line from a file descriptor. Returns nullopt at EOF.
/// A line longer than maxBytes is consumed up to its end and reported through *tooLong.
class LineReader {
public:
    explicit LineReader(int fd, std::size_t maxBytes = kMaxLineBytes) : m_fd(fd), m_max(maxBytes) {}
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

nlohmann::json errorResponse(const nlohmann::json& id, const std::string& type, const std::string& code,
                             const std::string& message);

/// Base64 (RFC 4648) for binary fields such as a compiled cubin. decode returns false on bad input.
std::string encodeBase64(const std::vector<char>& bytes);
bool decodeBase64(const std::string& text, std::vector<char>* bytes);

/// FNV-1a 64-bit of a text, as 16 hex digits: ties a compiled-ahead cubin to the exact source.
std::string sourceHash(const std::string& text);

/// Cuts a log to at most maxBytes, keeping the head and the tail, and says so in the text.
std::string truncateLog(const std::string& log, std::size_t maxBytes);

} // namespace kwb::protocol
