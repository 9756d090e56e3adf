#pragma once
// A Qt-free client for kwb-worker, for tests and benchmarks that run where there is no Qt (the
// GPU machine). The product's own client is the supervisor in src/core.
#include <nlohmann/json.hpp>

#include <string>
#include <sys/types.h>
#include <vector>

namespace kwb::test {

class WorkerClient
{
public:
    WorkerClient(std::string program, std::vector<std::string> args = {});
    ~WorkerClient();
    WorkerClient(const WorkerClient&) = delete;
    WorkerClient& operator=(const WorkerClient&) = delete;

    bool start(std::string* error);
    bool running() const { return m_pid > 0; }
    pid_t pid() const { return m_pid; }

    enum class Outcome { Ok, Timeout, Exited, BrokenLine };
    struct Reply
    {
        Outcome outcome = Outcome::Ok;
        nlohmann::json response;
        int exitCode = -1; // when Exited: exit status, or -signal
        double ms = 0;     // request sent to response read
    };
    /// Sends one request and waits for its line. On timeout the worker is killed (SIGTERM, then
    /// SIGKILL) and must be started again.
    Reply request(const nlohmann::json& req, double timeoutSec);
    /// Sends one raw line as it is (malformed requests in protocol tests).
    Reply requestLine(const std::string& line, double timeoutSec);
    void stop();
    /// What the worker wrote to stderr so far (kept, capped at 1 MiB).
    const std::string& stderrText() const { return m_stderr; }

private:
    void drainStderr();
    void kill();
    std::string m_program;
    std::vector<std::string> m_args;
    pid_t m_pid = -1;
    int m_in = -1, m_out = -1, m_err = -1;
    std::string m_buf, m_stderr;
    int m_nextId = 1;
};

/// The whole file as text ("" if it cannot be read).
std::string readFile(const std::string& path);

/// kwb-worker next to this test binary's build tree (bin/), or $KWB_WORKER.
std::string findWorker(const std::string& fallback);

/// A GPU test's worker: started, then asked `hello`. 0 when it has a CUDA device; otherwise what
/// the test exits with: 1 where the worker cannot start (said on stderr), 77 (skipped, said on
/// stdout) where there is no device.
int startGpuWorker(WorkerClient& worker);

/// The GPU tests' outcome log: one "ok  " or "FAIL" line per check (with the detail on failure),
/// counted, since these tests run as plain programs on the GPU machine.
struct CheckLog
{
    int failures = 0;
    void check(bool ok, const std::string& what, const nlohmann::json& detail = nlohmann::json());
};

/// j[key] as a number, -1 where j is no object or has no number there.
double numberOr(const nlohmann::json& j, const char* key, double missing = -1.0);

} // namespace kwb::test
