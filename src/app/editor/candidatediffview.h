#pragma once
// Two candidates side by side: a header per side (label, status, speedup), the cuda blocks diffed
// as CUDA, the python blocks diffed as Python (TorchScript), and per side a log with what the
// evaluator said (compile log, correctness failure, message: docs/protocol.md §evaluate).
// Changes are counted over both blocks and stepped through with F7 / Shift+F7 (or Alt+Down /
// Alt+Up). Under them, in a tab beside the logs, the prompts each side was sent, diffed, and in a
// third the compiled kernels side by side (kernelcompareview.h).
//
// The blocks are the ones the worker parsed out of each answer and evaluated (its `candidate`
// echo, kept by the run store): the view parses nothing. Where a side has no echo (not evaluated,
// an evaluation that ended without the worker's answer, a database from before the echo) the
// whole answers are compared instead, and a note above the diff says so.

#include "core/protocol/evaluationresult.h"

#include <QString>
#include <QWidget>

#include <optional>

class QAction;
class QLabel;
class QPlainTextEdit;
class QSplitter;
class QStackedWidget;
class QTabWidget;

namespace kwb::app {

class KernelCompareView;
class SideBySideDiffView;

struct CandidateSide
{
    QString label; ///< who it is: task, run, regime, turn, sample
    /// The blocks the worker found in the answer and evaluated (cuda empty: a torch-only
    /// candidate); nullopt when no echo of its parse exists.
    std::optional<CandidateEcho> blocks;
    QString answer;                             ///< the model's whole answer, compared where a side has no blocks
    std::optional<EvaluationResult> evaluation; ///< nullopt: not evaluated
    /// The prompts the candidate's answer was asked with, every role of every turn up to its own
    /// (core/study/provenance.h's promptsText); empty: not read.
    QString prompts;

    /// A side from a model's answer and its evaluation: the blocks of the evaluation's
    /// `candidate` echo, else `stored` (the run store's copy of an echo), else none.
    static CandidateSide make(const QString& label, const QString& answer,
                              const std::optional<EvaluationResult>& evaluation,
                              const std::optional<CandidateEcho>& stored = std::nullopt);
    /// The evaluator's report as the log pane shows it.
    static QString evaluationReport(const std::optional<EvaluationResult>& evaluation);
};

class CandidateDiffView : public QWidget
{
    Q_OBJECT
public:
    explicit CandidateDiffView(QWidget* parent = nullptr);

    void setCandidates(const CandidateSide& left, const CandidateSide& right);
    /// Back to the empty state.
    void clear();
    bool hasCandidates() const;

    /// Whether the whole answers are compared (a side has no echo of the worker's parse); the
    /// first diff (cudaDiff()) then holds the answers and the python diff is empty.
    bool showsAnswers() const { return m_answers; }
    /// The note above the diffs: where the compared code comes from.
    QString sourceNote() const;

    /// Changes over both blocks (cuda first, then python).
    int changeCount() const;
    /// The change marked, 0-based over both blocks; -1 when none is.
    int currentChange() const { return m_current; }
    bool setCurrentChange(int index);

    /// The "changes: N" text, the cuda and python diffs and the log panes, for tests and screenshots.
    QString changeSummary() const;
    SideBySideDiffView* cudaDiff() const { return m_cudaDiff; }
    SideBySideDiffView* pythonDiff() const { return m_pythonDiff; }
    QPlainTextEdit* leftLog() const { return m_leftLog; }
    QPlainTextEdit* rightLog() const { return m_rightLog; }
    /// The prompts each side was sent, diffed (the "Prompts sent" tab under the code).
    SideBySideDiffView* promptDiff() const { return m_promptDiff; }
    /// The Kernels tab: each side's compiled kernels, their facts, SASS and PTX (issue 40).
    KernelCompareView* kernelView() const { return m_kernels; }
    /// Shows the bottom tab at `index` (0 evaluation, 1 prompts, 2 kernels).
    void showBottomTab(int index);

public Q_SLOTS:
    bool nextChange();
    bool previousChange();

Q_SIGNALS:
    void currentChangeChanged(int index, int count);

private:
    struct Header
    {
        QLabel* label = nullptr;
        QLabel* status = nullptr;
        QLabel* speedup = nullptr;
    };
    QWidget* makeHeader(Header* header);
    void fillHeader(Header* header, const CandidateSide& side);
    void updateNavigation();

    QStackedWidget* m_stack = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_source = nullptr;
    Header m_leftHeader, m_rightHeader;
    QLabel* m_cudaCaption = nullptr;
    QLabel* m_pythonCaption = nullptr;
    SideBySideDiffView* m_cudaDiff = nullptr;
    SideBySideDiffView* m_pythonDiff = nullptr;
    QWidget* m_cudaSection = nullptr;
    QPlainTextEdit* m_leftLog = nullptr;
    QPlainTextEdit* m_rightLog = nullptr;
    SideBySideDiffView* m_promptDiff = nullptr;
    KernelCompareView* m_kernels = nullptr;
    bool m_kernelsTookRoom = false;     ///< the Kernels tab enlarged the bottom of the splitter
    QTabWidget* m_bottomTabs = nullptr; ///< the evaluation logs, the prompts sent, the kernels
    QSplitter* m_splitter = nullptr;
    QLabel* m_changes = nullptr;
    QLabel* m_position = nullptr;
    QAction* m_next = nullptr;
    QAction* m_previous = nullptr;
    int m_current = -1;
    bool m_hasCandidates = false;
    bool m_answers = false;
};

} // namespace kwb::app
