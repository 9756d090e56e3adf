// `kwb run`: a regime (or the study's routing) over tasks into a run store, with a progress line,
// a clean stop on Ctrl-C and `--resume`. Exit codes: docs/cli.md.

#include "commands.h"

#include "core/config/regime.h"
#include "core/model/llmclient.h"
#include "core/model/secrets.h"
#include "core/protocol/protocolcodec.h"
#include "core/protocol/workerresponses.h"
#include "core/run/headlessrun.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"
#include "core/study/report.h"
#include "core/study/reportformat.h"

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
    return commandFailed("run", json, code, errorCode, message);
}

int executePlan(Session& session, const RunCommandOptions& options, RunStore& store, const RunPlan& plan,
                QJsonObject* summary);

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

QString resolvePromptsDir(const QString& option, QString* error)
{
    if (option.isEmpty())
        return defaultPromptsDir();
    if (QFileInfo(option).isDir())
        return option;
    const QString shipped = shippedPromptSetDir(option);
    if (!shipped.isEmpty() && QFileInfo(shipped).isDir())
        return shipped;
    if (error)
        *error = QStringLiteral("--prompts: no directory %1 and no shipped set of that name (%2)")
                     .arg(option, shippedPromptSetNames().join(QStringLiteral(", ")));
    return {};
}

int runRun(Session& session, const RunCommandOptions& options)
{
    const bool json = options.json;
    // --prompts names a directory or a shipped set; without it, the set for the run's answer
    // format (a resumed run's included), decided below once the plan is known.
    QString promptsError;
    QString promptsDir;
    if (!options.promptsDir.isEmpty()) {
        promptsDir = resolvePromptsDir(options.promptsDir, &promptsError);
        if (promptsDir.isEmpty())
            return fail(json, ExitUsage, QStringLiteral("bad_prompts"), promptsError);
    }

    if (options.resume > 0 && !QFileInfo(options.database).isFile()) // a resume never creates a database
        return fail(json, ExitBadRequest, QStringLiteral("bad_database"),
                    QStringLiteral("no such database: %1").arg(options.database));
    RunStore store;
    QString databaseError;
    if (!openRunStore(store, options.sweepNs.isEmpty() ? "run" : "sweep", options.database, OpenOptions::Access::Write,
                      &databaseError))
        return fail(json, ExitBadRequest, QStringLiteral("bad_database"), databaseError);

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
        if (options.pauseGenerationWhileTiming >= 0)
            plan.pauseGenerationWhileTiming = options.pauseGenerationWhileTiming == 1;
        if ((options.evaluateIdenticalOnce && !plan.evaluateIdenticalOnce) ||
            (options.identicalAcrossRuns && !plan.identicalAcrossRuns))
            err() << "kwb run: --resume keeps the run's evaluation of identical answers; --evaluate-identical-once "
                     "and --identical-across-runs are ignored\n";
        // The answer format is the run's: its prompts ask for it and its stored answers are in it.
        if (!options.answerFormat.isEmpty() && options.answerFormat != plan.answerFormat)
            err() << "kwb run: --resume keeps the run's answer format (" << plan.answerFormat << "); --answer-format "
                  << options.answerFormat << " is ignored\n";
    } else {
        QString error;
        RunRequest request;
        request.taskIds = parseTaskSpec(options.tasks, &error);
        if (request.taskIds.isEmpty())
            return fail(json, ExitUsage, QStringLiteral("bad_tasks"), error);
        // A run over a named set records the set ("level2", "study,L3:11-20"), in its
        // configuration and its name; any other spec is kept in its shortest form.
        if (namesTaskSet(options.tasks))
            request.taskSpec = options.tasks.simplified().remove(QLatin1Char(' '));
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
        if (options.stopWhenCorrect >= 0) // stored with the regime, so a resume keeps it
            request.stopWhenCorrect = options.stopWhenCorrect == 1;
        if (!options.feedback.isEmpty()) { // stored with the regime (feedback_source) too
            request.feedbackSource = feedbackSourceFromString(options.feedback);
            if (!request.feedbackSource)
                return fail(json, ExitUsage, QStringLiteral("bad_feedback"),
                            QStringLiteral("--feedback: \"%1\" is neither %2 nor %3")
                                .arg(options.feedback, toString(FeedbackSource::Last), toString(FeedbackSource::Best)));
        }
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
        request.compileOnly = options.compileOnly;
        request.profileTraffic = options.profileTraffic;
        request.evaluateIdenticalOnce = options.evaluateIdenticalOnce || options.identicalAcrossRuns;
        request.identicalAcrossRuns = options.identicalAcrossRuns;
        request.contextTokens = options.contextTokens;
        request.maxOutputTokens = options.maxOutputTokens;
        if (!options.answerFormat.isEmpty())
            request.answerFormat = options.answerFormat;
        if (options.pauseGenerationWhileTiming >= 0)
            request.pauseGenerationWhileTiming = options.pauseGenerationWhileTiming == 1;
        std::optional<RunPlan> planned = planRun(request, &error);
        if (!planned)
            return fail(json, ExitUsage, QStringLiteral("bad_regime"),
                        request.routing ? error : QStringLiteral("--regime: ") + error);
        plan = *planned;
    }
    if (promptsDir.isEmpty())
        promptsDir = defaultPromptsDirFor(plan.answerFormat);
    if (!QFileInfo(promptsDir).isDir())
        return fail(json, ExitUsage, QStringLiteral("bad_prompts"),
                    QStringLiteral("no prompts directory %1 (--prompts DIR)").arg(promptsDir));
    plan.promptsDir = promptsDir;
    if (plan.resumeRunId > 0 && options.stopWhenCorrect >= 0)
        err() << "kwb run: --resume uses the run's stored stop-when-correct setting\n";
    if (plan.resumeRunId > 0 && !options.feedback.isEmpty())
        err() << "kwb run: --resume uses the run's stored feedback setting (" << toString(plan.regime.feedbackSource)
              << ")\n";
    if (plan.sweepNs.isEmpty() || plan.resumeRunId > 0) {
        QJsonObject summary;
        const int code = executePlan(session, options, store, plan, &summary);
        if (json && !summary.isEmpty()) {
            out() << QString::fromUtf8(QJsonDocument(summary).toJson(QJsonDocument::Indented));
            out().flush();
        }
        return code;
    }

    // `kwb sweep`: the whole regime once per n, the same seeds, one run each (linked by the sweep id).
    // `--sweep ID` continues one: a finished run of an n is kept, an unfinished one resumed, a
    // missing n started with the same id.
    QMap<int, RunInfo> existing;
    if (!options.sweepId.isEmpty()) {
        plan.sweepId = options.sweepId;
        QStringList sortedTasks = plan.taskIds;
        sortedTasks.sort();
        for (const RunInfo& info : store.runs()) {
            const RunConfig& config = info.config;
            if (!config.sweep || config.sweep->id != options.sweepId)
                continue;
            QStringList tasks = config.tasks;
            tasks.sort();
            if (info.regime != plan.regimeLabel() || tasks != sortedTasks)
                return fail(json, ExitUsage, QStringLiteral("bad_sweep"),
                            QStringLiteral("--sweep %1: its runs are of %2 over %3; give the same --regime and --tasks")
                                .arg(options.sweepId, info.regime, config.taskSpec));
            existing.insert(config.sweep->n, info);
        }
        if (existing.isEmpty())
            return fail(json, ExitBadRequest, QStringLiteral("unknown_sweep"),
                        QStringLiteral("no sweep %1 in %2").arg(options.sweepId, options.database));
    }
    QJsonArray runs;
    QList<qint64> runIds;
    int code = ExitSuccess;
    const QList<RunPlan> plans = sweepRunPlans(plan);
    if (!plans.isEmpty())
        err() << "kwb sweep: sweep " << plans.first().sweepId << " (continue it with --sweep " << plans.first().sweepId
              << ")\n";
    for (RunPlan runPlan : plans) {
        const int n = runPlan.regime.n;
        if (existing.contains(n)) {
            const RunInfo& info = existing[n];
            if (info.status == RunStatus::Finished) {
                err() << "kwb sweep: n = " << n << ": run " << info.id << " is finished, kept\n";
                runs.append(QJsonObject{{QStringLiteral("run"), info.id},
                                        {QStringLiteral("status"), info.status},
                                        {QStringLiteral("kept"), true},
                                        {QStringLiteral("sweep"), options.sweepId}});
                runIds.append(info.id);
                continue;
            }
            QString error;
            std::optional<RunPlan> resumed = planResume(info, &error);
            if (!resumed)
                return fail(json, ExitBadRequest, QStringLiteral("bad_run"), error);
            resumed->promptsDir = promptsDir;
            if (!options.endpoint.isEmpty())
                resumed->endpoint = options.endpoint;
            if (!options.model.isEmpty())
                resumed->model = options.model;
            runPlan = *resumed;
            err() << "kwb sweep: n = " << n << ": resuming run " << info.id << '\n';
        }
        err() << "kwb sweep: n = " << runPlan.regime.n << " (" << runPlan.regime.turns << " turn(s))\n";
        err().flush();
        QJsonObject summary;
        const int runCode = executePlan(session, options, store, runPlan, &summary);
        if (summary.isEmpty()) // the run could not be made: the error is out already
            return runCode;
        runs.append(summary);
        runIds.append(qint64(summary.value(QLatin1String("run")).toDouble()));
        if (runCode == ExitInterrupted) {
            code = runCode;
            break;
        }
        if (runCode != ExitSuccess)
            code = runCode;
    }
    QString reportError;
    const std::optional<Report> report = buildReport(store, runIds, ReportOptions(), &reportError);
    if (report && !report->sweeps.isEmpty()) {
        const SweepCurve& curve = report->sweeps.first();
        const auto line = [&](const QString& level, const QList<SweepPoint>& points, int levelKey) {
            QStringList cells;
            for (const SweepPoint& p : points) {
                const Metrics& m = levelKey == 0 ? p.overall : p.perLevel.value(levelKey);
                cells << QStringLiteral("n=%1 %2 (compiled %3 %)")
                             .arg(p.n)
                             .arg(percentText(m.correctPct))
                             .arg(m.compiledPct.value, 0, 'f', 1);
            }
            err() << "  " << level << ": " << cells.join(QStringLiteral(", ")) << '\n';
        };
        err() << "kwb sweep: best-of-n, correct % of the whole regime per n over all "
              << curve.points.first().overall.tasks << " tasks (95 % intervals over tasks):\n";
        line(QStringLiteral("all"), curve.points, 0);
        for (const int level : std::as_const(report->levels))
            line(QStringLiteral("L%1").arg(level), curve.points, level);
        err() << "  report: kwb report --db " << options.database << " --runs " << [&] {
            QStringList ids;
            for (qint64 id : std::as_const(runIds))
                ids << QString::number(id);
            return ids.join(QLatin1Char(','));
        }() << '\n';
    } else if (!report) {
        err() << "kwb sweep: no curve: " << reportError << '\n';
    }
    err().flush();
    if (json) {
        out() << QString::fromUtf8(
            QJsonDocument(
                QJsonObject{{QStringLiteral("ok"), true},
                            {QStringLiteral("sweep"),
                             runs.isEmpty() ? QJsonValue() : runs.first().toObject().value(QLatin1String("sweep"))},
                            {QStringLiteral("runs"), runs}})
                .toJson(QJsonDocument::Indented));
        out().flush();
    }
    return code;
}

namespace {

int executePlan(Session& session, const RunCommandOptions& options, RunStore& store, const RunPlan& plan,
                QJsonObject* summary)
{
    const bool json = options.json;

    // The run itself, assembled as the window's Launch page does it (core/run/headlessrun.h):
    // the worker's facts, the template check, the run row, the queue and the controller.
    RunEnvironment environment;
    environment.databasePath = options.database;
    environment.workerProgram = session.supervisor().program();
    environment.tasksDir = session.options().tasksDir;
    environment.apiKey = options.apiKey.isEmpty() ? kwb::secrets::environmentApiKey() : options.apiKey;
    // No streaming here: the idle limit of a call is its deadline (llmSettingsFor).
    environment.stream = false;
    environment.requestTimeoutMs = llmSettingsFor(plan, QString()).timeoutMs;
    environment.factsTimeoutMs = WorkerSupervisor::kDefaultTimeoutMs;
    environment.killGraceMs = WorkerSupervisor::kDefaultKillGraceMs;
    environment.workers = options.workers;
    if (options.compileWorkers >= 0) // else the default for the run's answer format (HeadlessRun)
        environment.compileWorkers = options.compileWorkers;
    if (options.evaluationsPerGpu > 0) // else the default for the run's answer format (HeadlessRun)
        environment.evaluationsPerGpu = options.evaluationsPerGpu;
    HeadlessRun run(plan, environment);
    QObject::connect(&run, &HeadlessRun::warning, &run, [](const QString& message) {
        err() << "kwb run: warning: " << message << '\n';
        err().flush();
    });

    // Progress on stderr, one line, rate-limited.
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    QElapsedTimer clock;
    qint64 lastPrint = -100000;
    const auto printProgress = [&](bool force) {
        const qint64 now = clock.elapsed();
        if (!force && now - lastPrint < (tty ? 250 : 5000))
            return;
        lastPrint = now;
        constexpr int width = 24;
        const int done = run.tasksDone(), total = run.tasksTotal();
        const int filled = total > 0 ? done * width / total : width;
        const QString line = QStringLiteral("[%1%2] %3/%4 tasks, %5 candidates evaluated, %6 correct, %7")
                                 .arg(QString(filled, QLatin1Char('#')), QString(width - filled, QLatin1Char('.')))
                                 .arg(done)
                                 .arg(total)
                                 .arg(run.candidatesEvaluated())
                                 .arg(run.candidatesCorrect())
                                 .arg(elapsedClock(now));
        err() << (tty ? QStringLiteral("\r\033[K") : QString()) << line << (tty ? "" : "\n");
        err().flush();
    };
    QStringList taskErrors;
    QObject::connect(&run, &HeadlessRun::progressChanged, &run, [&] { printProgress(false); });
    QObject::connect(&run, &HeadlessRun::countsChanged, &run, [&] { printProgress(false); });
    QObject::connect(&run, &HeadlessRun::taskError, &run, [&](const QString& task, const QString& message) {
        taskErrors << task + QStringLiteral(": ") + message;
    });
    QTimer ticker;
    ticker.setInterval(tty ? 1000 : 5000);
    QObject::connect(&ticker, &QTimer::timeout, &run, [&] { printProgress(false); });
    QObject::connect(&run, &HeadlessRun::runReady, &run, [&] {
        err() << "kwb run: " << run.compileWorkers() << " compile worker(s), " << run.tasksInFlight()
              << " task(s) in flight";
        if (run.evaluationsPerGpu() != EvaluationQueue::kDefaultEvaluationsPerGpu)
            err() << ", " << run.evaluationsPerGpu() << " evaluations at once per GPU";
        err() << '\n';
        if (const QString warning = compileWorkersMemoryWarning(run.plan().answerFormat, run.compileWorkers());
            !warning.isEmpty())
            err() << "kwb: warning: " << warning << '\n';
        err().flush();
        clock.start();
        ticker.start();
    });

    // Ctrl-C: the handler only counts; a timer turns it into cancel() on the event loop.
    g_interrupts = 0;
    struct sigaction action = {};
    action.sa_handler = onSigint;
    sigemptyset(&action.sa_mask);
    struct sigaction previous = {};
    sigaction(SIGINT, &action, &previous);
    QTimer sigintPoll;
    sigintPoll.setInterval(50);
    QObject::connect(&sigintPoll, &QTimer::timeout, &run, [&] {
        if (g_interrupts.load() > 0 && run.isActive()) {
            sigintPoll.stop();
            if (tty && run.runId() > 0)
                err() << '\n';
            err() << "kwb run: interrupted, stopping (Ctrl-C again to quit at once)\n";
            err().flush();
            run.cancel();
        }
    });
    sigintPoll.start();

    QEventLoop loop;
    QObject::connect(&run, &HeadlessRun::finished, &loop, &QEventLoop::quit);
    run.start();
    if (!run.isOver())
        loop.exec();
    ticker.stop();
    sigintPoll.stop();
    sigaction(SIGINT, &previous, nullptr);
    if (run.state() == HeadlessRun::State::Failed) {
        switch (run.failure()) {
        case HeadlessRun::Failure::Database:
        case HeadlessRun::Failure::CreateRun:
            return fail(json, ExitBadRequest, QStringLiteral("bad_database"), run.errorString());
        case HeadlessRun::Failure::UnknownRun:
            return fail(json, ExitBadRequest, QStringLiteral("unknown_run"), run.errorString());
        case HeadlessRun::Failure::UnknownTask:
            return fail(json, ExitBadRequest, QStringLiteral("unknown_task"), run.errorString());
        case HeadlessRun::Failure::Templates:
        case HeadlessRun::Failure::Configuration:
            return fail(json, ExitUsage, QStringLiteral("bad_prompts"), run.errorString());
        case HeadlessRun::Failure::Regime:
            return fail(json, ExitUsage, QStringLiteral("bad_regime"), run.errorString());
        case HeadlessRun::Failure::Profile:
            return fail(json, ExitUsage, QStringLiteral("bad_profile"), run.errorString());
        case HeadlessRun::Failure::NoEvaluator:
            return fail(json, ExitNoEvaluator, QStringLiteral("no_evaluator"), run.errorString());
        case HeadlessRun::Failure::None:
        case HeadlessRun::Failure::NoWorker:
        case HeadlessRun::Failure::Worker: break;
        }
        return fail(json, ExitWorker, QStringLiteral("worker"), run.errorString());
    }
    const qint64 runId = run.runId();
    if (runId == 0) // cancelled while the worker's facts were being asked for
        return fail(json, ExitInterrupted, QStringLiteral("interrupted"),
                    QStringLiteral("interrupted before the run was made"));
    const bool cancelled = run.state() == HeadlessRun::State::Cancelled;
    printProgress(true);
    if (tty)
        err() << '\n';
    const int done = run.tasksDone(), total = run.tasksTotal(), evaluated = run.candidatesEvaluated();
    const int reused = run.controller() ? run.controller()->evaluationsReused() : 0;

    const auto selected = run.selected();
    int correctTasks = 0, compiledTasks = 0;
    for (const CandidateOutcome& o : selected) {
        correctTasks += o.correct() ? 1 : 0;
        compiledTasks +=
            o.compiled && !isMachineFault(o.status, plan.compileOnly) ? 1 : 0; // not evaluated: not compiled
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
        err() << "kwb run: run " << runId << " finished: "
              << (plan.compileOnly ? QStringLiteral("compile-only: correctness not measured, ")
                                   : QStringLiteral("%1/%2 tasks correct, ").arg(correctTasks).arg(total))
              << compiledTasks << '/' << total << " compiled, " << evaluated << " candidates evaluated"
              << (reused > 0 ? QStringLiteral(" (%1 identical to an earlier answer, its evaluation reused)").arg(reused)
                             : QString())
              << " in " << elapsedClock(clock.elapsed()) << "\n  report: " << reportCommand << '\n';
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
    err().flush();
    *summary = QJsonObject{{QStringLiteral("ok"), true},
                           {QStringLiteral("run"), runId},
                           {QStringLiteral("status"), cancelled ? RunStatus::Cancelled : RunStatus::Finished},
                           {QStringLiteral("tasks"), total},
                           {QStringLiteral("tasks_done"), done},
                           {QStringLiteral("correct"), plan.compileOnly ? QJsonValue() : QJsonValue(correctTasks)},
                           {QStringLiteral("compile_only"), plan.compileOnly},
                           {QStringLiteral("compiled"), compiledTasks},
                           {QStringLiteral("candidates_evaluated"), evaluated},
                           {QStringLiteral("task_errors"), QJsonArray::fromStringList(taskErrors)},
                           {QStringLiteral("complete"), !cancelled && !isIncomplete},
                           {QStringLiteral("unevaluated"), QJsonArray::fromStringList(incomplete)},
                           {QStringLiteral("report"), reportCommand},
                           {QStringLiteral("resume"), resumeCommand}};
    if (!plan.sweepId.isEmpty())
        summary->insert(QStringLiteral("sweep"), plan.sweepId);
    return cancelled ? ExitInterrupted : isIncomplete ? ExitIncomplete : ExitSuccess;
}

} // namespace

} // namespace kwb::cli
