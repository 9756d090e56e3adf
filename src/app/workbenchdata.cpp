#include "app/workbenchdata.h"

#include <QJsonArray>

#include <algorithm>

namespace kwb::app {

namespace {

double meanMs(const QJsonObject& result, const char* which)
{
    return result.value(QLatin1String("timing")).toObject().value(QLatin1String(which)).toObject()
        .value(QLatin1String("mean_ms")).toDouble();
}

QString runGpuName(const RunInfo& run)
{
    return run.config.value(QLatin1String("gpu")).toObject().value(QLatin1String("name")).toString();
}

} // namespace

QHash<QString, TaskTimes> taskTimesFromStore(const RunStore& store, const QString& gpuName)
{
    QHash<QString, TaskTimes> times;
    QHash<QString, qint64> eagerFrom; // task -> evaluation id the eager time came from
    for (const RunInfo& run : store.runs()) {
        if (!gpuName.isEmpty() && runGpuName(run) != gpuName)
            continue;
        for (const EvaluationRecord& e : store.evaluations(run.id)) {
            const double eager = meanMs(e.result, "reference");
            if (eager <= 0)
                continue;
            TaskTimes& t = times[e.task];
            if (e.id > eagerFrom.value(e.task)) { // the latest measurement of the reference
                t.eagerMs = eager;
                eagerFrom.insert(e.task, e.id);
            }
            const double candidate = meanMs(e.result, "candidate");
            if (e.status != QLatin1String("correct") || candidate <= 0)
                continue;
            if (!t.bestCandidateMs || candidate < *t.bestCandidateMs) {
                t.bestCandidateMs = candidate;
                t.bestCandidateCustom = e.result.value(QLatin1String("custom_launches")).toInt() > 0;
                t.bestEvaluation = e.id;
                t.bestLabel = QStringLiteral("#%1 %2, turn %3, sample %4").arg(run.id).arg(run.regime).arg(e.turn).arg(e.sample);
            }
        }
    }
    return times;
}

QJsonObject latestRunDevice(const RunStore& store)
{
    const QList<RunInfo> runs = store.runs();
    for (auto it = runs.crbegin(); it != runs.crend(); ++it) {
        const QJsonObject gpu = it->config.value(QLatin1String("gpu")).toObject();
        if (gpu.value(QLatin1String("available")).toBool() && !gpu.value(QLatin1String("name")).toString().isEmpty())
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
        const QJsonObject& a = task.analysisJson;
        const double flops = a.value(QLatin1String("flops")).toDouble();
        const double unfused = a.value(QLatin1String("intensity_unfused")).toDouble();
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
            const double fused = a.value(QLatin1String("intensity_fused")).toDouble();
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
        QString label = run.label();
        if (run.run.config.contains(QLatin1String("sweep")) && !run.run.config.value(QLatin1String("sweep")).isNull())
            label += QStringLiteral(" sweep");
        if (!run.ablated.isEmpty())
            label += QStringLiteral(" −") + run.ablated.join(QStringLiteral(", −"));
        series.append(BestOfNSeries{label, 0, run.bestOfN->overall});
        for (auto it = run.bestOfN->perLevel.cbegin(); it != run.bestOfN->perLevel.cend(); ++it)
            series.append(BestOfNSeries{label, it.key(), it.value()});
    }
    return series;
}

QString CandidateEntry::label() const
{
    QString text = QStringLiteral("#%1 %2 · turn %3 · sample %4 · %5")
                       .arg(runId)
                       .arg(regime)
                       .arg(evaluation.turn)
                       .arg(evaluation.sample)
                       .arg(evaluation.status);
    if (evaluation.speedup && evaluation.status == QLatin1String("correct"))
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
                ofRun.append(CandidateEntry{run.id, run.regime, e});
        std::stable_sort(ofRun.begin(), ofRun.end(), [](const CandidateEntry& a, const CandidateEntry& b) {
            return std::make_pair(a.evaluation.turn, a.evaluation.sample) < std::make_pair(b.evaluation.turn, b.evaluation.sample);
        });
        entries += ofRun;
    }
    return entries;
}

} // namespace kwb::app
