#include "worker/worker.h"
#include "worker/sandbox/sandboxinit.h"

#include "worker/analyze/roofline.h"
#include "worker/answers/answerformat.h"
#include "worker/answers/candidateparser.h"
#include "worker/compile/kernelfacts.h"
#include "worker/compile/nvrtccompiler.h"
#include "worker/device/cudadriver.h"
#include "worker/device/deviceinfo.h"
#include "worker/measure/profiles.h"
#include "worker/protocol/protocol.h"
#include "worker/python/pythonhost.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <system_error>

#ifndef KWB_VERSION
#define KWB_VERSION "0.0.0"
#endif

namespace kwb {
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
struct RequestError : std::runtime_error
{
    RequestError(std::string c, const std::string& m)
        : std::runtime_error(m)
        , code(std::move(c))
    {}
    std::string code;
};

std::unique_ptr<TaskSet> readTaskDir(const std::string& dir)
{
    return std::make_unique<TaskSet>(loadTaskDir(dir));
}
} // namespace

std::string defaultTasksDir(const std::string& argv0)
{
    if (const char* env = std::getenv("KWB_TASKS_DIR"); env && *env)
        return env;
    std::error_code ec;
    fs::path exe = fs::canonical("/proc/self/exe", ec);
    if (ec)
        exe = fs::absolute(argv0, ec);
    const fs::path installed = exe.parent_path().parent_path() / "share" / "kernel-workbench" / "tasks";
    if (fs::is_directory(installed, ec))
        return installed.string();
    // A build tree's: the folder named in the file beside the program (src/worker/CMakeLists.txt),
    // the one kwb reads too.
    if (std::ifstream marker(exe.string() + ".tasks"); marker) {
        std::string named;
        std::getline(marker, named);
        if (!named.empty())
            return named;
    }
#ifdef KWB_SOURCE_DATA_DIR
    return std::string(KWB_SOURCE_DATA_DIR) + "/tasks";
#else
    return "tasks";
#endif
}

Worker::Worker(int protocolFd, std::string tasksDir, std::unique_ptr<GpuQuietLock> quietLock)
    : m_fd(protocolFd)
    , m_tasksDir(std::move(tasksDir))
    , m_quietLock(std::move(quietLock))
{
    if (m_quietLock && m_quietLock->usable())
        m_evaluator.setQuietLock(m_quietLock.get());
}

const TaskSet& Worker::tasks()
{
    if (!m_tasks && m_tasksAhead.valid()) {
        try {
            m_tasks = m_tasksAhead.get();
        } catch (...) { // read again below, where its error reaches the request
        }
    }
    if (!m_tasks)
        m_tasks = readTaskDir(m_tasksDir);
    return *m_tasks;
}

const Task& Worker::task(const json& request, bool kernelBenchOnlyToo)
{
    if (!request.contains(protocol::Field::kTask) || !request[protocol::Field::kTask].is_string())
        throw RequestError("bad_request", "missing string field 'task' (e.g. \"L2/1\")");
    const std::string id = request[protocol::Field::kTask];
    if (const Task* t = tasks().find(id)) {
        // No forward to analyse or profile: only `evaluate` and `run_reference` run its reference,
        // KernelBench's Model in the embedded Python (docs/task-format.md, "KernelBench only").
        if (t->isKernelBenchOnly() && !kernelBenchOnlyToo)
            throw RequestError("kernelbench_only", id + " is KernelBench only: " + t->kernelbenchOnly);
        return *t;
    }
    for (const auto& e : tasks().errors)
        if (e.path.find(id) != std::string::npos)
            throw RequestError("task_error", e.toString());
    throw RequestError("unknown_task", "no task " + protocol::describeValue(id) + " in " + m_tasksDir);
}

json Worker::hello()
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    cudaGetLastError();
    std::string driverWhy;
    const bool driver = CudaDriver::get(&driverWhy) != nullptr;
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    json profiles = json::array();
    for (const ProtocolProfile& p : protocolProfiles())
        profiles.push_back(p.toJson());
    json out = {{protocol::Key::kProtocol, protocol::kVersion},
                {protocol::Key::kWorker, KWB_VERSION},
                {protocol::Key::kTorch, torchVersion()},
                {protocol::Key::kCudaRuntime, std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10)},
                {protocol::Key::kNvrtc, nvrtcVersionString()},
                {protocol::Key::kCudaDeviceCount, e == cudaSuccess ? count : 0},
                {protocol::Key::kCudaError, e == cudaSuccess ? "" : cudaGetErrorString(e)},
                {protocol::Key::kDriver, driver ? "ok" : driverWhy},
                {protocol::Field::kTasksDir, m_tasksDir},
                {protocol::Key::kProfiles, profiles},
                {protocol::Key::kDefaultProfile, kDefaultProfile}};
    // The lock this worker takes (docs/protocol.md, the GPU's quiet lock): null without one, and
    // null with the reason where --gpu-quiet-lock named a file that could not be opened.
    out[protocol::Key::kGpuQuietLock] =
        m_quietLock && m_quietLock->usable() ? json(m_quietLock->path()) : json(nullptr);
    // Whether its holds pass the writers-first gate (<lock>.intent, gpuquietlock.h).
    out[protocol::Key::kGpuQuietLockWritersFirst] = m_quietLock && m_quietLock->usable() && m_quietLock->writersFirst();
    // Whether its evaluations take turns on the GPU (<lock>.turn, gpuquietlock.h).
    out[protocol::Key::kGpuQuietLockTurns] = m_quietLock && m_quietLock->usable() && m_quietLock->turns();
    if (m_quietLock && !m_quietLock->usable())
        out[protocol::Key::kGpuQuietLockError] = m_quietLock->error();
    return out;
}

json Worker::listTasks(const json& request)
{
    if (request.contains(protocol::Field::kTasksDir)) {
        m_tasksDir = request[protocol::Field::kTasksDir].get<std::string>();
        m_tasks.reset();
    }
    const TaskSet& set = tasks();
    json out = {{protocol::Key::kTasks, json::array()}, {protocol::Key::kErrors, json::array()}};
    for (const auto& e : set.errors)
        out[protocol::Key::kErrors].push_back(
            {{protocol::Key::kPath, e.path}, {protocol::Key::kField, e.field}, {protocol::Key::kMessage, e.message}});
    const bool validate = request.value(protocol::Field::kValidate, false);
    for (const auto& t : set.tasks) {
        if (validate && !t.isKernelBenchOnly()) {
            const std::string err = m_evaluator.validateTask(t);
            if (!err.empty()) {
                out[protocol::Key::kErrors].push_back(
                    {{protocol::Key::kPath, t.path},
                     {protocol::Key::kField, "forward"},
                     {protocol::Key::kMessage, "TorchScript does not compile: " + err}});
                continue;
            }
        }
        out[protocol::Key::kTasks].push_back(toJson(t));
    }
    return out;
}

namespace {
/// `compile` of a KernelBench-format answer: its module run in the embedded interpreter, so its
/// load_inline extensions build into the shared cache (pythonhost.h) where `evaluate` finds them.
json compileKernelBench(const std::string& answer, std::string arch, CodeBlock codeBlock)
{
    if (arch.empty())
        arch = deviceFacts(0).value(protocol::Field::kArch, std::string("sm_90"));
    KernelBenchSource kb = extractKernelBenchSource(answer, codeBlock);
    json kernels = json::array();
    for (const auto& k : findKernels(kb.source))
        kernels.push_back(k.name);
    json out = {{protocol::Field::kAnswerFormat, "kernelbench"},
                {protocol::Field::kArch, arch},
                {protocol::Key::kMs, 0.0},
                {protocol::Key::kCubinBytes, 0},
                {protocol::Key::kKernels, kernels},
                {protocol::Key::kSourceHash, nullptr},
                {"extensions", json::array()},
                {protocol::Key::kFormatError, nullptr}};
    out[protocol::Key::kCandidate] = {
        {protocol::Field::kCuda, nullptr},
        {protocol::Field::kPython, kb.ok ? json(kb.source) : json(nullptr)},
        {protocol::Key::kKernels, kernels},
        {protocol::Key::kSourceHash, kb.ok ? json(protocol::sourceHash(kb.source)) : json(nullptr)},
        {protocol::Key::kCudaLine, nullptr},
        {protocol::Key::kPythonLine, kb.ok ? json(kb.line) : json(nullptr)},
        {protocol::Field::kAnswerFormat, "kernelbench"},
        {protocol::Field::kCodeBlock, codeBlockName(codeBlock)},
        {"model_new_blocks", kb.modelNewBlocks}};
    if (kb.ok) // before torch's import (python::available): the broker builds while it runs
        python::requestBuildsEarly(kb.source, arch);
    std::string why;
    if (kb.ok && !python::available(&why))
        kb.error = FormatError{"kernelbench_unavailable", why, 0};
    if (kb.error) {
        out[protocol::Key::kOkCompile] = false;
        out[protocol::Key::kLog] = kb.error->message;
        out[protocol::Key::kFormatError] = {{protocol::Key::kCode, kb.error->code},
                                            {protocol::Key::kMessage, kb.error->message},
                                            {protocol::Key::kLine, kb.error->line}};
        return out;
    }
    if (const std::string refusal = python::nativeCodeRefusal(); !refusal.empty()) {
        out[protocol::Key::kOkCompile] = false;
        out[protocol::Key::kLog] = refusal;
        out[protocol::Key::kRefused] = {
            {protocol::Key::kCode, "no_os_sandbox"}, {protocol::Key::kMessage, refusal}, {protocol::Key::kLine, 0}};
        return out;
    }
    const auto t0 = std::chrono::steady_clock::now();
    json b = python::build(kb.source, arch);
    out[protocol::Key::kMs] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out["extensions"] = b["builds"];
    out["ok_compile"] = b.value("ok", false);
    const std::string status = b.value("status", std::string());
    const int line = b.value("line", 0) > 0 ? kb.line + b.value("line", 0) - 1 : 0;
    out["log"] = b.value("message", std::string());
    if (b.contains("code") && b["code"].is_string() && status != "format_error")
        out["error_code"] = b["code"]; // as evaluate's (kernelbench_host.py's honest-failure kinds)
    if (status == "rejected")
        out["refused"] = {{"code", "python_refused"}, {"message", b.value("message", std::string())}, {"line", line}};
    else if (status == "format_error")
        out["format_error"] = {
            {"code", "missing_model_new"}, {"message", b.value("message", std::string())}, {"line", line}};
    else if (!status.empty())
        out[protocol::Key::kStatus] = status; // compile_error or runtime_error, as evaluate would say
    return out;
}
} // namespace

json Worker::compileOnly(const json& request)
{
    const CodeBlock codeBlock = requestedCodeBlock(request); // a bad value is bad_request, any format
    if (request.contains(protocol::Field::kAnswer)) {
        const std::string& answer = request.at(protocol::Field::kAnswer).get_ref<const std::string&>();
        if (requestedAnswerFormat(request).value_or(detectAnswerFormat(answer)) == AnswerFormat::KernelBench)
            return compileKernelBench(answer, request.value(protocol::Field::kArch, std::string()), codeBlock);
    }
    // The source: a bare `cuda`, or the cuda block the parser finds in a whole `answer` (so a
    // client compiling ahead needs no parser of its own). The signature is not checked here: no task.
    ParsedCandidate candidate;
    json formatError = nullptr;
    if (request.contains(protocol::Field::kAnswer)) {
        ParseResult parsed = parseAnswer(request.at(protocol::Field::kAnswer).get<std::string>(), {});
        candidate = std::move(parsed.candidate);
        if (!parsed.ok)
            formatError = {{protocol::Key::kCode, parsed.error->code},
                           {protocol::Key::kMessage, parsed.error->message},
                           {protocol::Key::kLine, parsed.error->line}};
    } else {
        candidate.hasCuda = true;
        candidate.cuda = request.value(protocol::Field::kCuda, std::string());
        candidate.kernels = findKernels(candidate.cuda);
    }
    std::string arch = request.value(protocol::Field::kArch, std::string());
    if (arch.empty()) {
        json facts = deviceFacts(0);
        arch = facts.value(protocol::Field::kArch, std::string("sm_90"));
    }
    json out;
    if (!candidate.hasCuda) {
        out = {{protocol::Key::kOkCompile, false},
               {protocol::Key::kLog, "the answer has no cuda block: nothing to compile"},
               {protocol::Field::kArch, arch},
               {protocol::Key::kMs, 0.0},
               {protocol::Key::kCubinBytes, 0},
               {protocol::Key::kKernels, json::array()},
               {protocol::Key::kSourceHash, nullptr}};
    } else {
        const std::string& source = candidate.cuda;
        const CompileResult r = compileCuda(source, arch);
        json kernels = json::array();
        for (const auto& d : candidate.kernels)
            kernels.push_back(d.name);
        out = {{protocol::Key::kOkCompile, r.ok},
               {protocol::Key::kLog, r.log},
               {protocol::Field::kArch, r.arch},
               {protocol::Key::kMs, r.ms},
               {protocol::Key::kCubinBytes, r.cubin.size()},
               {protocol::Key::kKernels, kernels},
               {protocol::Key::kSourceHash, protocol::sourceHash(source)}};
        if (r.refused) // checkCudaForNvrtc: NVRTC did not run (an include outside the toolkit, …)
            out[protocol::Key::kRefused] = {{protocol::Key::kCode, r.refused->code},
                                            {protocol::Key::kMessage, r.refused->message},
                                            {protocol::Key::kLine, r.refused->line}};
        if (r.ok) {
            // Read here, beside the GPU (a CPU-only compile worker ahead of the evaluation), and
            // handed on with the cubin as `cubin_kernel_facts`: nvdisasm's 0.4-0.7 s a cubin is
            // then not the GPU worker's (docs/protocol.md, compile ahead).
            out.update(kernelFactsRecord(compiledKernelFacts(r, findNvdisasm(nvrtcIncludeDirs())), ""));
        }
        if (request.value(protocol::Field::kReturnCubin, false) && r.ok)
            out[protocol::Field::kCubinB64] = protocol::encodeBase64(r.cubin);
    }
    out[protocol::Key::kCandidate] = protocol::candidateEcho(candidate);
    // A bare source is the client's own: echoed only up to what an answer may hold (evaluate
    // refuses larger ones), so a response never carries a second copy of a 16 MiB request.
    if (!request.contains(protocol::Field::kAnswer) && candidate.cuda.size() > kMaxAnswerBytes)
        out[protocol::Key::kCandidate][protocol::Field::kCuda] = nullptr;
    if (request.contains(protocol::Field::kAnswer))
        out[protocol::Key::kFormatError] = formatError;
    return out;
}

json Worker::handle(const json& request)
{
    // Only a bounded id and type are echoed: a deep or huge one must not reach the writer.
    const json id = protocol::echoedId(request);
    const std::string type = protocol::echoedType(request);
    if (auto problem = protocol::checkRequest(request))
        return protocol::errorResponse(id, type, problem->code, problem->message);
    try {
        json body;
        if (type == protocol::Request::kHello) {
            body = hello();
        } else if (type == protocol::Request::kTasks) {
            body = listTasks(request);
        } else if (type == protocol::Request::kDevice) {
            body = deviceFacts(0);
            if (request.value(protocol::Field::kCeilings, false) && body.value(protocol::Key::kAvailable, false)) {
                // The ceilings are measurements: the GPU to itself while they run (the quiet lock).
                const GpuQuietLock::Hold quiet(m_evaluator.quietLock(), GpuQuietLock::Mode::Exclusive);
                body[protocol::Field::kCeilings] = measureCeilings(0);
                body[protocol::Key::kStageDetailMs] = {{protocol::Field::kCeilings, {{"quiet_wait", quiet.waitMs()}}}};
                if (!quiet.error().empty())
                    body[protocol::Key::kGpuQuietLockError] = quiet.error();
                roofline::rememberMeasuredCeilings(
                    body[protocol::Field::kCeilings]); // later floors use them (roofline.h)
            }
        } else if (type == protocol::Request::kAnalyze) {
            body = m_evaluator.analyze(task(request),
                                       parseScale(request.value(protocol::Field::kScale, std::string("full"))));
        } else if (type == protocol::Request::kProfile) {
            const Task& t = task(request);
            std::string why;
            if (!m_evaluator.cudaAvailable(&why))
                throw RequestError("no_device", "profiling needs a CUDA device: " + why);
            body = m_evaluator.profile(t, request);
        } else if (type == protocol::Request::kEvaluate) {
            const Task& t = task(request, /*kernelBenchOnlyToo=*/true);
            if (!request.contains(protocol::Field::kAnswer) && !request.contains(protocol::Field::kPython))
                throw RequestError("bad_request",
                                   "evaluate needs 'answer' (Markdown) or 'python' (and optionally 'cuda')");
            body = m_evaluator.evaluate(t, request);
        } else if (type == protocol::Request::kWarm) {
            const protocol::Device device = protocol::parseDevice(request, protocol::kDeviceCuda, cudaDeviceCount());
            if (request.contains(protocol::Field::kPython) && !request[protocol::Field::kPython].is_boolean())
                throw RequestError("bad_request", "warm's 'python' is true or false");
            body = m_evaluator.warm(device.ordinal, request.value(protocol::Field::kPython, false));
        } else if (type == protocol::Request::kCompile) {
            body = compileOnly(request);
        } else if (type == protocol::Request::kRunReference) {
            const protocol::Device device =
                protocol::parseDevice(request, protocol::kDeviceCuda | protocol::kDeviceCpu, cudaDeviceCount());
            const Task& t = task(request, /*kernelBenchOnlyToo=*/true); // KernelBench's Model, in the Python
            std::string why;
            if (device.kind == protocol::Device::Cuda &&
                !(m_evaluator.cudaAvailable(&why) && useCudaDevice(device.ordinal, &why)))
                throw RequestError("no_device", "run_reference on cuda needs a CUDA device: " + why);
            body = m_evaluator.runReference(t, parseScale(request.value(protocol::Field::kScale, std::string("smoke"))),
                                            device.kind == protocol::Device::Cuda ? "cuda" : "cpu",
                                            request.value(protocol::Field::kSeed, uint64_t(42)));
        } else if (type == protocol::Request::kShutdown) {
            m_shutdown = true;
            body = json::object();
        } else if (type.empty()) {
            throw RequestError("bad_request", "missing string field 'type'");
        } else {
            throw RequestError("unknown_type", "unknown request type '" + type + "'"); // type: bounded above
        }
        body[protocol::Field::kId] = id;
        body[protocol::Field::kType] = type;
        body[protocol::Key::kOk] = true;
        if (!m_evaluator.healthy() || python::answerLibraryLoaded())
            body[protocol::Key::kWorkerHealthy] = false;
        return body;
    } catch (const RequestError& e) {
        return protocol::errorResponse(id, type, e.code, e.what());
    } catch (const TaskLoadError& e) {
        return protocol::errorResponse(id, type, "task_error", e.toString());
    } catch (const std::invalid_argument& e) {
        return protocol::errorResponse(id, type, "bad_request", e.what());
    } catch (const nlohmann::json::exception& e) {
        return protocol::errorResponse(id, type, "bad_request", std::string("bad field: ") + e.what());
    } catch (const std::exception& e) {
        return protocol::errorResponse(id, type, "internal", e.what());
    }
}

int Worker::run()
{
    // A fresh worker's first evaluate read the whole task folder (250 tasks' files) outside every
    // stage: 50-76 ms of its request on the 2-core machine, 0.6 ms on the next request. Read now,
    // beside hello and the spare's warm, it is off the candidate's path.
    if (!m_tasks) {
        try {
            m_tasksAhead = std::async(std::launch::async, readTaskDir, m_tasksDir);
        } catch (const std::system_error&) { // no thread to spare: read on the first request, as before
        }
    }
    protocol::LineReader reader(0);
    for (;;) {
        bool tooLong = false;
        auto line = reader.next(&tooLong);
        if (!line)
            return 0;
        json response;
        if (tooLong) {
            response =
                protocol::errorResponse(nullptr, "", "line_too_long",
                                        "request line exceeds " + std::to_string(protocol::kMaxLineBytes) + " bytes");
        } else if (line->find_first_not_of(" \t\r") == std::string::npos) {
            // Every line gets a response, so a client waiting on one never stalls.
            response = protocol::errorResponse(nullptr, "", "bad_request", "empty request");
        } else if (protocol::nestedDeeperThan(*line, protocol::kMaxRequestDepth)) {
            response = protocol::errorResponse(nullptr, "", "bad_request",
                                               "request nested deeper than " +
                                                   std::to_string(protocol::kMaxRequestDepth) + " levels");
        } else {
            json request = json::parse(*line, nullptr, false);
            if (request.is_discarded())
                response = protocol::errorResponse(nullptr, "", "bad_json", "request is not valid JSON");
            else if (!request.is_object())
                response = protocol::errorResponse(nullptr, "", "bad_request", "request must be a JSON object");
            else
                response = handle(request);
        }
        // Nothing a candidate started outlives its request (a fork, a setsid daemon): killed
        // before the answer goes out (sandboxinit.h); nor a build asked for early and not taken.
        endCandidateProcesses();
        python::dropEarlyRequests();
        if (!protocol::writeResponse(m_fd, response))
            return 2; // the reader is gone
        if (m_shutdown)
            return 0;
        if (!m_evaluator.healthy()) {
            // A sticky CUDA error, or CUPTI's range profiler left attached (trafficStage): the
            // answer said worker_healthy: false, and the next candidate needs a fresh worker.
            std::cerr << "kwb-worker: this process cannot evaluate further (a sticky CUDA error, or CUPTI's profiler "
                         "attached); exiting\n";
            return 3;
        }
        if (python::answerLibraryLoaded()) {
            // An answer's library ran here: a thread it left, or memory it changed, must not meet
            // the next candidate's request (the answer said worker_healthy: false).
            std::cerr << "kwb-worker: an answer's native library was loaded in this process; exiting\n";
            return 3;
        }
    }
}

} // namespace kwb
