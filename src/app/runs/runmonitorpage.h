#pragma once
// The run monitor: the running run (or one opened from a database) as it happens. Per task its
// turns and candidates (RunTreeModel), the selected unit's model text as it streams in, its
// compile log and evaluation, a progress bar with done/total and the time left estimated from the
// rate so far, and a problem list that stays in view (failed or retried model requests, time-outs,
// crashed workers, task errors). Everything arrives through RunSession's signals; the page never
// waits on the model or a worker.

#include "core/store/runstore.h"

#include <QPointer>
#include <QString>
#include <QWidget>

#include <memory>
#include <optional>

class QCheckBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTabWidget;
class QTimer;
class QTreeView;
class QTreeWidget;

namespace kwb::app {

class RunManager;
class RunSession;
class RunTreeModel;
struct RunProblem;

class RunMonitorPage : public QWidget
{
    Q_OBJECT
public:
    /// manager: the page follows its current session (may be null: then only openRun() and
    /// setSession() show anything).
    explicit RunMonitorPage(RunManager* manager, QWidget* parent = nullptr);
    ~RunMonitorPage() override;

    /// Follows a live session (the manager's sessions are followed without this call).
    void setSession(RunSession* session);
    RunSession* session() const { return m_session; }
    /// Shows a stored run (not live). False, with the reason on the page, when it cannot be read.
    bool openRun(const QString& databasePath, qint64 runId, QString* error = nullptr);
    /// Shows a run chosen elsewhere (the Results page): the manager's live session when it is
    /// that run, else the stored run (openRun). Already shown: nothing changes.
    bool followRun(const QString& databasePath, qint64 runId, QString* error = nullptr);
    /// Back to the empty state.
    void clear();

    RunTreeModel* treeModel() const { return m_model; }
    /// Selects a unit in the tree (and shows its text).
    void selectUnit(const UnitKey& unit);
    /// Select each unit as its model request starts (on by default; a click in the tree turns it off).
    void setFollowLive(bool follow);
    /// The progress line ("3/10 tasks · …").
    QString progressText() const;
    int problemCount() const;
    /// The "Prompts sent" tab: what the selected unit was asked, every role of every turn up to its own.
    QString promptsSentText() const;

Q_SIGNALS:
    /// "Resume run" on an opened run that did not finish.
    void resumeRequested(const QString& databasePath, qint64 runId);

private:
    void buildUi();
    void detachSession();
    void onRunReady(qint64 runId);
    void onStateChanged();
    void updateProgress();
    void updateHeader();
    void addProblem(const RunProblem& problem);
    void loadStoredProblems(const RunStore& store, qint64 runId);
    void showDetails();
    void showPromptsSent(const QString& task, int turn, int sample);
    void onStreamed(const UnitKey& unit, const QString& chunk);
    std::optional<UnitKey> currentUnit() const;

    RunManager* m_manager = nullptr;
    QPointer<RunSession> m_session;
    std::unique_ptr<RunStore> m_openedStore; ///< for a run opened from a database
    QString m_openedPath;
    qint64 m_openedRunId = 0;
    RunInfo m_openedInfo;
    int m_openedTotal = 0;
    bool m_followLive = true;

    RunTreeModel* m_model = nullptr;
    QStackedWidget* m_stack = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_state = nullptr;
    QPushButton* m_pause = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_resume = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_progressText = nullptr;
    QCheckBox* m_follow = nullptr;
    QTreeView* m_tree = nullptr;
    QLabel* m_unitHeader = nullptr;
    QTabWidget* m_tabs = nullptr;
    QPlainTextEdit* m_text = nullptr;
    QPlainTextEdit* m_compileLog = nullptr;
    QPlainTextEdit* m_evaluation = nullptr; ///< the summary, or the raw JSON with m_rawJson
    QCheckBox* m_rawJson = nullptr;
    QPlainTextEdit* m_prompts = nullptr; ///< the prompts the selected unit was sent
    QString m_promptsShown;              ///< run/task/turn/sample of what m_prompts holds
    QLabel* m_problemsTitle = nullptr;
    QTreeWidget* m_problems = nullptr;
    QTimer* m_tick = nullptr;
};

} // namespace kwb::app
