#include "app/workbenchdata.h"

#include "core/protocol/workerresponses.h"
#include "core/run/runlaunch.h"
#include "core/run/runname.h"

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
    return decodeDeviceFacts(RunConfig::fromJson(run.config).gpu);
}

QString runGpuName(const RunInfo& run)
{
    return runDevice(run).name;
}

} // namespace

QHash<QString, TaskTimes> taskTimesFromStore(const RunStore& store, const QString& gpuName)
{
    QHash<QString, TaskTimes> times;
    QHash<QString, qint64> eagerFrom; // task -> evaluation id the eager time came from
    for (const RunInfo& run : store.runs()) {
        if (!gpuName.isEmpty() && runGpuName(run) != gpuName)
            continue;
        for (const EvaluationRecord& record : store.evaluations(run.id)) {
            const EvaluationResult e = record.evaluation();
            const double eager = meanMs(e.timing.reference);
            if (eager <= 0)
                continue;
            TaskTimes& t = times[record.task];
            if (record.id > eagerFrom.value(record.task)) { // the latest measurement of the reference
                t.eagerMs = eager;
                eagerFrom.insert(record.task, record.id);
            }
            const double candidate = meanMs(e.timing.candidate);
            if (!e.isCorrect() || candidate <= 0)
                continue;
            if (!t.bestCandidateMs || candidate < *t.bestCandidateMs) {
                t.bestCandidateMs = candidate;
                t.bestCandidateCustom = e.customLaunches.value_or(0) > 0;
                t.bestEvaluation = record.id;
                t.bestLabel = QStringLiteral("#%1 %2, turn %3, sample %4").arg(run.id).arg(run.regime).arg(record.turn).arg(record.sample);
            }
        }
    }
    return times;
}

QJsonObject latestRunDevice(const RunStore& store)
{
    const QList<RunInfo> runs = store.runs();
    for (auto it = runs.crbegin(); it != runs.crend(); ++it) {
        const DeviceFacts gpu = runDevice(*it);
        if (gpu.available && !gpu.name.isEmpty())
            return gpu.raw;
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
        const double flops = a.flops;
        const double unfused = a.intensityUnfused;
        if (flops <= 0 || unfused <= 0)
            continue;
        RooflinePoint p;
        p.task = task.id;
        p.level = task.level;
        p.intensity = unfused;
        p.referenceGflops = flops / (t->eagerMs * 1e-3) / 1e9;
        QString detail = QStringLiteral("%1 — eager %2 ms").arg(task.title).arg(t->eagerMs, 0, 'f', 3);
        if (t->bestCandidateMs) {
            p.candidateGflops = flops / (*t->bestCandidateMs * 1e-3) / 1e9;
            const double fused = a.intensityFused;
            if (t->bestCandidateCustom && fused > 0)
                p.candidateIntensity = fused;
            detail += QStringLiteral("; best candidate %1 ms (%2)").arg(*t->bestCandidateMs, 0, 'f', 3).arg(t->bestLabel);
        }
        p.detail = detail;
        points.append(p);
    }
    return points;
}

QList<BestOfNSeries> bestOfNSeries(const Report& report)
{
    QList<BestOfNSeries> series;
    for (const RunReport& run : report.runs) {
        if (!run.bestOfN)
            continue;
        const QString label = run.label(); // names the sweep and the switches off (runname.h)
        series.append(BestOfNSeries{label, 0, run.bestOfN->overall});
        for (auto it = run.bestOfN->perLevel.cbegin(); it != run.bestOfN->perLevel.cend(); ++it)
            series.append(BestOfNSeries{label, it.key(), it.value()});
    }
    return series;
}

QString CandidateEntry::label() const
{
    QString text = QStringLiteral("%1 · turn %2 · sample %3 · %4")
                       .arg(runLabel)
                       .arg(evaluation.turn)
                       .arg(evaluation.sample)
                       .arg(evaluation.status);
    if (evaluation.speedup && evaluationStatusFromWire(evaluation.status) == EvaluationStatus::Correct)
        text += QStringLiteral(" %1×").arg(*evaluation.speedup, 0, 'f', 2);
    return text;
}

QList<CandidateEntry> candidatesOfTask(const RunStore& store, const QString& task)
{
    QList<CandidateEntry> entries;
    for (const RunInfo& run : store.runs()) {
        QList<CandidateEntry> ofRun;
        for (const EvaluationRecord& e : store.evaluations(run.id))
            if (e.task == task)
                ofRun.append(CandidateEntry{run.id, kwb::runLabel(run), e});
        std::stable_sort(ofRun.begin(), ofRun.end(), [](const CandidateEntry& a, const CandidateEntry& b) {
            return std::make_pair(a.evaluation.turn, a.evaluation.sample) < std::make_pair(b.evaluation.turn, b.evaluation.sample);
        });
        entries += ofRun;
    }
    return entries;
}

QString exampleStudyArchive()
{
    const QString installed = QDir(QCoreApplication::applicationDirPath())
                                  .filePath(QStringLiteral("../share/kernel-workbench/examples/study-h200.db.xz"));
    if (QFileInfo(installed).isFile())
        return QDir::cleanPath(installed);
    const QString source = QStringLiteral(KWB_SOURCE_EXAMPLE_STUDY);
    return QFileInfo(source).isFile() ? source : QString();
}

QString exampleStudyDatabase()
{
    return QDir(userDataDir()).filePath(QStringLiteral("examples/study-h200.db"));
}

} // namespace kwb::app
