#pragma once
// torch's process-wide settings that decide how the reference runs (issue 39 item 4): a
// KernelBench-format answer runs Python in the worker's process and can change any of them, at
// import or in forward (`torch.backends.cudnn.enabled = False` made the reference run without
// cuDNN and the answer "1.54x faster"). The evaluator owns them: it sets its own before the
// reference and the candidate run and compares after the candidate did (evaluator.cpp).
// Header-only: included by evaluator.cpp alone, which already pays for torch's headers.

#include <ATen/Context.h>
#include <c10/core/DefaultDtype.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace kwb {

struct TorchGlobals
{
    bool cudnnEnabled = true;
    bool cudnnBenchmark = false;
    bool cudnnDeterministic = false;
    bool deterministicAlgorithms = false;
    bool tf32CuBLAS = false;
    bool tf32CuDNN = true;
    int matmulPrecision = 0; // at::Float32MatmulPrecision as a number
    // A bool in torch 1.x, an enum (reduced precision × split-K) in newer ones: kept as a number.
    int fp16ReductionCuBLAS = 1;
#if TORCH_VERSION_MAJOR >= 2
    int bf16ReductionCuBLAS = 1; // not in torch 1.13 (Debian's)
#endif
    std::string defaultDtype = "float32";
    bool flushDenormal = false; // the CPU's FTZ/DAZ bits: what torch.set_flush_denormal sets
#if TORCH_VERSION_MAJOR >= 2
    bool flashSdp = true;
    bool memEfficientSdp = true;
    bool mathSdp = true;
#endif

    static TorchGlobals capture()
    {
        at::Context& c = at::globalContext();
        TorchGlobals g;
        g.cudnnEnabled = c.userEnabledCuDNN();
        g.cudnnBenchmark = c.benchmarkCuDNN();
        g.cudnnDeterministic = c.deterministicCuDNN();
        g.deterministicAlgorithms = c.deterministicAlgorithms();
        g.tf32CuBLAS = c.allowTF32CuBLAS();
        g.tf32CuDNN = c.allowTF32CuDNN();
        g.matmulPrecision = static_cast<int>(c.float32MatmulPrecision());
        g.fp16ReductionCuBLAS = static_cast<int>(c.allowFP16ReductionCuBLAS());
#if TORCH_VERSION_MAJOR >= 2
        g.bf16ReductionCuBLAS = static_cast<int>(c.allowBF16ReductionCuBLAS());
#endif
        g.defaultDtype = std::string(c10::get_default_dtype().name());
        g.flushDenormal = flushDenormalBits();
#if TORCH_VERSION_MAJOR >= 2
        g.flashSdp = c.userEnabledFlashSDP();
        g.memEfficientSdp = c.userEnabledMemEfficientSDP();
        g.mathSdp = c.userEnabledMathSDP();
#endif
        return g;
    }

    /// Sets every setting to this one's. The default dtype only where it differs: its setter takes
    /// a TypeMeta, and the only dtypes torch accepts as default are the floating ones.
    void apply() const
    {
        at::Context& c = at::globalContext();
        c.setUserEnabledCuDNN(cudnnEnabled);
        c.setBenchmarkCuDNN(cudnnBenchmark);
        c.setDeterministicCuDNN(cudnnDeterministic);
        if (c.deterministicAlgorithms() != deterministicAlgorithms)
            c.setDeterministicAlgorithms(deterministicAlgorithms, /*warn_only=*/false);
        c.setAllowTF32CuBLAS(tf32CuBLAS);
        c.setAllowTF32CuDNN(tf32CuDNN);
        if (static_cast<int>(c.float32MatmulPrecision()) != matmulPrecision)
            c.setFloat32MatmulPrecision(precisionName(matmulPrecision)); // the setter both APIs have
        // Set by the one argument both APIs take (split-K stays allowed, the default), whichever
        // value gives back the number read.
        for (const bool reduced : {true, false})
            if (static_cast<int>(c.allowFP16ReductionCuBLAS()) != fp16ReductionCuBLAS)
                c.setAllowFP16ReductionCuBLAS(reduced);
#if TORCH_VERSION_MAJOR >= 2
        for (const bool reduced : {true, false})
            if (static_cast<int>(c.allowBF16ReductionCuBLAS()) != bf16ReductionCuBLAS)
                c.setAllowBF16ReductionCuBLAS(reduced);
#endif
        if (std::string(c10::get_default_dtype().name()) != defaultDtype) {
            for (const caffe2::TypeMeta t :
                 {caffe2::TypeMeta::Make<float>(), caffe2::TypeMeta::Make<double>(),
                  caffe2::TypeMeta::Make<c10::Half>(), caffe2::TypeMeta::Make<c10::BFloat16>()})
                if (std::string(t.name()) == defaultDtype)
                    c10::set_default_dtype(t);
        }
        if (flushDenormalBits() != flushDenormal)
            c.setFlushDenormal(flushDenormal);
#if TORCH_VERSION_MAJOR >= 2
        c.setSDPUseFlash(flashSdp);
        c.setSDPUseMemEfficient(memEfficientSdp);
        c.setSDPUseMath(mathSdp);
#endif
    }

    /// Each setting that differs, as {"setting", "was", "now"} with the names Python uses.
    nlohmann::json changesTo(const TorchGlobals& now) const
    {
        nlohmann::json out = nlohmann::json::array();
        const auto add = [&out](const char* name, const nlohmann::json& was, const nlohmann::json& is) {
            if (was != is)
                out.push_back({{"setting", name}, {"was", was}, {"now", is}});
        };
        add("torch.backends.cudnn.enabled", cudnnEnabled, now.cudnnEnabled);
        add("torch.backends.cudnn.benchmark", cudnnBenchmark, now.cudnnBenchmark);
        add("torch.backends.cudnn.deterministic", cudnnDeterministic, now.cudnnDeterministic);
        add("torch.use_deterministic_algorithms", deterministicAlgorithms, now.deterministicAlgorithms);
        add("torch.backends.cuda.matmul.allow_tf32", tf32CuBLAS, now.tf32CuBLAS);
        add("torch.backends.cudnn.allow_tf32", tf32CuDNN, now.tf32CuDNN);
        add("torch.get_float32_matmul_precision", precisionName(matmulPrecision), precisionName(now.matmulPrecision));
        add("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction", fp16ReductionCuBLAS,
            now.fp16ReductionCuBLAS);
#if TORCH_VERSION_MAJOR >= 2
        add("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction", bf16ReductionCuBLAS,
            now.bf16ReductionCuBLAS);
#endif
        add("torch.get_default_dtype", defaultDtype, now.defaultDtype);
        add("torch.set_flush_denormal", flushDenormal, now.flushDenormal);
#if TORCH_VERSION_MAJOR >= 2
        add("torch.backends.cuda.flash_sdp_enabled", flashSdp, now.flashSdp);
        add("torch.backends.cuda.mem_efficient_sdp_enabled", memEfficientSdp, now.memEfficientSdp);
        add("torch.backends.cuda.math_sdp_enabled", mathSdp, now.mathSdp);
#endif
        return out;
    }

    static std::string precisionName(int p)
    {
        switch (static_cast<at::Float32MatmulPrecision>(p)) {
        case at::Float32MatmulPrecision::HIGHEST: return "highest";
        case at::Float32MatmulPrecision::HIGH: return "high";
        case at::Float32MatmulPrecision::MEDIUM: return "medium";
        }
        return std::to_string(p);
    }

    static bool flushDenormalBits()
    {
#if defined(__x86_64__) || defined(__i386__)
        return (_mm_getcsr() & 0x8040) != 0; // FTZ (bit 15) or DAZ (bit 6)
#else
        return false;
#endif
    }
};

/// "torch.backends.cudnn.enabled: true → false; …", for messages.
inline std::string describeChanges(const nlohmann::json& changes)
{
    std::string out;
    for (const auto& c : changes)
        out += (out.empty() ? "" : "; ") + c.value("setting", std::string()) + ": " + c["was"].dump() + " \u2192 " +
               c["now"].dump();
    return out;
}

} // namespace kwb
