#include "core/protocol/evaluationstatus.h"

#include <QHash>

namespace kwb {

namespace {
using S = EvaluationStatus;
using C = StatusCategory;

// One row per status. Colours (the Diff page's palette, now also the run tree's): green for
// success, red for a wrong or failing kernel, orange for code that did not build, purple for the
// sandbox, dark red for a hang or crash, blue for the machine's faults, grey for the rest.
const QList<EvaluationStatusInfo> kTable = {
    {S::Unknown, "", "unknown", C::NotEvaluated, false, 0xff6e7781},
    {S::Correct, "correct", "correct", C::Success, true, 0xff1a7f37},
    {S::Incorrect, "incorrect", "incorrect", C::ModelFault, true, 0xffcf222e},
    {S::RuntimeError, "runtime_error", "runtime error", C::ModelFault, true, 0xffcf222e},
    // Refused before NVRTC (an include outside the toolkit) or after it (the host-code sandbox):
    // the status alone does not say whether it compiled, `compile.ok` does.
    {S::Rejected, "rejected", "rejected", C::ModelFault, false, 0xff8250df},
    {S::CompileError, "compile_error", "compile error", C::ModelFault, false, 0xffbc4c00},
    {S::FormatError, "format_error", "format error", C::ModelFault, false, 0xffbc4c00},
    // Compiled where the compile ran (a native answer's NVRTC, a KernelBench-format answer's build
    // on a machine with no GPU); not where the machine could not build it (a KernelBench-format
    // answer where torch has no CUDA): `compile.ok` says which.
    {S::NoDevice, "no_device", "no device", C::MachineFault, false, 0xff0969da},
    {S::Timeout, "timeout", "timeout", C::ModelFault, false, 0xffa40e26},
    {S::Crashed, "crashed", "crashed", C::ModelFault, false, 0xffa40e26},
    {S::StartFailed, "start_failed", "worker did not start", C::MachineFault, false, 0xff0969da},
    {S::WorkerLost, "worker_lost", "worker lost", C::MachineFault, false, 0xff0969da},
    {S::ProtocolError, "protocol_error", "protocol error", C::MachineFault, false, 0xff0969da},
    {S::BadRequest, "bad_request", "bad request", C::NotEvaluated, false, 0xff6e7781},
    {S::Cancelled, "cancelled", "cancelled", C::NotEvaluated, false, 0xff6e7781},
    // During an evaluate the candidate's host code ran in the worker that went over the limit;
    // over it before hello is start_failed (core/workers/workersupervisor.h).
    {S::ResourceLimit, "resource_limit", "over a host limit", C::ModelFault, false, 0xffa40e26},
    // Built and started; its allocation failed for memory other processes held (the queue ran it
    // again alone first): whether it compiled, `compile.ok` of a stored response would say, and
    // there is none.
    {S::OutOfMemoryElsewhere, "out_of_memory_elsewhere", "GPU memory held elsewhere", C::MachineFault, false,
     0xff0969da},
};
} // namespace

const QList<EvaluationStatusInfo>& evaluationStatusTable()
{
    return kTable;
}

const EvaluationStatusInfo& statusInfo(EvaluationStatus status)
{
    const qsizetype i = qsizetype(status);
    return i >= 0 && i < kTable.size() ? kTable.at(i) : kTable.first();
}

EvaluationStatus evaluationStatusFromWire(const QString& name)
{
    static const QHash<QString, EvaluationStatus> byName = [] {
        QHash<QString, EvaluationStatus> h;
        for (const EvaluationStatusInfo& info : kTable)
            if (*info.wireName)
                h.insert(QString::fromLatin1(info.wireName), info.status);
        return h;
    }();
    return byName.value(name, EvaluationStatus::Unknown);
}

QString wireName(EvaluationStatus status)
{
    return QString::fromLatin1(statusInfo(status).wireName);
}

QString statusLabel(EvaluationStatus status)
{
    return QString::fromLatin1(statusInfo(status).label);
}

StatusCategory statusCategory(EvaluationStatus status)
{
    return statusInfo(status).category;
}

bool statusCompiled(EvaluationStatus status)
{
    return statusInfo(status).compiled;
}

quint32 statusColour(EvaluationStatus status)
{
    return statusInfo(status).colour;
}

QString statusColourName(EvaluationStatus status)
{
    return QStringLiteral("#%1").arg(statusColour(status) & 0xffffffu, 6, 16, QLatin1Char('0'));
}

QString categoryLabel(StatusCategory category)
{
    switch (category) {
    case StatusCategory::Success: return QStringLiteral("success");
    case StatusCategory::ModelFault: return QStringLiteral("model's fault");
    case StatusCategory::MachineFault: return QStringLiteral("machine's fault");
    case StatusCategory::NotEvaluated: return QStringLiteral("not evaluated");
    }
    return QString();
}

bool isMachineFailure(EvaluationStatus status)
{
    return status == EvaluationStatus::StartFailed || status == EvaluationStatus::WorkerLost ||
           status == EvaluationStatus::OutOfMemoryElsewhere;
}

} // namespace kwb
