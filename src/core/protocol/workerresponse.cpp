#include "core/protocol/workerresponse.h"

#include "core/protocol/protocolnames.h"

namespace kwb {

WorkerResponse decodeWorkerResponse(const QJsonObject& response)
{
    WorkerResponse r;
    r.raw = response;
    r.header = decodeHeader(response);
    r.type = responseType(response);
    // A refused evaluate still decodes: EvaluationResult says why (ok, errorCode, errorMessage).
    if (!r.header.ok && r.type != ResponseType::Evaluate)
        return r;
    switch (r.type) {
    case ResponseType::Hello: r.hello = decodeHello(response); break;
    case ResponseType::Warm: r.warm = decodeWarm(response); break;
    case ResponseType::Tasks: r.tasks = decodeTaskList(response); break;
    case ResponseType::Device: r.device = decodeDeviceFacts(response); break;
    case ResponseType::Analyze: r.analyze = decodeAnalyze(response); break;
    case ResponseType::Profile: r.profile = decodeProfile(response); break;
    case ResponseType::Compile: r.compile = decodeCompile(response); break;
    case ResponseType::Evaluate: r.evaluation = decodeEvaluation(response); break;
    case ResponseType::RunReference: r.reference = decodeReferenceRun(response); break;
    case ResponseType::Shutdown:
    case ResponseType::Unknown: break;
    }
    return r;
}

QJsonObject responseBody(const WorkerResponse& response)
{
    QJsonObject body = response.raw;
    for (const char* key : {ProtocolNames::Field::kId, ProtocolNames::Field::kType, ProtocolNames::Key::kOk})
        body.remove(QLatin1String(key));
    return body;
}

} // namespace kwb
