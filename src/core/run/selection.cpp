#include "core/run/selection.h"

#include <QMap>

#include <algorithm>

#include <cmath>

namespace kwb {

CandidateOutcome CandidateOutcome::fromEvaluation(const QJsonObject& result, int turn, int sample)
{
    CandidateOutcome c = fromEvaluation(decodeEvaluation(result), turn, sample);
    c.result = result;
    return c;
}

CandidateOutcome CandidateOutcome::fromEvaluation(const EvaluationResult& e, int turn, int sample)
{
    CandidateOutcome c;
    c.turn = turn;
    c.sample = sample;
    c.result = e.raw;
    c.status = e.status;
    c.compiled = e.compiled();
    c.belowRooflineFloor = e.belowRooflineFloor();
    c.speedup = e.trustedSpeedup();
    return c;
}

bool betterThan(const CandidateOutcome& a, const CandidateOutcome& b)
{
    if (a.correct() != b.correct())
        return a.correct();
    if (a.compiled != b.compiled)
        return a.compiled;
    if (a.speedup.has_value() != b.speedup.has_value())
        return a.speedup.has_value();
    return a.speedup && *a.speedup > *b.speedup;
}

std::optional<int> bestIndex(const QList<CandidateOutcome>& candidates)
{
    if (candidates.isEmpty())
        return std::nullopt;
    int best = 0;
    for (int i = 1; i < candidates.size(); ++i)
        if (betterThan(candidates[i], candidates[best]))
            best = i;
    return best;
}

std::optional<CandidateOutcome> selectAcrossTurns(const QList<QList<CandidateOutcome>>& turns, SelectionMode mode)
{
    std::optional<CandidateOutcome> chosen;
    for (const auto& turn : turns) {
        const auto i = bestIndex(turn);
        if (!i)
            continue;
        const CandidateOutcome& best = turn[*i];
        if (mode == SelectionMode::Last || !chosen || betterThan(best, *chosen))
            chosen = best;
    }
    return chosen;
}

std::optional<CandidateOutcome> selectForTask(const QList<CandidateOutcome>& candidates, SelectionMode mode)
{
    QMap<int, QList<CandidateOutcome>> byTurn;
    for (const auto& c : candidates)
        byTurn[c.turn].append(c);
    QList<QList<CandidateOutcome>> turns;
    for (auto it = byTurn.cbegin(); it != byTurn.cend(); ++it)
        turns.append(it.value());
    return selectAcrossTurns(turns, mode);
}

std::optional<int> selectJudgedIndex(const QList<CandidateOutcome>& candidates, SelectionMode mode, bool compileOnly)
{
    bool anyJudged = false;
    for (const CandidateOutcome& c : candidates)
        anyJudged = anyJudged || !isMachineFault(c.status, compileOnly);
    // turn -> indices of its competing candidates, by sample (then by position: a stable order).
    QMap<int, QList<int>> byTurn;
    for (int i = 0; i < candidates.size(); ++i)
        if (!anyJudged || !isMachineFault(candidates[i].status, compileOnly))
            byTurn[candidates[i].turn].append(i);
    std::optional<int> chosen;
    for (auto it = byTurn.begin(); it != byTurn.end(); ++it) {
        QList<int>& turn = it.value();
        std::stable_sort(turn.begin(), turn.end(),
                         [&](int a, int b) { return candidates[a].sample < candidates[b].sample; });
        int best = turn.first();
        for (int i : std::as_const(turn))
            if (betterThan(candidates[i], candidates[best]))
                best = i;
        if (mode == SelectionMode::Last || !chosen || betterThan(candidates[best], candidates[*chosen]))
            chosen = best;
    }
    return chosen;
}

} // namespace kwb
