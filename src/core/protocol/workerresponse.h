#pragma once
// One worker response decoded once, at the seam, by its type (issue 34 item 2): what the
// supervisor's responseAvailable() and run() carry, and JobTracker's WorkerReply, so a page or
// command reads typed fields and never a response's keys. The value types and their decoders are workerresponses.h's,
// evaluationresult.h's and devicefacts.h's; this only picks the one the response's type calls for.

#include "core/protocol/devicefacts.h"
#include "core/protocol/evaluationresult.h"
#include "core/protocol/workerresponses.h"

#include <QJsonObject>
#include <QMetaType>

#include <optional>

namespace kwb {

struct WorkerResponse
{
    ResponseHeader header; ///< id, type, ok and, for `ok: false`, the error
    ResponseType type = ResponseType::Unknown;
    /// The answer's body, decoded: the one its type names is set (none for `ok: false`, shutdown
    /// and a type this build does not know).
    std::optional<HelloInfo> hello;
    std::optional<WarmInfo> warm;
    std::optional<TaskList> tasks;
    std::optional<DeviceFacts> device;
    std::optional<AnalyzeResult> analyze;
    std::optional<ProfileResult> profile;
    std::optional<CompileInfo> compile;
    std::optional<EvaluationResult> evaluation;
    std::optional<ReferenceRun> reference;
    /// As received. Kept because some answers must be kept byte for byte: the run store keeps an
    /// evaluation's whole response (EvaluationRecord::result), `kwb … --json` prints it as it came,
    /// and the prompt templates render a task's, analysis' and device's JSON. Never read by key
    /// outside core/protocol.
    QJsonObject raw;

    bool ok() const { return header.ok; }
};

WorkerResponse decodeWorkerResponse(const QJsonObject& response);

/// The answer without its envelope (id, type, ok): what a run keeps of a device, analyze or
/// profile answer, and what its prompts render.
QJsonObject responseBody(const WorkerResponse& response);

} // namespace kwb

// Carried by the supervisor's signals (queued connections, QSignalSpy).
Q_DECLARE_METATYPE(kwb::WorkerResponse)
Q_DECLARE_METATYPE(kwb::HelloInfo)
