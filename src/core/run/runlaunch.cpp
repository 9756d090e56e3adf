#include "core/run/runlaunch.h"

#include "core/config/buildinfo.h"
#include "core/model/llmclient.h"
#include "core/protocol/evaluationresult.h"
#include "core/protocol/protocolcodec.h"
#include "core/protocol/protocolnames.h"
#include "core/protocol/workerrequests.h"
#include "core/protocol/workerresponses.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/gpulease.h"
#include "core/workers/gpumemoryelsewhere.h"
#include "core/workers/hostlimits.h"
#include "core/workers/memorycgroup.h"
#include "core/workers/workerlauncher.h"
#include "core/workers/workersupervisor.h"

#include <QCoreApplication>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QJsonArray>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QThread>
#include <QTimer>
#include <QUrl>
#include <QUuid>

#include <algorithm>
#include <limits>

namespace kwb {

QList<TaskSetInfo> taskSets()
{
    // KernelBench's levels 1-3 have 100, 100 and 50 problems (tasks/, docs/task-format.md); the
    // study used the first ten of each, the default wherever the study's numbers are reproduced.
    return {
        {QStringLiteral("study"), QStringLiteral("L1:1-10,L2:1-10,L3:1-10"),
         QStringLiteral("the study's 30: KernelBench's first ten tasks of each level")},
        {QStringLiteral("level1"), QStringLiteral("L1:1-100"),
         QStringLiteral("KernelBench level 1: 100 single operators")},
        {QStringLiteral("level2"), QStringLiteral("L2:1-100"),
         QStringLiteral("KernelBench level 2: 100 operator chains")},
        {QStringLiteral("level3"), QStringLiteral("L3:1-50"), QStringLiteral("KernelBench level 3: 50 whole networks")},
        {QStringLiteral("all"), QStringLiteral("L1:1-100,L2:1-100,L3:1-50"),
         QStringLiteral("all 250 KernelBench tasks")},
    };
}

QString defaultTaskSet()
{
    return QStringLiteral("study");
}

bool namesTaskSet(const QString& spec)
{
    const QList<TaskSetInfo> sets = taskSets();
    for (const QString& raw : spec.split(QLatin1Char(',')))
        for (const TaskSetInfo& set : sets)
            if (raw.trimmed() == set.name)
                return true;
    return false;
}

QStringList parseTaskSpec(const QString& spec, QString* error)
{
    // Set names expand in place ("study,L3:11-20"); a set's own spec never names a set.
    QStringList expanded;
    for (const QString& raw : spec.split(QLatin1Char(','))) {
        QString part = raw.trimmed();
        for (const TaskSetInfo& set : taskSets())
            if (part == set.name)
                part = set.spec;
        expanded << part;
    }
    return parseTaskIds(expanded.join(QLatin1Char(',')), error);
}

QStringList parseTaskIds(const QString& spec, QString* error)
{
    static const QRegularExpression range(QStringLiteral("^L([0-9]+):([0-9]+)(?:-([0-9]+))?$"));
    static const QRegularExpression single(QStringLiteral("^L([0-9]+)/([0-9]+)$"));
    QStringList ids;
    const QStringList parts = spec.split(QLatin1Char(','));
    for (const QString& raw : parts) {
        const QString part = raw.trimmed();
        int level = 0, from = 0, to = 0;
        if (const auto m = range.match(part); m.hasMatch()) {
            level = m.captured(1).toInt();
            from = m.captured(2).toInt();
            to = m.captured(3).isEmpty() ? from : m.captured(3).toInt();
        } else if (const auto m2 = single.match(part); m2.hasMatch()) {
            level = m2.captured(1).toInt();
            from = to = m2.captured(2).toInt();
        } else {
            *error = QStringLiteral("--tasks: \"%1\" is not a task set (study, level1, level2, level3, all), "
                                    "LEVEL:FROM-TO, LEVEL:N or LEVEL/N (e.g. study,L1:11-20 or L2/3)")
                         .arg(part);
            return {};
        }
        if (level < 1 || from < 1 || to < from || to - from > 100000) {
            *error =
                QStringLiteral("--tasks: \"%1\": levels and task numbers start at 1 and a range goes up").arg(part);
            return {};
        }
        for (int i = from; i <= to; ++i) {
            const QString id = QStringLiteral("L%1/%2").arg(level).arg(i);
            if (!ids.contains(id))
                ids << id;
        }
    }
    if (ids.isEmpty())
        *error = QStringLiteral("--tasks: no task named");
    return ids;
}

QString defaultPromptsDir()
{
    const QString env = qEnvironmentVariable("KWB_PROMPTS_DIR");
    if (!env.isEmpty())
        return env;
    const QString installed =
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("../share/kernel-workbench/prompts"));
    if (QFileInfo(installed).isDir())
        return QDir::cleanPath(installed);
    return QStringLiteral(KWB_SOURCE_PROMPTS_DIR);
}

QStringList shippedPromptSetNames()
{
    return {QStringLiteral("study"), QStringLiteral("workbench-v1"), QStringLiteral("kernelbench")};
}

QString shippedPromptSetDir(const QString& name)
{
    if (name == QLatin1String("study"))
        return defaultPromptsDir();
    if (!shippedPromptSetNames().contains(name))
        return {};
    const QFileInfo study(defaultPromptsDir());
    return study.absoluteDir().filePath(QStringLiteral("prompts-") + name);
}

QString userDataDir()
{
    const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    return QDir(base.isEmpty() ? QDir::homePath() : base).filePath(QStringLiteral("kernel-workbench"));
}

QString defaultLaunchDatabase()
{
    return QDir(userDataDir()).filePath(QStringLiteral("launched-runs.db"));
}

namespace {

/// How many KernelBench-format builds 3/4 of `memoryBytes` holds, at kKernelBenchCompileWorkerBytes
/// each (at least one).
qint64 kernelBenchBuildsThatFit(qint64 memoryBytes)
{
    return std::max<qint64>(1, memoryBytes / 4 * 3 / kKernelBenchCompileWorkerBytes);
}

} // namespace

int defaultCompileWorkers(const QString& answerFormat, int cores, qint64 memoryBytes)
{
    if (answerFormat != QLatin1String(defaults::kAnswerFormatKernelBench))
        return 1;
    const int byCores = std::max(1, cores * 3 / 4);
    if (memoryBytes <= 0)
        return byCores;
    return int(std::min<qint64>(byCores, kernelBenchBuildsThatFit(memoryBytes)));
}

int defaultCompileWorkers(const QString& answerFormat)
{
    return defaultCompileWorkers(answerFormat, QThread::idealThreadCount(), machineMemoryBytes());
}

int defaultEvaluationsPerGpu(const QString& answerFormat)
{
    return answerFormat == QLatin1String(defaults::kAnswerFormatKernelBench)
               ? 2
               : EvaluationQueue::kDefaultEvaluationsPerGpu;
}

QString compileWorkersMemoryWarning(const QString& answerFormat, int workers, qint64 memoryBytes)
{
    if (answerFormat != QLatin1String(defaults::kAnswerFormatKernelBench) || memoryBytes <= 0)
        return {};
    const qint64 fit = kernelBenchBuildsThatFit(memoryBytes);
    if (workers <= fit)
        return {};
    return QStringLiteral("%1 compile workers may build %1 KernelBench-format extensions at once, about %2 (%3 "
                          "each), where 3/4 of this machine's %4 hold %5: the kernel's OOM killer may end builds "
                          "(their candidates are then the machine's no_device) or other programs")
        .arg(QString::number(workers), formatBytes(workers * kKernelBenchCompileWorkerBytes),
             formatBytes(kKernelBenchCompileWorkerBytes), formatBytes(memoryBytes), QString::number(fit));
}

QString compileWorkersMemoryWarning(const QString& answerFormat, int workers)
{
    return compileWorkersMemoryWarning(answerFormat, workers, machineMemoryBytes());
}

int defaultTasksInFlight(int compileWorkers, int gpus, int samplesPerTurn)
{
    const int busy = std::max(0, compileWorkers) + std::max(1, gpus);
    const int perTask = std::max(1, samplesPerTurn);
    return std::max(2, (busy + perTask - 1) / perTask);
}

QString defaultPromptsDirFor(const QString& answerFormat)
{
    return answerFormat == QLatin1String(defaults::kAnswerFormatKernelBench)
               ? shippedPromptSetDir(QStringLiteral("kernelbench"))
               : defaultPromptsDir();
}

QString elapsedClock(qint64 ms)
{
    const qint64 s = ms / 1000;
    return s >= 3600 ? QStringLiteral("%1:%2:%3")
                           .arg(s / 3600)
                           .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
                           .arg(s % 60, 2, 10, QLatin1Char('0'))
                     : QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

QString taskSpecFor(const QStringList& taskIds)
{
    static const QRegularExpression idPattern(QStringLiteral("^L([0-9]+)/([0-9]+)$"));
    QStringList parts;
    int level = -1, from = 0, to = 0;
    const auto flush = [&] {
        if (level < 0)
            return;
        parts << (from == to ? QStringLiteral("L%1:%2").arg(level).arg(from)
                             : QStringLiteral("L%1:%2-%3").arg(level).arg(from).arg(to));
        level = -1;
    };
    for (const QString& id : taskIds) {
        const auto m = idPattern.match(id);
        if (!m.hasMatch()) { // not a KernelBench id: named as it is (parseTaskSpec will refuse it)
            flush();
            parts << id;
            continue;
        }
        const int l = m.captured(1).toInt(), number = m.captured(2).toInt();
        if (l == level && number == to + 1) {
            to = number;
            continue;
        }
        flush();
        level = l;
        from = to = number;
    }
    flush();
    return parts.join(QLatin1Char(','));
}

Ablations ablationsFromList(const QString& list, QString* unknown)
{
    QStringList names;
    for (QString name : list.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        name = name.trimmed().replace(QLatin1Char('-'), QLatin1Char('_'));
        if (name == QLatin1String("competence"))
            name = QStringLiteral("competence_matched");
        names << name;
    }
    return Ablations::fromOffNames(names, unknown);
}

double defaultModelTimeoutS()
{
    return kDefaultModelDeadlineMs / 1000.0;
}

// ---------------------------------------------------------------------------------------------

QString RunPlan::regimeLabel() const
{
    return routing ? QStringLiteral("routing") : regime.name;
}

QString RunPlan::runName() const
{
    QString label = regimeLabel();
    if (answerFormat != QLatin1String(defaults::kAnswerFormatNative))
        label += QStringLiteral(" [%1]").arg(answerFormat);
    if (!sweepNs.isEmpty())
        return QStringLiteral("%1 sweep n=%2 %3").arg(label).arg(regime.n).arg(taskSpec);
    // Feedback of the best so far is not the study's: the name says so.
    if (regime.feedbackSource != FeedbackSource::Last)
        label += QStringLiteral(" feedback=%1").arg(toString(regime.feedbackSource));
    if (!regime.ablated.isEmpty())
        return QStringLiteral("%1 -%2 %3").arg(label, regime.ablated.join(QStringLiteral(",-")), taskSpec);
    return QStringLiteral("%1 %2").arg(label, taskSpec);
}

bool RunPlan::wantsProfile() const
{
    bool wants = regime.useProfile;
    for (const Regime& r : levelRegimes)
        wants = wants || r.useProfile;
    return wants;
}

std::optional<RunPlan> planRun(const RunRequest& request, QString* error)
{
    const auto failWith = [error](const QString& message) -> std::optional<RunPlan> {
        if (error)
            *error = message;
        return std::nullopt;
    };
    if (request.taskIds.isEmpty())
        return failWith(QStringLiteral("no task chosen"));
    if (!defaults::isAnswerFormat(request.answerFormat))
        return failWith(
            QStringLiteral("unknown answer format \"%1\" (native or kernelbench)").arg(request.answerFormat));
    QString unknownRegime; // why the last regime asked for is not one (Regime::find)
    const auto configure = [&](const QString& name) -> std::optional<Regime> {
        const std::optional<Regime> found = Regime::find(name, &unknownRegime);
        if (!found)
            return std::nullopt;
        Regime r = found->withAblations(request.ablations);
        if (request.n > 0)
            r.n = request.n;
        if (request.turns > 0)
            r.turns = request.turns;
        if (request.stopWhenCorrect)
            r.stopWhenCorrect = *request.stopWhenCorrect;
        if (request.feedbackSource)
            r.feedbackSource = *request.feedbackSource;
        if (request.temperature >= 0)
            r.temperature = request.temperature;
        return r;
    };
    RunPlan plan;
    if (request.routing) {
        plan.routing = request.routing;
        const std::optional<Regime> fallback = configure(request.routing->fallback);
        if (!fallback)
            return failWith(QStringLiteral("routing: unknown fallback regime \"%1\"").arg(request.routing->fallback));
        plan.regime = *fallback;
        for (auto it = request.routing->byLevel.cbegin(); it != request.routing->byLevel.cend(); ++it) {
            const std::optional<Regime> r = configure(it.value());
            if (!r)
                return failWith(
                    QStringLiteral("routing: unknown regime \"%1\" for level %2").arg(it.value()).arg(it.key()));
            plan.levelRegimes.insert(it.key(), *r);
        }
    } else {
        const std::optional<Regime> r = configure(request.regime);
        if (!r)
            return failWith(unknownRegime);
        plan.regime = *r;
    }
    plan.taskIds = request.taskIds;
    plan.taskSpec = request.taskSpec.isEmpty() ? taskSpecFor(request.taskIds) : request.taskSpec;
    plan.endpoint = request.endpoint.isEmpty() ? defaults::endpoint() : request.endpoint;
    plan.model = request.model;
    plan.profile = request.profile;
    plan.scale = request.scale;
    plan.timeoutS = request.timeoutS;
    plan.modelTimeoutS = request.modelTimeoutS > 0 ? request.modelTimeoutS : defaultModelTimeoutS();
    plan.timingTrials = request.timingTrials;
    plan.isolation = request.isolation;
    plan.workerLimits = request.workerLimits;
    plan.sweepNs = request.sweepNs;
    std::sort(plan.sweepNs.begin(), plan.sweepNs.end());
    // One model seed per run: the one asked for, else the regime's (every built-in sets one).
    plan.modelSeed = request.modelSeed ? request.modelSeed : plan.regime.seed;
    if (!plan.sweepNs.isEmpty() && !plan.modelSeed)
        plan.modelSeed = kDefaultSweepModelSeed;
    plan.promptsDir = request.promptsDir;
    plan.answerFormat = request.answerFormat;
    plan.compileOnly = request.compileOnly;
    plan.profileTraffic = request.profileTraffic;
    plan.evaluateIdenticalOnce = request.evaluateIdenticalOnce;
    plan.identicalAcrossRuns = request.evaluateIdenticalOnce && request.identicalAcrossRuns;
    plan.pauseGenerationWhileTiming = request.pauseGenerationWhileTiming.value_or(isLocalEndpoint(plan.endpoint));
    if (request.contextTokens < 0 || request.maxOutputTokens < 1)
        return failWith(QStringLiteral("context tokens must be 0 (no check) or more, max output tokens at least 1"));
    if (request.contextTokens > 0 && request.maxOutputTokens >= request.contextTokens)
        return failWith(QStringLiteral("max output tokens (%1) leave no room for a prompt in %2 context tokens")
                            .arg(request.maxOutputTokens)
                            .arg(request.contextTokens));
    plan.contextTokens = request.contextTokens;
    plan.maxOutputTokens = request.maxOutputTokens;
    return plan;
}

bool isLocalEndpoint(const QString& url)
{
    const QString host = QUrl(url).host().toLower();
    if (host == QLatin1String("localhost") || host.endsWith(QLatin1String(".localhost")))
        return true;
    QHostAddress address;
    return address.setAddress(host) && address.isLoopback();
}

QString noEvaluatorReason(const HelloInfo& info, const DeviceFacts& device)
{
    if (info.ok) {
        if (info.cudaDeviceCount <= 0)
            return QStringLiteral("the worker sees no CUDA device (driver: %1)")
                .arg(info.driver.isEmpty() ? QStringLiteral("unknown") : info.driver);
        if (info.driver != QLatin1String("ok"))
            return QStringLiteral("the CUDA driver is not usable: %1").arg(info.driver);
        return QString();
    }
    if (!device.raw.isEmpty() && !device.available)
        return QStringLiteral("the worker reports no GPU");
    return QString();
}

std::optional<RunPlan> planResume(const RunInfo& run, QString* error)
{
    const auto failWith = [error](const QString& message) -> std::optional<RunPlan> {
        if (error)
            *error = message;
        return std::nullopt;
    };
    const RunConfig& config = run.config;
    // An imported run (kwb import) has no model to ask: resuming it would send prompts for the
    // samples a folder did not have.
    if (config.isImport())
        return failWith(
            QStringLiteral("run %1 was imported (kwb import), not generated: there is nothing to resume").arg(run.id));
    QString why;
    // A regime stored before `feedback_source` existed was shown the best so far: it resumes so.
    const auto storedRegime = [&why](const StoredRegime& stored) {
        std::optional<Regime> r = stored.usable(&why);
        if (r && !stored.stated.feedbackSource)
            r->feedbackSource = FeedbackSource::Best;
        return r;
    };
    const std::optional<Regime> stored = storedRegime(config.regime);
    if (!stored)
        return failWith(QStringLiteral("run %1 has no usable regime: %2").arg(run.id).arg(why));
    RunPlan plan;
    plan.regime = *stored;
    for (auto it = config.levelRegimes.cbegin(); it != config.levelRegimes.cend(); ++it) {
        const std::optional<Regime> r = storedRegime(it.value());
        if (!r)
            return failWith(QStringLiteral("run %1: level %2: %3").arg(run.id).arg(QString::number(it.key()), why));
        plan.levelRegimes.insert(it.key(), *r);
    }
    plan.routing = config.routing;
    plan.taskIds = config.tasks;
    if (plan.taskIds.isEmpty())
        return failWith(QStringLiteral("run %1 names no tasks").arg(run.id));
    plan.taskSpec = config.taskSpec.isEmpty() ? taskSpecFor(plan.taskIds) : config.taskSpec;
    plan.endpoint = config.endpoint;
    plan.model = config.model;
    plan.profile = config.protocolProfile.isEmpty() ? defaults::profile() : config.protocolProfile;
    plan.scale = config.scale.isEmpty() ? defaults::scale() : config.scale;
    plan.timeoutS = config.timeoutS;
    plan.modelTimeoutS = config.modelTimeoutS.value_or(defaultModelTimeoutS());
    plan.timingTrials = config.timingTrials;
    plan.isolation = config.isolation;
    plan.workerLimits = config.workerLimits;
    if (config.sweep) {
        plan.sweepNs = config.sweep->ns;
        plan.sweepId = config.sweep->id;
    }
    plan.modelSeed = config.seeds.model;
    plan.modelSeedTurnStride = config.seeds.turnStride;
    plan.promptsDir = config.promptsDir;
    if (!defaults::isAnswerFormat(config.answerFormat))
        return failWith(
            QStringLiteral("run %1 has an unknown answer format \"%2\"").arg(run.id).arg(config.answerFormat));
    plan.answerFormat = config.answerFormat;
    plan.resumeRunId = run.id;
    plan.compileOnly = config.compileOnly;
    plan.profileTraffic = config.profileTraffic;
    plan.evaluateIdenticalOnce = config.evaluateIdenticalOnce;
    plan.identicalAcrossRuns = config.identicalAcrossRuns;
    plan.pauseGenerationWhileTiming = config.pauseGenerationWhileTiming.value_or(isLocalEndpoint(plan.endpoint));
    plan.contextTokens = config.contextTokens;
    plan.maxOutputTokens = config.maxOutputTokens;
    return plan;
}

std::optional<RunConfig> runConfigFor(const RunPlan& plan, const DeviceFacts& device, const HelloInfo& info,
                                      QString* error)
{
    RunConfig config;
    config.model = plan.model;
    config.endpoint = plan.endpoint;
    QSet<QString> files;
    QList<Regime> used{plan.regime};
    used += plan.levelRegimes.values();
    for (const Regime& r : std::as_const(used))
        for (const QString& file : r.roles)
            files.insert(file);
    QDirIterator partials(QDir(plan.promptsDir).filePath(QStringLiteral("partials")), {QStringLiteral("*.mustache")},
                          QDir::Files);
    while (partials.hasNext())
        files.insert(QStringLiteral("partials/") + QFileInfo(partials.next()).fileName());
    for (const QString& file : std::as_const(files)) {
        QFile f(QDir(plan.promptsDir).filePath(file));
        if (!f.open(QIODevice::ReadOnly)) {
            if (error)
                *error = QStringLiteral("cannot read template %1 in %2").arg(file, plan.promptsDir);
            return std::nullopt;
        }
        QString name = file;
        name.chop(name.endsWith(QLatin1String(".mustache")) ? 9 : 0);
        config.templates.insert(name, QString::fromUtf8(f.readAll()));
    }
    // The model's seed and temperature are the regime's (every built-in sets both); recorded here
    // too so a reader of seeds sees them without decoding the regime. Routing: per level in
    // level_regimes, the fallback's here.
    config.seeds.evaluation = kRunEvaluationSeed;
    config.seeds.model = plan.modelSeed;
    config.seeds.turnStride = plan.modelSeedTurnStride;
    config.seeds.temperature = plan.regime.temperature;
    config.protocolProfile = plan.profile;
    config.gpu = device;
    config.versions.kwb = QStringLiteral(KWB_VERSION);
    config.versions.kwbCommit = kwbCommit();
    config.versions.qt = QString::fromLatin1(qVersion());
    config.versions.worker = info.worker;
    config.versions.torch = info.torch;
    config.versions.driver = info.driver;
    config.versions.protocol = info.protocol;
    config.regime = StoredRegime::of(plan.regime);
    for (auto it = plan.levelRegimes.cbegin(); it != plan.levelRegimes.cend(); ++it)
        config.levelRegimes.insert(it.key(), StoredRegime::of(it.value()));
    config.routing = plan.routing;
    config.tasks = plan.taskIds;
    config.taskSpec = plan.taskSpec;
    config.scale = plan.scale;
    config.timeoutS = plan.timeoutS;
    config.modelTimeoutS = plan.modelTimeoutS;
    config.timingTrials = plan.timingTrials;
    config.isolation = plan.isolation;
    config.workerLimits = plan.workerLimits;
    config.sandbox = workerSandboxStatus(plan.workerLimits);
    config.memoryCgroup = memoryCgroupStatus();
    if (!plan.sweepNs.isEmpty())
        config.sweep = RunSweep{plan.sweepNs, plan.sweepId, plan.regime.n};
    config.promptsDir = QDir(plan.promptsDir).absolutePath();
    config.answerFormat = plan.answerFormat;
    config.compileOnly = plan.compileOnly;
    config.profileTraffic = plan.profileTraffic;
    config.evaluateIdenticalOnce = plan.evaluateIdenticalOnce;
    config.identicalAcrossRuns = plan.identicalAcrossRuns;
    config.pauseGenerationWhileTiming = plan.pauseGenerationWhileTiming;
    config.contextTokens = plan.contextTokens;
    config.maxOutputTokens = plan.maxOutputTokens;
    return config;
}

LlmSettings llmSettingsFor(const RunPlan& plan, const QString& apiKey)
{
    LlmSettings settings;
    settings.baseUrl = QUrl(plan.endpoint);
    settings.model = plan.model;
    settings.apiKey = apiKey;
    const double deadlineMs = plan.modelTimeoutS > 0 ? plan.modelTimeoutS * 1000.0 : kDefaultModelDeadlineMs;
    settings.deadlineMs = int(std::clamp(deadlineMs, 1.0, double(std::numeric_limits<int>::max())));
    // Without streaming nothing arrives before the whole answer: the idle limit is the deadline's.
    settings.timeoutMs = settings.deadlineMs;
    settings.maxTokens = plan.maxOutputTokens;
    settings.seed = plan.modelSeed;
    return settings;
}

QList<RunPlan> sweepRunPlans(const RunPlan& plan)
{
    const QString id = plan.sweepId.isEmpty() ? QUuid::createUuid().toString(QUuid::WithoutBraces) : plan.sweepId;
    QList<RunPlan> plans;
    for (const int n : plan.sweepNs) {
        RunPlan p = plan;
        p.sweepId = id;
        p.regime.n = n;
        for (Regime& r : p.levelRegimes)
            r.n = n;
        plans.append(p);
    }
    return plans;
}

WorkerRequests::Evaluate evaluationOptionsFor(const RunPlan& plan)
{
    WorkerRequests::Evaluate evaluate;
    evaluate.profile = plan.profile;
    evaluate.scale = plan.scale;
    evaluate.seed = kRunEvaluationSeed;
    evaluate.answerFormat = plan.answerFormat;
    evaluate.timingTrials = plan.timingTrials;
    if (plan.compileOnly) // stops after the sandbox check, even where a GPU exists (docs/protocol.md)
        evaluate.device = QStringLiteral("none");
    evaluate.profileTraffic = plan.profileTraffic;
    return evaluate;
}

void configureQueue(EvaluationQueue& queue, const QString& workerProgram, const QStringList& workerArguments,
                    const RunPlan& plan, const DeviceFacts& device)
{
    queue.setProgram(workerProgram, workerArguments);
    queue.setTimeout(int(plan.timeoutS * 1000.0));
    queue.setIsolation(plan.isolation == QLatin1String("reuse") ? WorkerSupervisor::Isolation::ReuseWhileHealthy
                                                                : WorkerSupervisor::Isolation::FreshPerRequest);
    queue.setWorkerLimits(plan.workerLimits);
    queue.setCompileWorkerCount(1);
    const QString arch = device.arch;
    if (!arch.isEmpty())
        queue.setArch(arch);
}

void configureController(RunController& controller, const RunPlan& plan)
{
    controller.setRegime(plan.regime);
    for (auto it = plan.levelRegimes.cbegin(); it != plan.levelRegimes.cend(); ++it)
        controller.setRegimeForLevel(it.key(), it.value());
    controller.setEvaluationOptions(evaluationOptionsFor(plan));
    controller.setContextBudget(contextBudgetFor(plan));
    controller.setModelSeedTurnStride(plan.modelSeedTurnStride);
    controller.setEvaluateIdenticalOnce(plan.evaluateIdenticalOnce);
    controller.setIdenticalAcrossRuns(plan.identicalAcrossRuns);
}

ContextBudget contextBudgetFor(const RunPlan& plan)
{
    return ContextBudget{plan.contextTokens, plan.maxOutputTokens};
}

QString checkRunTemplates(const RunPlan& plan, const QList<RunTaskInput>& inputs)
{
    return RunController::checkTemplates(plan.promptsDir, plan.regime, plan.levelRegimes, inputs,
                                         contextBudgetFor(plan));
}

// ---------------------------------------------------------------------------------------------

RunFactsLoader::RunFactsLoader(WorkerSupervisor* supervisor, QObject* parent)
    : QObject(parent)
    , m_supervisor(supervisor)
{
    connect(m_supervisor, &WorkerSupervisor::responseAvailable, this, &RunFactsLoader::onResponse);
    connect(m_supervisor, &WorkerSupervisor::requestFailed, this, &RunFactsLoader::onFailure);
    connect(m_supervisor, &WorkerSupervisor::workerAvailable, this,
            [this](qint64, const HelloInfo& hello) { m_hello = hello; });
}

RunFactsLoader::~RunFactsLoader()
{
    abort();
}

void RunFactsLoader::load(const RunPlan& plan, const QString& tasksDir)
{
    if (m_loading)
        return;
    m_plan = plan;
    m_loading = true;
    m_pending.clear();
    m_inputs.clear();
    m_device = DeviceFacts();
    m_hello = m_supervisor->workerHello();
    m_done = 0;
    m_total = 2; // tasks and device; analyze and profile are counted once the tasks are known
    send(Kind::Tasks, WorkerRequests::tasks(tasksDir));
    Q_EMIT progress(m_done, m_total);
}

void RunFactsLoader::abort()
{
    if (!m_loading)
        return;
    m_loading = false;
    ++m_generation; // requests still waiting for the GPU's lease give it back when granted
    m_waitingForLease = 0;
    const auto pending = m_pending;
    m_pending.clear();
    for (auto it = pending.cbegin(); it != pending.cend(); ++it) {
        m_supervisor->cancelRequest(it.key());
        GpuLeases::instance()->release(it->lease);
    }
}

void RunFactsLoader::send(Kind kind, const QJsonObject& request, int index)
{
    if (kind != Kind::Device && kind != Kind::Profile) {
        m_pending.insert(m_supervisor->sendRequest(request), Pending{kind, index});
        return;
    }
    // Device facts and profile timings run on the GPU (the facts worker's device 0, which is this
    // process's GPU 0): they take its lease like an evaluation, so they never overlap a timing.
    const QString holder = QStringLiteral("run facts: %1%2 (pid %3)")
                               .arg(WorkerRequests::typeOf(request),
                                    index >= 0 ? QLatin1Char(' ') + m_plan.taskIds.value(index) : QString())
                               .arg(QCoreApplication::applicationPid());
    ++m_waitingForLease;
    const quint64 generation = m_generation;
    // A remote facts worker (its supervisor's target) is leased by that host's GPU.
    const WorkerTarget target = m_supervisor->target();
    const QString key = target.isRemote() ? target.leaseKey() : GpuLeases::keyFor(0);
    GpuLeases::instance()->whenHeldKey(
        key, target.isRemote() ? -1 : 0, holder, this, [this, kind, request, index, generation](qint64 lease) {
            if (generation != m_generation || !m_loading) {
                GpuLeases::instance()->release(lease);
                return;
            }
            --m_waitingForLease;
            m_pending.insert(m_supervisor->sendRequest(request), Pending{kind, index, lease});
        });
}

void RunFactsLoader::onResponse(qint64 id, const WorkerResponse& response)
{
    const auto it = m_pending.find(id);
    if (it == m_pending.end())
        return;
    const Pending pending = *it;
    m_pending.erase(it);
    GpuLeases::instance()->release(pending.lease);
    if (const ResponseHeader& header = response.header; !header.ok) {
        handle(pending, {}, header.errorCode + QStringLiteral(": ") + header.errorMessage);
        return;
    }
    handle(pending, response, QString());
}

void RunFactsLoader::onFailure(qint64 id, const QString& status, const QString& message)
{
    const auto it = m_pending.find(id);
    if (it == m_pending.end())
        return;
    const Pending pending = *it;
    m_pending.erase(it);
    GpuLeases::instance()->release(pending.lease);
    handle(pending, {}, status + QStringLiteral(": ") + message);
}

void RunFactsLoader::handle(const Pending& pending, const WorkerResponse& response, const QString& error)
{
    if (!m_loading)
        return;
    if (m_hello.raw.isEmpty())
        m_hello = m_supervisor->workerHello();
    ++m_done;
    switch (pending.kind) {
    case Kind::Tasks: {
        if (!error.isEmpty())
            return failLoading(QStringLiteral("tasks: ") + error);
        QHash<QString, TaskSpec> known;
        for (const TaskSpec& task : response.tasks.value_or(TaskList()).tasks)
            known.insert(task.id, task);
        QStringList unknown, kernelBenchOnly, runnable;
        const bool kernelBenchFormat = m_plan.answerFormat == QLatin1String(defaults::kAnswerFormatKernelBench);
        for (const QString& id : std::as_const(m_plan.taskIds)) {
            if (!known.contains(id)) {
                unknown << id;
                continue;
            }
            // No TorchScript reference: a native-format answer has nothing to be held to, so the
            // task is left out, with the reason, before a prompt is spent on it; in KernelBench's
            // format it is evaluated against KernelBench's Model (docs/task-format.md).
            if (const QString why = known.value(id).kernelBenchOnly; !why.isEmpty() && !kernelBenchFormat) {
                kernelBenchOnly << QStringLiteral("%1 (%2)").arg(id, why);
                continue;
            }
            runnable << id;
            RunTaskInput input;
            input.task = known.value(id).json; // the prompts render the task's JSON
            m_inputs << input;
        }
        if (!unknown.isEmpty())
            return failLoading(
                QStringLiteral("unknown task%1: %2")
                    .arg(unknown.size() > 1 ? QStringLiteral("s") : QString(), unknown.join(QStringLiteral(", "))),
                Failure::UnknownTask);
        if (!kernelBenchOnly.isEmpty()) {
            if (runnable.isEmpty())
                return failLoading(
                    QStringLiteral("every task is KernelBench only (no TorchScript reference for a "
                                   "native-format answer; --answer-format kernelbench evaluates them): %1")
                        .arg(kernelBenchOnly.join(QStringLiteral("; "))),
                    Failure::UnknownTask);
            Q_EMIT warning(QStringLiteral("left out %1 KernelBench-only task%2 (no TorchScript reference for a "
                                          "native-format answer; --answer-format kernelbench evaluates them): %3")
                               .arg(kernelBenchOnly.size())
                               .arg(kernelBenchOnly.size() > 1 ? QStringLiteral("s") : QString(),
                                    kernelBenchOnly.join(QStringLiteral("; "))));
            m_plan.taskIds = runnable;
        }
        send(Kind::Device, WorkerRequests::device());
        break;
    }
    case Kind::Device: {
        if (!error.isEmpty())
            Q_EMIT warning(QStringLiteral("device: %1 (going on without device facts)").arg(error));
        // Without its envelope: what the run stores (RunConfig::gpu) and the prompts render.
        m_device = decodeDeviceFacts(responseBody(response));
        const bool gpu = m_device.available;
        // A model server beside the evaluations on a local GPU: said before the run, where it
        // holds a tenth of the memory or more (core/workers/gpumemoryelsewhere.h).
        if (gpu && !m_supervisor->target().isRemote()) {
            const MemoryElsewhere elsewhere =
                probeMemoryElsewhere(m_device.raw.value(QLatin1String(ProtocolNames::Key::kPciBusId)).toString(),
                                     m_supervisor->answeringWorkerPid());
            if (elsewhere.known && m_device.memoryBytes > 0 && elsewhere.bytes >= 0.1 * double(m_device.memoryBytes))
                Q_EMIT warning(QStringLiteral("other processes hold %1 of the GPU's %2 (%3): an evaluation "
                                              "that runs out of memory there is evaluated again alone, then stored "
                                              "as out_of_memory_elsewhere, the machine's failure")
                                   .arg(formatGiB(elsewhere.bytes), formatGiB(double(m_device.memoryBytes)),
                                        summarizeMemoryElsewhere(elsewhere)));
        }
        for (int i = 0; i < m_inputs.size(); ++i) {
            RunTaskInput& input = m_inputs[i];
            input.device = m_device.raw;
            const QString id = m_plan.taskIds.at(i);
            // A KernelBench-only task (a KernelBench-format run) has no graph to analyse or
            // profile: the worker refuses both, and its prompts go without them.
            if (input.task.value(QLatin1String(ProtocolNames::Key::kKernelBenchOnly)).isString())
                continue;
            send(Kind::Analyze, WorkerRequests::analyze(id, m_plan.scale), i);
            ++m_total;
            if (gpu && m_plan.regimeForLevel(input.level()).useProfile) {
                send(Kind::Profile, WorkerRequests::profile(id, m_plan.scale, kRunProfileTrials), i);
                ++m_total;
            }
        }
        break;
    }
    case Kind::Analyze:
        if (!error.isEmpty())
            Q_EMIT warning(QStringLiteral("analyze %1: %2").arg(m_plan.taskIds.value(pending.index), error));
        else
            m_inputs[pending.index].analyze = responseBody(response);
        break;
    case Kind::Profile:
        if (!error.isEmpty())
            Q_EMIT warning(QStringLiteral("profile %1: %2 (the prompt goes without it)")
                               .arg(m_plan.taskIds.value(pending.index), error));
        else
            m_inputs[pending.index].profile = responseBody(response);
        break;
    }
    Q_EMIT progress(m_done, m_total);
    if (m_pending.isEmpty() && m_waitingForLease == 0)
        finishLoading();
}

void RunFactsLoader::finishLoading()
{
    m_loading = false;
    if (const ProfileSettings* profile = m_hello.profile(m_plan.profile)) {
        QJsonObject settings = profile->raw;
        settings.insert(QStringLiteral("name"), profile->name); // `profiles` may be keyed by name
        for (RunTaskInput& input : m_inputs)
            input.protocolProfile = settings;
    }
    Q_EMIT loaded(m_inputs, m_device, m_hello);
}

void RunFactsLoader::failLoading(const QString& message, Failure failure)
{
    abort();
    m_failure = failure;
    Q_EMIT failed(message);
}

} // namespace kwb
