#pragma once
// Whose doing a candidate's out-of-memory was. Torch's allocator reports its own failures to the
// worker (gpu_memory.out_of_memory: the request, the device's free and total bytes then), and kwb,
// outside the sandbox, asks the driver (nvidia-smi --query-compute-apps) which processes held the
// rest of that GPU. Memory held by any process outside the answering worker's own process tree
// (another program: a model server on the same GPU, another kwb, a spare of this queue) is the
// machine's; where it covers the shortfall (requested - free), the allocation would have fit
// without it, and the evaluation says nothing about the candidate (docs/protocol.md, "Out of memory").
// The candidate's own processes (its worker and whatever it started) count as the candidate's.
// QtCore only.

#include "core/protocol/evaluationresult.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>

namespace kwb {

/// One compute process on a GPU, as nvidia-smi lists it.
struct GpuProcessUse
{
    qint64 pid = 0;
    double usedBytes = 0;
    QString name;
};

/// The lines of `nvidia-smi --query-compute-apps=pid,used_memory,process_name
/// --format=csv,noheader,nounits` (used_memory in MiB; a name may hold commas). Lines that do
/// not parse (a "[N/A]" use, a message) are left out.
QList<GpuProcessUse> parseComputeApps(const QByteArray& text);

/// The memory other processes held on the GPU.
struct MemoryElsewhere
{
    bool known = false;
    QString why; ///< where not known
    double bytes = 0;
    QStringList holders; ///< "python3 (pid 4242): 70.12 GiB", largest first
};

/// Sums the processes for which `isCandidates` is false. `exists` says whether a pid is a process
/// of this machine's view (/proc): a pid that is not (one that ended meanwhile, or from another
/// PID namespace, as in a container) is left out, and where every listed process is such, nothing
/// is known.
MemoryElsewhere memoryElsewhere(const QList<GpuProcessUse>& processes, const std::function<bool(qint64)>& isCandidates,
                                const std::function<bool(qint64)>& exists);

/// memoryElsewhere of `nvidia-smi` run for the GPU `pciBusId` (as the worker names it), the
/// candidate's processes being `workerPid`'s tree. Unknown where nvidia-smi cannot be run or
/// fails, or no bus id or pid is given.
MemoryElsewhere probeMemoryElsewhere(const QString& pciBusId, qint64 workerPid, int timeoutMs = 5000);

enum class OutOfMemoryFault {
    None,       ///< not an allocator's out-of-memory (or none reported): the verdict stands
    Candidates, ///< the request would not have fit even without the memory held elsewhere
    Machines,   ///< the memory held elsewhere covers the shortfall
    Unknown,    ///< who held the rest cannot be told here: the verdict stands
};

/// The rule: the candidate's runtime_error with an allocator's report, whose shortfall (requested
/// minus free, positive) the memory held elsewhere covers, is the machine's.
OutOfMemoryFault judgeOutOfMemory(const EvaluationResult& result, const MemoryElsewhere& elsewhere);

/// out_of_memory_elsewhere's message: "70.12 GiB of this GPU's memory held by 2 other processes
/// (python3 (pid 4242): 70.00 GiB, …); the evaluation asked torch for 4.00 GiB with 1.20 GiB free
/// of 80.00 GiB. <the worker's message>".
QString describeOutOfMemoryElsewhere(const EvaluationResult& result, const MemoryElsewhere& elsewhere);

/// "70.12 GiB", as torch's own out-of-memory messages and the holders' list write sizes.
QString formatGiB(double bytes);
/// For a line of its own (kwb device, a run's warning): "unknown: <why>", "none", the one holder,
/// or the sum and the first three holders.
QString summarizeMemoryElsewhere(const MemoryElsewhere& elsewhere);

} // namespace kwb
