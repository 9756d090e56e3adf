#pragma once
// Selection (ARCHITECTURE.md §8): which candidate counts for a task. Pure functions.
//
// Candidates are ranked by the monotone key: correct first, then compiled, then speedup (higher
// is better; an untimed candidate ranks below a timed one). Within a turn the best candidate wins
// (ties: the lower sample). Across turns, Monotone keeps the best so far, so a later turn replaces
// it only when strictly better (a broken retry never displaces a working kernel; ties keep the
// earlier turn); Last takes the best of the last turn that has candidates, as the study's pilot did.
// selectJudgedIndex() is the one rule the run controller and the report (kwb report) both apply,
// so both pick the same candidate of a task, ties included.

#include "core/config/regime.h"
#include "core/protocol/evaluationresult.h"

#include <QJsonObject>
#include <QList>
#include <QString>

#include <optional>

namespace kwb {

struct CandidateOutcome
{
    int turn = 1;
    int sample = 0;
    EvaluationStatus status = EvaluationStatus::Unknown; ///< the evaluator's, or the supervisor's timeout/crashed
    bool compiled = false;
    /// The time is below the roofline floor (EvaluationResult::belowRooflineFloor): never correct,
    /// and its speed-up is not one (speedup stays empty).
    bool belowRooflineFloor = false;
    std::optional<double> speedup;
    qint64 candidateId = 0; ///< RunStore row, 0 when not stored
    QString answer;         ///< the model's answer, for feedback
    QJsonObject result;     ///< the whole evaluate response

    /// EvaluationResult::countsAsCorrect(): status correct and a physically possible time.
    bool correct() const { return status == EvaluationStatus::Correct && !belowRooflineFloor; }

    /// From an evaluate response (or a supervisor failure {"status", "message"}): compiled is
    /// EvaluationResult::compiled().
    static CandidateOutcome fromEvaluation(const QJsonObject& result, int turn = 1, int sample = 0);
    /// The same from a response already decoded (a store's EvaluationRecord::decoded, a page's):
    /// not decoded a second time; `result` is its raw.
    static CandidateOutcome fromEvaluation(const EvaluationResult& evaluation, int turn = 1, int sample = 0);
};

/// True when a ranks strictly above b on the monotone key.
bool betterThan(const CandidateOutcome& a, const CandidateOutcome& b);

/// The index of the best candidate (ties: the first), nullopt for an empty list.
std::optional<int> bestIndex(const QList<CandidateOutcome>& candidates);

/// The candidate of a task over its turns (turns[0] is turn 1; a turn may be empty).
std::optional<CandidateOutcome> selectAcrossTurns(const QList<QList<CandidateOutcome>>& turns, SelectionMode mode);

/// The same over a flat list: candidates are grouped by their `turn`.
std::optional<CandidateOutcome> selectForTask(const QList<CandidateOutcome>& candidates, SelectionMode mode);

/// The candidate a task keeps, as an index into `candidates` (any order; grouped by `turn`, ties
/// within a turn go to the lower `sample`): selectAcrossTurns over the candidates that are not
/// machine faults (isMachineFault: they say nothing about the candidate), or over all of them when
/// every one is. nullopt for an empty list.
std::optional<int> selectJudgedIndex(const QList<CandidateOutcome>& candidates, SelectionMode mode,
                                     bool compileOnly = false);

} // namespace kwb
