#include "core/protocol/workerrequests.h"

#include "core/protocol/evaluationresult.h"
#include "core/protocol/protocolnames.h"

namespace kwb::WorkerRequests {

namespace {

namespace Request = ProtocolNames::Request;
namespace Field = ProtocolNames::Field;

QJsonObject ofType(const char* type)
{
    return QJsonObject{{QLatin1String(Field::kType), QLatin1String(type)}};
}

void insertIfSet(QJsonObject& request, const char* key, const QString& value)
{
    if (!value.isEmpty())
        request.insert(QLatin1String(key), value);
}

} // namespace

QJsonObject hello()
{
    return ofType(Request::kHello);
}

QJsonObject warm(bool python)
{
    QJsonObject request = ofType(Request::kWarm);
    if (python)
        request.insert(QLatin1String(Field::kPython), true);
    return request;
}

QString typeOf(const QJsonObject& request)
{
    return request.value(QLatin1String(Field::kType)).toString();
}

QJsonObject tasks(const QString& tasksDir)
{
    QJsonObject request = ofType(Request::kTasks);
    insertIfSet(request, Field::kTasksDir, tasksDir);
    return request;
}

QJsonObject device(bool ceilings)
{
    QJsonObject request = ofType(Request::kDevice);
    if (ceilings)
        request.insert(QLatin1String(Field::kCeilings), true);
    return request;
}

QJsonObject analyze(const QString& task, const QString& scale)
{
    QJsonObject request = ofType(Request::kAnalyze);
    request.insert(QLatin1String(Field::kTask), task);
    insertIfSet(request, Field::kScale, scale);
    return request;
}

QJsonObject profile(const QString& task, const QString& scale, int trials)
{
    QJsonObject request = ofType(Request::kProfile);
    request.insert(QLatin1String(Field::kTask), task);
    insertIfSet(request, Field::kScale, scale);
    if (trials > 0)
        request.insert(QLatin1String(Field::kTrials), trials);
    return request;
}

QJsonObject compile(const Compile& c)
{
    QJsonObject request = ofType(Request::kCompile);
    request.insert(QLatin1String(Field::kAnswer), c.answer);
    insertIfSet(request, Field::kArch, c.arch);
    if (c.returnCubin)
        request.insert(QLatin1String(Field::kReturnCubin), true);
    insertIfSet(request, Field::kAnswerFormat, c.answerFormat);
    insertIfSet(request, Field::kCodeBlock, c.codeBlock);
    return request;
}

QJsonObject kernelFactsOf(const QJsonObject& compileResponse)
{
    namespace K = ProtocolNames::KernelFact;
    QJsonObject facts;
    const QJsonValue kernels = compileResponse.value(QLatin1String(K::kKernelFacts));
    if (!kernels.isArray())
        return facts;
    facts.insert(QLatin1String(K::kKernelFacts), kernels);
    const QJsonValue note = compileResponse.value(QLatin1String(K::kKernelFactsNote));
    if (note.isString())
        facts.insert(QLatin1String(K::kKernelFactsNote), note);
    return facts;
}

QJsonObject evaluate(const Evaluate& e)
{
    QJsonObject request = ofType(Request::kEvaluate);
    request.insert(QLatin1String(Field::kTask), e.task);
    request.insert(QLatin1String(Field::kAnswer), e.answer);
    insertIfSet(request, Field::kProfile, e.profile);
    insertIfSet(request, Field::kScale, e.scale);
    if (e.seed)
        request.insert(QLatin1String(Field::kSeed), *e.seed);
    if (e.timingTrials > 0)
        request.insert(QLatin1String(Field::kTimingTrials), e.timingTrials);
    insertIfSet(request, Field::kAnswerFormat, e.answerFormat);
    insertIfSet(request, Field::kCodeBlock, e.codeBlock);
    insertIfSet(request, Field::kArch, e.arch);
    insertIfSet(request, Field::kDevice, e.device);
    if (e.profileTraffic)
        request.insert(QLatin1String(kProfileTrafficKey), true);
    if (e.module) {
        request.insert(QLatin1String(Field::kCubinB64), e.module->cubinB64);
        request.insert(QLatin1String(Field::kCubinArch), e.module->arch);
        request.insert(QLatin1String(Field::kCubinSourceHash), e.module->sourceHash);
        request.insert(QLatin1String(Field::kCompileLog), e.module->compileLog);
        if (!e.module->kernelFacts.isEmpty())
            request.insert(QLatin1String(Field::kCubinKernelFacts), e.module->kernelFacts);
    }
    return request;
}

} // namespace kwb::WorkerRequests
