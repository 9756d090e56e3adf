// Benchmark: where the wall time of evaluating one candidate goes, and how repeatable its
// speed-up is (issue 13).
//
// For every reference candidate (manifest entries expected "correct"), a FRESH worker evaluates it
// under a protocol profile (default: the study's kernelbench-fp32, adaptive timing), and a
// Markdown table shows per task: process start (spawn to the `hello` answer: loading libtorch),
// CUDA init (context and first allocation), compile (NVRTC + TorchScript), reference,
// correctness, timing, the total wall time, and the GPU-time floor: the time the GPU must spend in
// the forwards the protocol runs, from the measured per-forward means t_ref and t_cand:
//   correctness: trials_c × (t_ref + t_cand), the determinism run t_cand, the range trial
//   t_ref + t_cand, each numeric stress trial t_ref + t_cand (counted since session 39: the
//   protocol runs three since 2026-12-04), the CUPTI-traced run t_cand; timing: warmup ×
//   (t_ref + t_cand) plus every timed sample (reference samples × t_ref + candidate samples ×
//   t_cand). The shape sets' trials run at other shapes, whose forward times are not measured:
//   they count nothing, so the floor stays a lower bound.
// wall / floor is the protocol's overhead. Each row also says how the timing stopped, its pairs,
// throttled samples, the speed-up's 95 % interval and whether the speed-up lies in it.
//
// A second table splits the stages that repeat work (the worker's stage_detail_ms, each part
// ending at a synchronisation): trace (its first CUPTI use), the reference's wait for the CPU-side
// preparation made beside the CUDA context, correctness by part (the first trial's whole time
// beside, since first calls pay for library handles, lazy kernel loading and the allocator), and
// timing by part: input sets, setup (flush buffer, clock probe, CPU pin), warm-up, the timed pairs
// (the loop less warm-up, output checks and argument copies), the checks of timed outputs, copies,
// the last output's check and the roofline.
//
// --repeat N: each selected candidate is measured N times, each in a fresh worker, and a second
// table gives the speed-up's mean, standard deviation and coefficient of variation (std / mean),
// the mean relative half-width of the interval, and how many of the N intervals hold the mean.
//
// --warm: each fresh worker is sent `warm` after `hello` (outside the evaluation's own time), as the
// supervisor's warmed spare is: the "warm ms" column is its answer's warm_ms.total. Every row
// also gives "request ms": the evaluate request sent to its answer read, the time a candidate
// waits once a started (and, with --warm, warmed) worker takes it; without --warm it holds the
// CUDA context's creation, with it not.
//
// --warm-python: as --warm, and the warm also starts the worker's embedded Python (`"python": true`),
// as the supervisor's spares do once a KernelBench-format job is queued; its warm_ms.python is in
// the JSON.
//
// Usage: kwb-bench-eval-stages [--only SUBSTRING[,SUBSTRING…]] [--profile NAME] [--repeat N] [--warm|--warm-python]
//                              [--json FILE]
#include "workerclient.h"

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

using json = nlohmann::json;
using kwb::test::readFile;
using kwb::test::WorkerClient;

namespace {
double num(const json& j, const char* key)
{
    return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

bool matches(const std::string& file, const std::string& only)
{
    if (only.empty())
        return true;
    std::stringstream list(only);
    std::string part;
    while (std::getline(list, part, ','))
        if (!part.empty() && file.find(part) != std::string::npos)
            return true;
    return false;
}

struct Run
{
    bool ok = false;
    double startMs = 0, wallMs = 0, floorMs = 0;
    double requestMs = 0; ///< the evaluate request sent to its answer read
    json warm;            ///< the `warm` answer (--warm), else null
    json response;
    std::string status;
};

/// One candidate in a fresh worker: hello, (with `warm`) warm, evaluate, stop. `facts` receives the
/// device's facts once.
Run evaluateFresh(const std::string& workerPath, const std::string& src, const std::string& task,
                  const std::string& answer, const std::string& profile, const json& warm, json* facts,
                  std::string* torch)
{
    Run run;
    WorkerClient worker(workerPath, {"--tasks-dir", src + "/tasks"});
    std::string err;
    const auto t0 = std::chrono::steady_clock::now();
    if (!worker.start(&err)) {
        std::fprintf(stderr, "cannot start worker: %s\n", err.c_str());
        return run;
    }
    auto hello = worker.request({{"type", "hello"}}, 120);
    run.startMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (hello.response.value("cuda_device_count", 0) == 0) {
        run.status = "no_device";
        return run;
    }
    *torch = hello.response.value("torch", std::string());
    if (facts->is_null())
        *facts = worker.request({{"type", "device"}}, 60).response;
    if (warm.is_object())
        run.warm = worker.request(warm, 120).response;
    auto reply = worker.request({{"type", "evaluate"}, {"task", task}, {"answer", answer}, {"profile", profile}}, 600);
    run.requestMs = reply.ms;
    run.wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    run.response = reply.response;
    run.ok = reply.outcome == WorkerClient::Outcome::Ok;
    run.status = run.ok ? run.response.value("status", std::string("?")) : "fault";
    const json& r = run.response;
    if (r.contains("timing") && r["timing"].is_object()) {
        const json& t = r["timing"];
        const json prof = r.value("profile", json::object());
        const double tr = num(t["reference"], "mean_ms"), tc = num(t["candidate"], "mean_ms");
        // warm-up pairs: the adaptive method's own count (at least `warmup`, and min_warmup_ms of them)
        const double ct = num(prof, "correctness_trials"),
                     wu = num(t, "warmup_pairs") > 0 ? num(t, "warmup_pairs") : num(prof, "warmup");
        // reference samples kept (a fresh worker pools no cached ones) and candidate samples kept
        const double nr = num(t["reference"], "trials") - num(t, "reference_reused"),
                     nc = num(t["candidate"], "trials");
        // the numeric stress trials (docs/protocol.md): each runs the candidate and the reference
        // once at KernelBench's shape (a float64 reference where one is judged again is left out)
        const json stress = r.value("correctness", json::object()).value("stress", json());
        const double ns = stress.is_array() ? double(stress.size()) : 0.0;
        run.floorMs = ct * (tr + tc) + tc + (tr + tc) + ns * (tr + tc) + tc + wu * (tr + tc) + nr * tr + nc * tc;
    }
    worker.stop();
    return run;
}

std::string intervalText(const json& iv)
{
    if (!iv.is_object() || !iv["high"].is_number())
        return "–";
    char buf[96];
    std::snprintf(buf, sizeof buf, "[%.3f, %.3f] ±%.2f %%", num(iv, "low"), num(iv, "high"),
                  100 * num(iv, "relative_half_width"));
    return buf;
}
} // namespace

int main(int argc, char** argv)
{
    std::string only, jsonOut, profile = "kernelbench-fp32";
    int repeat = 0;
    json warm; // the warm request (--warm, --warm-python), null: none
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
            jsonOut = argv[++i];
        else if (!std::strcmp(argv[i], "--profile") && i + 1 < argc)
            profile = argv[++i];
        else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--warm"))
            warm = {{"type", "warm"}};
        else if (!std::strcmp(argv[i], "--warm-python"))
            warm = {{"type", "warm"}, {"python", true}};
    }
    const std::string src = KWB_SOURCE_DIR;
    const std::string dir = src + "/tests/fixtures/candidates/";
    const std::string workerPath = kwb::test::findWorker(KWB_WORKER_PATH);
    auto manifest = toml::parse_file(dir + "manifest.toml");
    json rows = json::array(), repeats = json::array();
    json deviceFacts;
    std::string torch;

    if (repeat <= 0) {
        std::printf(
            "| task | status | start ms | cuda ms | compile ms | reference ms | correctness ms | timing ms | wall ms "
            "| GPU floor ms | wall/floor | stop | pairs | throttled | speedup | 95 %% interval | in it | warm ms | "
            "request ms |\n");
        std::printf("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|---|---|--:|--:|\n");
    } else {
        std::printf(
            "| task | runs | correct | mean speedup | std | CV %% | mean ±half-width %% | intervals holding the mean "
            "| stop reasons | mean timing ms | mean wall ms | mean iid ± %% | mean batch-means ± %% | timing CPUs "
            "| mean warm ms | mean request ms |\n"
            "|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|---|--:|--:|\n");
    }
    for (auto& node : *manifest["candidate"].as_array()) {
        auto& c = *node.as_table();
        const std::string file = c["file"].value_or(std::string());
        if (std::string(c["expect"].value_or(std::string())) != "correct" || !matches(file, only))
            continue;
        const std::string task = c["task"].value_or(std::string());
        const std::string answer = readFile(dir + file);
        if (repeat <= 0) {
            const Run run = evaluateFresh(workerPath, src, task, answer, profile, warm, &deviceFacts, &torch);
            if (run.status == "no_device") {
                std::printf("SKIP: no CUDA device\n");
                return 77;
            }
            const json& r = run.response;
            const json st = r.value("stage_ms", json::object());
            const json t = r.value("timing", json::object());
            const double speedup = r.contains("speedup") && r["speedup"].is_number() ? r["speedup"].get<double>() : 0.0;
            const json iv = t.value("speedup_interval", json());
            const bool inside =
                iv.is_object() && iv["high"].is_number() && speedup >= num(iv, "low") && speedup <= num(iv, "high");
            const std::string warmMs =
                run.warm.is_object() ? std::to_string(int(std::lround(num(run.warm.value("warm_ms", json()), "total"))))
                                     : std::string("–");
            std::printf("| %s | %s | %.0f | %.0f | %.1f | %.0f | %.0f | %.0f | %.0f | %.1f | %.2f | %s | %.0f | %.0f | "
                        "%.3f | %s | %s | %s | %.0f |\n",
                        task.c_str(), run.status.c_str(), run.startMs, num(st, "cuda_init"), num(st, "compile"),
                        num(st, "reference"), num(st, "correctness"), num(st, "timing"), run.wallMs, run.floorMs,
                        run.floorMs > 0 ? run.wallMs / run.floorMs : 0.0,
                        t.value("stop_reason", std::string("–")).c_str(), num(t, "samples"), num(t, "throttled"),
                        speedup, intervalText(iv).c_str(), inside ? "yes" : "no", warmMs.c_str(), run.requestMs);
            std::fflush(stdout);
            rows.push_back({{"task", task},
                            {"file", file},
                            {"status", run.status},
                            {"process_start_ms", run.startMs},
                            {"stage_ms", st},
                            {"stage_detail_ms", r.value("stage_detail_ms", json::object())},
                            {"wall_ms", run.wallMs},
                            {"gpu_floor_ms", run.floorMs},
                            {"speedup", speedup},
                            {"warm", run.warm},
                            {"evaluate_request_ms", run.requestMs},
                            {"speedup_in_interval", inside},
                            {"timing", t},
                            {"kernels", r.value("kernels", json::array())},
                            {"degenerate", r.value("degenerate", json())}});
            continue;
        }
        std::vector<double> speedups, halves, iidHalves, batchHalves, timingMs, wallMs, referenceMs, candidateMs,
            requestMs, warmMs;
        std::map<std::string, int> cpus; // where each run's timing thread was pinned
        std::vector<json> intervals;
        std::map<std::string, int> reasons;
        int correct = 0;
        for (int k = 0; k < repeat; ++k) {
            const Run run = evaluateFresh(workerPath, src, task, answer, profile, warm, &deviceFacts, &torch);
            if (run.status == "no_device") {
                std::printf("SKIP: no CUDA device\n");
                return 77;
            }
            const json& r = run.response;
            const json t = r.value("timing", json::object());
            correct += run.status == "correct";
            if (r.contains("speedup") && r["speedup"].is_number()) {
                speedups.push_back(r["speedup"].get<double>());
                intervals.push_back(t.value("speedup_interval", json()));
                halves.push_back(num(intervals.back(), "relative_half_width"));
                iidHalves.push_back(num(intervals.back(), "iid_relative_half_width"));
                batchHalves.push_back(num(intervals.back(), "batch_relative_half_width"));
            }
            const json cpu = t.value("cpu", json());
            cpus[cpu.is_object() && cpu["cpu"].is_number()
                     ? std::to_string(cpu["cpu"].get<int>()) + (cpu.value("numa_local", false) ? "" : " (not local)")
                     : "unpinned"]++;
            reasons[t.value("stop_reason", std::string("none"))]++;
            timingMs.push_back(num(r.value("stage_ms", json::object()), "timing"));
            referenceMs.push_back(
                num(t.value("reference", json::object()), "mean_ms")); // which side moves between processes
            candidateMs.push_back(num(t.value("candidate", json::object()), "mean_ms"));
            wallMs.push_back(run.wallMs);
            requestMs.push_back(run.requestMs);
            if (run.warm.is_object())
                warmMs.push_back(num(run.warm.value("warm_ms", json()), "total"));
        }
        auto mean = [](const std::vector<double>& v) {
            double s = 0;
            for (double x : v)
                s += x;
            return v.empty() ? 0.0 : s / double(v.size());
        };
        const double m = mean(speedups);
        double var = 0;
        for (double x : speedups)
            var += (x - m) * (x - m);
        const double sd = speedups.size() > 1 ? std::sqrt(var / double(speedups.size() - 1)) : 0.0;
        int holding = 0;
        for (const json& iv : intervals)
            holding += iv.is_object() && iv["high"].is_number() && num(iv, "low") <= m && m <= num(iv, "high");
        std::string why;
        for (const auto& [reason, n] : reasons)
            why += (why.empty() ? "" : ", ") + reason + " " + std::to_string(n);
        std::string where;
        for (const auto& [cpu, n] : cpus)
            where += (where.empty() ? "" : ", ") + cpu + " ×" + std::to_string(n);
        const std::string meanWarm = warmMs.empty() ? std::string("–") : std::to_string(int(std::lround(mean(warmMs))));
        std::printf(
            "| %s | %d | %d | %.4f | %.4f | %.2f | %.2f | %d/%zu | %s | %.0f | %.0f | %.2f | %.2f | %s | %s | %.0f |\n",
            task.c_str(), repeat, correct, m, sd, m > 0 ? 100 * sd / m : 0.0, 100 * mean(halves), holding,
            intervals.size(), why.c_str(), mean(timingMs), mean(wallMs), 100 * mean(iidHalves), 100 * mean(batchHalves),
            where.c_str(), meanWarm.c_str(), mean(requestMs));
        std::fflush(stdout);
        repeats.push_back({{"task", task},
                           {"file", file},
                           {"runs", repeat},
                           {"correct", correct},
                           {"speedups", speedups},
                           {"mean", m},
                           {"std", sd},
                           {"cv", m > 0 ? sd / m : 0.0},
                           {"intervals", intervals},
                           {"stop_reasons", reasons},
                           {"timing_ms", timingMs},
                           {"wall_ms", wallMs},
                           {"reference_mean_ms", referenceMs},
                           {"candidate_mean_ms", candidateMs},
                           {"evaluate_request_ms", requestMs},
                           {"warm_ms", warmMs}});
    }
    if (repeat <= 0 && !rows.empty()) {
        std::printf(
            "\nWhere correctness and timing go (ms; stage_detail_ms):\n\n"
            "| task | trace | ref prep wait | corr first trial | corr inputs | corr candidate | corr write checks "
            "| corr reference | corr compare | corr degenerate | corr determinism | corr range | time sets "
            "| time setup | time warm-up | time pairs | time output checks | time copies | time last check "
            "| time roofline |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for (const json& row : rows) {
            const json d = row.value("stage_detail_ms", json::object());
            const json c = d.value("correctness", json::object()), t = d.value("timing", json::object());
            const double pairs = num(t, "measurement") - num(t, "measurement_warmup") -
                                 num(t, "measurement_output_checks") - num(t, "measurement_prepare");
            std::printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | "
                        "%.0f | %.0f "
                        "| %.0f | %.0f | %.0f | %.0f | %.0f |\n",
                        row.value("task", std::string()).c_str(), num(row.value("stage_ms", json::object()), "trace"),
                        num(d.value("reference", json::object()), "preparation_wait"), num(c, "first_trial_total"),
                        num(c, "inputs"), num(c, "candidate"), num(c, "write_checks"), num(c, "reference"),
                        num(c, "compare"), num(c, "degenerate_and_release"), num(c, "determinism"),
                        num(c, "range_trial"), num(t, "input_sets"), num(t, "measurement_setup"),
                        num(t, "measurement_warmup"), pairs, num(t, "measurement_output_checks"),
                        num(t, "measurement_prepare"), num(t, "last_output_check"), num(t, "roofline"));
        }
        std::fflush(stdout);
    }
    if (!jsonOut.empty())
        std::ofstream(jsonOut) << json({{"device", deviceFacts},
                                        {"torch", torch},
                                        {"profile", profile},
                                        {"warm", warm},
                                        {"rows", rows},
                                        {"repeats", repeats}})
                                      .dump(1)
                               << "\n";
    return 0;
}
