#include "core/protocol/workerrequests.h"

#include "core/protocol/evaluationresult.h"

namespace kwb::WorkerRequests {

namespace {

QJsonObject ofType(const char* type)
{
    return QJsonObject{{QStringLiteral("type"), QLatin1String(type)}};
}

void insertIfSet(QJsonObject& request, const char* key, const QString& value)
{
    if (!value.isEmpty())
        request.insert(QLatin1String(key), value);
}

} // namespace

QJsonObject hello()
{
    return ofType("hello");
}

QJsonObject warm(bool python)
{
    QJsonObject request = ofType("warm");
    if (python)
        request.insert(QStringLiteral("python"), true);
    return request;
}

QString typeOf(const QJsonObject& request)
{
    return request.value(QLatin1String("type")).toString();
}

QJsonObject tasks(const QString& tasksDir)
{
    QJsonObject request = ofType("tasks");
    insertIfSet(request, "tasks_dir", tasksDir);
    return request;
}

QJsonObject device(bool ceilings)
{
    QJsonObject request = ofType("device");
    if (ceilings)
        request.insert(QStringLiteral("ceilings"), true);
    return request;
}

QJsonObject analyze(const QString& task, const QString& scale)
{
    QJsonObject request = ofType("analyze");
    request.insert(QStringLiteral("task"), task);
    insertIfSet(request, "scale", scale);
    return request;
}

QJsonObject profile(const QString& task, const QString& scale, int trials)
{
    QJsonObject request = ofType("profile");
    request.insert(QStringLiteral("task"), task);
    insertIfSet(request, "scale", scale);
    if (trials > 0)
        request.insert(QStringLiteral("trials"), trials);
    return request;
}

QJsonObject compile(const Compile& c)
{
    QJsonObject request = ofType("compile");
    request.insert(QStringLiteral("answer"), c.answer);
    insertIfSet(request, "arch", c.arch);
    if (c.returnCubin)
        request.insert(QStringLiteral("return_cubin"), true);
    insertIfSet(request, "answer_format", c.answerFormat);
    insertIfSet(request, "code_block", c.codeBlock);
    return request;
}

QJsonObject evaluate(const Evaluate& e)
{
    QJsonObject request = ofType("evaluate");
    request.insert(QStringLiteral("task"), e.task);
    request.insert(QStringLiteral("answer"), e.answer);
    insertIfSet(request, "profile", e.profile);
    insertIfSet(request, "scale", e.scale);
    if (e.seed)
        request.insert(QStringLiteral("seed"), *e.seed);
    if (e.timingTrials > 0)
        request.insert(QStringLiteral("timing_trials"), e.timingTrials);
    insertIfSet(request, "answer_format", e.answerFormat);
    insertIfSet(request, "code_block", e.codeBlock);
    insertIfSet(request, "arch", e.arch);
    insertIfSet(request, "device", e.device);
    if (e.profileTraffic)
        request.insert(QLatin1String(kProfileTrafficKey), true);
    return request;
}

QJsonObject evaluateOptions(const Evaluate& e)
{
    QJsonObject options = evaluate(e);
    for (const char* key : {"type", "task", "answer"})
        options.remove(QLatin1String(key));
    return options;
}

} // namespace kwb::WorkerRequests
