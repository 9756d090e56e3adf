// Issue 35: a KernelBench-format answer's extension build asked for as the worker reads the
// answer, before torch's import and the module's run (python::requestBuildsEarly,
// early_requests.py's request_early), through a stand-in for the build broker on the socket
// KWB_BUILD_BROKER names: it records each request and its connection's end, and answers a build
// with a compile error of its own wording. The request reaches it even where the module fails
// before its load_inline (whose verdict stays the module's own); where load_inline is reached,
// it takes that request's reply and asks nothing more. The broker's real builds, early, are
// tests/worker/test_extension_early.py.
#include "worker/evaluate/evaluator.h"
#include "worker/python/pythonhost.h"
#include "worker/tasks/task.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace kwb;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// The broker's side of the protocol (extension_cache.py's _serve_one): one JSON line in, one
/// out. A request is answered with a failed build's manifest, or (holdReplies) never, to see
/// whether its connection is closed.
class StandInBroker
{
public:
    struct Request
    {
        std::string name;
        json arguments;
        bool closed = false; // its connection ended (by the worker) before any reply
    };

    StandInBroker()
    {
        m_path = (fs::temp_directory_path() / ("kwb-tst-early-" + std::to_string(::getpid()) + ".sock")).string();
        ::unlink(m_path.c_str());
        m_listen = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        m_path.copy(address.sun_path, sizeof(address.sun_path) - 1);
        REQUIRE(::bind(m_listen, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
        REQUIRE(::listen(m_listen, 16) == 0);
        m_accepting = std::thread([this] { accept(); });
    }
    ~StandInBroker()
    {
        ::shutdown(m_listen, SHUT_RDWR);
        ::close(m_listen);
        m_accepting.join();
        for (std::thread& t : m_connections)
            t.join();
        ::unlink(m_path.c_str());
    }
    StandInBroker(const StandInBroker&) = delete;
    StandInBroker& operator=(const StandInBroker&) = delete;

    const std::string& path() const { return m_path; }
    std::atomic<bool> holdReplies{false};

    std::vector<Request> requestsFor(const std::string& name)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::vector<Request> found;
        for (const Request& r : m_requests)
            if (r.name == name)
                found.push_back(r);
        return found;
    }

    /// The requests for `name` once there are `n` of them, or what there is after a minute: the
    /// worker sends an early request without waiting, and this broker's threads record it a
    /// moment later (later still on a loaded machine).
    std::vector<Request> requestsWithin(const std::string& name, std::size_t n)
    {
        std::vector<Request> found = requestsFor(name);
        for (int i = 0; i < 600 && found.size() < n; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            found = requestsFor(name);
        }
        return found;
    }

    /// Waits until every held request's connection ended, for at most a minute (an end already
    /// made by the worker only has to be read here).
    bool heldConnectionsEnd()
    {
        for (int i = 0; i < 600; ++i) {
            {
                std::lock_guard<std::mutex> lock(m_mutex);
                if (m_open == 0)
                    return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return false;
    }

private:
    void accept()
    {
        for (;;) {
            const int fd = ::accept(m_listen, nullptr, nullptr);
            if (fd < 0)
                return;
            std::lock_guard<std::mutex> lock(m_mutex);
            ++m_open;
            m_connections.emplace_back([this, fd] { serve(fd); });
        }
    }

    void serve(int fd)
    {
        std::string line;
        char c = 0;
        while (::read(fd, &c, 1) == 1 && c != '\n')
            line += c;
        const json request = json::parse(line, nullptr, false);
        const json arguments = request.is_object() ? request.value("arguments", json::object()) : json::object();
        const std::string name = arguments.value("name", std::string());
        std::size_t index = 0;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            index = m_requests.size();
            m_requests.push_back({name, arguments, false});
        }
        if (!holdReplies) {
            const json manifest = {{"format", 3},
                                   {"ok", false},
                                   {"name", name},
                                   {"message", "RuntimeError: Error building extension '" + name +
                                                   "': the stand-in broker: error: no compiler here"},
                                   {"pch", "not used: the stand-in broker has none"},
                                   {"build_ms", 1.0},
                                   {"files", json::object()}};
            const std::string reply = json({{"entry", "/nonexistent"},
                                            {"manifest", manifest},
                                            {"cached", false},
                                            {"waited_ms", 0.0},
                                            {"build_ms", 1.0}})
                                          .dump() +
                                      "\n";
            // The worker may have closed the connection already: EPIPE, not SIGPIPE for the test.
            (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        } else {
            while (::read(fd, &c, 1) == 1) {
            }
            std::lock_guard<std::mutex> lock(m_mutex);
            m_requests[index].closed = true;
        }
        ::close(fd);
        std::lock_guard<std::mutex> lock(m_mutex);
        --m_open;
    }

    std::string m_path;
    int m_listen = -1;
    std::thread m_accepting;
    std::vector<std::thread> m_connections;
    std::mutex m_mutex;
    std::vector<Request> m_requests;
    int m_open = 0;
};

/// One broker for the process, named in KWB_BUILD_BROKER before the interpreter starts (Python
/// reads the environment once).
StandInBroker& broker()
{
    static StandInBroker b;
    static const bool named = [] {
        ::setenv("KWB_BUILD_BROKER", b.path().c_str(), 1);
        const fs::path cache = fs::temp_directory_path() / ("kwb-tst-early-cache-" + std::to_string(::getpid()));
        fs::create_directories(cache);
        ::setenv("KWB_EXTENSION_CACHE", cache.c_str(), 1);
        return true;
    }();
    (void)named;
    return b;
}

json evaluateOnCpu(const std::string& module)
{
    const Task t = loadTaskFile(std::string(KWB_SOURCE_DIR) + "/tasks/level1/05_matrix_scalar_multiplication.toml");
    Evaluator ev;
    return ev.evaluate(t, {{"type", "evaluate"},
                           {"answer", "```python\n" + module + "```\n"},
                           {"device", "cpu"},
                           {"scale", "smoke"},
                           {"correctness_trials", 1},
                           {"time", false}});
}

const char* kSource = R"(torch::Tensor scale(torch::Tensor a, double s) { return a * s; })";

std::string answer(const std::string& name, const std::string& beforeBuild)
{
    return std::string("import torch\nfrom torch.utils.cpp_extension import load_inline\n") + "cpp_source = \"" +
           kSource + "\"\n" + beforeBuild + "ext = load_inline(name=\"" + name +
           "\", cpp_sources=cpp_source, functions=[\"scale\"])\n"
           "class ModelNew(torch.nn.Module):\n"
           "    def forward(self, A, s):\n"
           "        return ext.scale(A, s)\n";
}

} // namespace

TEST_CASE("early build: asked for before the module runs, even where the module fails before its load_inline")
{
    StandInBroker& b = broker();
    std::string why;
    if (!python::available(&why)) {
        MESSAGE("skipped: " << why);
        return;
    }
    b.holdReplies = true;
    const json r = evaluateOnCpu(answer("kwb_early_unreached", "scale = undefined_before_the_build\n"));
    INFO(r.dump());
    // The verdict is the module's own: its NameError, not the build.
    CHECK(r["status"] == "runtime_error");
    CHECK(r["error_code"] == "undefined_name");
    const auto requests = b.requestsWithin("kwb_early_unreached", 1);
    REQUIRE(requests.size() == 1);
    CHECK(requests[0].arguments ==
          json({{"name", "kwb_early_unreached"}, {"cpp_sources", kSource}, {"functions", json::array({"scale"})}}));
    // The module has run: its request, which no load_inline took, is closed (the real broker then
    // cancels the build).
    CHECK(b.heldConnectionsEnd());
    CHECK(b.requestsFor("kwb_early_unreached")[0].closed);
}

TEST_CASE("early build: load_inline takes the early request's reply and asks nothing more")
{
    StandInBroker& b = broker();
    std::string why;
    if (!python::available(&why)) {
        MESSAGE("skipped: " << why);
        return;
    }
    b.holdReplies = false;
    const json r = evaluateOnCpu(answer("kwb_early_taken", ""));
    INFO(r.dump());
    CHECK(r["status"] == "compile_error");
    CHECK(r["message"].get<std::string>().find("the stand-in broker: error: no compiler here") != std::string::npos);
    CHECK(b.requestsFor("kwb_early_taken").size() == 1);
    // The failed build is in the result with what it had: a researcher asks why it took so long.
    REQUIRE(r["compile"]["extensions"].size() == 1);
    const json failed = r["compile"]["extensions"][0];
    CHECK(failed["name"] == "kwb_early_taken");
    CHECK(failed["ok"] == false);
    CHECK(failed["pch"] == "not used: the stand-in broker has none");
    CHECK(failed["built_ms"] == 1.0);

    // A call whose arguments the source does not state plainly is asked for by load_inline alone.
    const json late = evaluateOnCpu(answer("kwb_early_late", "cpp_source = cpp_source + ''.join([])\n"));
    CHECK(late["status"] == "compile_error");
    CHECK(b.requestsFor("kwb_early_late").size() == 1);
}
