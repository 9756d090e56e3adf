// `kwb run`: a regime (or the study's routing) over tasks into a run store, with a progress line,
// a clean stop on Ctrl-C and `--resume`. Exit codes: docs/cli.md.

#include "commands.h"

#include "core/workers/evaluationqueue.h"
#include "core/model/llmclient.h"
#include "core/protocol/protocolcodec.h"
#include "core/run/regime.h"
#include "core/run/runlaunch.h"
#include "core/study/report.h"
#include "core/run/runcontroller.h"
#include "core/store/runstore.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTextStream>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <unistd.h>

namespace kwb::cli {

namespace {




std::atomic<int> g_interrupts{0};

extern "C" void onSigint(int)
{
    if (g_interrupts.fetch_add(1) >= 1) {
        // A second Ctrl-C: the user does not want to wait for the clean stop.
        std::signal(SIGINT, SIG_DFL);
        std::raise(SIGINT);
    }
}

int fail(bool json, int code, const QString& errorCode, const QString& message)
{
    err() << "kwb run: " << message << '\n';
    err().flush();
    if (json) {
        out() << QString::fromUtf8(
            QJsonDocument(QJsonObject{{QStringLiteral("ok"), false},
                                      {QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), errorCode},
                                                                            {QStringLiteral("message"), message}}}})
                .toJson(QJsonDocument::Indented));
        out().flush();
    }
    return code;
}

/// The worker's response, or an empty object with *error set ("status: message").
QJsonObject ask(WorkerSupervisor& supervisor, const QJsonObject& request, QString* error, int timeoutMs = -1)
{
    const WorkerSupervisor::Outcome outcome = supervisor.run(request, timeoutMs);
    if (!outcome.hasResponse()) {
        *error = outcome.status + QStringLiteral(": ") + outcome.message;
        return {};
    }
    if (!outcome.response.value(QLatin1String("ok")).toBool()) {
        *error = ProtocolCodec::errorCode(outcome.response) + QStringLiteral(": ") +
                 ProtocolCodec::errorMessage(outcome.response);
        return {};
    }
    QJsonObject response = outcome.response;
    for (const char* key : {"id", "type", "ok"})
        response.remove(QLatin1String(key));
    return response;
}

} // namespace

QList<int> parseSweepNs(const QString& text, QString* error)
{
    QList<int> ns;
    for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const int n = part.trimmed().toInt(&ok);
        if (!ok || n < 1 || n > 64) {
            if (error)
                *error = QStringLiteral("--n: \"%1\" is not a number from 1 to 64 (e.g. --n 1,2,4,8)").arg(part);
            return {};
        }
        if (!ns.contains(n))
            ns.append(n);
    }
    std::sort(ns.begin(), ns.end());
    if (ns.isEmpty() && error)
        *error = QStringLiteral("--n: no n given (e.g. --n 1,2,4,8)");
    return ns;
}


int runRun(Session& session, const RunCommandOptions& options)
{
    const bool json = options.json;
    const QString promptsDir = options.promptsDir.isEmpty() ? defaultPromptsDir() : options.promptsDir;
    if (!QFileInfo(promptsDir).isDir())
        return fail(json, ExitUsage, QStringLiteral("bad_prompts"),
                    QStringLiteral("no prompts directory %1 (--prompts DIR)").arg(promptsDir));

    if (options.resume > 0 && !QFileInfo(options.database).isFile()) // a resume never creates a database
        return fail(json, ExitBadRequest, QStringLiteral("bad_database"),
                    QStringLiteral("no such database: %1").arg(options.database));
    RunStore store;
    if (!store.open(options.database))
        return fail(json, ExitBadRequest, QStringLiteral("bad_database"),
                    QStringLiteral("cannot open %1: %2").arg(options.database, store.errorString()));

    // What the run is: from the command line, or from the stored configuration on resume
    // (core/run/runlaunch.h, which the window's Launch page uses too).
    RunPlan plan;
    if (options.resume > 0) {
        const std::optional<RunInfo> info = store.run(options.resume);
        if (!info)
            return fail(json, ExitBadRequest, QStringLiteral("unknown_run"),
                        QStringLiteral("no run %1 in %2").arg(options.resume).arg(options.database));
        if (!options.regime.isEmpty() || !options.routing.isEmpty() || !options.tasks.isEmpty())
            err() << "kwb run: --resume uses the run's stored regime and tasks; --regime, --routing and --tasks "
                     "are ignored\n";
        if (info->status == RunStatus::Finished)
            err() << "kwb run: run " << info->id << " is finished; looking for anything left to do\n";
        QString error;
        std::optional<RunPlan> resumed = planResume(*info, &error);
        if (!resumed)
            return fail(json, ExitBadRequest, QStringLiteral("bad_run"), error);
        plan = *resumed;
        // The command line may point a resumed run at another server or model, or time it differently.
        if (!options.endpoint.isEmpty())
            plan.endpoint = options.endpoint;
        if (!options.model.isEmpty())
            plan.model = options.model;
        if (options.timingTrials > 0)
            plan.timingTrials = options.timingTrials;
        if (options.modelTimeoutS > 0)
            plan.modelTimeoutS = options.modelTimeoutS;
        if (options.workerLimits.hostMemoryBytes > 0)
            plan.workerLimits.hostMemoryBytes = options.workerLimits.hostMemoryBytes;
        if (!options.workerLimits.osSandbox)
            plan.workerLimits.osSandbox = false;
    } else {
        QString error;
        RunRequest request;
        request.taskIds = parseTaskSpec(options.tasks, &error);
        if (request.taskIds.isEmpty())
            return fail(json, ExitUsage, QStringLiteral("bad_tasks"), error);
        QString unknown;
        request.ablations = ablationsFromList(options.ablate, &unknown);
        if (!unknown.isEmpty())
            return fail(json, ExitUsage, QStringLiteral("bad_ablation"),
                        QStringLiteral("--ablate: unknown switch \"%1\" (best-of-n, feedback-analyzer, monotone, "
                                       "competence)")
                            .arg(unknown));
        request.taskSpec = options.tasks;
        request.regime = options.regime;
        if (!options.routing.isEmpty())
            request.routing = Routing::studyEstimate();
        request.n = options.n;
        request.turns = options.turns;
        request.temperature = options.temperature;
        request.endpoint = options.endpoint;
        request.model = options.model;
        request.profile = options.profile;
        request.scale = options.scale;
        request.timeoutS = options.timeoutS;
        request.modelTimeoutS = options.modelTimeoutS;
        request.timingTrials = options.timingTrials;
        request.isolation = options.isolation;
        request.workerLimits = options.workerLimits;
        request.sweepNs = options.sweepNs;
        std::optional<RunPlan> planned = planRun(request, &error);
        if (!planned)
            return fail(json, ExitUsage, QStringLiteral("bad_regime"),
                        request.routing ? error : QStringLiteral("--regime: ") + error);
        plan = *planned;
    }
    plan.promptsDir = promptsDir;

    // The worker's facts: tasks, device, analyze (and profile where a regime wants it).
    WorkerSupervisor& supervisor = session.supervisor();
    supervisor.setLimits(plan.workerLimits);
    warnWithoutSandbox(supervisor);
    QJsonObject hello;
    QObject::connect(&supervisor, &WorkerSupervisor::workerAvailable, &supervisor,
                     [&hello](qint64, const QJsonObject& h) { hello = h; });
    QString error;
    QJsonObject tasksRequest{{QStringLiteral("type"), QStringLiteral("tasks")}};
    if (!session.options().tasksDir.isEmpty())
        tasksRequest.insert(QStringLiteral("tasks_dir"), session.options().tasksDir);
    const QJsonObject tasksResponse = ask(supervisor, tasksRequest, &error);
    if (tasksResponse.isEmpty())
        return fail(json, ExitWorker, QStringLiteral("worker"), QStringLiteral("tasks: ") + error);
    QHash<QString, QJsonObject> known;
    for (const QJsonValue& v : tasksResponse.value(QLatin1String("tasks")).toArray())
        known.insert(v.toObject().value(QLatin1String("id")).toString(), v.toObject());
    QStringList unknownTasks;
    for (const QString& id : std::as_const(plan.taskIds))
        if (!known.contains(id))
            unknownTasks << id;
    if (!unknownTasks.isEmpty())
        return fail(json, ExitBadRequest, QStringLiteral("unknown_task"),
                    QStringLiteral("unknown task%1: %2")
                        .arg(unknownTasks.size() > 1 ? QStringLiteral("s") : QString(),
                             unknownTasks.join(QStringLiteral(", "))));

    QJsonObject device = ask(
        supervisor,
        QJsonObject{{QStringLiteral("type"), QStringLiteral("device")}, {QStringLiteral("ceilings"), false}}, &error);
    if (device.isEmpty())
        err() << "kwb run: device: " << error << " (going on without device facts)\n";
    const bool gpu = device.value(QLatin1String("available")).toBool();

    QList<RunTaskInput> inputs;
    for (const QString& id : std::as_const(plan.taskIds)) {
        RunTaskInput input;
        input.task = known.value(id);
        input.device = device;
        input.analyze = ask(supervisor,
                            QJsonObject{{QStringLiteral("type"), QStringLiteral("analyze")},
                                        {QStringLiteral("task"), id},
                                        {QStringLiteral("scale"), plan.scale}},
                            &error);
        if (input.analyze.isEmpty())
            err() << "kwb run: analyze " << id << ": " << error << '\n';
        if (plan.regimeForLevel(input.level()).useProfile && gpu) {
            input.profile = ask(supervisor,
                                QJsonObject{{QStringLiteral("type"), QStringLiteral("profile")},
                                            {QStringLiteral("task"), id},
                                            {QStringLiteral("scale"), plan.scale},
                                            {QStringLiteral("trials"), kRunProfileTrials}},
                                &error);
            if (input.profile.isEmpty())
                err() << "kwb run: profile " << id << ": " << error << " (the prompt goes without it)\n";
        }
        inputs << input;
    }
    err().flush();

    // Every template renders for every task before a model request (or a run row) is spent.
    if (const QString problem = checkRunTemplates(plan, inputs); !problem.isEmpty())
        return fail(json, ExitUsage, QStringLiteral("bad_prompts"), QStringLiteral("template: ") + problem);

    // A new run keeps its whole configuration.
    qint64 runId = plan.resumeRunId;
    if (runId == 0) {
        const std::optional<RunConfig> config = runConfigFor(plan, device, hello, &error);
        if (!config)
            return fail(json, ExitUsage, QStringLiteral("bad_prompts"), error);
        const std::optional<qint64> id = store.createRun(plan.runName(), plan.regimeLabel(), *config);
        if (!id)
            return fail(json, ExitBadRequest, QStringLiteral("bad_database"),
                        QStringLiteral("cannot create the run: ") + store.errorString());
        runId = *id;
    } else {
        store.setRunStatus(runId, RunStatus::Running);
    }

    // The model and the evaluator.
    LlmClient llm;
    llm.setSettings(llmSettingsFor(plan, options.apiKey.isEmpty() ? qEnvironmentVariable("KWB_API_KEY") : options.apiKey));

    EvaluationQueue queue(QList<int>{0});
    QStringList workerArguments;
    if (!session.options().tasksDir.isEmpty())
        workerArguments << QStringLiteral("--tasks-dir") << session.options().tasksDir;
    configureQueue(queue, supervisor.program(), workerArguments, plan, device);

    RunController controller(&llm, &queue, &store, plan.promptsDir);
    configureController(controller, plan);
    const QList<int> sweepNs = plan.sweepNs;

    // Progress on stderr, one line, rate-limited.
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    QElapsedTimer clock;
    clock.start();
    int done = 0, total = int(inputs.size()), evaluated = 0, correct = 0;
    qint64 lastPrint = -100000;
    const auto printProgress = [&](bool force) {
        const qint64 now = clock.elapsed();
        if (!force && now - lastPrint < (tty ? 250 : 5000))
            return;
        lastPrint = now;
        constexpr int width = 24;
        const int filled = total > 0 ? done * width / total : width;
        const QString line = QStringLiteral("[%1%2] %3/%4 tasks, %5 candidates evaluated, %6 correct, %7")
                                 .arg(QString(filled, QLatin1Char('#')), QString(width - filled, QLatin1Char('.')))
                                 .arg(done)
                                 .arg(total)
                                 .arg(evaluated)
                                 .arg(correct)
                                 .arg(elapsedClock(now));
        err() << (tty ? QStringLiteral("\r\033[K") : QString()) << line << (tty ? "" : "\n");
        err().flush();
    };
    QStringList taskErrors;
    QObject::connect(&controller, &RunController::progress, &controller, [&](int d, int t) {
        done = d;
        total = t;
        printProgress(false);
    });
    QObject::connect(&controller, &RunController::candidateEvaluated, &controller,
                     [&](const QString&, int, int, const QString& status) {
                         ++evaluated;
                         if (status == QLatin1String("correct"))
                             ++correct;
                         printProgress(false);
                     });
    QObject::connect(
        &controller, &RunController::taskError, &controller,
        [&](const QString& task, const QString& message) { taskErrors << task + QStringLiteral(": ") + message; });
    QTimer ticker;
    ticker.setInterval(tty ? 1000 : 5000);
    QObject::connect(&ticker, &QTimer::timeout, &controller, [&] { printProgress(false); });
    ticker.start();

    // Ctrl-C: the handler only counts; a timer turns it into cancel() on the event loop.
    g_interrupts = 0;
    struct sigaction action = {};
    action.sa_handler = onSigint;
    sigemptyset(&action.sa_mask);
    struct sigaction previous = {};
    sigaction(SIGINT, &action, &previous);
    QTimer sigintPoll;
    sigintPoll.setInterval(50);
    QObject::connect(&sigintPoll, &QTimer::timeout, &controller, [&] {
        if (g_interrupts.load() > 0 && controller.isRunning()) {
            sigintPoll.stop();
            if (tty)
                err() << '\n';
            err() << "kwb run: interrupted, stopping (Ctrl-C again to quit at once)\n";
            err().flush();
            controller.cancel();
        }
    });
    sigintPoll.start();

    QEventLoop loop;
    bool cancelled = false;
    QObject::connect(&controller, &RunController::runFinished, &loop, [&](bool c) {
        cancelled = c;
        loop.quit();
    });
    if (!controller.start(runId, inputs)) {
        sigaction(SIGINT, &previous, nullptr);
        return fail(json, ExitUsage, QStringLiteral("bad_regime"), QStringLiteral("the regime is not valid"));
    }
    loop.exec();
    ticker.stop();
    sigintPoll.stop();
    queue.cancelAll();
    printProgress(true);
    if (tty)
        err() << '\n';

    const auto selected = controller.selected();
    int correctTasks = 0, compiledTasks = 0;
    for (const CandidateOutcome& o : selected) {
        correctTasks += o.correct() ? 1 : 0;
        compiledTasks += o.compiled ? 1 : 0;
    }
    for (const QString& e : std::as_const(taskErrors))
        err() << "kwb run: task error: " << e << '\n';
    const QString dbArg = options.database;
    const QString reportCommand = QStringLiteral("kwb report --db %1 --runs %2").arg(dbArg).arg(runId);
    const QString resumeCommand = QStringLiteral("kwb run --db %1 --resume %2").arg(dbArg).arg(runId);
    if (cancelled) {
        err() << "kwb run: run " << runId << " cancelled after " << done << '/' << total << " tasks; resume with:\n  "
              << resumeCommand << '\n';
    } else {
        err() << "kwb run: run " << runId << " finished: " << correctTasks << '/' << total << " tasks correct, "
              << compiledTasks << '/' << total << " compiled, " << evaluated << " candidates evaluated in "
              << elapsedClock(clock.elapsed()) << "\n  report: " << reportCommand << '\n';
    }
    // What the store now holds for this run: the curve of a sweep, and whether anything is left
    // without an evaluation (a failed model request, a machine failure, a task never reached).
    ReportOptions reportOptions;
    QString reportError;
    const std::optional<Report> report =
        cancelled ? std::nullopt : buildReport(store, {runId}, reportOptions, &reportError);
    QStringList incomplete;
    if (report && !report->runs.isEmpty()) {
        for (const UnevaluatedTask& task : report->runs.first().unevaluated)
            incomplete << task.task + QStringLiteral(": ") + task.reason;
    }
    if (!cancelled) {
        for (const UnfinishedUnit& unit : unfinishedUnits(store, runId)) {
            const QString line = QStringLiteral("%1 turn %2 sample %3 %4: %5")
                                     .arg(unit.unit.task)
                                     .arg(unit.unit.turn)
                                     .arg(unit.unit.sample)
                                     .arg(unit.unit.role, unit.reason);
            // A task without any evaluation is listed once, by the task.
            if (!std::any_of(incomplete.cbegin(), incomplete.cend(),
                             [&](const QString& t) { return t.startsWith(unit.unit.task + QStringLiteral(": ")); }))
                incomplete << line;
        }
        if (!incomplete.isEmpty() || !taskErrors.isEmpty()) {
            err() << "kwb run: run " << runId << " is incomplete (exit code " << int(ExitIncomplete) << "); without an "
                  << "evaluation:\n";
            for (const QString& line : std::as_const(incomplete))
                err() << "  " << line << '\n';
            err() << "  retry with: " << resumeCommand << '\n';
        }
    }
    const bool isIncomplete = !cancelled && (!incomplete.isEmpty() || !taskErrors.isEmpty());
    if (!sweepNs.isEmpty() && !cancelled) {
        if (report && !report->runs.isEmpty() && report->runs.first().bestOfN) {
            const BestOfNReport& curve = *report->runs.first().bestOfN;
            const auto line = [&](const QString& level, const QList<BestOfNPoint>& points) {
                QStringList cells;
                for (const BestOfNPoint& p : points)
                    if (sweepNs.contains(p.n))
                        cells << QStringLiteral("n=%1 %2 % [%3–%4]")
                                     .arg(p.n)
                                     .arg(p.passPct.value, 0, 'f', 1)
                                     .arg(p.passPct.low, 0, 'f', 0)
                                     .arg(p.passPct.high, 0, 'f', 0);
                err() << "  " << level << ": " << cells.join(QStringLiteral(", ")) << '\n';
            };
            err() << "kwb sweep: best-of-n, correct % over the first turn's " << curve.samples
                  << " samples per task (95 % intervals over tasks):\n";
            line(QStringLiteral("all"), curve.overall);
            for (auto it = curve.perLevel.cbegin(); it != curve.perLevel.cend(); ++it)
                line(QStringLiteral("L%1").arg(it.key()), it.value());
        } else {
            err() << "kwb sweep: no curve: " << (report ? QStringLiteral("fewer than two samples per task") : reportError)
                  << '\n';
        }
    }
    err().flush();
    if (json) {
        out() << QString::fromUtf8(
            QJsonDocument(
                QJsonObject{{QStringLiteral("ok"), true},
                            {QStringLiteral("run"), runId},
                            {QStringLiteral("status"), cancelled ? RunStatus::Cancelled : RunStatus::Finished},
                            {QStringLiteral("tasks"), total},
                            {QStringLiteral("tasks_done"), done},
                            {QStringLiteral("correct"), correctTasks},
                            {QStringLiteral("compiled"), compiledTasks},
                            {QStringLiteral("candidates_evaluated"), evaluated},
                            {QStringLiteral("task_errors"), QJsonArray::fromStringList(taskErrors)},
                            {QStringLiteral("complete"), !cancelled && !isIncomplete},
                            {QStringLiteral("unevaluated"), QJsonArray::fromStringList(incomplete)},
                            {QStringLiteral("report"), reportCommand},
                            {QStringLiteral("resume"), resumeCommand}})
                .toJson(QJsonDocument::Indented));
        out().flush();
    }
    sigaction(SIGINT, &previous, nullptr);
    return cancelled ? ExitInterrupted : isIncomplete ? ExitIncomplete : ExitSuccess;
}

} // namespace kwb::cli
