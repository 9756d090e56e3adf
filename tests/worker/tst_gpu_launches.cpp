// GPU test (label gpu), issue 40 item 2: each kernel of the L2/1 reference as it ran (`launches`,
// docs/protocol.md §evaluate). Its epilogue relu_bias_add is launched by the answer's forward as
// grid [N·C, chunks] = [16384, 4] of 256 threads (hw = 126·126 = 15876, a multiple of 4: 3969
// float4 per plane in chunks of 1024), with no shared memory; the driver runs it with the
// registers ptxas gave it (compile.kernel_facts). At 32 or fewer registers a thread, blocks of 256
// fill an sm_80/sm_90 SM (8 blocks, 64 warps): theoretical occupancy 1. cuDNN's convolution has an
// occupancy of its own in (0, 1], and every launch's time adds up to the trace's kernels.
// Exits 77 (skipped) without a CUDA device.
#include "workerclient.h"

#include <cmath>
#include <csignal>
#include <cstdio>

using json = nlohmann::json;
using kwb::test::readFile;
using kwb::test::WorkerClient;

namespace {
kwb::test::CheckLog checks;
void check(bool ok, const std::string& what, const json& detail = json())
{
    checks.check(ok, what, detail);
}
} // namespace

int main()
{
    std::signal(SIGPIPE, SIG_IGN);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const std::string src = KWB_SOURCE_DIR;
    WorkerClient worker(kwb::test::findWorker(KWB_WORKER_PATH), {"--tasks-dir", src + "/tasks"});
    if (const int rc = kwb::test::startGpuWorker(worker))
        return rc;
    const json device = worker.request({{"type", "device"}}, 60).response;
    const std::string arch = device.value("arch", std::string());
    std::printf("device: %s (%s)\n", device.value("name", std::string("?")).c_str(), arch.c_str());
    const std::string answer = readFile(src + "/tests/fixtures/candidates/reference/L2_01.md");
    const json r =
        worker.request({{"type", "evaluate"}, {"task", "L2/1"}, {"answer", answer}, {"timing_trials", 20}}, 300)
            .response;
    check(r.value("status", std::string()) == "correct", "L2/1 reference: correct", r.value("message", json()));
    const json launches = r.value("launches", json::array());
    std::printf("launches: %s\n", launches.dump().substr(0, 3000).c_str());
    check(launches.is_array() && !launches.empty(), "launches listed");

    int factsRegisters = -1;
    for (const json& k : r.value("compile", json::object()).value("kernel_facts", json::array()))
        if (k.value("name", std::string()) == "relu_bias_add")
            factsRegisters = k.value("registers", -1);
    check(factsRegisters > 0, "kernel_facts give relu_bias_add's registers", factsRegisters);

    const json* epilogue = nullptr;
    int library = 0;
    for (const json& l : launches) {
        if (l.value("name", std::string()) == "relu_bias_add")
            epilogue = &l;
        else if (!l.value("custom", true))
            ++library;
        const json occ = l.value("occupancy", json::object());
        const double fraction = kwb::test::numberOr(occ, "fraction");
        check(!occ.contains("error") && fraction > 0 && fraction <= 1 &&
                  kwb::test::numberOr(occ, "active_blocks_per_sm") >= 1,
              "occupancy in (0, 1] with at least one block per SM: " + l.value("name", std::string()).substr(0, 80),
              occ);
        check(l.value("time_ns", 0.0) > 0 && l.value("calls", 0) >= 1,
              "time and calls: " + l.value("name", std::string()).substr(0, 80));
    }
    check(library >= 1, "cuDNN's kernels are listed beside the candidate's", library);
    if (!epilogue) {
        check(false, "relu_bias_add is among the launches");
    } else {
        const json& e = *epilogue;
        check(e.value("custom", false), "relu_bias_add is the candidate's own");
        check(e.value("grid", json()) == json::array({16384, 4, 1}), "grid [16384, 4, 1] as the forward launched it",
              e.value("grid", json()));
        check(e.value("block", json()) == json::array({256, 1, 1}), "block [256, 1, 1]", e.value("block", json()));
        check(e.value("dynamic_shared_bytes", -1) == 0 && e.value("static_shared_bytes", -1) == 0, "no shared memory");
        check(e.value("calls", 0) == 1, "one call per forward");
        check(e.value("registers", -1) == factsRegisters, "the driver's registers are the cubin's (kernel_facts)",
              {{"launch", e.value("registers", -1)}, {"facts", factsRegisters}});
        const json occ = e.value("occupancy", json::object());
        if (factsRegisters > 0 && factsRegisters <= 32 && (arch == "sm_80" || arch == "sm_90")) {
            check(occ.value("active_blocks_per_sm", 0) == 8 && occ.value("active_warps_per_sm", 0) == 64 &&
                      std::abs(occ.value("fraction", 0.0) - 1.0) < 1e-12,
                  "8 blocks of 256 threads fill an SM: occupancy 1", occ);
        }
        double traced = 0;
        for (const json& k : r.value("kernels", json::array()))
            if (k.value("name", std::string()) == "relu_bias_add")
                traced = k.value("time_ns", 0.0);
        check(std::abs(traced - e.value("time_ns", 0.0)) < 1, "its time is the trace's", {{"kernels", traced}});
    }
    std::printf("%s: %d failure(s)\n", checks.failures ? "FAIL" : "PASS", checks.failures);
    return checks.failures ? 1 : 0;
}
