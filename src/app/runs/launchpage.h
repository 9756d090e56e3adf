#pragma once
// The launch page: what `kwb run` takes on its command line, as widgets. Tasks (a checkable tree
// of levels and task numbers), one regime or a regime per level (the study's routing as a
// preset), the ablation switches, n / turns / temperature overrides, the model server (endpoint,
// API key, model with "Test connection", which lists the server's models without blocking), the
// protocol profile, scale and time-out, and the database file. Start runs it now (or queues it
// behind the running one), Add to queue queues it; Pause / Resume and Cancel act on the running
// run. The plan is made by core's planRun() (core/run/runlaunch.h), the function `kwb run` is to use
// as well, so the page and the command line build the same RunController configuration.

#include "app/runs/runsession.h"
#include "core/run/runlaunch.h"

#include <QHash>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <optional>

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QRadioButton;
class QSpinBox;
class QTreeWidget;
class QTreeWidgetItem;

namespace kwb {
class LlmClient;
struct HelloInfo;
} // namespace kwb

namespace kwb::app {

class RunManager;

class LaunchPage : public QWidget
{
    Q_OBJECT
public:
    /// manager: where runs are started and queued (not owned).
    explicit LaunchPage(RunManager* manager, QWidget* parent = nullptr);
    ~LaunchPage() override;

    // Setters the main window (or a test) uses.
    /// The tasks to offer, as id -> title; default: L1..L3 × 1..10 without titles. Keeps the checks
    /// of ids that stay.
    void setTaskCatalog(const QList<QPair<QString, QString>>& tasks);
    void setSelectedTasks(const QStringList& taskIds);
    /// Checks the tasks of a named set (runlaunch.h's taskSets(): study, level1, …, all).
    void selectTaskSet(const QString& name);
    /// The set whose offered tasks are exactly the checked ones, else empty.
    QString selectedTaskSet() const;
    QStringList selectedTasks() const;
    void setDatabasePath(const QString& path);
    QString databasePath() const;
    void setEndpoint(const QString& url);
    void setModel(const QString& model);
    void setApiKey(const QString& key);
    /// The template set's directory; shown in the "Prompt set" choice (added there when it is not a shipped set).
    void setPromptsDir(const QString& dir);
    /// The protocol profiles the worker announced in hello (names, settings as tooltips, its
    /// default selected unless the user chose another it also knows). A hello without profiles
    /// leaves the list as it is.
    void setWorkerProfiles(const HelloInfo& hello);
    /// One regime for every task.
    void setRegime(const QString& name);
    /// A regime per level (levels without one use the fallback).
    void setRouting(const Routing& routing);
    void setAblations(const Ablations& ablations);

    /// The request the widgets describe (what `kwb run`'s options would say).
    RunRequest request() const;
    /// planRun(request()): nullopt with *error for no tasks, an unknown regime or a bad endpoint.
    std::optional<RunPlan> plan(QString* error = nullptr) const;
    /// The manager's defaults with the page's database, API key and streaming.
    RunSessionEnvironment environment() const;

    /// Start: runs the plan now, or queues it when a run is going on. False (with the reason shown
    /// on the page) when the plan is not valid.
    bool start();
    /// Add to queue.
    bool enqueue();
    /// Resumes a stored run of a database (its own configuration; the page's API key and
    /// streaming): now, or queued behind the running run. False when the run cannot be read.
    bool resumeRun(const QString& databasePath, qint64 runId, QString* error = nullptr);
    /// Asks the endpoint for its models (GET /models); the answer fills the model list or shows the
    /// error next to the button.
    void testConnection();
    /// The connection test's last verdict ("" while none has run).
    QString connectionStatus() const;
    /// Why runs cannot be written into the database chosen (RunStore's StoreFile::writeRefusal():
    /// a read-only file or folder, a file that is not a run store), empty when they can. Start and
    /// Add to queue are disabled while it is not empty, with this as their tooltip.
    QString databaseProblem() const;

Q_SIGNALS:
    /// testConnection() has its answer.
    void connectionTested(bool ok);
    /// A run was submitted (started or queued).
    void runSubmitted(bool startedNow);

private:
    void buildUi();
    QWidget* buildTasksBox();
    QWidget* buildRegimeBox();
    QWidget* buildServerBox();
    QWidget* buildEvaluationBox();
    QWidget* buildControlBox();
    void fillTaskTree(const QList<QPair<QString, QString>>& tasks);
    void updateTaskSummary();
    void updateRegimeSummary();
    void updateRunControls();
    void updateQueueList();
    void showMessage(const QString& text, bool error);
    void chooseDatabase();
    /// Inspects the chosen database (no quick check: that is the run's open) and enables Start and
    /// Add to queue, or says why not.
    void checkDatabase();

    RunManager* m_manager = nullptr;
    QString m_promptsDir;
    LlmClient* m_probe = nullptr;
    bool m_probing = false;
    QString m_connectionStatus;

    QTreeWidget* m_tasks = nullptr;
    QHash<QString, QTreeWidgetItem*> m_taskItems;
    QLabel* m_taskSummary = nullptr;
    QCheckBox* m_allTasks = nullptr;
    QComboBox* m_taskSet = nullptr;

    QRadioButton* m_single = nullptr;
    QRadioButton* m_routed = nullptr;
    QComboBox* m_regime = nullptr;
    QLabel* m_regimeDescription = nullptr;
    QList<QComboBox*> m_levelRegimes; ///< L1, L2, L3
    QComboBox* m_fallback = nullptr;
    QCheckBox* m_offBestOfN = nullptr;
    QCheckBox* m_offFeedbackAnalyzer = nullptr;
    QCheckBox* m_offMonotone = nullptr;
    QCheckBox* m_offCompetence = nullptr;
    QSpinBox* m_n = nullptr;
    QSpinBox* m_turns = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QComboBox* m_stopWhenCorrect = nullptr;
    QLabel* m_effective = nullptr;

    QLineEdit* m_endpoint = nullptr;
    QLineEdit* m_apiKey = nullptr;
    QComboBox* m_model = nullptr;
    QPushButton* m_test = nullptr;
    QLabel* m_connection = nullptr;
    QCheckBox* m_stream = nullptr;

    QComboBox* m_profile = nullptr;
    QComboBox* m_scale = nullptr;
    QDoubleSpinBox* m_timeout = nullptr;
    QDoubleSpinBox* m_modelTimeout = nullptr;
    QComboBox* m_promptSet = nullptr;
    QSpinBox* m_contextTokens = nullptr; ///< the run's context budget (RunRequest::contextTokens)
    QSpinBox* m_timingTrials = nullptr;
    QComboBox* m_isolation = nullptr;
    QDoubleSpinBox* m_maxHostMemory = nullptr; ///< GiB; 0: the default
    QCheckBox* m_osSandbox = nullptr;
    QLineEdit* m_workers = nullptr; ///< a worker spec (core/workers/workertarget.h); empty: local
    QCheckBox* m_compileOnly = nullptr;
    QComboBox* m_answerFormat = nullptr;
    QSpinBox* m_compileWorkers = nullptr;    ///< RunEnvironment::compileWorkers; its minimum -1: automatic
    QSpinBox* m_evaluationsPerGpu = nullptr; ///< RunEnvironment::evaluationsPerGpu; its minimum 0: automatic
    QCheckBox* m_pauseGeneration = nullptr;
    QCheckBox* m_evaluateIdenticalOnce = nullptr;
    QCheckBox* m_identicalAcrossRuns = nullptr; ///< enabled with m_evaluateIdenticalOnce
    QLabel* m_compileWorkersWarning = nullptr;  ///< compileWorkersMemoryWarning, where it has one
    bool m_pauseGenerationTouched = false;      ///< the user set it: the endpoint no longer decides
    QLineEdit* m_database = nullptr;
    QLabel* m_databaseProblem = nullptr; ///< why runs cannot be written into it; hidden when they can

    QPushButton* m_start = nullptr;
    QPushButton* m_queue = nullptr;
    QPushButton* m_pause = nullptr;
    QPushButton* m_cancel = nullptr;
    QLabel* m_message = nullptr;
    QLabel* m_runState = nullptr;
    QListWidget* m_queueList = nullptr;
    QPushButton* m_removeQueued = nullptr;
    QPushButton* m_startNext = nullptr;
};

} // namespace kwb::app
