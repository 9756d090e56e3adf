#pragma once
// The status of an evaluation (docs/protocol.md §evaluate), defined once for core, CLI and app:
// its wire name, its label, whose fault it is, whether it counts as compiled, and its colour.
//
// Categories, so that a report can tell a model's failure from a machine's:
// - Success: `correct`.
// - ModelFault: the candidate is at fault: `format_error`, `compile_error`, `rejected`,
//   `runtime_error`, `incorrect`, and the supervisor's `timeout` and `crashed` (the candidate's
//   code was running in the worker when it hung or died).
// - MachineFault: nothing is known about the candidate, so `kwb run --resume` evaluates it again:
//   `no_device` (no GPU to run it), `start_failed` (no worker answered hello), `worker_lost` (the
//   worker was ended from outside), `protocol_error` (the worker broke the protocol),
//   `out_of_memory_elsewhere` (other processes held the GPU memory the evaluation lacked).
// - NotEvaluated: the request never reached a candidate's evaluation: `bad_request`, `cancelled`,
//   and `unknown` (a status this build does not know: a newer worker's, kept by its wire name).
//
// `no_device` counts as the machine's for the category but is not retried by resume, as before:
// isMachineFailure() keeps its historical meaning (start_failed, worker_lost) for resume and
// reports; the category is what a reader sees.

#include <QList>
#include <QString>
#include <QtGlobal>

namespace kwb {

enum class EvaluationStatus {
    Unknown, ///< a wire name this build does not know (forward compatibility)
    Correct,
    Incorrect,
    RuntimeError,
    Rejected,
    CompileError,
    FormatError,
    NoDevice,
    Timeout,
    Crashed,
    StartFailed,
    WorkerLost,
    ProtocolError,
    BadRequest,
    Cancelled,
    ResourceLimit, ///< over the host-memory or thread limit (core/workers/hostlimits.h)
    /// torch's allocator ran out where other processes held the memory it lacked, again when
    /// evaluated alone (core/workers/gpumemoryelsewhere.h)
    OutOfMemoryElsewhere,
};

enum class StatusCategory { Success, ModelFault, MachineFault, NotEvaluated };

/// One row of the status table.
struct EvaluationStatusInfo
{
    EvaluationStatus status;
    const char* wireName; ///< as in docs/protocol.md ("compile_error"); "" for Unknown
    const char* label;    ///< for people ("compile error")
    StatusCategory category;
    bool compiled;  ///< counts as compiled in the study's sense: it got past NVRTC
    quint32 colour; ///< 0xAARRGGBB, as QRgb (QtGui): core is QtCore only, the app makes a QColor of it
};

/// The whole table, one row per enumerator, in enum order.
const QList<EvaluationStatusInfo>& evaluationStatusTable();
const EvaluationStatusInfo& statusInfo(EvaluationStatus status);

/// Unknown for a name this build does not know (and for an empty one).
EvaluationStatus evaluationStatusFromWire(const QString& name);
/// The wire name ("" for Unknown).
QString wireName(EvaluationStatus status);
QString statusLabel(EvaluationStatus status);
StatusCategory statusCategory(EvaluationStatus status);
bool statusCompiled(EvaluationStatus status);
quint32 statusColour(EvaluationStatus status);
/// "#rrggbb", for rich text.
QString statusColourName(EvaluationStatus status);
/// "success", "model's fault", "machine's fault", "not evaluated".
QString categoryLabel(StatusCategory category);

/// The machine's failures that `kwb run --resume` evaluates again and a report lists as not
/// evaluated: start_failed, worker_lost and out_of_memory_elsewhere (docs/protocol.md). A worker that dies by a signal
/// a candidate can raise (SIGSEGV, SIGABRT, …) or exits during a request is `crashed`, the candidate's.
bool isMachineFailure(EvaluationStatus status);
inline bool isMachineFailure(const QString& wire)
{
    return isMachineFailure(evaluationStatusFromWire(wire));
}

/// Whether an evaluation says nothing about the candidate because the machine failed it (category
/// MachineFault): it is "not evaluated", never fed back to the model as its error, never counted as
/// compiled or failed. In a compile-only run (evaluated with "device": "none") `no_device` is the
/// expected end and the candidate's verdict ("compiled and passed the sandbox check"), not a fault.
inline bool isMachineFault(EvaluationStatus status, bool compileOnly = false)
{
    return statusCategory(status) == StatusCategory::MachineFault &&
           !(compileOnly && status == EvaluationStatus::NoDevice);
}
inline bool isMachineFault(const QString& wire, bool compileOnly = false)
{
    return isMachineFault(evaluationStatusFromWire(wire), compileOnly);
}

} // namespace kwb
