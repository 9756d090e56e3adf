#include "app/charts/rooflinekernels.h"

#include "core/protocol/evaluationresult.h"
#include "core/tasks/kernelwork.h"

#include <cmath>

namespace kwb::app {

QList<RooflineKernel> rooflineKernels(const AnalyzeResult& analysis, const EvaluationResult& e, QString* why)
{
    const KernelPlacement placement = kernelPlacement(analysis, e);
    if (why)
        *why = e.kernels.isEmpty() ? QString() : placement.reason;
    const RooflinePeaks peaks = rooflinePeaks(e);
    QList<RooflineKernel> out;
    for (const KernelWork& w : placement.kernels) {
        const double intensity = w.intensity();
        const double gflops = w.achievedGflops();
        if (!(intensity > 0) || !(gflops > 0) || !std::isfinite(intensity) || !std::isfinite(gflops))
            continue;
        const KernelFactsInfo* facts = nullptr;
        if (w.custom && e.compile)
            for (const KernelFactsInfo& k : e.compile->kernelFacts)
                if (w.kernels.contains(k.name) || w.kernels.contains(k.demangled))
                    facts = &k;
        const KernelLaunchConfig* launch = nullptr;
        for (const KernelLaunchConfig& l : e.launches)
            if (!launch && w.kernels.contains(l.name))
                launch = &l; // the longest-running configuration: launches come sorted by time
        out.append(RooflineKernel{w.label, w.ops, intensity, gflops, w.basis, w.custom,
                                  kernelWorkReading(w, peaks, facts, launch)});
    }
    return out;
}

} // namespace kwb::app
