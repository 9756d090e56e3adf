#pragma once
// `compile.kernel_facts` of an evaluate response (docs/protocol.md §evaluate, issue 40) as values:
// what each compiled kernel is made of (registers, local, shared and constant memory, the block
// size it can launch with, its PTX and SASS), read by the worker from the cubin without a GPU.
// decodeKernelFacts() is the one place that reads its keys; kernelFactRows() and kernelReading()
// are the one way the pages (Diff, Monitor) and the summary put them in words.

#include <QJsonObject>
#include <QList>
#include <QString>

#include <optional>

namespace kwb {

struct KernelFactsInfo
{
    QString name;      ///< the symbol ("relu_bias_add", "_Z2tkILi64EEvPf")
    QString demangled; ///< "void tk<64>(float*)"; the name where it is not mangled
    QString arch;      ///< "sm_90"
    QString module;    ///< the torch extension it came from (KernelBench format); empty for NVRTC's
    std::optional<int> registers, barriers;
    std::optional<qint64> localBytes;                      ///< the stack frame per thread: spills and local arrays
    std::optional<qint64> spillStoreBytes, spillLoadBytes; ///< ptxas's report (NVRTC only)
    std::optional<qint64> staticSharedBytes, constantBytes, moduleConstantBytes, paramBytes;
    int maxThreadsPerBlock = 0;
    QString maxThreadsLimit; ///< "launch_bounds", "reqntid", "registers" or "hardware"
    std::optional<QString> ptx, sass;
    QString ptxNote, sassNote; ///< why one is absent, or that it was cut

    QString displayName() const { return demangled.isEmpty() ? name : demangled; }
};

/// The kernels of `compile` (an evaluate response's compile object); `note` gets
/// kernel_facts_note (what could not be read). Empty where the response has none (an older
/// worker, a compile error).
QList<KernelFactsInfo> decodeKernelFacts(const QJsonObject& compile, QString* note = nullptr);

/// One row of the facts table: what, and its value as text ("—" where unknown).
struct KernelFactRow
{
    QString label;
    QString value;
};
/// The facts table of a kernel, in the one order every page shows.
QList<KernelFactRow> kernelFactRows(const KernelFactsInfo& kernel);
/// The rows' labels, for a table of kernels that may be missing on one side.
QStringList kernelFactLabels();

/// The kernel in one line a teacher can read off: "32 registers, 256 B spilled per thread (stores
/// 256 B, loads 256 B), 4000 B static shared; blocks of up to 128 threads (launch bounds)".
QString kernelReading(const KernelFactsInfo& kernel);

/// The kernel of `kernels` called `name` (its symbol), or null.
const KernelFactsInfo* findKernel(const QList<KernelFactsInfo>& kernels, const QString& name);

} // namespace kwb
