#include "app/workbenchdata.h"

#include "app/charts/rooflinekernels.h"

#include "core/config/runconfig.h"
#include "core/protocol/workerresponses.h"
#include "core/run/runlaunch.h"
#include "core/run/runname.h"
#include "core/study/taskbest.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <QJsonArray>

#include <algorithm>

namespace kwb::app {

namespace {

double meanMs(const std::optional<TimingStats>& timing)
{
    return timing ? timing->meanMs : 0.0;
}

DeviceFacts runDevice(const RunInfo& run)
{
    return run.gpu;
}

QString runGpuName(const RunInfo& run)
{
    return runDevice(run).name;
}

// "#4 agent, turn 1, sample 2": the run by its one name (runname.h), as every page names it.
QString candidateLabel(const QString& runName, int turn, int sample)
{
    return QStringLiteral("%1, turn %2, sample %3").arg(runName).arg(turn).arg(sample);
}

} // namespace

QHash<QString, TaskTimes> taskTimesFromStore(const RunStore& store, const QString& gpuName)
{
    QHash<QString, TaskTimes> times;
    QHash<QString, qint64> eagerFrom;                                 // task -> evaluation id the eager time came from
    QList<RunInfo> runs;                                              // the runs on the GPU, in store order
    QHash<QString, QList<PickCandidate>> picks;                       // task -> its candidates, for the one best
    QHash<qint64, std::pair<QString, EvaluationResult>> byEvaluation; // id -> its run's label, result
    for (const RunInfo& run : store.runs()) {
        if (!gpuName.isEmpty() && runGpuName(run) != gpuName)
            continue;
        runs.append(run);
        const QString runName = kwb::runLabel(run);
        for (const EvaluationRecord& record : store.evaluations(run.id)) {
            const EvaluationResult e = record.evaluation();
            picks[record.task].append(PickCandidate::of(run.id, record));
            const double eager = meanMs(e.timing.reference);
            if (eager <= 0)
                continue;
            TaskTimes& t = times[record.task];
            if (record.id > eagerFrom.value(record.task)) { // the latest measurement of the reference
                t.eagerMs = eager;
                t.gpuName = runGpuName(run);
                eagerFrom.insert(record.task, record.id);
            }
            const double candidate = meanMs(e.timing.candidate);
            if (!e.isCorrect() || candidate <= 0)
                continue;
            const QString label = candidateLabel(runName, record.turn, record.sample);
            if (!e.countsAsCorrect()) {
                if (!t.notCountedMs || candidate < *t.notCountedMs) {
                    t.notCountedMs = candidate;
                    t.notCountedWhy = QStringLiteral("%1: %2").arg(label, notCountedReason(e));
                }
                continue;
            }
            byEvaluation.insert(record.id, {label, e});
        }
    }
    // The task's one best (core/study/taskbest.h, as Results, Diff and the Monitor pick it), drawn
    // where it counts as correct and was timed.
    for (auto it = times.begin(); it != times.end(); ++it) {
        const QList<PickCandidate>& candidates = picks.value(it.key());
        const std::optional<int> best = bestCandidateOfTask(candidates, runs, it.key());
        if (!best)
            continue;
        const auto found = byEvaluation.constFind(candidates.at(*best).evaluation);
        if (found == byEvaluation.cend())
            continue; // the best kept candidate is not a counted, timed one: no arrow
        const EvaluationResult& e = found->second;
        TaskTimes& t = it.value();
        t.bestCandidateMs = meanMs(e.timing.candidate);
        t.bestCandidateCustom = e.customLaunches.value_or(0) > 0;
        t.bestBasis = candidateBasis(e);
        t.bestDramBytes = e.measuredDramBytes();
        t.bestBoundFraction = rooflineBoundFraction(e);
        t.bestEvaluation = found.key();
        t.bestLabel = found->first;
        t.bestSpeedup = formatSpeedup(e);
        // Kept for its kernels (issue 40): 250 tasks' SASS would cost megabytes for nothing.
        EvaluationResult kept = e;
        kept.raw = QJsonObject{{QStringLiteral("roofline"), e.raw.value(QStringLiteral("roofline"))}};
        kept.candidate.reset();
        if (kept.compile) {
            kept.compile->log.clear();
            for (KernelFactsInfo& k : kept.compile->kernelFacts) {
                k.ptx.reset();
                k.sass.reset();
            }
        }
        t.best = kept;
    }
    // A time that does not count is drawn only where it beats the counted best.
    for (TaskTimes& t : times) {
        if (t.notCountedMs && t.bestCandidateMs && *t.notCountedMs >= *t.bestCandidateMs) {
            t.notCountedMs.reset();
            t.notCountedWhy.clear();
        }
    }
    return times;
}

DeviceFacts latestRunDevice(const RunStore& store)
{
    const QList<RunInfo> runs = store.runs();
    for (auto it = runs.crbegin(); it != runs.crend(); ++it) {
        const DeviceFacts gpu = runDevice(*it);
        if (gpu.available && !gpu.name.isEmpty())
            return gpu;
    }
    return {};
}

QList<RooflinePoint> rooflinePoints(const QList<TaskInfo>& tasks, const QHash<QString, TaskTimes>& times)
{
    QList<RooflinePoint> points;
    for (const TaskInfo& task : tasks) {
        const auto t = times.constFind(task.id);
        if (!task.hasAnalysis() || t == times.cend() || t->eagerMs <= 0)
            continue;
        const TaskAnalysis& a = task.analysis;
        const TrafficModel model = trafficModel(a);
        const double flops = model.flops;
        const double unfused = model.intensity(IntensityBasis::EagerUnfused);
        if (!(flops > 0) || !(unfused > 0))
            continue;
        RooflinePoint p;
        p.task = task.id;
        p.level = task.level;
        p.intensity = unfused;
        p.measuredOn = t->gpuName;
        p.oneKernelIntensity = model.intensity(IntensityBasis::OneKernel);
        p.referenceGflops = flops / (t->eagerMs * 1e-3) / 1e9;
        QString detail = QStringLiteral("%1 — eager %2 ms").arg(task.title).arg(t->eagerMs, 0, 'f', 3);
        if (t->bestCandidateMs) {
            p.candidateGflops = flops / (*t->bestCandidateMs * 1e-3) / 1e9;
            // A chain without a library op has no "library + epilogue" model: its own kernels
            // next to torch's can at best be one kernel.
            IntensityBasis basis = t->bestBasis;
            if (basis == IntensityBasis::LibraryEpilogue && !model.libraryEpilogueBytes)
                basis = IntensityBasis::OneKernel;
            const double x = model.intensity(basis);
            if (basis != IntensityBasis::EagerUnfused && x > 0) {
                p.candidateIntensity = x;
                p.candidateBasis = basis;
            }
            if (t->bestDramBytes && *t->bestDramBytes > 0) {
                p.candidateMeasuredBytes = *t->bestDramBytes;
                p.candidateMeasuredIntensity = flops / *t->bestDramBytes;
            }
            if (t->best)
                p.kernels = rooflineKernels(a, *t->best, &p.kernelsWhy);
            detail +=
                QStringLiteral("; best candidate %1 ms (%2)").arg(*t->bestCandidateMs, 0, 'f', 3).arg(t->bestLabel);
            if (!t->bestSpeedup.isEmpty())
                detail += QStringLiteral(", speed-up %1 in its evaluation").arg(t->bestSpeedup);
            // Its own line in the tooltip and the selection label (issue 39 item 6).
            if (t->bestBoundFraction)
                detail += QStringLiteral("; best candidate at %1 (time at the roofline floor / its time, on %2)")
                              .arg(boundFractionText(*t->bestBoundFraction), t->gpuName);
        }
        if (t->notCountedMs) {
            p.notCountedGflops = flops / (*t->notCountedMs * 1e-3) / 1e9;
            p.notCountedWhy = t->notCountedWhy;
        }
        p.detail = detail;
        points.append(p);
    }
    return points;
}

QList<BestOfNSeries> bestOfNSeries(const Report& report)
{
    QList<BestOfNSeries> series;
    // The study's curve: core's SweepCurve, point for point (no second computation here).
    QHash<QString, qint64> sweepRunWithMostSamples; // sweep id -> its run with the largest n
    for (const SweepCurve& curve : report.sweeps) {
        if (curve.points.isEmpty())
            continue;
        sweepRunWithMostSamples.insert(curve.id, curve.points.last().run); // points are ordered by n
        const QString label =
            QCoreApplication::translate("BestOfNPage", "%1 sweep, whole regime at each n (study's best-of-n)")
                .arg(curve.regime);
        // Coloured by the sweep's first run: a curve keeps its colour when other runs come and go.
        const int key = static_cast<int>(curve.points.first().run);
        const auto point = [](int n, const Metrics& m) { return BestOfNPoint{n, m.tasks, 0, m.correctPct}; };
        QList<BestOfNPoint> overall;
        QMap<int, QList<BestOfNPoint>> perLevel;
        for (const SweepPoint& p : curve.points) {
            overall.append(point(p.n, p.overall));
            for (auto it = p.perLevel.cbegin(); it != p.perLevel.cend(); ++it)
                perLevel[it.key()].append(point(p.n, it.value()));
        }
        series.append(BestOfNSeries{label, 0, overall, key, 0, {}, BestOfNKind::Sweep});
        for (auto it = perLevel.cbegin(); it != perLevel.cend(); ++it)
            series.append(BestOfNSeries{label, it.key(), it.value(), key, 0, {}, BestOfNKind::Sweep});
    }
    for (const RunReport& run : report.runs) {
        if (!run.firstTurnPassAtN)
            continue;
        const RunConfig& config = run.run.config;
        const QString sweepId = config.sweep ? config.sweep->id : QString();
        if (!sweepId.isEmpty() && sweepRunWithMostSamples.value(sweepId, run.run.id) != run.run.id)
            continue;
        // Names the sweep and the switches off (runname.h), and what the curve is.
        const QString label = QCoreApplication::translate("BestOfNPage", "%1: first-turn pass@n").arg(run.label());
        // Coloured by run id, so a run keeps its colour when another is unchecked.
        const int key = static_cast<int>(run.run.id);
        series.append(BestOfNSeries{label, 0, run.firstTurnPassAtN->overall, key, run.firstTurnPassAtN->notCounted,
                                    run.firstTurnPassAtN->notCountedWhy, BestOfNKind::FirstTurnPassAtN});
        for (auto it = run.firstTurnPassAtN->perLevel.cbegin(); it != run.firstTurnPassAtN->perLevel.cend(); ++it) {
            // Per level: only that level's samples that were not counted.
            QStringList why;
            for (const QString& w : run.firstTurnPassAtN->notCountedWhy)
                if (w.startsWith(QStringLiteral("L%1/").arg(it.key())))
                    why << w;
            series.append(
                BestOfNSeries{label, it.key(), it.value(), key, int(why.size()), why, BestOfNKind::FirstTurnPassAtN});
        }
    }
    return series;
}

QString CandidateEntry::label() const
{
    QString text = QStringLiteral("%1 · turn %2 · sample %3 · %4")
                       .arg(runLabel)
                       .arg(candidate.turn)
                       .arg(candidate.sample)
                       .arg(candidate.status);
    // The speed-up that counts: a correct status below the roofline floor says so instead of
    // showing a time no kernel that does the work can reach.
    if (evaluationStatusFromWire(candidate.status) == EvaluationStatus::Correct) {
        if (candidate.outcome.belowRooflineFloor())
            text += QStringLiteral(" (not counted: below the roofline floor)");
        else if (candidate.speedup)
            text += QLatin1Char(' ') + formatSpeedup(*candidate.speedup, candidate.outcome.timing.interval);
    }
    return text;
}

QList<CandidateEntry> candidatesOfTask(const RunStore& store, const QString& task)
{
    QHash<qint64, QString> labels;
    const QList<RunInfo> runs = store.runs();
    for (const RunInfo& run : runs)
        labels.insert(run.id, kwb::runLabel(run));
    QList<CandidateEntry> entries;
    QList<PickCandidate> picks;
    for (const TaskCandidate& c : store.candidatesOfTask(task)) {
        entries.append(CandidateEntry{c.runId, labels.value(c.runId), c, false});
        picks.append(PickCandidate::of(c));
    }
    if (const std::optional<int> best = bestCandidateOfTask(picks, runs, task))
        entries[*best].best = true;
    return entries;
}

namespace {

// The installed name of each example (app/CMakeLists.txt installs them so) and its source copy.
struct ExampleStudyFiles
{
    const char* name;
    const char* source;
};

ExampleStudyFiles exampleStudyFiles(ExampleStudy which)
{
    switch (which) {
    case ExampleStudy::RecordedAnswers: return {"study-recorded-qwen3-coder", KWB_SOURCE_RECORDED_EXAMPLE_STUDY};
    case ExampleStudy::FixtureServer: break;
    }
    return {"study-h200", KWB_SOURCE_EXAMPLE_STUDY};
}

} // namespace

QString exampleStudyArchive(ExampleStudy which)
{
    const ExampleStudyFiles files = exampleStudyFiles(which);
    const QString installed =
        QDir(QCoreApplication::applicationDirPath())
            .filePath(QStringLiteral("../share/kernel-workbench/examples/%1.db.xz").arg(QLatin1String(files.name)));
    if (QFileInfo(installed).isFile())
        return QDir::cleanPath(installed);
    const QString source = QString::fromUtf8(files.source);
    return QFileInfo(source).isFile() ? source : QString();
}

QString exampleStudyDatabase(ExampleStudy which)
{
    return QDir(userDataDir())
        .filePath(QStringLiteral("examples/%1.db").arg(QLatin1String(exampleStudyFiles(which).name)));
}

} // namespace kwb::app
