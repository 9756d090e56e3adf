// GPU test (label gpu): torch's allocator's own out-of-memory report (docs/protocol.md, "Out of
// memory"). This test process holds most of the GPU's memory (cudaMalloc: it stands for another
// program on the GPU, a model server), and a KernelBench-format answer asks torch for more than
// is left: the worker answers runtime_error with gpu_memory.out_of_memory (the request, the free
// bytes then, the device's bus). An answer that raises torch's words itself gets no report. And
// nvidia-smi, asked for that bus in NVML's form (as kwb asks it), lists this process with what it
// holds: the facts kwb's rule rests on, on this machine. Exits 77 (skipped) without a device.
#include "workerclient.h"

#include <cuda_runtime.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <unistd.h>

using json = nlohmann::json;
using kwb::test::numberOr;
using kwb::test::WorkerClient;

namespace {
kwb::test::CheckLog checks;
constexpr double kGiB = double(1LL << 30);

std::string answerAsking(double gib)
{
    return "An answer that asks torch for " + std::to_string(gib) +
           " GiB.\n\n```python\nimport torch\nimport torch.nn as nn\n\n"
           "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
           "    def forward(self, A, B):\n        big = torch.empty(int(" +
           std::to_string(gib) + " * 2**30), dtype=torch.uint8, device=A.device)\n" +
           "        return torch.matmul(A, B) + big[:1].float() * 0\n```\n";
}

const char* const kForged =
    "An answer that raises torch's words itself.\n\n```python\nimport torch\nimport torch.nn as nn\n\n"
    "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
    "    def forward(self, A, B):\n        raise RuntimeError('CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 "
    "has a "
    "total capacity of 79.18 GiB of which 406.56 MiB is free.')\n```\n";

/// nvidia-smi's compute processes of the GPU `bus` (NVML's form), as kwb asks.
std::string computeApps(const std::string& bus)
{
    const std::string cmd =
        "nvidia-smi --query-compute-apps=pid,used_memory,process_name --format=csv,noheader,nounits -i " + bus;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    std::string out;
    if (!pipe)
        return out;
    std::array<char, 512> buf{};
    while (fgets(buf.data(), int(buf.size()), pipe.get()))
        out += buf.data();
    return out;
}
} // namespace

int main()
{
    const std::string src = KWB_SOURCE_DIR;
    WorkerClient worker(kwb::test::findWorker(KWB_WORKER_PATH), {"--tasks-dir", src + "/tasks"});
    if (const int rc = kwb::test::startGpuWorker(worker))
        return rc;
    const json base = {{"type", "evaluate"}, {"task", "L1/1"}, {"answer_format", "kernelbench"}};

    // Another program on the GPU: everything but 6 GiB.
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
        return std::printf("SKIP: no CUDA device for the test's own allocation\n"), 77;
    const size_t hogBytes = freeBytes - size_t(6 * kGiB);
    void* hog = nullptr;
    checks.check(cudaMalloc(&hog, hogBytes) == cudaSuccess, "the test holds all but 6 GiB of the GPU");
    std::printf("the test holds %.2f GiB of %.2f GiB\n", double(hogBytes) / kGiB, double(totalBytes) / kGiB);

    json r = base;
    r["answer"] = answerAsking(10);
    const json oom = worker.request(r, 300).response;
    const json report = oom.value("gpu_memory", json::object()).value("out_of_memory", json());
    std::printf("asking for 10 GiB: status %s, out_of_memory %s\n  message: %.300s\n",
                oom.value("status", std::string("?")).c_str(), report.dump().c_str(),
                oom.value("message", std::string()).c_str());
    checks.check(oom.value("status", std::string()) == "runtime_error", "asking for more than is left: runtime_error",
                 oom.value("message", std::string()));
    checks.check(report.is_object() && numberOr(report, "count") >= 1,
                 "the allocator's report is in gpu_memory.out_of_memory", report);
    checks.check(numberOr(report, "requested_bytes") >= 10 * kGiB, "it says what was asked for (10 GiB)", report);
    checks.check(numberOr(report, "free_bytes") >= 0 && numberOr(report, "free_bytes") < 6 * kGiB,
                 "and the free bytes then (< 6 GiB)", report);
    checks.check(std::abs(numberOr(report, "total_bytes") - double(totalBytes)) < kGiB, "and the device's total",
                 report);
    const std::string bus = report.is_object() ? report.value("pci_bus_id", std::string()) : std::string();
    checks.check(!bus.empty(), "and the device's PCI bus id", report);
    // The shortfall is covered by what this process holds: kwb's rule would call it the machine's.
    checks.check(numberOr(report, "requested_bytes") - numberOr(report, "free_bytes") <= double(hogBytes),
                 "what the test holds covers the shortfall");

    r["answer"] = kForged;
    const json forged = worker.request(r, 300).response;
    std::printf("forged words: status %s, gpu_memory %s\n", forged.value("status", std::string("?")).c_str(),
                forged.value("gpu_memory", json()).dump().c_str());
    checks.check(forged.value("status", std::string()) == "runtime_error",
                 "torch's words raised by the answer: runtime_error");
    checks.check(!forged.value("gpu_memory", json::object()).contains("out_of_memory"), "and no allocator report");

    // nvidia-smi lists this process with what it holds, asked for the bus as kwb asks (NVML's
    // eight-digit domain).
    if (!bus.empty()) {
        std::string nvmlBus = bus.substr(0, bus.find(':'));
        nvmlBus = std::string(8 - std::min<size_t>(8, nvmlBus.size()), '0') + nvmlBus + bus.substr(bus.find(':'));
        const std::string apps = computeApps(nvmlBus);
        std::printf("nvidia-smi -i %s:\n%s", nvmlBus.c_str(), apps.c_str());
        const std::string mine = std::to_string(::getpid()) + ",";
        const size_t at = apps.find(mine);
        checks.check(at != std::string::npos && (at == 0 || apps[at - 1] == '\n'),
                     "nvidia-smi lists this process on that GPU", apps);
        if (at != std::string::npos) {
            const double mib = std::atof(apps.c_str() + at + mine.size());
            checks.check(mib * 1048576.0 >= double(hogBytes), "with at least what it holds", apps.substr(at, 80));
        }
    }
    cudaFree(hog);

    // With the memory back, the same answer is judged on its own: no report.
    r["answer"] = answerAsking(10);
    const json alone = worker.request(r, 300).response;
    std::printf("asking for 10 GiB with the memory back: status %s\n", alone.value("status", std::string("?")).c_str());
    checks.check(!alone.value("gpu_memory", json::object()).contains("out_of_memory"),
                 "with the memory back the allocation succeeds: no report", alone.value("message", std::string()));
    worker.stop();
    std::printf("%s: %d failure(s)\n", checks.failures ? "FAIL" : "PASS", checks.failures);
    return checks.failures ? 1 : 0;
}
