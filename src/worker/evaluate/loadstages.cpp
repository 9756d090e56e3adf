// The stages up to a candidate ready to run (1-4): parse, compile (NVRTC and TorchScript, or a
// KernelBench-format module built and imported), the sandbox check, the device with torch's
// global settings, and the load of the compiled module.
#include "worker/evaluate/evaluation.h"

#include "worker/compile/kernelfacts.h"
#include "worker/sandbox/parentwatch.h"

#include <cctype>
#include <cstdio>

namespace kwb::evaluation {

/// Whether this process made its CUDA context and torch's CUDA state yet (deviceStage, or an
/// earlier `warm`: Evaluator::warm).
std::atomic<bool> g_cudaContextReady{false};

namespace {

std::string currentArch()
{
    json facts = deviceFacts(0);
    return facts.value("arch", std::string());
}

/// The architecture an evaluation compiles for: the GPU's, else the request's (sm_90 by default).
std::string buildArch(const Evaluation& ev)
{
    return ev.cuda ? currentArch() : ev.req.value(protocol::Field::kArch, std::string("sm_90"));
}

bool kernelBenchParse(Evaluation& ev, const std::string& answer, CodeBlock codeBlock);

/// `compile.kernel_facts` (issue 40): each compiled kernel's registers, memory, PTX and SASS,
/// read on a thread of its own (`read` gives kernelFactsRecord's object) and merged in by
/// Evaluation::joinKernelFacts after the correctness trials. `read` holds copies of what it reads.
void readKernelFactsBeside(Evaluation& ev, std::function<json()> read)
{
    ev.pendingKernelFacts = std::async(std::launch::async, [read = std::move(read)] {
        try {
            return read();
        } catch (const std::exception& e) {
            return kernelFactsRecord({}, std::string("the kernels' facts could not be read: ") + e.what());
        } catch (...) {
            return kernelFactsRecord({}, "the kernels' facts could not be read");
        }
    });
}

/// The facts of each torch extension a KernelBench-format answer built (`builds`: name, build_dir,
/// with_cuda), read from its .so after the build, beside the stages that follow.
void readExtensionFactsBeside(Evaluation& ev, const json& builds, const std::string& arch)
{
    const int sm = std::atoi(arch.c_str() + std::min<std::size_t>(3, arch.size()));
    readKernelFactsBeside(ev, [builds, sm] {
        const std::string nvdisasm = findNvdisasm(nvrtcIncludeDirs());
        std::vector<KernelFacts> all;
        std::string note;
        for (const auto& b : builds) {
            if (!b.value("with_cuda", false))
                continue;
            const std::string name = b.value("name", std::string());
            std::string why;
            std::vector<KernelFacts> ks = extensionKernelFacts(b.value("build_dir", std::string()) + "/" + name + ".so",
                                                               name, sm, nvdisasm, &why);
            all.insert(all.end(), ks.begin(), ks.end());
            if (!why.empty())
                note += (note.empty() ? "" : "; ") + why;
        }
        return kernelFactsRecord(std::move(all), note);
    });
}

} // namespace

/// 1. parse: the answer (or the blocks given as `cuda` and `python`) by the candidate format;
/// the blocks found are echoed as `candidate`, also when the format is broken.
bool parseStage(Evaluation& ev)
{
    ev.startStage("parse");
    // Checked whatever the format (a bad value is the request's error); only KernelBench's
    // format has a choice to make: the native format allows one python block.
    const CodeBlock codeBlock = requestedCodeBlock(ev.req);
    if (ev.req.contains(protocol::Field::kAnswer)) {
        const std::string& text = ev.req.at(protocol::Field::kAnswer).get_ref<const std::string&>();
        ev.format = requestedAnswerFormat(ev.req).value_or(detectAnswerFormat(text));
    } else if (requestedAnswerFormat(ev.req) == AnswerFormat::KernelBench) {
        throw std::invalid_argument("answer_format \"kernelbench\" needs the whole answer in 'answer'");
    }
    ev.res["answer_format"] = answerFormatName(ev.format);
    if (ev.task.isKernelBenchOnly() && ev.format != AnswerFormat::KernelBench) {
        // No TorchScript reference to hold a native forward to (docs/task-format.md, "KernelBench only").
        const std::string message =
            ev.task.id + " is KernelBench only (" + ev.task.kernelbenchOnly +
            "): it has no TorchScript reference for a native-format answer; answer in "
            "KernelBench's format (class ModelNew), which is evaluated against KernelBench's Model";
        ev.endStage();
        ev.res["candidate"] = nullptr;
        ev.res["format_error"] = {{"code", "kernelbench_only"}, {"message", message}, {"line", 0}};
        return ev.stop("format_error", "parse", message);
    }
    if (ev.format == AnswerFormat::KernelBench)
        return kernelBenchParse(ev, ev.req.at(protocol::Field::kAnswer).get<std::string>(), codeBlock);
    std::string answer;
    if (ev.req.contains(protocol::Field::kAnswer)) {
        answer = ev.req.at(protocol::Field::kAnswer).get<std::string>();
    } else {
        if (ev.req.contains(protocol::Field::kCuda) && !ev.req.at(protocol::Field::kCuda).get<std::string>().empty())
            answer += "```cuda\n" + ev.req.at(protocol::Field::kCuda).get<std::string>() + "\n```\n";
        answer += "```python\n" + ev.req.value(protocol::Field::kPython, std::string()) + "\n```\n";
    }
    std::string sigError;
    const auto expected = parseForwardSignature(ev.task.forward, &sigError);
    ev.parsed = parseAnswer(answer, expected);
    ev.res["candidate"] = protocol::candidateEcho(ev.parsed.candidate);
    ev.endStage();
    if (!ev.parsed.ok) {
        const FormatError& e = *ev.parsed.error;
        ev.res["format_error"] = {{"code", e.code}, {"message", e.message}, {"line", e.line}};
        return ev.stop("format_error", "parse", e.message);
    }
    ev.res["format_error"] = nullptr;
    for (const auto& k : ev.cand().kernels)
        ev.kernelNames.push_back(k.name);
    return true;
}

namespace {

/// The echo of a KernelBench-format answer: its module as the python block, no cuda block, the
/// kernels its CUDA sources declare, the module's hash, and which block it is of how many.
json kernelBenchEcho(const KernelBenchSource& kb, CodeBlock codeBlock)
{
    json kernels = json::array();
    for (const auto& k : findKernels(kb.source))
        kernels.push_back(k.name);
    return {{"cuda", nullptr},
            {"python", kb.ok ? json(kb.source) : json(nullptr)},
            {"kernels", kernels},
            {"source_hash", kb.ok ? json(protocol::sourceHash(kb.source)) : json(nullptr)},
            {"cuda_line", nullptr},
            {"python_line", kb.ok ? json(kb.line) : json(nullptr)},
            {"answer_format", "kernelbench"},
            {"code_block", codeBlockName(codeBlock)},
            {"model_new_blocks", kb.modelNewBlocks}};
}

/// 1 (KernelBench format). The module's source; a worker built without Python refuses it here.
bool kernelBenchParse(Evaluation& ev, const std::string& answer, CodeBlock codeBlock)
{
    ev.kb = extractKernelBenchSource(answer, codeBlock);
    ev.res["candidate"] = kernelBenchEcho(ev.kb, codeBlock);
    ev.endStage();
    // Before torch's import (python::available): the broker builds while it runs.
    if (ev.kb.ok)
        python::requestBuildsEarly(ev.kb.source, buildArch(ev));
    // torch's import where no `warm` made it (1-6 s), in no stage: between.python_start says so.
    std::string why;
    if (ev.kb.ok) {
        const auto t0 = Clock::now();
        const bool available = python::available(&why);
        ev.addDetail("between", "python_start", msSince(t0));
        if (!available)
            ev.kb.error = FormatError{"kernelbench_unavailable", why, 0};
    }
    if (ev.kb.error) {
        const FormatError& e = *ev.kb.error;
        ev.res["format_error"] = {{"code", e.code}, {"message", e.message}, {"line", e.line}};
        return ev.stop("format_error", "parse", e.message);
    }
    ev.res["format_error"] = nullptr;
    for (const auto& k : findKernels(ev.kb.source))
        ev.kernelNames.push_back(k.name);
    if (const std::string refusal = python::nativeCodeRefusal(); !refusal.empty())
        return ev.stop("rejected", "sandbox", refusal);
    return true;
}

/// A module line of a KernelBench-format answer as an answer line.
int answerLine(const Evaluation& ev, int moduleLine)
{
    return moduleLine > 0 ? ev.kb.line + moduleLine - 1 : 0;
}

/// The host's notes on the answer (kernelbench_host.py's result_notes: module lines) in the result's
/// `notes`, with answer lines.
void addKernelBenchNotes(Evaluation& ev, const json& notes)
{
    for (const auto& n : notes) {
        const int line = answerLine(ev, n.value("line", 0));
        ev.res["notes"].push_back({{"code", n.value("code", std::string())},
                                   {"message", n.value("message", std::string()) +
                                                   (line > 0 ? " (answer line " + std::to_string(line) + ")" : "")},
                                   {"line", line}});
    }
}

/// The end of a KernelBench-format load that failed: the status kernelbench_host.py gave it.
bool kernelBenchFailure(Evaluation& ev, const json& err)
{
    const std::string status = err.value("status", std::string("runtime_error"));
    const std::string stage = err.value("stage", std::string("compile"));
    std::string message = err.value("message", std::string());
    const int line = answerLine(ev, err.value("line", 0));
    // An honest mistake's kind, for a researcher to tally (undefined_name, load_inline_keyword,
    // extension_name_mismatch, placeholder, missing_module: kernelbench_host.py); a format error has its own.
    if (err.contains("code") && err["code"].is_string() && status != "format_error")
        ev.res["error_code"] = err["code"];
    if (status == "rejected") {
        json v = json::array();
        const json detail = err.contains("detail") && err["detail"].is_array()
                                ? err["detail"]
                                : json::array({{{"line", err.value("line", 0)}, {"reason", message}}});
        for (const auto& r : detail)
            v.push_back(
                {{"op", "python"},
                 {"reason", r.value("reason", std::string())},
                 {"where",
                  r.value("line", 0) > 0 ? "answer line " + std::to_string(answerLine(ev, r.value("line", 0))) : ""}});
        ev.res["sandbox"] = v;
        if (line > 0)
            message += " (answer line " + std::to_string(line) + ")";
        ev.res["compile"] = ev.compile;
        return ev.stop("rejected", "sandbox", message);
    }
    if (status == "no_device") {  // the machine cannot build it (kernelbench_host.py, MachineError)
        ev.compile["ok"] = false; // nothing was compiled: not counted as compiled (EvaluationResult::compiled)
        ev.res["compile"] = ev.compile;
        return ev.stop("no_device", "load", message);
    }
    if (status == "format_error") {
        ev.res["format_error"] = {
            {"code", err.value("code", std::string("missing_model_new"))}, {"message", message}, {"line", line}};
        return ev.stop("format_error", "parse", message);
    }
    if (status == "compile_error") {
        ev.compile["ok"] = false;
        ev.compile["log"] = message;
    }
    ev.res["compile"] = ev.compile;
    return ev.stop(status, stage, message);
}

/// Whether ModelNew holds the reference's parameters (names and shapes): every task parameter and
/// buffer must be there with its shape, and ModelNew may have no learned parameter the task lacks.
/// Buffers of its own (constants it registered) are allowed: they are not weights. When they
/// differ (`conv_weight` for `conv.weight`, say), the evaluator's weights cannot be put in, and
/// the answer is judged as KernelBench judges it: by its outputs, with the weights it made under
/// the run's seed, against a reference holding the weights KernelBench's Model would make
/// (docs/candidate-format.md, "Parameters"). The result says so (`parameters.weights`: "own",
/// and a note `parameters_differ`), for a researcher to tally.
bool parametersMatch(Evaluation& ev, const json& modelParams)
{
    std::map<std::string, std::pair<std::vector<int64_t>, bool>> model;
    for (const auto& p : modelParams)
        model[p[0].get<std::string>()] = {p[1].get<std::vector<int64_t>>(), p[2].get<bool>()};
    std::vector<std::string> problems;
    json reference = json::array(), theirs = json::array();
    for (size_t i = 0; i < ev.task.params.size(); ++i) {
        const ParamSpec& p = ev.task.params[i];
        const auto shape = ev.task.paramShape(i, ev.scale);
        reference.push_back({{"name", p.name}, {"shape", shape}, {"buffer", p.buffer}});
        auto it = model.find(p.name);
        if (it == model.end())
            problems.push_back("missing " + p.name + " " + shapeString(shape));
        else if (it->second.first != shape)
            problems.push_back(p.name + " is " + shapeString(it->second.first) + ", expected " + shapeString(shape));
    }
    for (const auto& [name, v] : model) {
        theirs.push_back({{"name", name}, {"shape", v.first}, {"buffer", v.second}});
        const bool known = std::any_of(ev.task.params.begin(), ev.task.params.end(),
                                       [&](const ParamSpec& p) { return p.name == name; });
        if (!known && !v.second)
            problems.push_back("unexpected parameter " + name + " " + shapeString(v.first));
    }
    if (problems.empty())
        return true;
    std::string message = "ModelNew's parameters differ from the reference's: ";
    for (size_t i = 0; i < problems.size(); ++i)
        message += (i ? "; " : "") + problems[i];
    message += ". The reference has";
    for (size_t i = 0; i < reference.size(); ++i)
        message += std::string(i ? ", " : " ") + reference[i]["name"].get<std::string>() + " " +
                   shapeString(reference[i]["shape"].get<std::vector<int64_t>>());
    if (reference.empty())
        message += " none";
    message += "; ModelNew has";
    for (size_t i = 0; i < theirs.size(); ++i)
        message += std::string(i ? ", " : " ") + theirs[i]["name"].get<std::string>() + " " +
                   shapeString(theirs[i]["shape"].get<std::vector<int64_t>>());
    if (theirs.empty())
        message += " none";
    message += ". The evaluator's weights were not copied: ModelNew keeps those it made under the run's seed, the "
               "reference's are made as KernelBench's Model(*init_inputs) makes them, and the outputs decide";
    ev.res["parameters"] = {{"reference", reference}, {"model", theirs}, {"weights", "own"}};
    ev.res["notes"].push_back({{"code", "parameters_differ"}, {"message", message}});
    return false;
}

} // namespace

namespace {

/// A KernelBench-only task's reference: KernelBench's Model made from its problem file in the
/// embedded Python (loadKernelBenchReference), before ModelNew, which gets its get_init_inputs().
/// The task has one scale, KernelBench's; a smoke request runs it and says so.
bool kernelBenchReference(Evaluation& ev, KernelBenchReference* ref)
{
    if (ev.scale == Scale::Smoke) {
        ev.scale = Scale::Full;
        ev.res["profile"]["scale"] = "full";
        ev.res["notes"].push_back({{"code", "kernelbench_only_scale"},
                                   {"message", ev.task.id + " is KernelBench only: it has KernelBench's sizes alone "
                                                            "(get_inputs), so it ran at full scale, not smoke"}});
    }
    *ref = loadKernelBenchReference(ev.task.referencePython, ev.seed, ev.cuda ? "cuda" : "cpu");
    if (ref->callable)
        return true;
    ev.res["compile"] = ev.compile;
    return ev.stop("runtime_error", "reference",
                   "the reference itself failed: KernelBench's " + ev.task.source + ": " + ref->error);
}

/// Whether ModelNew's parameter names cannot be the task's: the first part of some parameter's
/// name (`network` of network.0.weight) is no word anywhere in the answer's source. Then the
/// reference will need the task's own parameters (parametersMatch fails), so they are drawn beside
/// ModelNew's construction. Only speed rides on the guess: a draw made beside and not needed is
/// dropped, one not made beside is made after, as before.
bool namesCannotMatch(const Task& task, const std::string& source)
{
    const auto isWordChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    const auto hasWord = [&](const std::string& word) {
        for (size_t at = source.find(word); at != std::string::npos; at = source.find(word, at + 1)) {
            const size_t end = at + word.size();
            if ((at == 0 || !isWordChar(source[at - 1])) && (end == source.size() || !isWordChar(source[end])))
                return true;
        }
        return false;
    };
    return std::any_of(task.params.begin(), task.params.end(),
                       [&](const ParamSpec& p) { return !hasWord(p.name.substr(0, p.name.find('.'))); });
}

/// Whether the machine has room to hold the task's parameters beside ModelNew's, both on the CPU
/// while they are drawn at once: their float32 bytes at most a quarter of MemAvailable.
bool roomToDrawBeside(const Task& task, Scale scale)
{
    double bytes = 0;
    for (size_t i = 0; i < task.params.size(); ++i)
        bytes += 4.0 * double(numel(task.paramShape(i, scale)));
    const std::int64_t available = statusField(readSmallFile("/proc/meminfo"), "MemAvailable");
    return available > 0 && 4 * bytes <= double(available);
}

/// The task's parameters drawn as KernelBench draws them (makeParams, its own CPU generator) on a
/// thread of their own while the answer's module runs and ModelNew is built, CPU work both, before
/// the evaluations' turn: L3/2's two draws of 2.1 G took 24.5 s one after the other (session 43).
/// Leaving the scope stops the draw and waits for it (at most one slice of it), so nothing of it
/// runs on into the GPU stages.
class TaskParamsBeside
{
public:
    TaskParamsBeside(const Task& task, Scale scale, uint64_t seed)
        : m_draw(std::async(std::launch::async, [this, &task, scale, seed] {
            const auto t0 = Clock::now();
            ParamDict params = makeParams(task, scale, at::Device(at::kCPU), seed, DrawnOn::CpuAsKernelBench, &m_stop);
            m_ownMs = msSince(t0);
            return params;
        }))
    {}
    TaskParamsBeside(const TaskParamsBeside&) = delete;
    TaskParamsBeside& operator=(const TaskParamsBeside&) = delete;
    ~TaskParamsBeside()
    {
        m_stop = true;
        if (m_draw.valid())
            m_draw.wait();
    }

    /// The draw once it ends; nullopt where it failed. `waitMs`: how long this waited for it,
    /// `ownMs`: the draw's own time on its thread.
    std::optional<ParamDict> take(double* waitMs, double* ownMs)
    {
        const auto t0 = Clock::now();
        try {
            ParamDict params = m_draw.get();
            *waitMs = msSince(t0);
            *ownMs = m_ownMs;
            return params;
        } catch (const std::exception&) {
            *waitMs = msSince(t0);
            return std::nullopt;
        }
    }

private:
    std::atomic<bool> m_stop{false}; // (before m_draw: the thread reads it from its start)
    double m_ownMs = 0;              // written before the draw's result is set, read after get()
    std::future<ParamDict> m_draw;
};

} // namespace

/// 2-4 (KernelBench format). The module run (its load_inline extensions built, or taken from the
/// cache), ModelNew(*init_inputs) built after seeding and its parameters checked; without a device
/// only the build (no_device after it). A KernelBench-only task's reference is made first: its
/// get_init_inputs() are ModelNew's, and ModelNew keeps the weights it makes, as in KernelBench.
bool kernelBenchLoadStage(Evaluation& ev)
{
    ev.startStage("compile");
    const std::string arch = buildArch(ev);
    ev.compile = {{"ok", true}, {"log", ""}, {"arch", arch}, {"kernels", ev.kernelNames}, {"ms", 0.0}};
    const auto t0 = Clock::now();
    json builds;
    if (ev.device == "none") {
        json b = python::build(ev.kb.source, arch);
        ev.compile["ms"] = msSince(t0);
        ev.compile["extensions"] = b["builds"];
        if (!b.value("ok", false)) {
            json err = b;
            if (b.value("status", "") == "rejected")
                err["detail"] = b["refusals"];
            return kernelBenchFailure(ev, err);
        }
        readExtensionFactsBeside(ev, b["builds"], arch);
        addKernelBenchNotes(ev, b.value("notes", json::array()));
        ev.res["compile"] = ev.compile;
        return ev.stop("no_device", "load",
                       "built and passed the sandbox check; no CUDA device to run it (" + ev.noCudaWhy + ")");
    }
    KernelBenchReference ref;
    if (ev.task.isKernelBenchOnly() && !kernelBenchReference(ev, &ref))
        return false;
    const json initInputs = ev.task.isKernelBenchOnly() ? ref.initInputs : ev.task.initInputValues(ev.scale);
    std::optional<TaskParamsBeside> paramsBeside;
    if (!ev.task.isKernelBenchOnly() && namesCannotMatch(ev.task, ev.kb.source) && roomToDrawBeside(ev.task, ev.scale))
        paramsBeside.emplace(ev.task, ev.scale, ev.seed);
    KernelBenchModel m = loadKernelBenchModel(ev.kb.source, initInputs, ev.seed, ev.cuda ? "cuda" : "cpu", arch);
    ev.compile["ms"] = msSince(t0);
    ev.compile["extensions"] = m.builds;
    std::string log;
    for (const auto& b : m.builds) {
        log += "load_inline '" + b.value("name", std::string()) +
               "': " + (b.value("cached", false) ? "taken from the cache " : "built in ") +
               b.value("build_dir", std::string());
        // The build's own time, also for a cached one (built ahead of its turn or for another sample).
        if (const auto built = b.find("built_ms"); built != b.end() && built->is_number()) {
            char seconds[32];
            std::snprintf(seconds, sizeof seconds, "%.1f s", built->get<double>() / 1000.0);
            log += std::string(b.value("cached", false) ? " (its build took " : " (") + seconds + ")";
        }
        log += "\n";
    }
    ev.compile["log"] = log;
    if (!m.callable)
        return kernelBenchFailure(ev, m.error);
    addKernelBenchNotes(ev, m.notes);
    readExtensionFactsBeside(ev, m.builds, arch);
    ev.res["compile"] = ev.compile;
    for (const auto& b : m.builds)
        ev.launchesKernels = ev.launchesKernels || b.value("with_cuda", false);
    ev.res["torch_only"] = m.builds.empty();
    if (ev.task.isKernelBenchOnly()) {
        // No task parameters to hand over: both models keep what they made under the seed, and
        // each call of either starts from the same generator state (candidatecallable.h).
        ev.ownWeights = true;
        m.callable->keepOwnWeights();
        m.callable->seedEachCall(ev.seed);
        ref.callable->keepOwnWeights();
        ref.callable->seedEachCall(ev.seed);
        ev.reference = std::move(ref.callable);
        ev.res["reference"] = {{"kind", "kernelbench_python"}, {"source", ev.task.source}};
    } else if (!parametersMatch(ev, m.parameters)) {
        ev.ownWeights = true;
        m.callable->keepOwnWeights();
        // The task's parameters drawn on the CPU as KernelBench draws them, before the
        // evaluations' turn (Evaluation::turnAfterLoad): L3/2's 2.1 G took 12.6 s under it. Drawn
        // beside ModelNew where its names could not be the task's, else now. task_parameters_cpu:
        // the load's time on it (the wait, where drawn beside). A draw that fails is made again,
        // and reported, in referenceStage.
        if (paramsBeside) {
            double waitMs = 0, ownMs = 0;
            ev.paramsOnCpu = paramsBeside->take(&waitMs, &ownMs);
            ev.addDetail("compile", "task_parameters_cpu", waitMs);
            if (ev.paramsOnCpu)
                ev.addDetail("compile", "task_parameters_cpu_beside", ownMs);
        } else {
            try {
                const auto t0 = Clock::now();
                ev.paramsOnCpu =
                    makeParams(ev.task, ev.scale, at::Device(at::kCPU), ev.seed, DrawnOn::CpuAsKernelBench);
                ev.addDetail("compile", "task_parameters_cpu", msSince(t0));
            } catch (const std::exception&) {
                ev.paramsOnCpu.reset();
            }
        }
    }
    ev.callable = std::move(m.callable);
    ev.endStage();
    return true;
}

namespace {

/// 2a. compile the cuda block with NVRTC, or take the cubin compiled ahead for it.
bool compileCudaBlock(Evaluation& ev, const std::string& arch)
{
    const ParsedCandidate& cand = ev.cand();
    const json& req = ev.req;
    std::vector<char> shippedCubin;
    // Used only for this architecture and for exactly this source (the hash the compile request
    // returned), so a client whose block extraction drifts from the parser cannot swap kernels.
    const bool useShipped =
        cand.hasCuda && req.contains(protocol::Field::kCubinB64) &&
        req.value(protocol::Field::kCubinArch, std::string()) == arch &&
        req.value(protocol::Field::kCubinSourceHash, std::string()) == protocol::sourceHash(cand.cuda) &&
        protocol::decodeBase64(req.at(protocol::Field::kCubinB64).get<std::string>(), &shippedCubin) &&
        !shippedCubin.empty();
    // NVRTC sees only sources that pass checkCudaForNvrtc; a cubin compiled ahead passed it there,
    // and is held to it here too (the same source).
    const auto refusedCuda = !cand.hasCuda ? std::nullopt : useShipped ? checkCudaForNvrtc(cand.cuda) : std::nullopt;
    if (useShipped && !refusedCuda) {
        // Compiled ahead by another worker (compile request): the GPU stage only loads it.
        ev.cr.ok = true;
        ev.cr.arch = arch;
        ev.cr.cubin = std::move(shippedCubin);
        ev.compile["cached"] = true;
        ev.compile["log"] = req.value(protocol::Field::kCompileLog, std::string());
        // The facts the compile request read with the cubin (ptxas's spills among them), else
        // read here from the cubin alone.
        const auto shippedFacts = req.find(protocol::Field::kCubinKernelFacts);
        if (shippedFacts != req.end() && isKernelFactsRecord(*shippedFacts)) {
            ev.compile.update(*shippedFacts);
            return true;
        }
        readKernelFactsBeside(ev, [cubin = ev.cr.cubin, arch] {
            std::vector<KernelFacts> ks = cubinKernelFacts(cubin.data(), cubin.size(), arch, nullptr);
            for (KernelFacts& k : ks)
                k.ptxNote = "compiled ahead: the PTX does not come with the cubin";
            addSass(ks, cubin, findNvdisasm(nvrtcIncludeDirs()));
            return kernelFactsRecord(std::move(ks), "compiled ahead: no ptxas report, so no spill counts");
        });
        return true;
    }
    if (!cand.hasCuda)
        return true;
    if (refusedCuda) {
        ev.cr.refused = refusedCuda;
    } else {
        const auto tNvrtc = Clock::now();
        ev.cr = compileCuda(cand.cuda, arch);
        ev.addDetail("compile", "nvrtc", msSince(tNvrtc));
    }
    ev.compile["ok"] = ev.cr.ok;
    ev.compile["log"] = ev.cr.log;
    ev.compile["ms"] = ev.cr.ms;
    ev.compile["options"] = ev.cr.options;
    if (ev.cr.refused) {
        ev.compile["log"] = "";
        ev.res["compile"] = ev.compile;
        const std::string where = "cuda block line " + std::to_string(ev.cr.refused->line);
        ev.res["sandbox"] = json::array({{{"op", "#include"}, {"reason", ev.cr.refused->message}, {"where", where}}});
        return ev.stop("rejected", "sandbox", ev.cr.refused->message + " (" + where + ")");
    }
    if (!ev.cr.ok) {
        ev.res["compile"] = ev.compile;
        return ev.stop("compile_error", "compile", "NVRTC could not compile the cuda block");
    }
    readKernelFactsBeside(ev, [compiled = ev.cr] {
        return kernelFactsRecord(compiledKernelFacts(compiled, findNvdisasm(nvrtcIncludeDirs())), "");
    });
    return true;
}

/// 2b. compile the python block with the TorchScript frontend (after its pre-checks).
bool compileHostCode(Evaluation& ev)
{
    const ParsedCandidate& cand = ev.cand();
    const auto t0 = Clock::now();
    try {
        ev.candUnit = compileScript(cand.python);
        ev.candFn = &forwardFunction(*ev.candUnit);
        ev.addDetail("compile", "torchscript", msSince(t0));
    } catch (const ScriptFormatError& e) {
        // The shape bounds (nesting, statement size): the answer's form, not its TorchScript.
        const int line = e.line > 0 ? cand.pythonLine + e.line - 1 : 0;
        ev.res["format_error"] = {{"code", e.code}, {"message", e.what()}, {"line", line}};
        return ev.stop("format_error", "parse", e.what());
    } catch (const ScriptRejected& e) {
        // Refused by the sandbox before compiling: as the graph check's refusals (sandboxStage).
        ev.res["compile"] = ev.compile;
        const std::string where = e.line > 0 ? "line " + std::to_string(e.line) : "";
        ev.res["sandbox"] = json::array({{{"op", e.op}, {"reason", e.reason}, {"where", where}}});
        return ev.stop("rejected", "sandbox", e.what());
    } catch (const std::exception& e) {
        ev.compile["ok"] = false;
        ev.compile["log"] = ev.compile["log"].get<std::string>() +
                            "TorchScript (line numbers count from the python block, "
                            "which opens on answer line " +
                            std::to_string(cand.pythonLine) + "):\n" + e.what();
        ev.res["compile"] = ev.compile;
        return ev.stop("compile_error", "compile", "the python block is not valid TorchScript");
    }
    ev.res["compile"] = ev.compile;
    return true;
}

} // namespace

/// 2. compile: NVRTC for the cuda block, the TorchScript frontend for the python block.
bool compileStage(Evaluation& ev)
{
    ev.startStage("compile");
    const std::string arch = buildArch(ev);
    ev.compile = {{"ok", true}, {"log", ""}, {"arch", arch}, {"kernels", ev.kernelNames}, {"ms", 0.0}};
    if (!compileCudaBlock(ev, arch) || !compileHostCode(ev))
        return false;
    ev.endStage();
    return true;
}

/// 3. sandbox: the compiled host code's graph, and the kernels it launches by name.
bool sandboxStage(Evaluation& ev)
{
    auto graph = inlinedGraph(*ev.candFn);
    auto violations = checkSandbox(*graph);
    if (!violations.empty()) {
        json v = json::array();
        std::string msg;
        for (const auto& x : violations) {
            v.push_back({{"op", x.op}, {"reason", x.reason}, {"where", x.where}});
            if (msg.empty())
                msg =
                    x.op + " is not allowed in host code: " + x.reason + (x.where.empty() ? "" : " (" + x.where + ")");
        }
        ev.res["sandbox"] = v;
        return ev.stop("rejected", "sandbox", msg);
    }
    const auto launched = launchedKernelNames(*graph);
    for (const auto& name : launched) {
        if (std::find(ev.kernelNames.begin(), ev.kernelNames.end(), name) == ev.kernelNames.end())
            return ev.stop("format_error", "parse",
                           "kb.launch names kernel '" + name + "', which the cuda block does not declare");
    }
    ev.launchesKernels = !launched.empty();
    ev.res["torch_only"] = !ev.launchesKernels;
    return true;
}

namespace {

/// The context being made on a thread of its own beside the compile stage (startContextBeside),
/// until deviceStage or warm waits for it; invalid when none is on the way.
std::shared_future<double> g_contextOnTheWay;

/// The first CUDA use of this process: the context, torch's CUDA init and its caching allocator.
void createCudaContext(at::Device dev)
{
    torch::zeros({1}, at::TensorOptions().device(dev)).add_(1);
    cudaDeviceSynchronize();
    watchAllocatorOutOfMemory(); // the allocator is up now: its observer reaches every device
    g_cudaContextReady = true;
}

} // namespace

/// The context as createCudaContext makes it, waiting for one on the way (an exception of its
/// making comes out here); the calling thread's device set too.
void ensureCudaContext(at::Device dev)
{
    if (g_contextOnTheWay.valid()) {
        const std::shared_future<double> onTheWay = g_contextOnTheWay;
        g_contextOnTheWay = {};
        onTheWay.get();
    }
    if (!g_cudaContextReady)
        createCudaContext(dev);
}

/// A fresh worker's first native evaluation: the context (~0.13-0.2 s on an H200, mostly the
/// driver's host work) and the evaluator's own kernels (NVRTC, CPU only) are made on threads of
/// their own while this thread compiles the candidate, instead of after it; deviceStage waits for
/// them. The candidate's code does not run before deviceStage either way.
void startContextBeside(Evaluation& ev)
{
    if (!ev.cuda || g_cudaContextReady || g_contextOnTheWay.valid())
        return;
    const at::Device dev = ev.dev;
    const int ordinal = ev.ordinal;
    const bool timer = ev.doTime;
    g_contextOnTheWay = std::async(std::launch::async, [dev, ordinal, timer] {
                            const auto t0 = Clock::now();
                            cudaSetDevice(ordinal); // this thread's device, for the synchronisation
                            auto ownKernels = std::async(std::launch::async, [ordinal, timer] {
                                precompileFusedCompare(ordinal);
                                if (timer)
                                    ClockProbe::precompile(ordinal);
                            });
                            createCudaContext(dev);
                            ownKernels.get();
                            return msSince(t0);
                        }).share();
}

/// After a KernelBench-format answer's module was imported: what its import changed of torch's
/// settings is recorded and set back, so that the reference and the candidate run under the
/// evaluator's (an honest `cudnn.benchmark = True` at import is no attack: a flag, not a verdict).
void resetGlobalsAfterImport(Evaluation& ev)
{
    json changes = ev.globals.changesTo(TorchGlobals::capture());
    if (changes.empty())
        return;
    ev.globals.apply();
    ev.globalsReset = true;
    ev.res["global_state"] = {{"changed_at", "import"}, {"changes", std::move(changes)}, {"action", "reset"}};
}

/// Before each reference call: the reference runs under the evaluator's settings, whatever the
/// candidate's last call left; what it left is kept for globalsUnchanged.
void restoreGlobals(Evaluation& ev)
{
    json changes = ev.globals.changesTo(TorchGlobals::capture());
    if (changes.empty())
        return;
    if (ev.globalsChangedInRun.is_null())
        ev.globalsChangedInRun = std::move(changes);
    ev.globals.apply();
}

/// After the candidate ran (correctness, timing, trace): a candidate that changes torch's settings
/// while it runs is `rejected`, naming each setting. The reference never ran under them
/// (restoreGlobals), but the numbers of a candidate that changes how the process computes are
/// not comparable, and its next call could change them where no reset reaches (another thread).
bool globalsUnchanged(Evaluation& ev, const char* stage)
{
    restoreGlobals(ev);
    if (ev.globalsChangedInRun.is_null())
        return true;
    json changes = std::move(ev.globalsChangedInRun);
    const std::string what = describeChanges(changes);
    ev.res["global_state"] = {{"changed_at", stage}, {"changes", std::move(changes)}, {"action", "rejected"}};
    return ev.stop(
        "rejected", stage,
        "the candidate changes torch's global settings while it runs (" + what +
            "): they decide how the reference runs too, so the evaluator owns them (docs/protocol.md, global_state)");
}

/// The device for the stages that run: none stops here (no_device); the first CUDA use in this
/// process creates the context, a cost of a fresh worker kept apart from the candidate's stages.
bool deviceStage(Evaluation& ev)
{
    if (ev.device == "none")
        return ev.stop("no_device", "load",
                       "compiled and passed the sandbox check; no CUDA device to run it (" + ev.noCudaWhy + ")");
    if (ev.cuda) {
        ev.shareGpu(); // from here on the evaluation uses the GPU

        if (!g_cudaContextReady || g_contextOnTheWay.valid()) {
            // The CPU-only preparation (the reference's TorchScript, the roofline's analysis, the
            // worker's own kernels through NVRTC) runs beside the context's creation, or beside
            // the wait for the one started beside the compile stage.
            ev.prepared = std::async(std::launch::async, [&ev] { return ev.prepare(); }).share();
            ev.startStage("cuda_init");
            if (g_contextOnTheWay.valid())
                ev.addDetail("cuda_init", "beside_compile_own", g_contextOnTheWay.get());
            ensureCudaContext(ev.dev);
            ev.endStage();
            // A KernelBench answer's module runs next, in the embedded Python (its `import torch`
            // among it): the preparation's TorchScript is done before that, not beside it.
            if (ev.format == AnswerFormat::KernelBench)
                ev.prep();
        }
    }
    // Every global setting the evaluator's, for the reference and the candidate alike: the
    // worker's own at its start, with the profile's TF32 flags (torchglobals.h).
    ev.globals = workerStartGlobals();
    ev.globals.tf32CuBLAS = ev.prof.tf32CuBLAS;
    ev.globals.tf32CuDNN = ev.prof.tf32CuDNN;
    ev.globals.apply();
    // What libtorch says it now does, not what the profile asked for.
    ev.res["precision"] = {{"allow_tf32_cublas", at::globalContext().allowTF32CuBLAS()},
                           {"allow_tf32_cudnn", at::globalContext().allowTF32CuDNN()}};
    return true;
}

/// 4. load the compiled module, and what kb.launch needs to launch its kernels.
bool loadStage(Evaluation& ev)
{
    ev.startStage("load");
    if (ev.cand().hasCuda && ev.cuda) {
        std::string err;
        ev.module = LoadedModule::load(ev.cr.cubin, &err);
        if (!ev.module) {
            ev.checkCuda();
            return ev.stop("runtime_error", "load", "could not load the compiled module: " + err);
        }
    }
    ev.endStage();
    ev.launchCtx.module = ev.module.get();
    for (const auto& k : ev.cand().kernels) {
        std::vector<std::size_t> sizes;
        for (const auto& p : k.params)
            sizes.push_back(std::size_t(p.bytes));
        ev.launchCtx.declaredSizes[k.name] = sizes;
    }
    return true;
}

/// Runs the candidate once; an exception or a CUDA fault after it is reported through *err.
bool runCandidate(Evaluation& ev, std::vector<c10::IValue> args, c10::IValue* out, std::string* err)
{
    try {
        *out = ev.callable->bind(std::move(args))();
    } catch (const std::exception& e) {
        *err = e.what();
    }
    if (ev.cuda) {
        CudaFault f = ev.checkCuda();
        if (f.any)
            *err = (err->empty() ? "" : *err + "\n") + "CUDA error after the candidate ran: " + f.message;
    }
    return err->empty();
}

} // namespace kwb::evaluation
