// GPU test (label gpu), issue 39 item 5: the roofline floor is a lower bound on every task's time.
// For every task with a forward (KernelBench-only ones have none to analyse), at full scale on the
// first GPU: the eager reference, as the default profile runs it (TF32 off, the L2 flushed before
// each call), timed cold with CUDA events (the fastest of 3 after a warm-up), against the floor
// the timing stage computes (roofline.h: matmul FLOPs and each conv's channel contraction at the
// compute ceiling, the minimal HBM bytes at the bandwidth ceiling), with the ceilings theoretical
// and, second, measured on this GPU (measureCeilings), as a worker that measured them uses. A task
// whose reference runs below floor × (1 − margin) fails: its floor would flag honest answers
// (the evaluator then sets reference_below_floor and flags nothing on that task, but the floor
// was meant to bound it). Prints each task's floor, its parts and the reference's time.
// KWB_FLOOR_TASKS=L2/ keeps the tasks whose id starts so; KWB_FLOOR_BUDGET_S (default 540) stops
// early, saying how many were left. Exits 77 (skipped) where there is no CUDA device.
#include "worker/analyze/roofline.h"
#include "worker/device/deviceinfo.h"
#include "worker/evaluate/evaluation.h"
#include "worker/python/scripthost.h"
#include "worker/tasks/task.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace kwb;
using json = nlohmann::json;

namespace {

/// The fastest of `calls` cold calls of the task's forward, in ms (CUDA events, the L2 flushed first).
double eagerMs(const Task& t, at::Tensor& flush, int calls)
{
    using namespace kwb::evaluation;
    const at::Device dev(at::kCUDA, 0);
    const auto cu = compileScript(t.forward);
    torch::jit::Function& fn = forwardFunction(*cu);
    const ParamDict params = makeParams(t, Scale::Full, dev, 42);
    const auto inputs = makeInputs(t, Scale::Full, dev, 42);
    const auto run = [&] { (void)fn(cloneArgs(inputs, params, t, false)); };
    run(); // handles, cuDNN's algorithm choice, lazy module loads
    cudaDeviceSynchronize();
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    double best = 1e300;
    for (int i = 0; i < calls; ++i) {
        auto args = cloneArgs(inputs, params, t, false);
        flush.zero_();
        cudaEventRecord(start, nullptr);
        (void)fn(std::move(args));
        cudaEventRecord(stop, nullptr);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        best = std::min(best, double(ms));
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return best;
}

} // namespace

int main()
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("skipped: no CUDA device\n");
        return 77;
    }
    const char* only = std::getenv("KWB_FLOOR_TASKS");
    const char* budgetEnv = std::getenv("KWB_FLOOR_BUDGET_S");
    const double budgetS = budgetEnv ? std::atof(budgetEnv) : 540;
    at::globalContext().setAllowTF32CuBLAS(false); // the default profile's (kernelbench-fp32)
    at::globalContext().setAllowTF32CuDNN(false);
    torch::NoGradGuard noGrad;
    const json facts = deviceFacts(0);
    const json measured = measureCeilings(0);
    roofline::Precision precision; // FP32, tolerance 1e-4, the L2 flushed
    const roofline::Ceilings theoretical = roofline::chooseCeilings(facts, json::object(), precision);
    const roofline::Ceilings fromMeasured = roofline::chooseCeilings(facts, measured, precision);
    std::printf("%s: compute %.0f GFLOP/s (%s) / measured %.0f; memory %.0f GB/s / measured %.0f\n",
                facts.value("name", std::string("GPU")).c_str(), theoretical.computeGflops,
                theoretical.computeKind.c_str(), fromMeasured.computeGflops, theoretical.memoryGbps,
                fromMeasured.memoryGbps);
    at::Tensor flush = torch::zeros({2 * facts.value("l2_bytes", int64_t(64) << 20) / 4},
                                    at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
    const TaskSet set = loadTaskDir(std::string(KWB_SOURCE_DIR) + "/tasks");
    const auto t0 = std::chrono::steady_clock::now();
    int checked = 0, failed = 0, skipped = 0, left = 0;
    std::printf("%-6s %10s %10s %10s %10s %8s\n", "task", "floor_ms", "compute", "memory", "eager_ms", "eager/fl");
    for (const Task& t : set.tasks) {
        if (t.isKernelBenchOnly() || (only && t.id.rfind(only, 0) != 0))
            continue;
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > budgetS) {
            ++left;
            continue;
        }
        try {
            const json analysis = analyzeTask(t, Scale::Full);
            double worst = 0; // the higher of the two floors: measured ceilings are lower, so floors higher
            roofline::Floor shown;
            for (const roofline::Ceilings* c : {&theoretical, &fromMeasured}) {
                const roofline::Floor f = roofline::floorOf(roofline::boundFlops(analysis),
                                                            roofline::boundBytes(analysis, *c, precision.l2Flush), *c);
                if (f.floorMs() >= worst) {
                    worst = f.floorMs();
                    shown = f;
                }
            }
            const double ms = eagerMs(t, flush, 3);
            const bool ok = ms >= worst * (1 - roofline::kMargin);
            std::printf("%-6s %10.4f %10.4f %10.4f %10.4f %8.2f%s\n", t.id.c_str(), worst, shown.computeMs,
                        shown.memoryMs, ms, worst > 0 ? ms / worst : 0.0, ok ? "" : "  BELOW THE FLOOR");
            ++checked;
            failed += ok ? 0 : 1;
        } catch (const std::exception& e) {
            std::printf("%-6s skipped: %s\n", t.id.c_str(), std::string(e.what()).substr(0, 160).c_str());
            ++skipped;
            cudaGetLastError();
        }
    }
    std::printf("\n%d tasks checked, %d below their floor, %d skipped (an error or no memory), %d left for the "
                "time budget (%.0f s)\n",
                checked, failed, skipped, left, budgetS);
    return failed == 0 && checked > 0 ? 0 : 1;
}
