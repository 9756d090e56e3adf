#pragma once
// Two candidates side by side: a header per side (label, status, speedup), the cuda blocks diffed
// as CUDA, the python blocks diffed as Python (TorchScript), and per side a log with what the
// evaluator said (compile log, correctness failure, message: docs/protocol.md §evaluate).
// Changes are counted over both blocks and stepped through with F7 / Shift+F7 (or Alt+Down /
// Alt+Up).

#include <QJsonObject>
#include <QString>
#include <QWidget>

#include <optional>

class QAction;
class QLabel;
class QPlainTextEdit;
class QSplitter;
class QStackedWidget;

namespace kwb::app {

class SideBySideDiffView;

struct CandidateSide
{
    QString label; ///< who it is: task, run, regime, turn, sample
    QString cuda;  ///< the answer's cuda block (empty: none, a torch-only candidate)
    QString python;
    QString status; ///< the evaluation's status ("correct", "compile_error", …), empty when not evaluated
    std::optional<double> speedup;
    QJsonObject evaluation; ///< the evaluate response (or a supervisor failure with status and message)

    /// A side from a model's whole answer: its first ```cuda and ```python blocks (fences as in
    /// docs/candidate-format.md), status and speedup from the evaluation.
    static CandidateSide fromAnswer(const QString& label, const QString& answer, const QJsonObject& evaluation = {});
    /// The evaluator's report as the log pane shows it.
    static QString evaluationReport(const QJsonObject& evaluation);
};

/// The code of the first fenced block whose tag is `tag` (case-insensitive), or an empty string.
QString fencedBlock(const QString& markdown, const QString& tag);

class CandidateDiffView : public QWidget
{
    Q_OBJECT
public:
    explicit CandidateDiffView(QWidget* parent = nullptr);

    void setCandidates(const CandidateSide& left, const CandidateSide& right);
    /// Back to the empty state.
    void clear();
    bool hasCandidates() const;

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
    Header m_leftHeader, m_rightHeader;
    QLabel* m_cudaCaption = nullptr;
    QLabel* m_pythonCaption = nullptr;
    SideBySideDiffView* m_cudaDiff = nullptr;
    SideBySideDiffView* m_pythonDiff = nullptr;
    QWidget* m_cudaSection = nullptr;
    QPlainTextEdit* m_leftLog = nullptr;
    QPlainTextEdit* m_rightLog = nullptr;
    QSplitter* m_splitter = nullptr;
    QLabel* m_changes = nullptr;
    QLabel* m_position = nullptr;
    QAction* m_next = nullptr;
    QAction* m_previous = nullptr;
    int m_current = -1;
    bool m_hasCandidates = false;
};

} // namespace kwb::app
