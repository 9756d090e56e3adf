#pragma once
// Each kernel of a candidate on the roofline (issue 40 items 2-4): the work it did, the HBM bytes
// it moved and its own time (the CUPTI trace of one call), so its achieved bandwidth and FLOP/s
// can be held against the GPU's peaks and the kernel placed by itself, not only the candidate.
//
// Which of the task's work a kernel did is known only where the candidate's kernels map onto the
// traffic models (kernelbound.h) without guessing:
//   - one kernel of its own and nothing else: it did the whole task; its bytes are the measured
//     HBM traffic where `profile_traffic` ran, else the one-kernel model (the least it can move);
//   - one kernel of its own beside library kernels (cuBLAS, cuDNN), on a chain whose non-library
//     ops form one fused pass: the library kernels together did the library ops (their FLOPs), the
//     candidate's kernel the pass (library op + fused epilogue); the bytes each side moved are
//     counted where `profile_traffic` counted every kernel on its own (`traffic.per_kernel`), else
//     the model's (library op + fused epilogue, analytic).
// Anything else (several kernels of its own, torch's kernels only, several passes) has no
// placement, and the reason says why.

#include "core/protocol/evaluationresult.h"
#include "core/tasks/kernelbound.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace kwb {

struct KernelWork
{
    QString label;       ///< the kernel's traced name; "library kernels (3)" for the library's group
    QStringList kernels; ///< the traced names it covers
    bool custom = false; ///< the candidate's own kernel
    QString ops;         ///< the task's ops it did: "conv2d", "add, relu, …"
    double timeNs = 0;   ///< its time in one call of the candidate (the trace)
    double flops = 0;
    double bytes = 0;
    IntensityBasis basis = IntensityBasis::OneKernel; ///< Measured, or the analytic model its bytes are from

    double intensity() const; ///< FLOP/B; NaN without bytes
    double achievedGBps() const;
    double achievedGflops() const;
};

struct KernelPlacement
{
    QList<KernelWork> kernels;
    QString reason; ///< why there are none
};

KernelPlacement kernelPlacement(const AnalyzeResult& analysis, const EvaluationResult& evaluation);

/// The peaks a kernel is held against: the evaluation's own (its `roofline` object: the bandwidth
/// and compute ceilings the worker used for the floor on that GPU). Zero where it has none.
struct RooflinePeaks
{
    double memoryGBps = 0;
    double computeGflops = 0;
    QString computeKind; ///< "fp32_fma", "fp32_3xtf32", …
    /// "measured" or "theoretical" (`ceiling_source`): which the worker had; empty where unsaid.
    QString memorySource, computeSource;
};
RooflinePeaks rooflinePeaks(const EvaluationResult& evaluation);

/// "memory-bound: 82 % of HBM bandwidth (3.90 TB/s of 4.80 TB/s theoretical; library op + fused
/// epilogue, analytic)",
/// or for a compute-bound kernel "compute-bound: 41 % of the compute peak (…)". Empty without peaks
/// or time.
QString achievedText(const KernelWork& work, const RooflinePeaks& peaks);

/// "1.07 GB read, 0.537 GB written + 0.0625 GB written back after the call".
QString kernelTrafficText(const KernelTraffic& kernel);

/// Each kernel's measured HBM traffic (`traffic.per_kernel`) with its achieved bandwidth against
/// the evaluation's peak where it was traced, longest-running first: what every kernel moved,
/// also where kernelPlacement() cannot say which ops it did. Empty without a per-kernel profile.
struct KernelTrafficReading
{
    KernelTraffic traffic;
    bool custom = false;
    double timeNs = 0; ///< its time in the traced call; 0: not traced
    QString text;      ///< kernelTrafficText(), its time and bandwidth, "(measured)"
};
QList<KernelTrafficReading> kernelTrafficReadings(const EvaluationResult& evaluation);

/// The one line a roofline point opens to: achievedText(), the kernel's spills from its facts
/// ("4 B spilled per thread", "no spills") and its occupancy as launched ("100 % occupancy").
/// `facts` and `launch` may be null.
QString kernelWorkReading(const KernelWork& work, const RooflinePeaks& peaks, const KernelFactsInfo* facts,
                          const KernelLaunchConfig* launch);

} // namespace kwb
