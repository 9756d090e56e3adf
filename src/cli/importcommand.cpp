// `kwb import kernelbench DIR --db FILE`: a folder of KernelBench generations, as KernelBench's
// scripts and its forks save them, evaluated in KernelBench's answer format into runs of the store
// (one per run folder), so they show in Results, Roofline, Best-of-n and Diff like any run; the
// verdicts the folder recorded (eval_results.json) are kept beside ours as a third party's.
//
// What is found where is core/run/generationimport.h's (the layouts, with examples from the public
// repositories, are listed there and in docs/cli.md):
//   runs/<run>/level_1_problem_3_sample_0_kernel.py         KernelBench scripts/generate_samples.py
//   runs/<run>/level_1_problem_13_solution_0_kernel.py       Kernel-Coder (j1mk1m/Kernel-Coder, 2b16b23)
//   runs/<run>/level_1_problem_13_solution_0_response.txt    its whole model response (imported when no
//                                                            _kernel.py is, or an empty one; the worker
//                                                            extracts the module)
//   runs/<run>/level_1_problem_1_epoch_0_sample_1_kernel.py  Kernel-Coder's evolrule runs
//   level1/problem3/sample0.py                               per-problem folders
//   runs/<run>/eval_results.json                             the recorded verdicts (both shapes)
// Each file is sample S of turn 1 of task L{L}/{P}. Skipped, each with its reason (stderr, --json,
// the run's configuration): other files, prompts, tasks the worker does not list, KernelBench-only
// tasks (no reference the worker runs), a response whose module is imported, a second file for a
// sample. The tally at the end counts the files found, imported, skipped by reason.

#include "commands.h"

#include "core/config/buildinfo.h"
#include "core/config/regime.h"
#include "core/protocol/evaluationresult.h"
#include "core/protocol/workerrequests.h"
#include "core/protocol/workerresponses.h"
#include "core/run/generationimport.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/gpulease.h"
#include "core/workers/workerlauncher.h"

#include <QCoreApplication>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMap>

#include <algorithm>
#include <cmath>

namespace kwb::cli {

namespace {

int importFail(bool json, int code, const QString& errorCode, const QString& message)
{
    return commandFailed("import", json, code, errorCode, message);
}

QJsonObject skippedJson(const SkippedFile& s)
{
    return QJsonObject{
        {QStringLiteral("file"), s.file}, {QStringLiteral("kind"), s.kind}, {QStringLiteral("reason"), s.reason}};
}

QString verdictKey(const QString& runFolder, const QString& task, int sample)
{
    return runFolder + QLatin1Char('\n') + task + QLatin1Char('\n') + QString::number(sample);
}

// The run folder a file belongs to among those with a run: the longest that holds it; the first
// when none does.
int runIndexOf(const QStringList& folders, const QString& file)
{
    int best = 0;
    qsizetype bestLength = -1;
    for (int i = 0; i < folders.size(); ++i) {
        const QString& f = folders.at(i);
        if ((f.isEmpty() || file.startsWith(f + QLatin1Char('/'))) && f.size() > bestLength) {
            best = i;
            bestLength = f.size();
        }
    }
    return best;
}

// One run of the import: a run folder's generations.
struct ImportRun
{
    QString folder; ///< relative to DIR, "" for DIR itself
    qint64 id = 0;
    QString name;
    QStringList taskIds;
    QJsonArray skipped; ///< the skipped files under its folder
    QJsonArray verdictFiles;
    int evaluated = 0;
    int verdicts = 0;
    QMap<QString, int> statuses;
    // --resume: the earlier import of this folder that goes on, and what it already holds.
    bool resumed = false;
    QSet<UnitKey> done;                      ///< generations with a verdict (kept as they are)
    QHash<UnitKey, ResponseRecord> answered; ///< stored generations (a verdict may be missing)
    int kept = 0;                            ///< generations whose earlier verdict was kept
};

// The unit a generation is stored as: one generator answer of turn 1 (what resume looks up).
UnitKey unitOf(const FoundGeneration& g)
{
    return UnitKey{g.task, 1, g.sample, QStringLiteral("generator")};
}

// The latest run of `store` that imported `folderPath` with the same evaluation settings as
// `config` (what --resume goes on with); nullopt: none.
std::optional<qint64> earlierImport(const RunStore& store, const QString& folderPath, const RunConfig& config)
{
    std::optional<qint64> found;
    for (const RunInfo& info : store.runs()) {
        if (info.regime != QLatin1String("import"))
            continue;
        const RunConfig& earlier = info.config;
        const QString key = QStringLiteral("directory"), block = QStringLiteral("code_block");
        if (earlier.import.value(key).toString() == folderPath &&
            earlier.import.value(block).toString() == config.import.value(block).toString() &&
            earlier.import.value(QStringLiteral("device")).toString() ==
                config.import.value(QStringLiteral("device")).toString() &&
            earlier.protocolProfile == config.protocolProfile && earlier.scale == config.scale &&
            earlier.compileOnly == config.compileOnly && earlier.answerFormat == config.answerFormat &&
            (!found || info.id > *found))
            found = info.id;
    }
    return found;
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
    const WorkerSupervisor::Outcome tasksOutcome =
        session.supervisor().run(WorkerRequests::tasks(session.options().tasksDir));
    if (!tasksOutcome.hasResponse() || !tasksOutcome.response.ok())
        return importFail(json, ExitWorker, QStringLiteral("worker"),
                          QStringLiteral("the worker did not list its tasks: %1")
                              .arg(tasksOutcome.message.isEmpty() ? tasksOutcome.response.header.errorMessage
                                                                  : tasksOutcome.message));
    // KernelBench-only tasks too: their generations are in KernelBench's format, which the worker
    // evaluates against KernelBench's Model (docs/task-format.md, "KernelBench only").
    QSet<QString> known;
    for (const TaskSpec& task : tasksOutcome.response.tasks.value_or(TaskList()).tasks)
        known.insert(task.id);

    GenerationScan scan = scanKernelBenchFolder(dir.path(), [&](const QString& task) { return known.contains(task); });
    QList<SkippedFile>& skipped = scan.skipped;

    // The tally: files found, imported, skipped by reason, recorded verdicts read.
    const auto tally = [&](int imported, int matched) {
        QJsonObject byKind;
        const QMap<QString, int> kinds = scan.skippedByKind();
        for (auto it = kinds.cbegin(); it != kinds.cend(); ++it)
            byKind.insert(it.key(), it.value());
        return QJsonObject{{QStringLiteral("found"), scan.filesFound},
                           {QStringLiteral("imported"), imported},
                           {QStringLiteral("skipped"), int(skipped.size())},
                           {QStringLiteral("skipped_by_reason"), byKind},
                           {QStringLiteral("verdict_files"), int(scan.verdictFiles.size())},
                           {QStringLiteral("verdicts"), int(scan.verdicts.size())},
                           {QStringLiteral("verdicts_matched"), matched}};
    };
    const auto tallyText = [&](int imported, int matched) {
        QString text = QStringLiteral("%1 files found: %2 imported, %3 skipped")
                           .arg(scan.filesFound)
                           .arg(imported)
                           .arg(skipped.size());
        const QMap<QString, int> kinds = scan.skippedByKind();
        QStringList parts;
        for (auto it = kinds.cbegin(); it != kinds.cend(); ++it)
            parts << QStringLiteral("%1 %2").arg(it.value()).arg(it.key());
        if (!parts.isEmpty())
            text += QStringLiteral(" (") + parts.join(QStringLiteral(", ")) + QStringLiteral(")");
        if (!scan.verdictFiles.isEmpty())
            text += QStringLiteral("; %1 recorded verdicts in %2 files, %3 of them for an imported generation")
                        .arg(scan.verdicts.size())
                        .arg(scan.verdictFiles.size())
                        .arg(matched);
        return text;
    };
    const auto listSkipped = [&] {
        for (const SkippedFile& s : std::as_const(skipped))
            err() << "kwb import: skipped " << s.file << ": " << s.reason << '\n';
        err().flush();
    };

    if (scan.generations.isEmpty()) {
        listSkipped();
        err() << "kwb import: " << tallyText(0, 0) << '\n';
        return importFail(json, ExitUsage, QStringLiteral("nothing_to_import"),
                          QStringLiteral("no generation in %1 to import (%2 files skipped)")
                              .arg(options.directory)
                              .arg(skipped.size()));
    }

    RunStore store;
    QString databaseError;
    if (!openRunStore(store, "import", options.database, OpenOptions::Access::Write, &databaseError))
        return importFail(json, ExitBadRequest, QStringLiteral("bad_database"), databaseError);

    // One run per run folder (KernelBench's runs/<run name>/: a model and a method each).
    const QStringList folders = scan.runFolders();
    QList<ImportRun> runs;
    for (const QString& folder : folders) {
        ImportRun run;
        run.folder = folder;
        runs.append(run);
    }
    const auto runOf = [&](const QString& folder) -> ImportRun& { return runs[int(folders.indexOf(folder))]; };
    for (const SkippedFile& s : std::as_const(skipped))
        runs[runIndexOf(folders, s.file)].skipped.append(skippedJson(s));
    QHash<QString, const RecordedVerdict*> verdictOf;
    for (const RecordedVerdict& v : std::as_const(scan.verdicts))
        verdictOf.insert(verdictKey(v.runFolder, v.task, v.sample), &v); // a later entry (a re-evaluation) wins

    const int compileWorkers = options.compileWorkers >= 0
                                   ? options.compileWorkers
                                   : defaultCompileWorkers(QString::fromLatin1(defaults::kAnswerFormatKernelBench));
    // A remote worker's GPU has one slot (EvaluationQueue::slotCount).
    const int evaluationsPerGpu =
        session.supervisor().target().isRemote()
            ? EvaluationQueue::kDefaultEvaluationsPerGpu
            : defaultEvaluationsPerGpu(QString::fromLatin1(defaults::kAnswerFormatKernelBench));
    for (ImportRun& run : runs) {
        int samplesPerTask = 0, files = 0;
        QMap<QString, int> perTask;
        for (const FoundGeneration& g : std::as_const(scan.generations)) {
            if (g.runFolder != run.folder)
                continue;
            ++files;
            if (!run.taskIds.contains(g.task))
                run.taskIds << g.task;
            samplesPerTask = std::max(samplesPerTask, ++perTask[g.task]);
        }
        for (const VerdictFile& vf : std::as_const(scan.verdictFiles))
            if (vf.runFolder == run.folder)
                run.verdictFiles.append(
                    QJsonObject{{QStringLiteral("file"), vf.file},
                                {QStringLiteral("entries"), vf.entries},
                                {QStringLiteral("hardware"), QJsonArray::fromStringList(vf.hardware)}});
        // The run's configuration: what was imported, evaluated how. The regime is KernelBench's
        // one-turn sampling (zero-shot with n = the most samples of a task), so Best-of-n reads it
        // as any sampled run; the import itself sends no prompt to a model.
        std::optional<Regime> regime = Regime::builtin(QStringLiteral("zero-shot"));
        if (regime) {
            regime->n = std::max(1, samplesPerTask);
            regime->turns = 1;
        }
        const QString folderPath = run.folder.isEmpty() ? dir.absolutePath() : dir.absoluteFilePath(run.folder);
        RunConfig config;
        config.protocolProfile = options.profile;
        config.seeds.evaluation = kRunEvaluationSeed;
        config.versions.kwb = QStringLiteral(KWB_VERSION);
        config.versions.kwbCommit = kwbCommit();
        config.import = QJsonObject{{QStringLiteral("format"), QStringLiteral("kernelbench")},
                                    {QStringLiteral("directory"), folderPath},
                                    {QStringLiteral("root"), dir.absolutePath()},
                                    {QStringLiteral("run_folder"), run.folder},
                                    {QStringLiteral("files"), files},
                                    // the block a whole response's module is taken from
                                    {QStringLiteral("code_block"), options.codeBlock},
                                    // --device as given (empty: the GPU where there is one), for --resume
                                    {QStringLiteral("device"), options.device},
                                    {QStringLiteral("skipped"), run.skipped},
                                    {QStringLiteral("recorded_verdicts"), run.verdictFiles}};
        if (regime)
            config.regime = StoredRegime::of(*regime);
        config.tasks = run.taskIds;
        config.taskSpec = taskSpecFor(run.taskIds);
        config.scale = options.scale;
        config.timeoutS = options.timeoutS;
        config.answerFormat = QString::fromLatin1(defaults::kAnswerFormatKernelBench);
        config.sandbox = workerSandboxStatus(session.supervisor().limits());
        config.compileWorkers = compileWorkers;
        if (evaluationsPerGpu != EvaluationQueue::kDefaultEvaluationsPerGpu)
            config.evaluationsPerGpu = evaluationsPerGpu;
        // --device none: compiled and sandbox-checked only, as `kwb run --compile-only`; the
        // report then says "not measured" instead of counting no_device as a fault.
        config.compileOnly = options.device == QLatin1String("none");
        const QString shown = run.folder.isEmpty() ? dir.dirName() : run.folder;
        if (!options.runName.isEmpty())
            run.name = runs.size() == 1 ? options.runName : QStringLiteral("%1 (%2)").arg(options.runName, shown);
        else
            run.name = QStringLiteral("import [kernelbench%1] %2 %3")
                           .arg(options.codeBlock == QLatin1String(defaults::kCodeBlockFirst)
                                    ? QString()
                                    : QStringLiteral(", %1 block").arg(options.codeBlock),
                                shown, taskSpecFor(run.taskIds));
        if (options.resume) {
            if (const std::optional<qint64> earlier = earlierImport(store, folderPath, config)) {
                run.id = *earlier;
                run.resumed = true;
                run.done = store.completedUnits(run.id);
                run.answered = store.answeredUnits(run.id);
                if (const std::optional<RunInfo> info = store.run(run.id))
                    run.name = info->name;
                store.setRunStatus(run.id, RunStatus::Running);
                continue;
            }
        }
        const std::optional<qint64> runId = store.createRun(run.name, QStringLiteral("import"), config.toJson());
        if (!runId)
            return importFail(json, ExitBadRequest, QStringLiteral("bad_database"), store.errorString());
        run.id = *runId;
    }

    QMap<QString, int> statusCounts;
    int evaluated = 0, imported = 0, matched = 0;
    QMap<QString, int> matchedPerFile;
    // Every generation goes into the store first, then into one queue: its compile pool builds the
    // generations' extensions ahead (as many at once as --compile-workers), the GPU evaluates
    // those built meanwhile (core/workers/evaluationqueue.h).
    struct Pending
    {
        qint64 candidateId = 0;
        FoundGeneration generation;
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
    queue.setEvaluationsPerGpu(evaluationsPerGpu);
    if (const QString warning =
            compileWorkersMemoryWarning(QString::fromLatin1(defaults::kAnswerFormatKernelBench), compileWorkers);
        !warning.isEmpty())
        err() << "kwb: warning: " << warning << '\n';
    for (const FoundGeneration& g : std::as_const(scan.generations)) {
        ImportRun& run = runOf(g.runFolder);
        if (run.done.contains(unitOf(g))) {
            ++run.kept; // its verdict is stored: a resumed import does not judge it again
            ++imported;
            continue;
        }
        QFile f(dir.filePath(g.file));
        if (!f.open(QIODevice::ReadOnly)) {
            skipped.append({g.file, SkipKind::Unreadable, QStringLiteral("unreadable: %1").arg(f.errorString())});
            continue;
        }
        // A whole response goes as it is: the worker takes the module out of it
        // (docs/candidate-format.md, KernelBench format).
        const QString answer = QString::fromUtf8(f.readAll());
        PromptRecord prompt;
        prompt.runId = run.id;
        prompt.task = g.task;
        prompt.turn = 1;
        prompt.sample = g.sample;
        prompt.role = QStringLiteral("generator");
        prompt.text =
            QStringLiteral("(imported from %1%2%3)")
                .arg(dir.filePath(g.file), g.wholeResponse ? QStringLiteral(", a whole model response") : QString(),
                     g.epoch >= 0 ? QStringLiteral(", epoch %1").arg(g.epoch) : QString());
        // Stored before but never judged (a cut call, a machine failure): a new candidate of the
        // stored answer, its prompt and recorded verdict kept as they are.
        const auto stored = run.answered.constFind(unitOf(g));
        const bool storedBefore = stored != run.answered.constEnd() && stored->text == answer;
        const std::optional<qint64> promptId =
            storedBefore ? std::optional<qint64>(stored->promptId) : store.addPrompt(prompt);
        ResponseRecord response;
        response.promptId = promptId.value_or(0);
        response.text = answer;
        const std::optional<qint64> responseId = storedBefore ? std::optional<qint64>(stored->id)
                                                 : promptId   ? store.addResponse(response)
                                                              : std::nullopt;
        CandidateRecord candidate;
        candidate.responseId = responseId.value_or(0);
        candidate.task = g.task;
        candidate.turn = 1;
        candidate.sample = g.sample;
        const std::optional<qint64> candidateId = responseId ? store.addCandidate(candidate) : std::nullopt;
        if (!candidateId)
            return importFail(json, ExitBadRequest, QStringLiteral("bad_database"), store.errorString());
        ++imported;
        // The third party's verdict of this file, beside ours.
        if (const RecordedVerdict* v =
                storedBefore ? nullptr : verdictOf.value(verdictKey(g.runFolder, g.task, g.sample))) {
            if (!store.addRecordedVerdict(*candidateId, v->source, v->hardware, v->verdict))
                return importFail(json, ExitBadRequest, QStringLiteral("bad_database"), store.errorString());
            ++matched;
            ++run.verdicts;
            ++matchedPerFile[v->source];
        }

        WorkerRequests::Evaluate evaluate;
        evaluate.task = g.task;
        evaluate.answer = answer;
        evaluate.answerFormat = QString::fromLatin1(defaults::kAnswerFormatKernelBench);
        evaluate.profile = options.profile;
        evaluate.scale = options.scale;
        evaluate.seed = kRunEvaluationSeed;
        evaluate.codeBlock = options.codeBlock;
        evaluate.device = options.device;
        pending.insert(queue.submit(evaluate), Pending{*candidateId, g});
    }
    for (VerdictFile& vf : scan.verdictFiles)
        vf.matched = matchedPerFile.value(vf.file);
    QString storeError;
    QEventLoop loop;
    const auto record = [&](qint64 id, const EvaluationResult& evaluation) {
        const Pending p = pending.take(id);
        if (p.candidateId == 0)
            return;
        // The response as it came (evaluation.raw) is what the store keeps.
        if (storeError.isEmpty() && !store.addEvaluation(p.candidateId, evaluation.raw))
            storeError = store.errorString();
        const QString status = evaluation.statusName;
        ++evaluated;
        ++statusCounts[status];
        ImportRun& run = runOf(p.generation.runFolder);
        ++run.evaluated;
        ++run.statuses[status];
        err() << "kwb import: " << p.generation.file << " -> " << p.generation.task << " sample " << p.generation.sample
              << ": " << status << '\n';
        err().flush();
        if (pending.isEmpty())
            loop.quit();
    };
    QObject::connect(&queue, &EvaluationQueue::jobFinished, &loop,
                     [&](qint64 id, const EvaluationResult& evaluation) { record(id, evaluation); });
    // The worker refused the request (bad_request), or the job ended without a verdict.
    QObject::connect(&queue, &EvaluationQueue::jobFailed, &loop,
                     [&](qint64 id, const QString& status, const QString& message) {
                         record(id, failureEvaluation(status, message));
                     });
    if (!pending.isEmpty())
        loop.exec();
    if (!storeError.isEmpty())
        return importFail(json, ExitBadRequest, QStringLiteral("bad_database"), storeError);
    for (const ImportRun& run : std::as_const(runs))
        store.setRunStatus(run.id, RunStatus::Finished);

    std::stable_sort(skipped.begin(), skipped.end(),
                     [](const SkippedFile& a, const SkippedFile& b) { return a.file < b.file; });
    listSkipped();
    QStringList allTasks;
    for (const ImportRun& run : std::as_const(runs))
        for (const QString& task : run.taskIds)
            if (!allTasks.contains(task))
                allTasks << task;
    const auto countsJson = [](const QMap<QString, int>& counts) {
        QJsonObject object;
        for (auto it = counts.cbegin(); it != counts.cend(); ++it)
            object.insert(it.key(), it.value());
        return object;
    };
    const auto keptTotal = [&] {
        int kept = 0;
        for (const ImportRun& run : std::as_const(runs))
            kept += run.kept;
        return kept;
    };
    if (json) {
        QJsonArray runsOut, skippedOut, verdictFilesOut;
        for (const ImportRun& run : std::as_const(runs))
            runsOut.append(QJsonObject{{QStringLiteral("run"), run.id},
                                       {QStringLiteral("name"), run.name},
                                       {QStringLiteral("folder"), run.folder},
                                       {QStringLiteral("tasks"), int(run.taskIds.size())},
                                       {QStringLiteral("evaluated"), run.evaluated},
                                       {QStringLiteral("resumed"), run.resumed},
                                       {QStringLiteral("kept"), run.kept},
                                       {QStringLiteral("statuses"), countsJson(run.statuses)},
                                       {QStringLiteral("recorded_verdicts"), run.verdicts}});
        for (const SkippedFile& s : std::as_const(skipped))
            skippedOut.append(skippedJson(s));
        for (const VerdictFile& vf : std::as_const(scan.verdictFiles))
            verdictFilesOut.append(QJsonObject{{QStringLiteral("file"), vf.file},
                                               {QStringLiteral("run_folder"), vf.runFolder},
                                               {QStringLiteral("entries"), vf.entries},
                                               {QStringLiteral("unplaced"), vf.unplaced},
                                               {QStringLiteral("matched"), vf.matched},
                                               {QStringLiteral("hardware"), QJsonArray::fromStringList(vf.hardware)}});
        out() << QString::fromUtf8(QJsonDocument(QJsonObject{{QStringLiteral("ok"), true},
                                                             {QStringLiteral("run"), runs.constFirst().id},
                                                             {QStringLiteral("name"), runs.constFirst().name},
                                                             {QStringLiteral("runs"), runsOut},
                                                             {QStringLiteral("tasks"), int(allTasks.size())},
                                                             {QStringLiteral("evaluated"), evaluated},
                                                             {QStringLiteral("kept"), keptTotal()},
                                                             {QStringLiteral("statuses"), countsJson(statusCounts)},
                                                             {QStringLiteral("skipped"), skippedOut},
                                                             {QStringLiteral("verdict_files"), verdictFilesOut},
                                                             {QStringLiteral("tally"), tally(imported, matched)}})
                                       .toJson(QJsonDocument::Indented));
        err() << "kwb import: " << tallyText(imported, matched) << '\n';
    } else {
        QStringList ids;
        for (const ImportRun& run : std::as_const(runs)) {
            ids << QString::number(run.id);
            out() << "run " << run.id << " \"" << run.name << "\": " << run.evaluated << " generations of "
                  << run.taskIds.size() << " tasks evaluated";
            if (run.resumed)
                out() << " (resumed: " << run.kept << " judged before, kept)";
            for (auto it = run.statuses.cbegin(); it != run.statuses.cend(); ++it)
                out() << (it == run.statuses.cbegin() ? ": " : ", ") << it.value() << ' ' << it.key();
            if (run.verdicts > 0)
                out() << "; " << run.verdicts << " recorded verdicts beside them";
            out() << '\n';
        }
        out() << tallyText(imported, matched) << '\n';
        out() << "report: kwb report --db " << options.database << " --runs " << ids.join(QLatin1Char(',')) << '\n';
    }
    out().flush();
    return ExitSuccess;
}

} // namespace kwb::cli
