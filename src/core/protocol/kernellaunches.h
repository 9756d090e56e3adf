#pragma once
// `launches` of an evaluate response (docs/protocol.md §evaluate, issue 40 item 2) as values: each
// kernel the trace saw, per launch configuration, as the driver ran it (grid, block, registers,
// shared and local memory) with its theoretical occupancy on the GPU it ran on, which the worker
// computes with the toolkit's occupancy calculator. decodeKernelLaunches() is the one place that
// reads its keys; launchReading() the one way pages and `kwb eval` put a launch in words.

#include "core/protocol/kernelfacts.h"

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

#include <array>
#include <optional>

namespace kwb {

/// `occupancy` of a launch: blocks and warps an SM holds at once, and what binds.
struct OccupancyInfo
{
    QString error; ///< why the worker could not compute it; empty when it did
    int activeBlocksPerSm = 0;
    int activeWarpsPerSm = 0;
    int maxWarpsPerSm = 0;
    double fraction = 0;   ///< active warps / the SM's maximum, 0..1
    QStringList limitedBy; ///< "registers", "shared_memory", "warps", "blocks", "barriers"
};

struct KernelLaunchConfig
{
    QString name; ///< as traced (demangled)
    bool custom = false;
    int calls = 0;
    double timeNs = 0; ///< all its calls in the trace (one call of the candidate)
    std::array<qint64, 3> grid{{0, 0, 0}}, block{{0, 0, 0}};
    std::optional<int> registers;
    std::optional<qint64> staticSharedBytes, dynamicSharedBytes, localBytes, sharedCarveoutBytes;
    std::optional<OccupancyInfo> occupancy;

    qint64 threadsPerBlock() const { return block[0] * block[1] * block[2]; }
    qint64 blocks() const { return grid[0] * grid[1] * grid[2]; }
};

/// The launches of an evaluate response (its top-level object); `omitted` gets launches_omitted.
/// Empty where the response has none (no GPU, an older worker, a trace that failed).
QList<KernelLaunchConfig> decodeKernelLaunches(const QJsonObject& evaluation, int* omitted = nullptr);

/// "grid 4096×1×1 of 256 threads, 26 registers, no shared memory: 8 blocks per SM, 100 %
/// theoretical occupancy (limited by warps); 1 call, 12.3 µs".
QString launchReading(const KernelLaunchConfig& launch);
/// "grid 4096×1×1 of 256 threads", with the block's shape where it is not flat: "(16×16×1)".
QString launchShapeText(const KernelLaunchConfig& launch);
/// "100 % (8 blocks/SM, limited by warps)"; "—" without one, the worker's reason where it could not.
QString occupancyText(const std::optional<OccupancyInfo>& occupancy);
/// "registers" → "registers", "shared_memory" → "shared memory", … joined with " and ".
QString limitedByText(const QStringList& limitedBy);

/// The launches of a compiled kernel: those traced under its symbol or its demangled name.
QList<KernelLaunchConfig> launchesOf(const QList<KernelLaunchConfig>& launches, const KernelFactsInfo& kernel);

} // namespace kwb
