#include "workerclient.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <poll.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kwb::test {

WorkerClient::WorkerClient(std::string program, std::vector<std::string> args)
    : m_program(std::move(program))
    , m_args(std::move(args))
{}

WorkerClient::~WorkerClient()
{
    stop();
}

bool WorkerClient::start(std::string* error)
{
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
        *error = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *error = std::string("fork: ") + std::strerror(errno);
        return false;
    }
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        setpgid(0, 0); // its own group, so a kill reaches anything it started
        std::vector<char*> argv;
        argv.push_back(const_cast<char*>(m_program.c_str()));
        for (auto& a : m_args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(m_program.c_str(), argv.data());
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    m_pid = pid;
    m_in = in[1];
    m_out = out[0];
    m_err = err[0];
    fcntl(m_err, F_SETFL, O_NONBLOCK);
    m_buf.clear();
    return true;
}

void WorkerClient::drainStderr()
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(m_err, chunk, sizeof chunk);
        if (n <= 0)
            return;
        m_stderr.append(chunk, size_t(n));
        if (m_stderr.size() > (1u << 20))
            m_stderr.erase(0, m_stderr.size() - (1u << 20));
    }
}

void WorkerClient::kill()
{
    if (m_pid <= 0)
        return;
    ::kill(-m_pid, SIGTERM);
    for (int i = 0; i < 40; ++i) {
        int st;
        if (waitpid(m_pid, &st, WNOHANG) == m_pid) {
            m_pid = -1;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (m_pid > 0) {
        ::kill(-m_pid, SIGKILL);
        int st;
        waitpid(m_pid, &st, 0);
        m_pid = -1;
    }
    close(m_in);
    close(m_out);
    close(m_err);
    m_in = m_out = m_err = -1;
}

void WorkerClient::stop()
{
    if (m_pid <= 0)
        return;
    close(m_in);
    m_in = -1;
    for (int i = 0; i < 100; ++i) { // EOF on stdin ends a healthy worker
        int st;
        if (waitpid(m_pid, &st, WNOHANG) == m_pid) {
            m_pid = -1;
            close(m_out);
            close(m_err);
            m_out = m_err = -1;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill();
}

WorkerClient::Reply WorkerClient::request(const nlohmann::json& reqIn, double timeoutSec)
{
    nlohmann::json req = reqIn;
    if (!req.contains("id"))
        req["id"] = m_nextId++;
    return requestLine(req.dump(), timeoutSec);
}

WorkerClient::Reply WorkerClient::requestLine(const std::string& text, double timeoutSec)
{
    using Clock = std::chrono::steady_clock;
    Reply reply;
    const std::string line = text + "\n";
    const auto t0 = Clock::now();
    size_t sent = 0;
    while (sent < line.size()) {
        ssize_t n = write(m_in, line.data() + sent, line.size() - sent);
        if (n <= 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        sent += size_t(n);
    }
    const auto deadline = t0 + std::chrono::duration<double>(timeoutSec);
    for (;;) {
        size_t nl = m_buf.find('\n');
        if (nl != std::string::npos) {
            std::string l = m_buf.substr(0, nl);
            m_buf.erase(0, nl + 1);
            reply.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            reply.response = nlohmann::json::parse(l, nullptr, false);
            reply.outcome = reply.response.is_discarded() ? Outcome::BrokenLine : Outcome::Ok;
            drainStderr();
            return reply;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            drainStderr();
            kill();
            reply.outcome = Outcome::Timeout;
            reply.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            return reply;
        }
        pollfd fds[2] = {{m_out, POLLIN, 0}, {m_err, POLLIN, 0}};
        int r = poll(fds, 2, int(std::min<long long>(left, 200)));
        if (r < 0 && errno != EINTR)
            break;
        if (fds[1].revents & POLLIN)
            drainStderr();
        if (fds[0].revents & (POLLIN | POLLHUP)) {
            char chunk[65536];
            ssize_t n = read(m_out, chunk, sizeof chunk);
            if (n > 0) {
                m_buf.append(chunk, size_t(n));
                continue;
            }
            // EOF: the worker died without answering.
            int st = 0;
            waitpid(m_pid, &st, 0);
            drainStderr();
            close(m_in);
            close(m_out);
            close(m_err);
            m_in = m_out = m_err = -1;
            m_pid = -1;
            reply.outcome = Outcome::Exited;
            reply.exitCode = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
            return reply;
        }
    }
    kill();
    reply.outcome = Outcome::Exited;
    return reply;
}

std::string readFile(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string findWorker(const std::string& fallback)
{
    if (const char* env = std::getenv("KWB_WORKER"); env && *env)
        return env;
    return fallback;
}

int startGpuWorker(WorkerClient& worker)
{
    std::string err;
    if (!worker.start(&err)) {
        std::cerr << "cannot start the worker: " << err << "\n";
        return 1;
    }
    const auto hello = worker.request({{"type", "hello"}}, 60);
    if (hello.response.value("cuda_device_count", 0) == 0 || hello.response.value("driver", std::string()) != "ok") {
        std::cout << "SKIP: no CUDA device\n";
        return 77;
    }
    return 0;
}

void CheckLog::check(bool ok, const std::string& what, const nlohmann::json& detail)
{
    std::printf("%s %s%s\n", ok ? "ok  " : "FAIL", what.c_str(),
                ok || detail.is_null() ? "" : ("  " + detail.dump()).c_str());
    failures += !ok;
}

double numberOr(const nlohmann::json& j, const char* key, double missing)
{
    return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : missing;
}

} // namespace kwb::test
