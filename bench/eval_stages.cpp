// Benchmark: where the wall time of evaluating one candidate goes.
//
// For every reference candidate (manifest entries expected "correct"), a FRESH worker evaluates it
// under the full protocol profile, and the table shows per task: process start (spawn to the
// `hello` answer: loading libtorch), CUDA init (context and first allocation), compile (NVRTC +
// TorchScript), reference (5 reference runs, outputs off the GPU), correctness (5 trials + the
// determinism run), timing (warm-ups and trials of reference and candidate), the total wall time,
// and the GPU-time floor: the time the GPU must spend in the forwards the protocol runs, from the
// measured per-forward times:
//   floor = (trials_c + warmup + timing) × t_ref + (trials_c + 2 + warmup + timing) × t_cand
// (the +2: the determinism run and the CUPTI-traced run). wall / floor is the protocol's overhead.
//
// Usage: kwb-bench-eval-stages [--only SUBSTRING] [--json FILE]
#include "worker_client.hpp"

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using json = nlohmann::json;
using kwb::test::readFile;
using kwb::test::WorkerClient;

namespace {
double num(const json& j, const char* key)
{
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}
} // namespace

int main(int argc, char** argv)
{
    std::string only, jsonOut;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
            jsonOut = argv[++i];
    }
    const std::string src = KWB_SOURCE_DIR;
    const std::string dir = src + "/tests/fixtures/candidates/";
    const std::string workerPath = kwb::test::findWorker(KWB_WORKER_PATH);
    auto manifest = toml::parse_file(dir + "manifest.toml");
    json rows = json::array();
    json deviceFacts;
    std::string torch;

    std::printf("%-8s %-7s %8s %8s %8s %8s %8s %9s %9s %9s %7s %8s\n", "task", "status", "start_ms", "cuda_ms", "compile",
                "refer", "correct", "timing", "wall_ms", "floor_ms", "wall/fl", "speedup");
    for (auto& node : *manifest["candidate"].as_array()) {
        auto& c = *node.as_table();
        const std::string file = c["file"].value_or(std::string());
        if (std::string(c["expect"].value_or(std::string())) != "correct" || (!only.empty() && file.find(only) == std::string::npos))
            continue;
        const std::string task = c["task"].value_or(std::string());
        WorkerClient worker(workerPath, {"--tasks-dir", src + "/tasks"});
        std::string err;
        const auto t0 = std::chrono::steady_clock::now();
        if (!worker.start(&err)) {
            std::fprintf(stderr, "cannot start worker: %s\n", err.c_str());
            return 1;
        }
        auto hello = worker.request({{"type", "hello"}}, 120);
        const double startMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (hello.response.value("cuda_device_count", 0) == 0) {
            std::printf("SKIP: no CUDA device\n");
            return 77;
        }
        torch = hello.response.value("torch", std::string());
        if (deviceFacts.is_null())
            deviceFacts = worker.request({{"type", "device"}}, 60).response;
        auto reply = worker.request({{"type", "evaluate"}, {"task", task}, {"answer", readFile(dir + file)}}, 600);
        const double wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        const json& r = reply.response;
        const json st = r.value("stage_ms", json::object());
        const json prof = r.value("profile", json::object());
        double floorMs = 0;
        if (r.contains("timing")) {
            const double tr = num(r["timing"]["reference"], "mean_ms"), tc = num(r["timing"]["candidate"], "mean_ms");
            const double ct = num(prof, "correctness_trials"), wu = num(prof, "warmup"), tt = num(prof, "timing_trials");
            floorMs = (ct + wu + tt) * tr + (ct + 2 + wu + tt) * tc;
        }
        const std::string status = reply.outcome == WorkerClient::Outcome::Ok ? r.value("status", std::string("?")) : "fault";
        const double speedup = r.contains("speedup") && r["speedup"].is_number() ? r["speedup"].get<double>() : 0.0;
        std::printf("%-8s %-7s %8.0f %8.0f %8.1f %8.0f %8.0f %9.0f %9.0f %9.1f %7.2f %8.3f\n", task.c_str(),
                    status.substr(0, 7).c_str(), startMs, num(st, "cuda_init"), num(st, "compile"), num(st, "reference"),
                    num(st, "correctness"), num(st, "timing"), wallMs, floorMs, floorMs > 0 ? wallMs / floorMs : 0.0, speedup);
        std::fflush(stdout);
        json row = {{"task", task}, {"file", file}, {"status", status}, {"process_start_ms", startMs}, {"stage_ms", st},
                    {"wall_ms", wallMs}, {"gpu_floor_ms", floorMs}, {"speedup", speedup},
                    {"timing", r.value("timing", json::object())}, {"kernels", r.value("kernels", json::array())},
                    {"degenerate", r.value("degenerate", json())}};
        rows.push_back(row);
        worker.stop();
    }
    if (!jsonOut.empty())
        std::ofstream(jsonOut) << json({{"device", deviceFacts}, {"torch", torch}, {"rows", rows}}).dump(1) << "\n";
    return 0;
}
