// libFuzzer target: request lines through kwb-worker's own loop (Worker::run: line reader, JSON
// parse, dispatch, response writer), with stdin a memory file holding the input and responses
// going to /dev/null. No GPU is needed, and none is used.
//
// Each input is up to kMaxLines request lines. A line that parses as a JSON object of moderate
// depth is first made cheap, so one execution takes milliseconds, not seconds, while every field
// still reaches the worker:
//  - evaluate: "device":"none" (parse, TorchScript compile, sandbox check; nothing runs), and a
//    cubin "compiled ahead" for exactly its cuda block, so NVRTC is skipped (the evaluator loads a
//    shipped cubin only on a GPU);
//  - compile: an architecture NVRTC does not know, so the request is handled (kernel names,
//    source hash, errors) but NVRTC, a third-party compiler taking ~100 ms a call, never runs;
//  - analyze, run_reference: a task that names a shipped one becomes L1/5 (the references are
//    not model output, and L3's take seconds); run_reference at smoke scale on the CPU;
//  - tasks: no "validate" (compiles every reference) and no "tasks_dir" (would walk the disk);
//  - device: no "ceilings".
// Every other line, invalid or deeply nested JSON included, goes to the worker byte for byte.
#include "worker/answers/candidateparser.h"
#include "worker/protocol/protocol.h"
#include "worker/tasks/task.h"
#include "worker/worker.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <memory>
#include <set>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {
using json = nlohmann::json;

constexpr int kMaxLines = 16;
constexpr int kMaxRewriteDepth = 32; // deeper lines are passed on untouched (the harness must not recurse)

int g_stdin = -1;
int g_devnull = -1;
std::unique_ptr<kwb::Worker> g_worker;
std::set<std::string> g_taskIds; // the shipped tasks

std::string tasksDir()
{
    return std::string(KWB_SOURCE_DIR) + "/tasks";
}

int nestingDepth(const std::string& line)
{
    int depth = 0, maxDepth = 0;
    bool inString = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
        } else if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            maxDepth = std::max(maxDepth, ++depth);
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return maxDepth;
}

// The request as the harness sends it (see the top of this file); the line itself when it is
// not a moderately deep JSON object.
std::string cheapened(const std::string& line)
{
    if (nestingDepth(line) > kMaxRewriteDepth)
        return line;
    json r = json::parse(line, nullptr, false);
    if (r.is_discarded() || !r.is_object() || !r.contains("type") || !r["type"].is_string())
        return line;
    try {
        const std::string type = r["type"];
        r.erase("tasks_dir");
        if (type == "evaluate") {
            r["device"] = "none";
            std::string answer;
            if (r.contains("answer") && r["answer"].is_string()) {
                answer = r["answer"];
            } else if (r.contains("python") || r.contains("cuda")) {
                if (r.contains("cuda") && r["cuda"].is_string() && !r["cuda"].get<std::string>().empty())
                    answer += "```cuda\n" + r["cuda"].get<std::string>() + "\n```\n";
                if (r.contains("python") && r["python"].is_string())
                    answer += "```python\n" + r["python"].get<std::string>() + "\n```\n";
            }
            const kwb::ParseResult parsed = kwb::parseAnswer(answer, {});
            if (parsed.candidate.hasCuda) {
                if (!r.contains("arch") || !r["arch"].is_string())
                    r["arch"] = "sm_90";
                r["cubin_arch"] = r["arch"];
                r["cubin_source_hash"] = kwb::protocol::sourceHash(parsed.candidate.cuda);
                r["cubin_b64"] = kwb::protocol::encodeBase64(std::vector<char>{'\x7f', 'E', 'L', 'F'});
            }
        } else if (type == "compile") {
            r["arch"] = "sm_1";
        } else if (type == "analyze" || type == "run_reference") {
            if (r.contains("task") && r["task"].is_string() && g_taskIds.count(r["task"].get<std::string>()))
                r["task"] = "L1/5";
            if (type == "run_reference") {
                r["scale"] = "smoke";
                r["device"] = "cpu";
            }
        } else if (type == "tasks") {
            r.erase("validate");
        } else if (type == "device") {
            r.erase("ceilings");
        }
        return r.dump(-1, ' ', false, json::error_handler_t::replace);
    } catch (const json::exception&) {
        return line;
    }
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    g_devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    g_stdin = ::memfd_create("fuzz-stdin", 0);
    if (g_devnull < 0 || g_stdin < 0 || ::dup2(g_stdin, 0) < 0) {
        std::perror("fuzz_worker_request: setting up stdin and /dev/null");
        std::abort();
    }
    for (const kwb::Task& t : kwb::loadTaskDir(tasksDir()).tasks)
        g_taskIds.insert(t.id);
    g_worker = std::make_unique<kwb::Worker>(g_devnull, tasksDir());
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::string lines;
    int count = 0;
    for (std::size_t pos = 0; pos <= input.size() && count < kMaxLines; ++count) {
        std::size_t nl = input.find('\n', pos);
        if (nl == std::string::npos)
            nl = input.size();
        lines += cheapened(input.substr(pos, nl - pos));
        lines += '\n';
        pos = nl + 1;
    }
    if (::ftruncate(g_stdin, 0) != 0 || ::pwrite(g_stdin, lines.data(), lines.size(), 0) != ssize_t(lines.size()) ||
        ::lseek(g_stdin, 0, SEEK_SET) != 0) {
        std::perror("fuzz_worker_request: writing stdin");
        std::abort();
    }
    (void)g_worker->run();
    // After a shutdown request the worker answers nothing more: start a fresh one.
    if (lines.find("shutdown") != std::string::npos)
        for (const kwb::Task& t : kwb::loadTaskDir(tasksDir()).tasks)
            g_taskIds.insert(t.id);
    g_worker = std::make_unique<kwb::Worker>(g_devnull, tasksDir());
    return 0;
}
