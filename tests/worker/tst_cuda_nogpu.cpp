// The driver, CUPTI and device queries answer cleanly on a machine without a GPU. Where a GPU is
// present, the no-GPU expectations are skipped and only "nothing crashes" is checked.
#include "worker/compile/nvrtccompiler.h"
#include "worker/device/cudadriver.h"
#include "worker/device/deviceinfo.h"
#include "worker/measure/clockprobe.h"
#include "worker/measure/cuptitracer.h"

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <string>

using namespace kwb;

namespace {

bool gpuPresent()
{
    int n = 0;
    bool present = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    cudaGetLastError();
    return present;
}

} // namespace

TEST_CASE("CudaDriver::get")
{
    std::string why;
    const CudaDriver* d = CudaDriver::get(&why);
    if (gpuPresent()) {
        MESSAGE("a GPU is present: skipping the no-driver expectations");
        REQUIRE(d != nullptr);
        CHECK(why.empty());
        CHECK(d->driverVersion > 0);
        CHECK(d->errorString(CUDA_ERROR_INVALID_VALUE).find("CUDA_ERROR_INVALID_VALUE") == 0);
        return;
    }
    CHECK(d == nullptr);
    INFO(why);
    CHECK_FALSE(why.empty());
    // where no driver is installed at all, the message says so; a driver without a device fails cuInit
    CHECK((why.find("libcuda.so.1 not found: no NVIDIA driver") == 0 || why.find("cuInit failed") == 0));
    CHECK(CudaDriver::get() == nullptr); // asked again: the same answer, no crash
}

TEST_CASE("LoadedModule::load without a driver")
{
    if (gpuPresent()) {
        MESSAGE("a GPU is present: skipped");
        return;
    }
    std::string err;
    auto m = LoadedModule::load(std::vector<char>{'\x7f', 'E', 'L', 'F'}, &err);
    CHECK(m == nullptr);
    CHECK_FALSE(err.empty());
}

TEST_CASE("KernelTracer without a GPU")
{
    KernelTracer t;
    std::string err;
    if (gpuPresent()) {
        MESSAGE("a GPU is present: only checking that tracing starts and stops");
        CHECK(t.start(&err));
        t.stop();
        CHECK(t.take().empty());
        return;
    }
    CHECK_FALSE(t.start(&err));
    CHECK(err.find("needs an NVIDIA GPU") != std::string::npos);
    CHECK_FALSE(t.running());
    t.stop(); // harmless
    CHECK(t.take().empty());
    CHECK_FALSE(KernelTracer::pushExternalId(7));
    CHECK_FALSE(KernelTracer::popExternalId());
}

TEST_CASE("demangleKernelName")
{
    CHECK(demangleKernelName("bias_relu") == "bias_relu");
    CHECK(demangleKernelName("_Z3fooPfi") == "foo(float*, int)");
    CHECK(demangleKernelName(nullptr) == "?");
}

TEST_CASE("deviceFacts and measureCeilings without a GPU")
{
    if (gpuPresent()) {
        MESSAGE("a GPU is present: checking the facts' shape only");
        nlohmann::json f = deviceFacts(0);
        CHECK(f.at("available").get<bool>());
        CHECK(f.at("arch").get<std::string>().rfind("sm_", 0) == 0);
        CHECK(f.at("sm_count").get<int>() > 0);
        CHECK_FALSE(deviceFacts(1000).at("available").get<bool>());
        return;
    }
    nlohmann::json f = deviceFacts(0);
    INFO(f.dump());
    CHECK_FALSE(f.at("available").get<bool>());
    CHECK_FALSE(f.at("reason").get<std::string>().empty());

    nlohmann::json c = measureCeilings(0);
    INFO(c.dump());
    CHECK_FALSE(c.at("available").get<bool>());
    CHECK(c.at("reason") == f.at("reason"));
}

TEST_CASE("the clock probe compiles with NVRTC, and says why it cannot run without a GPU")
{
    // issue 13: the throttle detection's kernel (clock64 and %globaltimer per SM) must compile
    // wherever the worker does, or no sample would ever be judged.
    const CompileResult cr = compileCuda(ClockProbe::source(), "sm_90");
    CHECK_MESSAGE(cr.ok, cr.log);
    CHECK_FALSE(cr.cubin.empty());
    if (!gpuPresent()) {
        std::string why;
        CHECK(ClockProbe::create(0, &why) == nullptr);
        CHECK_FALSE(why.empty());
    }
}
