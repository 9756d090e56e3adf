#include "core/config/runconfig.h"

#include "core/protocol/evaluationresult.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonValue>

namespace kwb {

QString sha256Hex(const QString& text)
{
    return QString::fromLatin1(QCryptographicHash::hash(text.toUtf8(), QCryptographicHash::Sha256).toHex());
}

namespace {

QJsonValue optionalValue(const std::optional<double>& value)
{
    return value ? QJsonValue(*value) : QJsonValue(QJsonValue::Null);
}

QJsonValue optionalValue(const std::optional<qint64>& value)
{
    return value ? QJsonValue(double(*value)) : QJsonValue(QJsonValue::Null);
}

std::optional<qint64> optionalInteger(const QJsonValue& value)
{
    if (!value.isDouble())
        return std::nullopt;
    return qint64(value.toDouble());
}

} // namespace

StoredRegime StoredRegime::of(const Regime& regime)
{
    StoredRegime s;
    s.fields = regime;
    s.stored = true;
    s.stated = {true, true, true, true, true, true, true};
    return s;
}

StoredRegime StoredRegime::fromJson(const QJsonObject& json)
{
    StoredRegime s;
    s.fields = Regime::fieldsOf(json);
    if (!Regime::fromJson(json, &s.error) && s.error.isEmpty())
        s.error = QStringLiteral("not a regime");
    s.stored = !json.isEmpty();
    const auto has = [&json](const char* key) { return json.contains(QLatin1String(key)); };
    s.stated = {has("n"),         has("turns"),           has("temperature"), has("feedback"),
                has("selection"), has("feedback_source"), has("roles")};
    return s;
}

std::optional<Regime> StoredRegime::usable(QString* why) const
{
    if (!error.isEmpty()) {
        if (why)
            *why = error;
        return std::nullopt;
    }
    return fields;
}

QJsonObject RunConfig::toJson() const
{
    QJsonObject templatesJson;
    for (auto it = templates.cbegin(); it != templates.cend(); ++it) {
        templatesJson.insert(it.key(), QJsonObject{{QStringLiteral("text"), it.value()},
                                                   {QStringLiteral("sha256"), sha256Hex(it.value())}});
    }
    QJsonObject seedsJson;
    if (seeds.evaluation)
        seedsJson.insert(QStringLiteral("evaluation"), double(*seeds.evaluation));
    if (!isImport()) {
        // sample k of turn t: model + turn_stride·(t−1) + k (modelSeedFor)
        seedsJson.insert(QStringLiteral("model"), optionalValue(seeds.model));
        seedsJson.insert(QStringLiteral("turn_stride"), double(seeds.turnStride));
        seedsJson.insert(QStringLiteral("temperature"), optionalValue(seeds.temperature));
    }
    QJsonObject versionsJson;
    const auto version = [&versionsJson](const char* name, const QString& value) {
        if (!value.isEmpty())
            versionsJson.insert(QLatin1String(name), value);
    };
    version("kwb", versions.kwb);
    version("kwb_commit", versions.kwbCommit);
    version("qt", versions.qt);
    version("worker", versions.worker);
    version("torch", versions.torch);
    version("driver", versions.driver);
    if (versions.protocol)
        versionsJson.insert(QStringLiteral("protocol"), *versions.protocol);

    QJsonObject json{{QStringLiteral("model"), model},
                     {QStringLiteral("endpoint"), endpoint},
                     {QStringLiteral("templates"), templatesJson},
                     {QStringLiteral("seeds"), seedsJson},
                     {QStringLiteral("protocol_profile"), protocolProfile},
                     {QStringLiteral("gpu"), gpu.raw},
                     {QStringLiteral("versions"), versionsJson},
                     {QStringLiteral("regime"), regime.stored ? QJsonValue(regime.fields.toJson()) : QJsonValue()},
                     {QStringLiteral("tasks"), QJsonArray::fromStringList(tasks)},
                     {QStringLiteral("task_spec"), taskSpec},
                     {QStringLiteral("scale"), scale},
                     {QStringLiteral("timeout_s"), timeoutS},
                     {QStringLiteral("answer_format"), answerFormat},
                     {QStringLiteral("sandbox"), sandbox},
                     {QStringLiteral("compile_only"), compileOnly}};
    if (compileWorkers)
        json.insert(QStringLiteral("compile_workers"), *compileWorkers);
    if (evaluationsPerGpu)
        json.insert(QStringLiteral("evaluations_per_gpu"), *evaluationsPerGpu);
    if (!memoryCgroup.isEmpty())
        json.insert(QStringLiteral("memory_cgroup"), memoryCgroup);
    if (isImport()) {
        json.insert(QStringLiteral("import"), import);
        return json;
    }
    QJsonObject levels;
    for (auto it = levelRegimes.cbegin(); it != levelRegimes.cend(); ++it)
        levels.insert(QString::number(it.key()), it.value().fields.toJson());
    QJsonArray ns;
    for (const int n : sweep ? sweep->ns : QList<int>())
        ns.append(n);
    json.insert(QStringLiteral("level_regimes"), levels);
    json.insert(QStringLiteral("routing"), routing ? QJsonValue(routing->toJson()) : QJsonValue());
    if (modelTimeoutS)
        json.insert(QStringLiteral("model_timeout_s"), *modelTimeoutS);
    json.insert(QStringLiteral("timing_trials"), timingTrials > 0 ? QJsonValue(timingTrials) : QJsonValue());
    json.insert(QStringLiteral("isolation"), isolation);
    json.insert(QStringLiteral("worker_limits"), workerLimits.toJson());
    json.insert(QStringLiteral("sweep"), sweep ? QJsonValue(QJsonObject{{QStringLiteral("ns"), ns},
                                                                        {QStringLiteral("id"), sweep->id},
                                                                        {QStringLiteral("n"), sweep->n}})
                                               : QJsonValue());
    json.insert(QStringLiteral("prompts_dir"), promptsDir);
    json.insert(QLatin1String(kProfileTrafficKey), profileTraffic);
    json.insert(QStringLiteral("evaluate_identical_once"), evaluateIdenticalOnce);
    json.insert(QStringLiteral("identical_across_runs"), identicalAcrossRuns);
    if (pauseGenerationWhileTiming)
        json.insert(QStringLiteral("pause_generation_while_timing"), *pauseGenerationWhileTiming);
    json.insert(QStringLiteral("context_tokens"), contextTokens);
    json.insert(QStringLiteral("max_output_tokens"), maxOutputTokens);
    return json;
}

bool RunConfig::sameEvaluationSettings(const RunConfig& a, const RunConfig& b)
{
    const auto sameGpu = [](const DeviceFacts& x, const DeviceFacts& y) {
        return x.available == y.available && x.name == y.name && x.arch == y.arch && x.smCount == y.smCount &&
               x.driverVersion == y.driverVersion;
    };
    return !a.versions.kwbCommit.isEmpty() && a.versions.kwbCommit == b.versions.kwbCommit &&
           a.versions.worker == b.versions.worker && a.versions.torch == b.versions.torch &&
           a.protocolProfile == b.protocolProfile && a.scale == b.scale && a.timingTrials == b.timingTrials &&
           a.timeoutS == b.timeoutS && a.seeds.evaluation == b.seeds.evaluation && a.answerFormat == b.answerFormat &&
           a.compileOnly == b.compileOnly && a.profileTraffic == b.profileTraffic && a.isolation == b.isolation &&
           a.workerLimits.toJson() == b.workerLimits.toJson() && a.sandbox == b.sandbox && sameGpu(a.gpu, b.gpu);
}

RunConfig RunConfig::fromJson(const QJsonObject& json)
{
    RunConfig c;
    const auto value = [&json](const char* key) { return json.value(QLatin1String(key)); };
    c.model = value("model").toString();
    c.endpoint = value("endpoint").toString();
    const QJsonObject templatesJson = value("templates").toObject();
    for (auto it = templatesJson.begin(); it != templatesJson.end(); ++it)
        c.templates.insert(it.key(), it.value().toObject().value(QLatin1String("text")).toString());
    const QJsonObject seedsJson = value("seeds").toObject();
    c.seeds.evaluation = optionalInteger(seedsJson.value(QLatin1String("evaluation")));
    c.seeds.model = optionalInteger(seedsJson.value(QLatin1String("model")));
    c.seeds.turnStride = qint64(seedsJson.value(QLatin1String("turn_stride")).toDouble(0));
    if (seedsJson.value(QLatin1String("temperature")).isDouble())
        c.seeds.temperature = seedsJson.value(QLatin1String("temperature")).toDouble();
    c.protocolProfile = value("protocol_profile").toString();
    c.gpu = decodeDeviceFacts(value("gpu").toObject());
    const QJsonObject versionsJson = value("versions").toObject();
    const auto version = [&versionsJson](const char* name) {
        return versionsJson.value(QLatin1String(name)).toString();
    };
    c.versions.kwb = version("kwb");
    c.versions.kwbCommit = version("kwb_commit");
    c.versions.qt = version("qt");
    c.versions.worker = version("worker");
    c.versions.torch = version("torch");
    c.versions.driver = version("driver");
    if (versionsJson.value(QLatin1String("protocol")).isDouble())
        c.versions.protocol = versionsJson.value(QLatin1String("protocol")).toInt();

    c.regime = StoredRegime::fromJson(value("regime").toObject());
    const QJsonObject levels = value("level_regimes").toObject();
    for (auto it = levels.begin(); it != levels.end(); ++it)
        c.levelRegimes.insert(it.key().toInt(), StoredRegime::fromJson(it.value().toObject()));
    if (value("routing").isObject())
        c.routing = Routing::fromJson(value("routing").toObject());
    for (const QJsonValue& v : value("tasks").toArray())
        if (!v.toString().isEmpty())
            c.tasks << v.toString();
    c.taskSpec = value("task_spec").toString();
    c.scale = value("scale").toString();
    c.timeoutS = value("timeout_s").toDouble(c.timeoutS);
    if (value("model_timeout_s").isDouble())
        c.modelTimeoutS = value("model_timeout_s").toDouble();
    c.timingTrials = value("timing_trials").toInt(0);
    c.isolation = value("isolation").toString(c.isolation);
    c.workerLimits = WorkerLimits::fromJson(value("worker_limits").toObject());
    c.sandbox = value("sandbox").toString();
    c.memoryCgroup = value("memory_cgroup").toString();
    // Any sweep value counts: the old single-run sweeps stored theirs without an id.
    const QJsonValue sweepJson = value("sweep");
    if (!sweepJson.isNull() && !sweepJson.isUndefined()) {
        RunSweep sweep;
        const QJsonObject object = sweepJson.toObject();
        for (const QJsonValue& v : object.value(QLatin1String("ns")).toArray())
            sweep.ns << v.toInt();
        sweep.id = object.value(QLatin1String("id")).toString();
        sweep.n = object.value(QLatin1String("n")).toInt();
        c.sweep = sweep;
    }
    c.promptsDir = value("prompts_dir").toString();
    c.answerFormat = value("answer_format").toString(c.answerFormat);
    c.compileOnly = value("compile_only").toBool(false);
    c.profileTraffic = json.value(QLatin1String(kProfileTrafficKey)).toBool(false);
    c.evaluateIdenticalOnce = value("evaluate_identical_once").toBool(false);
    c.identicalAcrossRuns = value("identical_across_runs").toBool(false);
    if (value("pause_generation_while_timing").isBool())
        c.pauseGenerationWhileTiming = value("pause_generation_while_timing").toBool();
    c.contextTokens = value("context_tokens").toInt(0);
    c.maxOutputTokens = value("max_output_tokens").toInt(0);
    if (value("compile_workers").isDouble())
        c.compileWorkers = value("compile_workers").toInt();
    if (value("evaluations_per_gpu").isDouble())
        c.evaluationsPerGpu = value("evaluations_per_gpu").toInt();
    c.import = value("import").toObject();
    return c;
}

} // namespace kwb
