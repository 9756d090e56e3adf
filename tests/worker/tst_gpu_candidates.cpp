// GPU test (label gpu): every fixture candidate in tests/fixtures/candidates/manifest.toml (and
// kernelbench/manifest.toml, KernelBench-format answers) is
// evaluated by a real kwb-worker on the GPU and must get the status the manifest expects. A worker
// that times out or dies is replaced, and the next candidate must still be evaluated right.
// Exits 77 (skipped) where there is no CUDA device.
#include "workerclient.h"

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

using json = nlohmann::json;
using kwb::test::readFile;
using kwb::test::WorkerClient;

namespace {
int envInt(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}
} // namespace

int main()
{
    const std::string src = KWB_SOURCE_DIR;
    const std::string dir = src + "/tests/fixtures/candidates/";
    const std::string workerPath = kwb::test::findWorker(KWB_WORKER_PATH);
    std::vector<std::string> args = {"--tasks-dir", src + "/tasks"};
    // KWB_GPU_QUIET_LOCK: the GPU's quiet lock (its file, .intent and .turn made here when missing),
    // as the supervisor gives local workers. Several runs of this test over parts of the fixtures
    // (KWB_GPU_ONLY) can then share one GPU: compiles overlap, GPU stages take turns and every
    // timing has the GPU to itself, as in the product's queue.
    if (const char* lock = std::getenv("KWB_GPU_QUIET_LOCK"); lock && *lock) {
        for (const char* suffix : {"", ".intent", ".turn"})
            std::ofstream(std::string(lock) + suffix, std::ios::app);
        args.push_back("--gpu-quiet-lock");
        args.push_back(lock);
    }
    WorkerClient worker(workerPath, args);
    std::string err;
    if (!worker.start(&err)) {
        std::cerr << "cannot start " << workerPath << ": " << err << "\n";
        return 1;
    }
    auto hello = worker.request({{"type", "hello"}}, 60);
    if (hello.outcome != WorkerClient::Outcome::Ok) {
        std::cerr << "worker did not answer hello\n" << worker.stderrText();
        return 1;
    }
    if (hello.response.value("cuda_device_count", 0) == 0 || hello.response.value("driver", std::string()) != "ok") {
        std::cout << "SKIP: no CUDA device (" << hello.response.value("cuda_error", std::string())
                  << "; driver: " << hello.response.value("driver", std::string()) << ")\n";
        return 77;
    }
    auto device = worker.request({{"type", "device"}}, 60);
    std::cout << "device: " << device.response.value("name", std::string("?")) << " "
              << device.response.value("arch", std::string()) << ", torch "
              << hello.response.value("torch", std::string()) << ", quiet lock "
              << hello.response.value("gpu_quiet_lock", json()).dump() << " (turns "
              << hello.response.value("gpu_quiet_lock_turns", false) << ")\n";

    const std::string only = std::getenv("KWB_GPU_ONLY") ? std::getenv("KWB_GPU_ONLY") : "";
    const int timingTrials = envInt("KWB_GPU_TIMING_TRIALS", 10);
    auto manifest = toml::parse_file(dir + "manifest.toml");
    // KernelBench-format fixtures (issue 14) after the native ones, in the same worker.
    auto kernelbench = toml::parse_file(dir + "kernelbench/manifest.toml");
    for (auto& node : *kernelbench["candidate"].as_array())
        manifest["candidate"].as_array()->push_back(*node.as_table());
    json results = json::array();
    int pass = 0, fail = 0;
    std::printf("%-36s %-6s %-14s %-14s %9s %10s %8s\n", "candidate", "task", "expected", "got", "speedup", "max_abs",
                "wall_s");
    std::map<std::string, double> speedups; // file -> speedup of its correct evaluation
    for (auto& node : *manifest["candidate"].as_array()) {
        auto& c = *node.as_table();
        const std::string file = c["file"].value_or(std::string());
        const std::string task = c["task"].value_or(std::string());
        const std::string expect = c["expect"].value_or(std::string());
        if (!only.empty()) { // KWB_GPU_ONLY: comma-separated substrings of the file path
            bool wanted = false;
            std::stringstream list(only);
            for (std::string part; std::getline(list, part, ',');)
                wanted = wanted || (!part.empty() && file.find(part) != std::string::npos);
            if (!wanted)
                continue;
        }
        const double timeout = c["timeout"].value_or(expect == "timeout" ? 20.0 : 300.0);
        if (!worker.running() && !worker.start(&err)) {
            std::cerr << "cannot restart the worker: " << err << "\n";
            return 1;
        }
        json req = {{"type", "evaluate"},
                    {"task", task},
                    {"answer", readFile(dir + file)},
                    {"timing_trials", timingTrials},
                    {"warmup", 2}};
        if (auto profile = c["profile"].value<std::string>())
            req["profile"] = *profile;
        if (auto format = c["answer_format"].value<std::string>()) // KernelBench twins (issue 14)
            req["answer_format"] = *format;
        auto reply = worker.request(req, timeout);
        std::string got;
        json r = reply.response.is_object() ? reply.response : json::object();
        if (reply.outcome == WorkerClient::Outcome::Timeout)
            got = "timeout";
        else if (reply.outcome == WorkerClient::Outcome::Exited)
            got = "crashed";
        else if (reply.outcome == WorkerClient::Outcome::BrokenLine)
            got = "protocol_error";
        else
            got = r.value("ok", false) ? r.value("status", std::string("?"))
                                       : "error:" + r.value("error", json::object()).value("code", std::string());
        // The worker exits after answering when its CUDA context is poisoned; the next candidate
        // gets a fresh one (what the supervisor does in the product).
        if (r.contains("worker_healthy") && r["worker_healthy"] == false)
            worker.stop();
        bool ok = got == expect;
        if (auto* any = c["expect_any"].as_array()) // outcomes that depend on the allocator's layout
            for (auto& a : *any)
                ok = ok || a.value_or(std::string()) == got;
        // Trust flags (issue 11): a `correct` result must carry the flags the manifest expects (an
        // attack whose time is physically impossible), and an honest `correct` one none of them.
        std::string flagNote;
        if (ok && got == "correct") {
            std::set<std::string> flags;
            if (r.contains("flags") && r["flags"].is_array())
                for (auto& f : r["flags"])
                    if (f.is_string())
                        flags.insert(f.get<std::string>());
            std::set<std::string> wanted;
            if (auto* ef = c["expect_flags"].as_array())
                for (auto& f : *ef)
                    wanted.insert(f.value_or(std::string()));
            for (const char* trust : {"below_roofline_floor", "speedup_over_10x"}) {
                const bool has = flags.count(trust) > 0;
                if (wanted.count(trust) && !has) {
                    ok = false;
                    flagNote += std::string(" missing flag ") + trust;
                } else if (!wanted.count(trust) && has) {
                    ok = false;
                    flagNote += std::string(" unexpected flag ") + trust;
                }
            }
            if (!flagNote.empty())
                std::cout << "  flags:" << flagNote << " (floor " << r.value("roofline_floor_ms", json()).dump()
                          << ")\n";
        }
        // The kernels' facts, read beside the GPU stages (loadstages.cpp), are in the compile record
        // of every correct answer that compiled kernels: NVRTC's, or its extensions' (named by module).
        if (ok && got == "correct") {
            const json compile = r.value("compile", json::object());
            bool extensionKernels = false;
            for (const json& b : compile.value("extensions", json::array()))
                extensionKernels = extensionKernels || b.value("with_cuda", false);
            const bool nvrtcKernels = !compile.value("kernels", json::array()).empty();
            const json facts = compile.value("kernel_facts", json());
            if ((extensionKernels || nvrtcKernels) && (!facts.is_array() || facts.empty())) {
                ok = false;
                std::cout << "  no kernel_facts in the compile record: "
                          << compile.value("kernel_facts_note", json()).dump() << "\n";
            }
            if (extensionKernels && facts.is_array())
                for (const json& k : facts)
                    if (!k.contains("module") || !k.value("sass", json()).is_string()) {
                        ok = false;
                        std::cout << "  an extension's kernel fact without its module or SASS: "
                                  << k.value("name", std::string()) << " " << k.value("sass_note", json()).dump()
                                  << "\n";
                        break;
                    }
        }
        // The case must not reach the next evaluation: the sentinel, in the same worker where it
        // survived, must be correct.
        std::string sentinel;
        if (expect != "correct" || file.rfind("adversarial/", 0) == 0) {
            if (!worker.running() && !worker.start(&err)) {
                std::cerr << "cannot restart the worker: " << err << "\n";
                return 1;
            }
            auto next = worker.request({{"type", "evaluate"},
                                        {"task", "L2/6"},
                                        {"answer", readFile(dir + "reference/L2_06.md")},
                                        {"timing_trials", 5},
                                        {"warmup", 1}},
                                       300);
            sentinel = next.outcome == WorkerClient::Outcome::Ok ? next.response.value("status", std::string("?"))
                                                                 : "no answer";
            if (next.response.is_object() && next.response.contains("worker_healthy") &&
                next.response["worker_healthy"] == false)
                worker.stop();
            if (sentinel != "correct") {
                ok = false;
                std::cout << "  the next evaluation (reference/L2_06.md) got " << sentinel << "\n";
            }
        }
        ok ? ++pass : ++fail;
        const double speedup = r.contains("speedup") && r["speedup"].is_number() ? r["speedup"].get<double>() : 0.0;
        const double maxAbs = r.contains("correctness") ? r["correctness"].value("max_abs_diff", 0.0) : 0.0;
        std::printf("%-36s %-6s %-14s %-14s %9.3f %10.2e %8.1f %s\n", file.c_str(), task.c_str(), expect.c_str(),
                    got.c_str(), speedup, maxAbs, reply.ms / 1000.0, ok ? "ok" : "FAIL");
        speedups[file] = speedup;
        // A twin (the same CUDA in another answer format): its native answer's speedup beside it,
        // evaluated here when the run left it out (KWB_GPU_ONLY=kernelbench/).
        if (auto twin = c["twin"].value<std::string>(); twin && got == "correct") {
            if (!speedups.count(*twin) && (worker.running() || worker.start(&err))) {
                auto native = worker.request({{"type", "evaluate"},
                                              {"task", task},
                                              {"answer", readFile(dir + *twin)},
                                              {"timing_trials", timingTrials},
                                              {"warmup", 2}},
                                             timeout);
                if (native.outcome == WorkerClient::Outcome::Ok &&
                    native.response.value("status", std::string()) == "correct" &&
                    native.response.contains("speedup") && native.response["speedup"].is_number())
                    speedups[*twin] = native.response["speedup"].get<double>();
            }
            if (speedups.count(*twin) && speedups[*twin] > 0)
                std::printf("  twin %s: speedup %.3f, this / twin = %.3f\n", twin->c_str(), speedups[*twin],
                            speedup / speedups[*twin]);
            else
                std::printf("  twin %s: no correct evaluation to compare with\n", twin->c_str());
        }
        if (!ok) {
            std::cout << "  message: " << r.value("message", std::string()) << "\n";
            if (r.contains("compile"))
                std::cout << "  compile log: " << r["compile"].value("log", std::string()).substr(0, 2000) << "\n";
            if (r.contains("error"))
                std::cout << "  error: " << r["error"].dump() << "\n";
            const std::string& e = worker.stderrText();
            std::cout << "  worker stderr (tail): " << e.substr(e.size() > 1500 ? e.size() - 1500 : 0) << "\n";
        }
        std::fflush(stdout);
        r.erase("compile");
        results.push_back({{"file", file},
                           {"task", task},
                           {"expect", expect},
                           {"got", got},
                           {"wall_ms", reply.ms},
                           {"next_evaluation", sentinel},
                           {"flag_check", flagNote},
                           {"stderr_bytes", worker.stderrText().size()},
                           {"response", r}});
    }
    std::printf("%d passed, %d failed\n", pass, fail);
    if (const char* out = std::getenv("KWB_GPU_RESULTS"); out && *out)
        std::ofstream(out) << results.dump(1) << "\n";
    return fail == 0 ? 0 : 1;
}
