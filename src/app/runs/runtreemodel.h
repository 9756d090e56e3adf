#pragma once
// One run as a tree: task -> turn -> unit (a notes role's answer, or one sample of the answer
// role), with role, status, speedup, max |diff|, tokens and latency. Built from the run store
// (RunStore::responses and RunStore::evaluations) and kept up to date while the run goes on:
// appendResponse(), appendEvaluation() and the live calls insert rows with beginInsertRows and
// update them with dataChanged, never with a reset, so a view's selection and expansion survive.
//
// A task's row shows the unit the run keeps for the task (core/study/taskbest.h's keptCandidate,
// under the run's own selection: the candidate every other page names as the run's), a turn's row
// the best of its units by the monotone key (correct, then compiled, then speedup: selection.h),
// and the tokens and latency added up. Those summaries are
// kept in the rows and worked out again only when one of their units changes, not on every
// data() call: a view sizing its columns to their contents asks for every row's cells on each
// change, and decoding every evaluation for it stalled the window while a run streamed.

#include "core/config/runconfig.h"
#include "core/run/selection.h"
#include "core/store/runstore.h"
#include "core/study/taskbest.h"

#include <QAbstractItemModel>

#include <memory>
#include <optional>
#include <vector>

namespace kwb::app {

/// What the tree knows about one unit.
struct RunTreeUnit
{
    int sample = 0;
    QString role;
    QString status; ///< the evaluation's status; empty before an evaluation
    std::optional<double> speedup;
    std::optional<SpeedupInterval> speedupInterval; ///< its 95 % interval (the result's timing), shown beside it
    std::optional<double> maxAbsDiff;
    QString maxAbsDiffText;  ///< evaluationsummary.h's: "non-finite (…)" for NaN/Inf outputs, never a bare 0
    bool notCounted = false; ///< correct by status, not counted (below the roofline floor)
    std::optional<qint64> tokensIn;
    std::optional<qint64> tokensOut;
    std::optional<qint64> latencyMs;
    QString text;                ///< the model's answer: stored, or streamed so far
    QString error;               ///< the failed request's error
    EvaluationResult evaluation; ///< the evaluate response, decoded once when it arrives (describeEvaluation)
    bool evaluated() const { return !evaluation.raw.isEmpty(); }
    CandidateOutcome outcome; ///< its place on the monotone key
    qint64 responseId = 0;
    qint64 evaluationId = 0;
    bool generating = false; ///< a model request for it is in flight
};

class RunTreeModel : public QAbstractItemModel
{
    Q_OBJECT
public:
    enum Column {
        ItemColumn,
        RoleColumn,
        StatusColumn,
        SpeedupColumn,
        MaxAbsDiffColumn,
        TokensColumn,
        LatencyColumn,
        ColumnCount
    };
    enum Kind { TaskKind, TurnKind, UnitKind };
    enum Role {
        KindRole = Qt::UserRole + 1, ///< Kind
        TaskRole,                    ///< "L2/1" (every row)
        TurnRole,                    ///< int (turn and unit rows)
        SampleRole,                  ///< int (unit rows)
        UnitRoleRole,                ///< the unit's role name
        StatusRole,                  ///< the raw status (evaluation status or the unit's state)
        TextRole,                    ///< a unit's answer text (streamed or stored)
        CompileLogRole,              ///< the evaluation's compile log
        MessageRole,                 ///< the evaluation's message or the request's error
        SortRole,                    ///< numbers as numbers
    };

    explicit RunTreeModel(QObject* parent = nullptr);
    ~RunTreeModel() override;

    void clear();
    /// Every response and evaluation of the run (a reset: for opening a run).
    void load(const RunStore& store, qint64 runId);
    /// Live mode: an answer without an evaluation is shown as being evaluated, not as left out.
    void setLive(bool live);
    bool isLive() const { return m_live; }

    /// Adds or updates the unit of a stored response (the stored text replaces a streamed one).
    void appendResponse(const UnitResponse& response);
    /// Adds or updates the unit of a stored evaluation.
    void appendEvaluation(const EvaluationRecord& evaluation);
    /// A model request for the unit started (true) or ended (false); adds the unit when new.
    void setGenerating(const UnitKey& unit, bool generating);
    /// Appends streamed text to the unit's answer (adds the unit when new). No dataChanged: the
    /// text is no column, and the Monitor writes the chunk into its text view itself; a signal per
    /// chunk made the view measure every column again.
    void appendStreamedText(const UnitKey& unit, const QString& chunk);
    /// Removes a unit that has only live state (no stored response or evaluation), with its turn
    /// and task when they are left empty: for a request that turned out to be for another unit.
    void removeLiveOnly(const UnitKey& unit);

    std::optional<UnitKey> unitKey(const QModelIndex& index) const;
    const RunTreeUnit* unit(const QModelIndex& index) const;
    QModelIndex indexOf(const UnitKey& unit, int column = 0) const;
    QModelIndex indexOfTask(const QString& task, int column = 0) const;
    int taskCount() const;
    int unitCount() const;

    QModelIndex index(int row, int column, const QModelIndex& parent = QModelIndex()) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    bool hasChildren(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    /// Whether a role writes the answer (generator, retry, …) rather than notes (analyzer,
    /// researcher, triager, critic).
    /// Fills what comes from the unit's evaluation: max |diff| text, not counted, the outcome.
    static void describeEvaluation(RunTreeUnit& unit);
    static bool isAnswerRole(const QString& role);

private:
    struct Node;
    struct Summary;

    Node* nodeOf(const QModelIndex& index) const;
    QModelIndex indexOfNode(const Node* node, int column = 0) const;
    int rowOf(const Node* node) const;
    Node* findTask(const QString& task) const;
    Node* findTurn(const Node* task, int turn) const;
    Node* findUnit(const Node* turn, int sample, const QString& role) const;
    /// The unit's node, inserted (with its task and turn) where it is missing.
    Node* ensureUnit(const UnitKey& key);
    void unitChanged(Node* unit);
    /// Works out the summaries of the unit's turn and task again (after it changed or went).
    void resummarizeAbove(Node* node);
    Summary summarize(const Node* node) const;
    QString unitStatus(const RunTreeUnit& unit) const;
    QVariant display(const Node* node, int column) const;
    QVariant sortValue(const Node* node, int column) const;

    std::unique_ptr<Node> m_root;
    bool m_live = false;
    RunConfig m_config; ///< the loaded run's: its selection picks a task row's unit
};

} // namespace kwb::app
