#include "core/study/taskbest.h"

#include "core/study/report.h"

#include <QHash>

namespace kwb {

namespace {

CandidateOutcome outcomeOf(const PickCandidate& c)
{
    CandidateOutcome o;
    o.turn = c.turn;
    o.sample = c.sample;
    o.status = c.result.status;
    o.compiled = c.result.compiled();
    o.belowRooflineFloor = c.result.belowRooflineFloor();
    o.speedup = c.result.trustedSpeedup();
    return o;
}

} // namespace

TaskSelection taskSelection(const RunConfig& config, const QString& task)
{
    const auto level = config.levelRegimes.constFind(taskLevel(task));
    const StoredRegime& regime = level != config.levelRegimes.cend() ? level.value() : config.regime;
    return TaskSelection{regime.fields.selection, config.compileOnly};
}

PickCandidate PickCandidate::of(const TaskCandidate& candidate)
{
    return PickCandidate{candidate.runId, candidate.evaluationId, candidate.turn, candidate.sample, candidate.outcome};
}

PickCandidate PickCandidate::of(qint64 run, const EvaluationRecord& evaluation)
{
    // The stored status and speed-up columns fill a response that lacks them (a record built by
    // hand), as selectOutcome reads them.
    QJsonObject result = evaluation.result;
    if (!result.contains(QLatin1String("status")))
        result.insert(QStringLiteral("status"), evaluation.status);
    if (!result.contains(QLatin1String("speedup")) && evaluation.speedup)
        result.insert(QStringLiteral("speedup"), *evaluation.speedup);
    return PickCandidate{run, evaluation.id, evaluation.turn, evaluation.sample, decodeEvaluation(result)};
}

std::optional<int> keptCandidate(const QList<PickCandidate>& candidates, const TaskSelection& selection)
{
    QList<CandidateOutcome> outcomes;
    outcomes.reserve(candidates.size());
    for (const PickCandidate& c : candidates)
        outcomes.append(outcomeOf(c));
    return selectJudgedIndex(outcomes, selection.mode, selection.compileOnly);
}

std::optional<int> bestCandidateOfTask(const QList<PickCandidate>& candidates, const QList<RunInfo>& runs,
                                       const QString& task)
{
    QHash<qint64, QList<int>> byRun; // run -> indexes into candidates
    for (int i = 0; i < candidates.size(); ++i)
        byRun[candidates.at(i).run].append(i);
    std::optional<int> best;
    std::optional<CandidateOutcome> bestOutcome;
    for (const RunInfo& run : runs) {
        const QList<int> indexes = byRun.value(run.id);
        if (indexes.isEmpty())
            continue;
        QList<PickCandidate> own;
        for (int i : indexes)
            own.append(candidates.at(i));
        const std::optional<int> kept = keptCandidate(own, taskSelection(run.config, task));
        if (!kept)
            continue;
        const CandidateOutcome outcome = outcomeOf(own.at(*kept));
        if (!bestOutcome || betterThan(outcome, *bestOutcome)) {
            best = indexes.at(*kept);
            bestOutcome = outcome;
        }
    }
    return best;
}

} // namespace kwb
