#pragma once
// One "best" per run and task, and per task across runs (issue 38 item 4): the one definition
// Results, the Roofline, the Diff page, the Monitor and `kwb report` all read, so no two pages
// name different candidates as a task's best.
//
// In one run, a task's candidate is the one the run's own selection keeps (selection.h's
// selectJudgedIndex with the selection and compile-only setting of the regime that ran the task:
// routing runs a level with its own regime). Across runs, the best is the highest of those kept
// candidates on the monotone key (betterThan: counts as correct, then compiled, then trusted
// speed-up); ties go to the run listed first. A candidate a run did not keep is never a task's
// best, even where it is faster: the run itself did not stand by it (pilot v1 keeps its last turn).

#include "core/config/runconfig.h"
#include "core/protocol/evaluationresult.h"
#include "core/run/selection.h"
#include "core/store/runstore.h"

#include <QList>
#include <QString>

#include <optional>

namespace kwb {

/// How a run chooses a task's candidate: the selection of the regime that ran the task and
/// whether the run was compile-only (then no_device is an evaluation, not a machine fault).
struct TaskSelection
{
    SelectionMode mode = SelectionMode::Monotone;
    bool compileOnly = false;
};

/// The selection a run applied to `task`: its level's regime where it routed one, else its regime.
TaskSelection taskSelection(const RunConfig& config, const QString& task);

/// One evaluated candidate of a task, as the picks see it.
struct PickCandidate
{
    qint64 run = 0;
    qint64 evaluation = 0;
    int turn = 1;
    int sample = 0;
    EvaluationResult result; ///< status, flags, compile.ok and speed-up are what the picks read

    static PickCandidate of(const TaskCandidate& candidate);
    static PickCandidate of(qint64 run, const EvaluationRecord& evaluation);
};

/// The index into `candidates` (all of one run and one task, any order) of the one the run keeps
/// (selectJudgedIndex under `selection`); nullopt for an empty list.
std::optional<int> keptCandidate(const QList<PickCandidate>& candidates, const TaskSelection& selection);

/// The best candidate of a task across `runs`: of each run's kept candidate (keptCandidate), the
/// highest on the monotone key, ties to the run listed first. `candidates` are every candidate of
/// the task, of any runs in any order; those of a run not in `runs` are left out. An index into
/// `candidates`; nullopt when no run in `runs` has one.
std::optional<int> bestCandidateOfTask(const QList<PickCandidate>& candidates, const QList<RunInfo>& runs,
                                       const QString& task);

} // namespace kwb
