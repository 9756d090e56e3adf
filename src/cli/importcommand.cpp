// `kwb import kernelbench DIR --db FILE`: a folder of KernelBench generations (its runs/ naming,
// level_{L}_problem_{P}_sample_{S}_kernel.py; .txt too) evaluated in KernelBench's answer format
// into one run of the store, so they show in Results, Roofline, Best-of-n and Diff like any run.
// Each file is sample S of turn 1 of task L{L}/{P}; files outside the 30 tasks (L1..L3, problems
// 1-10), with another name, or for a task the worker does not know are skipped and reported.

#include "commands.h"

#include "core/protocol/evaluationresult.h"
#include "core/protocol/workerresponses.h"
#include "core/run/regime.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/gpulease.h"
#include "core/workers/workerlauncher.h"

#include <QCoreApplication>
#include <QDir>
#include <QEventLoop>
#include <QHash>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMap>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace kwb::cli {

namespace {

struct Generation
{
    QString file; ///< the file's name in DIR
    QString task; ///< "L2/1"
    int sample = 0;
};

struct Skipped
{
    QString file;
    QString reason;
};

int importFail(bool json, int code, const QString& errorCode, const QString& message)
{
    return commandFailed("import", json, code, errorCode, message);
}

} // namespace

int runImportKernelBench(Session& session, const ImportOptions& options)
{
    const bool json = options.json;
    const QDir dir(options.directory);
    if (!dir.exists())
        return importFail(json, ExitUsage, QStringLiteral("bad_directory"),
                          QStringLiteral("no such directory: %1").arg(options.directory));

    // The worker's tasks: a generation for a task it does not list is skipped, not evaluated.
    QJsonObject tasksRequest{{QStringLiteral("type"), QStringLiteral("tasks")}};
    if (!session.options().tasksDir.isEmpty())
        tasksRequest.insert(QStringLiteral("tasks_dir"), session.options().tasksDir);
    const WorkerSupervisor::Outcome tasksOutcome = session.supervisor().run(tasksRequest);
    if (!tasksOutcome.hasResponse() || !decodeHeader(tasksOutcome.response).ok)
        return importFail(json, ExitWorker, QStringLiteral("worker"),
                          QStringLiteral("the worker did not list its tasks: %1")
                              .arg(tasksOutcome.message.isEmpty() ? decodeHeader(tasksOutcome.response).errorMessage
                                                                  : tasksOutcome.message));
    QSet<QString> known;
    for (const TaskSpec& task : decodeTaskList(tasksOutcome.response).tasks)
        known.insert(task.id);

    // KernelBench's naming (its generation scripts write runs/<name>/level_1_problem_5_sample_0_kernel.py).
    static const QRegularExpression naming(
        QStringLiteral("^level_([0-9]+)_problem_([0-9]+)_sample_([0-9]+)_kernel\\.(py|txt)$"));
    QList<Generation> generations;
    QList<Skipped> skipped;
    QSet<QPair<QString, int>> seen;
    const QStringList files = dir.entryList(QDir::Files, QDir::Name);
    for (const QString& file : files) {
        const QRegularExpressionMatch m = naming.match(file);
        if (!m.hasMatch()) {
            skipped.append({file, QStringLiteral("not KernelBench's level_L_problem_P_sample_S_kernel.py naming")});
            continue;
        }
        const int level = m.captured(1).toInt(), problem = m.captured(2).toInt(), sample = m.captured(3).toInt();
        const QString task = QStringLiteral("L%1/%2").arg(level).arg(problem);
        if (level < 1 || level > 3 || problem < 1 || problem > 10) {
            skipped.append({file, QStringLiteral("%1 is not one of the 30 tasks (levels 1-3, problems 1-10)").arg(task)});
            continue;
        }
        if (!known.contains(task)) {
            skipped.append({file, QStringLiteral("the worker has no task %1").arg(task)});
            continue;
        }
        if (seen.contains({task, sample})) {
            skipped.append({file, QStringLiteral("another file is already sample %1 of %2").arg(sample).arg(task)});
            continue;
        }
        seen.insert({task, sample});
        generations.append({file, task, sample});
    }
    // Task order as KernelBench numbers them, then samples.
    std::sort(generations.begin(), generations.end(), [](const Generation& a, const Generation& b) {
        const auto key = [](const Generation& g) {
            const QStringList parts = g.task.mid(1).split(QLatin1Char('/'));
            return std::make_tuple(parts.value(0).toInt(), parts.value(1).toInt(), g.sample);
        };
        return key(a) < key(b);
    });
    QStringList taskIds;
    int samplesPerTask = 0;
    QMap<QString, int> perTask;
    for (const Generation& g : std::as_const(generations)) {
        if (!taskIds.contains(g.task))
            taskIds << g.task;
        samplesPerTask = std::max(samplesPerTask, ++perTask[g.task]);
    }

    if (generations.isEmpty()) {
        for (const Skipped& s : std::as_const(skipped))
            err() << "kwb import: skipped " << s.file << ": " << s.reason << '\n';
        return importFail(json, ExitUsage, QStringLiteral("nothing_to_import"),
                          QStringLiteral("no generation in %1 to import (%2 files skipped)")
                              .arg(options.directory)
                              .arg(skipped.size()));
    }

    RunStore store;
    if (!store.open(options.database))
        return importFail(json, ExitBadRequest, QStringLiteral("bad_database"),
                          QStringLiteral("cannot open %1: %2").arg(options.database, store.errorString()));

    // The run's configuration: what was imported, evaluated how. The regime is KernelBench's
    // one-turn sampling (zero-shot with n = the most samples of a task), so Best-of-n reads it as
    // any sampled run; the import itself sends no prompt to a model.
    std::optional<Regime> regime = Regime::builtin(QStringLiteral("zero-shot"));
    if (regime) {
        regime->n = std::max(1, samplesPerTask);
        regime->turns = 1;
    }
    QJsonArray skippedJson;
    for (const Skipped& s : std::as_const(skipped))
        skippedJson.append(QJsonObject{{QStringLiteral("file"), s.file}, {QStringLiteral("reason"), s.reason}});
    const int compileWorkers = options.compileWorkers >= 0
                                   ? options.compileWorkers
                                   : defaultCompileWorkers(QString::fromLatin1(defaults::kAnswerFormatKernelBench));
    RunConfig config;
    config.protocolProfile = options.profile;
    config.seeds = QJsonObject{{QStringLiteral("evaluation"), kRunEvaluationSeed}};
    config.versions = QJsonObject{{QStringLiteral("kwb"), QStringLiteral(KWB_VERSION)}};
    config.extra = QJsonObject{
        {QStringLiteral("import"), QJsonObject{{QStringLiteral("format"), QStringLiteral("kernelbench")},
                                               {QStringLiteral("directory"), dir.absolutePath()},
                                               {QStringLiteral("files"), int(generations.size())},
                                               {QStringLiteral("skipped"), skippedJson}}},
        {QStringLiteral("regime"), regime ? QJsonValue(regime->toJson()) : QJsonValue()},
        {QStringLiteral("tasks"), QJsonArray::fromStringList(taskIds)},
        {QStringLiteral("task_spec"), taskSpecFor(taskIds)},
        {QStringLiteral("scale"), options.scale},
        {QStringLiteral("timeout_s"), options.timeoutS},
        {QStringLiteral("answer_format"), QString::fromLatin1(defaults::kAnswerFormatKernelBench)},
        {QStringLiteral("sandbox"), workerSandboxStatus(session.supervisor().limits())},
        {QStringLiteral("compile_workers"), compileWorkers},
    };
    const QString name = options.runName.isEmpty()
                             ? QStringLiteral("import [kernelbench] %1 %2").arg(dir.dirName(), taskSpecFor(taskIds))
                             : options.runName;
    const std::optional<qint64> runId = store.createRun(name, QStringLiteral("import"), config);
    if (!runId)
        return importFail(json, ExitBadRequest, QStringLiteral("bad_database"), store.errorString());

    QMap<QString, int> statusCounts;
    int evaluated = 0;
    // Every generation goes into the store first, then into one queue: its compile pool builds the
    // generations' extensions ahead (as many at once as --compile-workers), the GPU evaluates
    // those built meanwhile (core/workers/evaluationqueue.h).
    struct Pending
    {
        qint64 candidateId = 0;
        Generation generation;
    };
    QHash<qint64, Pending> pending; // job id -> its candidate
    EvaluationQueue queue(QList<WorkerTarget>{session.supervisor().target()}, nullptr);
    QStringList arguments;
    if (!session.options().tasksDir.isEmpty())
        arguments << QStringLiteral("--tasks-dir") << session.options().tasksDir;
    queue.setProgram(session.supervisor().program(), arguments);
    queue.setWorkerLimits(session.supervisor().limits());
    queue.setTimeout(int(std::lround(options.timeoutS * 1000.0)));
    queue.setCompileWorkerCount(compileWorkers);
    for (const Generation& g : std::as_const(generations)) {
        QFile f(dir.filePath(g.file));
        if (!f.open(QIODevice::ReadOnly)) {
            skipped.append({g.file, QStringLiteral("unreadable: %1").arg(f.errorString())});
            continue;
        }
        const QString answer = QString::fromUtf8(f.readAll());
        PromptRecord prompt;
        prompt.runId = *runId;
        prompt.task = g.task;
        prompt.turn = 1;
        prompt.sample = g.sample;
        prompt.role = QStringLiteral("generator");
        prompt.text = QStringLiteral("(imported from %1)").arg(dir.filePath(g.file));
        const std::optional<qint64> promptId = store.addPrompt(prompt);
        ResponseRecord response;
        response.promptId = promptId.value_or(0);
        response.text = answer;
        const std::optional<qint64> responseId = promptId ? store.addResponse(response) : std::nullopt;
        CandidateRecord candidate;
        candidate.responseId = responseId.value_or(0);
        candidate.task = g.task;
        candidate.turn = 1;
        candidate.sample = g.sample;
        const std::optional<qint64> candidateId = responseId ? store.addCandidate(candidate) : std::nullopt;
        if (!candidateId)
            return importFail(json, ExitBadRequest, QStringLiteral("bad_database"), store.errorString());

        QJsonObject request{{QStringLiteral("answer_format"), QString::fromLatin1(defaults::kAnswerFormatKernelBench)},
                            {QStringLiteral("profile"), options.profile},
                            {QStringLiteral("scale"), options.scale},
                            {QStringLiteral("seed"), kRunEvaluationSeed}};
        if (!options.device.isEmpty())
            request.insert(QStringLiteral("device"), options.device);
        pending.insert(queue.submit(g.task, answer, request), Pending{*candidateId, g});
    }
    QString storeError;
    QEventLoop loop;
    const auto record = [&](qint64 id, const QJsonObject& result) {
        const Pending p = pending.take(id);
        if (p.candidateId == 0)
            return;
        if (storeError.isEmpty() && !store.addEvaluation(p.candidateId, result))
            storeError = store.errorString();
        ++evaluated;
        ++statusCounts[decodeEvaluation(result).statusName];
        err() << "kwb import: " << p.generation.file << " -> " << p.generation.task << " sample " << p.generation.sample
              << ": " << decodeEvaluation(result).statusName << '\n';
        err().flush();
        if (pending.isEmpty())
            loop.quit();
    };
    QObject::connect(&queue, &EvaluationQueue::jobFinished, &loop, record);
    // The worker refused the request (bad_request), or the job ended without a verdict.
    QObject::connect(&queue, &EvaluationQueue::jobFailed, &loop,
                     [&](qint64 id, const QString& status, const QString& message) {
                         record(id, failureResult(status, message));
                     });
    if (!pending.isEmpty())
        loop.exec();
    if (!storeError.isEmpty())
        return importFail(json, ExitBadRequest, QStringLiteral("bad_database"), storeError);
    store.setRunStatus(*runId, RunStatus::Finished);

    if (json) {
        QJsonObject counts;
        for (auto it = statusCounts.cbegin(); it != statusCounts.cend(); ++it)
            counts.insert(it.key(), it.value());
        QJsonArray skippedOut;
        for (const Skipped& s : std::as_const(skipped))
            skippedOut.append(QJsonObject{{QStringLiteral("file"), s.file}, {QStringLiteral("reason"), s.reason}});
        out() << QString::fromUtf8(QJsonDocument(QJsonObject{{QStringLiteral("ok"), true},
                                                             {QStringLiteral("run"), *runId},
                                                             {QStringLiteral("name"), name},
                                                             {QStringLiteral("tasks"), int(taskIds.size())},
                                                             {QStringLiteral("evaluated"), evaluated},
                                                             {QStringLiteral("statuses"), counts},
                                                             {QStringLiteral("skipped"), skippedOut}})
                                       .toJson(QJsonDocument::Indented));
    } else {
        out() << "run " << *runId << " \"" << name << "\": " << evaluated << " generations of " << taskIds.size()
              << " tasks evaluated";
        for (auto it = statusCounts.cbegin(); it != statusCounts.cend(); ++it)
            out() << (it == statusCounts.cbegin() ? ": " : ", ") << it.value() << ' ' << it.key();
        out() << '\n' << skipped.size() << " files skipped\n";
        for (const Skipped& s : std::as_const(skipped))
            out() << "  " << s.file << ": " << s.reason << '\n';
        out() << "report: kwb report --db " << options.database << " --runs " << *runId << '\n';
    }
    out().flush();
    return ExitSuccess;
}

} // namespace kwb::cli
